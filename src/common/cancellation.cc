#include "vigil/common/cancellation.h"

namespace vigil {

namespace {

thread_local const std::atomic<bool>* current_flag = nullptr;

}  // namespace

ScopedCancellation::ScopedCancellation(const std::atomic<bool>* flag) : saved_(current_flag) { current_flag = flag; }

ScopedCancellation::~ScopedCancellation() { current_flag = saved_; }

Status CheckCancellation() {
  if (current_flag == nullptr || !current_flag->load(std::memory_order_relaxed)) return Status::OK();
  return Status::Cancelled("the statement was cancelled: its client went away or the server is stopping");
}

}  // namespace vigil
