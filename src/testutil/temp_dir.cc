#include "testutil/temp_dir.h"

#include <cstdlib>
#include <filesystem>

#include "vigil/common/status.h"

namespace vigil::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/vigil-test-XXXXXX";
  char* p = ::mkdtemp(tmpl.data());
  VIGIL_CHECK(p != nullptr);
  path_ = p;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (std::getenv("VIGIL_KEEP_TEST_DIRS") == nullptr) std::filesystem::remove_all(path_, ec);
}

}  // namespace vigil::testing
