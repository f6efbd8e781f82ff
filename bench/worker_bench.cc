// `vigil bench worker`: the cost of running index builds in `vigil-worker`
// instead of in the calling process. (1) Spawn plus handshake: launches whose
// request the worker refuses before invocation (a stale schema fingerprint),
// timed from fork to the worker's handshake (target p50 <= 20 ms). The worker
// enters its sandbox (worker/sandbox.h) before the handshake; in test builds
// (VIGIL_FAILPOINTS) launches without it alternate with these, and the
// difference of the p50s is the sandbox's cost. (2) The same
// IVF_PQ build through the WorkerExecutor and through the InProcessExecutor on
// the same dataset, alternating, median of `runs` each (target <= 1.05x). The
// worker gets as many OpenMP threads as the machine has cores, like the
// in-process build.
//
// Options: launches (30), rows (50000), dim (64), partitions (64), runs (3).
#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "bench/bench.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/file_lock.h"
#include "vigil/index/index_spec.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/worker_executor.h"
#include "vigil/storage/dataset.h"

namespace vigil::bench::worker_bench {
namespace {

jobs::JobRecord IvfJob(const std::string& path, const Dataset& ds, const std::string& name, int64_t id,
                       int64_t partitions) {
  jobs::JobRecord job;
  job.job_id = id;
  job.spec.database_name = "bench";
  job.spec.table_name = "t";
  job.spec.locator = path;
  job.spec.index_name = name;
  job.spec.operation = jobs::Operation::kCreate;
  job.spec.columns = {"emb"};
  job.spec.category = jobs::SqlCategory::kAnn;
  job.spec.physical_type = "IVF_PQ";
  index::IndexSpec spec;
  spec.type = index::IndexType::kIvfPq;
  spec.ivf_pq.num_partitions = static_cast<uint32_t>(partitions);
  spec.ivf_pq.num_sub_vectors = 8;
  job.spec.properties_json = index::SpecToPropertiesJson(spec);
  job.spec.start_version = static_cast<int64_t>(ds.version());
  job.spec.schema_fingerprint = ds.schema()->fingerprint();
  return job;
}

// Runs one attempt with its attempt lock held, as the runner does; returns seconds.
Result<double> Execute(jobs::Executor& executor, const jobs::JobRecord& job, bool expect_commit) {
  jobs::AttemptIdentity attempt;
  attempt.attempt_id = std::to_string(job.job_id) + "-bench";
  attempt.executor_node_id = "bench";
  attempt.node_epoch = attempt.leader_epoch = 1;
  attempt.deadline_at_ms = INT64_MAX / 2;
  VIGIL_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(jobs::AttemptLockPath(job.spec.locator, attempt.attempt_id)));
  auto t0 = Clock::now();
  jobs::ExecutionOutcome out = executor.Execute({job, attempt, nullptr, lock.fd()});
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  const bool committed = out.report.complete && out.report.code == StatusCode::kOk;
  if (expect_commit && !committed) return Status::Internal("bench build did not commit: " + out.message);
  return s;
}

Result<nlohmann::json> RunWorkerBench(const BenchArgs& args) {
  const int launches = static_cast<int>(args.Int("launches", 30));
  const int runs = static_cast<int>(args.Int("runs", 3));
  const int64_t partitions = args.Int("partitions", 64);
  DatagenOptions o;
  o.rows = static_cast<uint64_t>(args.Int("rows", 50'000));
  o.dim = static_cast<uint32_t>(args.Int("dim", 64));
  o.latent_dim = 8;
  o.words_per_body = 4;
  if (launches < 1 || runs < 1 || o.dim % 8 != 0) {
    return Status::InvalidArgument("worker bench: launches >= 1, runs >= 1, dim divisible by 8");
  }
  VIGIL_ASSIGN_OR_RETURN(auto gen, DataGenerator::Make(o));
  const std::string path = args.work_dir + "/bench/t.vgl";
  VIGIL_ASSIGN_OR_RETURN(auto created, Dataset::Create(path, gen->schema(), {}));
  auto reader = gen->NewReader();
  VIGIL_RETURN_IF_ERROR(created->Append(reader.get(), {}).status());
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(path));

  jobs::WorkerExecutorOptions wo;
  wo.supervisor.omp_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  VIGIL_ASSIGN_OR_RETURN(auto worker, jobs::WorkerExecutor::Create(wo));
  std::unique_ptr<jobs::WorkerExecutor> unsandboxed;
  if (failpoint::Enabled()) {
    jobs::WorkerExecutorOptions bare = wo;
    bare.supervisor.sandbox = false;
    VIGIL_ASSIGN_OR_RETURN(unsandboxed, jobs::WorkerExecutor::Create(bare));
  }
  jobs::InProcessExecutor in_process;

  // Refused before invocation: spawn + handshake + one round trip.
  auto launch = [&](jobs::WorkerExecutor& executor, int64_t id) -> Result<double> {
    jobs::JobRecord stale = IvfJob(path, *ds, "never", id, partitions);
    stale.spec.schema_fingerprint = "stale";
    VIGIL_RETURN_IF_ERROR(Execute(executor, stale, false).status());
    return std::chrono::duration<double, std::milli>(executor.last_launch().handshake_latency).count();
  };
  std::vector<double> handshake_ms, unsandboxed_ms;
  for (int i = 0; i < launches; ++i) {
    // Alternating, each side first every other time.
    for (bool sandboxed : {i % 2 == 0, i % 2 != 0}) {
      if (sandboxed) {
        VIGIL_ASSIGN_OR_RETURN(double ms, launch(*worker, 1000 + 2 * i));
        handshake_ms.push_back(ms);
      } else if (unsandboxed) {
        VIGIL_ASSIGN_OR_RETURN(double ms, launch(*unsandboxed, 1001 + 2 * i));
        unsandboxed_ms.push_back(ms);
      }
    }
  }
  std::vector<double> via_worker, via_process;
  for (int r = 0; r < runs; ++r) {
    jobs::JobRecord a = IvfJob(path, *ds, "w" + std::to_string(r), 2 * r + 1, partitions);
    VIGIL_ASSIGN_OR_RETURN(double w, Execute(*worker, a, true));
    jobs::JobRecord b = IvfJob(path, *ds, "p" + std::to_string(r), 2 * r + 2, partitions);
    VIGIL_ASSIGN_OR_RETURN(double p, Execute(in_process, b, true));
    via_worker.push_back(w);
    via_process.push_back(p);
  }
  std::vector<double> sorted = handshake_ms;
  std::sort(sorted.begin(), sorted.end());
  const double p50 = sorted[sorted.size() / 2];
  const double ratio = Median(via_worker) / Median(via_process);
  nlohmann::json sandbox = nullptr;  // not measurable outside test builds
  if (!unsandboxed_ms.empty()) {
    const double bare_p50 = Median(unsandboxed_ms);
    sandbox = {{"spawn_handshake_p50_ms_with", p50},
               {"spawn_handshake_p50_ms_without", bare_p50},
               {"cost_p50_ms", p50 - bare_p50},
               {"ratio", bare_p50 > 0 ? p50 / bare_p50 : 0}};
  }
  return nlohmann::json{{"spawn_handshake_ms", {{"p50", p50}, {"max", sorted.back()}, {"launches", launches}}},
                        {"sandbox", sandbox},
                        {"ivf_pq_build_s",
                         {{"rows", o.rows},
                          {"dim", o.dim},
                          {"worker_median", Median(via_worker)},
                          {"in_process_median", Median(via_process)},
                          {"ratio", ratio}}},
                        {"targets",
                         {{"spawn_handshake_p50_ms", {{"target", 20}, {"met", p50 <= 20}}},
                          {"build_ratio", {{"target", 1.05}, {"met", ratio <= 1.05}}}}}};
}

}  // namespace

VIGIL_REGISTER_BENCH(
    {.name = "worker",
     .description = "vigil-worker spawn+handshake latency with and without its sandbox; IVF_PQ build in the "
                    "worker vs in process",
     .fn = RunWorkerBench,
     .int_options = {"dim", "launches", "partitions", "rows", "runs"},
     .text_options = {}});

}  // namespace vigil::bench::worker_bench
