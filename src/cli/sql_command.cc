// `vigil sql`: the SQL shell. Interactive with line editing and history, or
// one-shot with -c / -f. Results go to stdout as aligned tables, --csv (RFC
// 4180) or --json (one array per statement); progress, notices and warnings go
// to stderr only. A one-shot run waits for the index jobs it admitted (showing
// their progress) unless --detach; the exit status is non-zero when any
// statement fails or a waited job ends FAILED or OUTCOME_UNKNOWN.
#include <readline/history.h>
#include <readline/readline.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/sql_shell.h"
#include "vigil/sql/parser.h"

namespace vigil::cli {

namespace {

struct SqlArgs {
  std::vector<std::string> commands;
  std::string file;
  bool csv = false;
  bool json = false;
  bool detach = false;
  int64_t wait_timeout_s = 86'400;
};

constexpr char kHelp[] =
    "Statements end with ';'. Dot commands:\n"
    "  .help           this text\n"
    "  .tables         SHOW TABLES of every database\n"
    "  .timer on|off   print each statement's run time\n"
    "  .quit           leave (also Ctrl-D)\n"
    "Index statements admit jobs and return their ids; SHOW INDEX JOBS lists them,\n"
    "WAIT INDEX JOB id waits for one. Ctrl-C never stops a running build.\n";

// Handles a dot command; false for .quit.
bool DotCommand(SqlShell& shell, const std::string& line) {
  std::istringstream in(line);
  std::string cmd, arg;
  in >> cmd >> arg;
  if (cmd == ".quit" || cmd == ".exit") return false;
  if (cmd == ".help") {
    std::fputs(kHelp, stdout);
  } else if (cmd == ".tables") {
    shell.RunScript("SHOW DATABASES;");
    shell.RunScript("SHOW TABLES;");
  } else if (cmd == ".timer") {
    shell.timer = arg == "on";
  } else {
    std::fprintf(stderr, "error: unknown command %s (try .help)\n", cmd.c_str());
  }
  return true;
}

std::string HistoryPath() {
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.vigil_history";
}

void Interactive(SqlShell& shell) {
  const std::string history = HistoryPath();
  read_history(history.c_str());
  std::string pending;
  for (;;) {
    char* raw = readline(pending.empty() ? "vigil> " : "   ...> ");
    if (raw == nullptr) break;  // Ctrl-D
    std::string line(raw);
    std::free(raw);
    if (pending.empty() && !line.empty() && line[0] == '.') {
      add_history(line.c_str());
      if (!DotCommand(shell, line)) break;
      continue;
    }
    pending += line + "\n";
    if (!sql::IsCompleteInput(pending)) continue;
    add_history(pending.substr(0, pending.size() - 1).c_str());
    shell.RunScript(pending);
    pending.clear();
  }
  write_history(history.c_str());
}

Status RunSql(const Context& ctx, const SqlArgs& args) {
  if (args.csv && args.json) return Status::InvalidArgument("--csv and --json cannot be used together");
  if (!args.commands.empty() && !args.file.empty()) return Status::InvalidArgument("-c and -f cannot be used together");
  VIGIL_ASSIGN_OR_RETURN(Root root, ctx.OpenRoot());
  const bool one_shot = !args.commands.empty() || !args.file.empty();
  ShellOptions options;
  options.format = args.csv ? OutputFormat::kCsv : args.json ? OutputFormat::kJson : OutputFormat::kTable;
  options.wait_jobs = one_shot && !args.detach;
  options.wait_timeout_s = args.wait_timeout_s;
  SqlShell shell(options);
  VIGIL_RETURN_IF_ERROR(shell.Open(root));
  if (!one_shot) {
    if (::isatty(STDIN_FILENO)) {
      Interactive(shell);
      return Status::OK();
    }
    std::stringstream in;
    in << std::cin.rdbuf();
    return shell.RunScript(in.str()) ? Status::OK() : Status::Cancelled("");
  }
  std::string text;
  if (!args.file.empty()) {
    std::ifstream f(args.file);
    if (!f) return Status::NotFound("cannot read " + args.file);
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  } else {
    // Each -c ends a statement; an empty statement (";;") is skipped by the parser.
    for (const auto& c : args.commands) text += c + "\n;\n";
  }
  // The failures were reported as they happened; an empty message only sets the exit status.
  return shell.RunScript(text) ? Status::OK() : Status::Cancelled("");
}

}  // namespace

void AddSqlCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand("sql", "Run SQL: interactive, or -c / -f (waits for admitted index jobs)");
  auto args = std::make_shared<SqlArgs>();
  sub->add_option("-c,--command", args->commands, "Statements to run (repeatable)");
  sub->add_option("-f,--file", args->file, "A file of statements to run");
  sub->add_flag("--csv", args->csv, "RFC 4180 CSV output with a header row");
  sub->add_flag("--json", args->json, "One JSON array of row objects per statement");
  sub->add_flag("--detach", args->detach, "Do not wait for admitted index jobs");
  sub->add_option("--wait-timeout", args->wait_timeout_s, "Seconds to wait for each admitted job")
      ->capture_default_str();
  ctx->actions.emplace_back(sub, [ctx, args] { return RunSql(*ctx, *args); });
}

}  // namespace vigil::cli
