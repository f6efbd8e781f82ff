// `vigil doctor`: validates the root's vigil.toml, prints the effective
// settings, whether the Lance runner of external tables starts, and what
// isolation this machine offers index workers, and says whether index
// mutation would be admitted.
#include <cstdio>

#include "cli/commands.h"
#include "cli/supervise_client.h"
#include "vigil/common/config.h"
#include "vigil/lance/lance_table.h"
#ifdef VIGIL_HAVE_WORKER
#include "vigil/worker/isolation.h"
#endif

namespace vigil::cli {

namespace {

// Whether the Lance runner of external Lance tables starts: node runs, LanceDB loads, and
// the runner answers a read of a dataset that does not exist with its NOT_FOUND.
void PrintLanceRunner(const LanceConfig& config) {
  const lance::LanceRunnerOptions options = lance::RunnerOptions(config, std::chrono::seconds(60));
  Result<lance::LanceSnapshot> probe = lance::Inspect("/nonexistent/vigil-doctor-probe.lance", options);
  const bool answered = probe.status().code() == StatusCode::kNotFound &&
                        probe.status().message().find("no Lance dataset") != std::string::npos;
  if (answered) {
    std::printf("lance runner: ok (node %s, runner %s)\n", options.node_path.c_str(), options.script_path.c_str());
    return;
  }
  std::printf(
      "lance runner: unavailable (%s); CREATE EXTERNAL TABLE ... ENGINE = lance needs it "
      "(scripts/install-deps.sh installs node and the pinned LanceDB packages)\n",
      probe.status().ToString().c_str());
}

Status RunDoctor(const Context& ctx) {
  VIGIL_ASSIGN_OR_RETURN(Root root, ctx.OpenRoot());
  ConfigSource source;
  VIGIL_ASSIGN_OR_RETURN(Config config, LoadConfig(root.path(), &source));
  std::printf("root: %s (catalog %s)\n", root.path().c_str(), root.marker().catalog.c_str());
  std::printf("config: %s (%s)\n", source.path.c_str(),
              source.file_found ? "valid" : "not found; every setting is its default");
  std::printf("\n[settings]\n");
  for (const ConfigEntry& e : EffectiveSettings(config, &source)) {
    std::printf("%s = %s   (%s)\n", e.key.c_str(), e.value.c_str(), e.source.c_str());
  }

  std::printf("\n[leader]\n");
  Result<std::optional<RunningLeader>> running = FindRunningLeader(root);
  if (!running.ok()) {
    std::printf("unknown (%s)\n", running.status().ToString().c_str());
  } else if (!*running) {
    std::printf("no supervisor runs; commands start one when index jobs need it\n");
  } else {
    VIGIL_ASSIGN_OR_RETURN(std::string checksum, ConfigChecksum(root));
    const bool current = (*running)->config_checksum == checksum;
    const bool server = (*running)->is_server();
    std::printf(
        "%s pid %d: %s%s\n", server ? "vigil serve" : "supervisor", static_cast<int>((*running)->process.pid),
        current ? "uses the settings above" : "started with an older vigil.toml; the settings above take effect after ",
        current  ? ""
        : server ? "the server restarts"
                 : "`vigil supervise --restart`");
  }

  std::printf("\n[lance]\n");
  PrintLanceRunner(config.lance);

  std::printf("\n[isolation]\n");
  std::string refusal;
#ifdef VIGIL_HAVE_WORKER
  worker::IsolationReport report = worker::ProbeIsolation(config.worker.cgroup_parent);
  for (const worker::IsolationCapability& c : worker::DescribeIsolation(report)) {
    std::printf("%s: %s   (%s)\n", c.name.c_str(), c.available ? "yes" : "no", c.detail.c_str());
  }
  refusal = worker::IsolationRefusal(config.worker, report);
#else
  std::printf("probe unavailable: this build has no worker layer\n");
  if (config.worker.require_cgroup) refusal = "worker.require_cgroup is true and this build cannot verify a cgroup";
#endif

  std::printf("\n");
  if (!config.mutation.enabled) {
    std::printf("mutation: refused (mutation.enabled = false)\n");
  } else if (!refusal.empty()) {
    std::printf("mutation: refused (%s)\n", refusal.c_str());
  } else if (config.worker.cgroup_parent.empty()) {
    std::string hint = "set worker.cgroup_parent and worker.require_cgroup = true for a hard cgroup boundary";
#ifdef VIGIL_HAVE_WORKER
    if (report.CgroupV2Usable()) {
      hint = "this machine offers one: worker.cgroup_parent = \"" + report.cgroup_v2.candidate_dir + "\"";
    } else if (report.cgroup_v1_memory.writable && report.cgroup_v1_pids.writable) {
      hint = "this machine offers one: worker.cgroup_parent = \"v1\"";
    }
#endif
    std::printf("mutation: allowed (workers limited by rlimits only; %s)\n", hint.c_str());
  } else {
    std::printf("mutation: allowed (workers run in child cgroups of %s)\n", config.worker.cgroup_parent.c_str());
  }
  return Status::OK();
}

}  // namespace

void AddDoctorCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand(
      "doctor", "Check the root's vigil.toml, print the effective settings and the isolation this machine offers");
  ctx->actions.emplace_back(sub, [ctx]() -> Status { return RunDoctor(*ctx); });
}

}  // namespace vigil::cli
