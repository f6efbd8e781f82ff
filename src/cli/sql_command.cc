// `vigil sql`: the SQL shell. Interactive with line editing and history, or
// one-shot with -c / -f. Results go to stdout as aligned tables, --csv (RFC
// 4180) or --json (one array per statement); progress, notices and warnings go
// to stderr only. A one-shot run waits for the index jobs it admitted (showing
// their progress) unless --detach; the exit status is non-zero when any
// statement fails or a waited job ends FAILED or OUTCOME_UNKNOWN. With --url the
// statements run on a `vigil serve` server as a token's user (sql_remote.h), under
// the same output contract. `vigil nodes` is SHOW NODES, DRAIN NODE or RESUME
// NODE run the same way.
#include <readline/history.h>
#include <readline/readline.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/sql_remote.h"
#include "cli/sql_shell.h"
#include "vigil/sql/ast.h"
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
  std::string url;         // --url or VIGIL_URL
  std::string token_file;  // --token-file or VIGIL_TOKEN_FILE
};

constexpr char kRemoteHelp[] =
    "With --url (or VIGIL_URL) the statements run on a `vigil serve` server, as the user of the\n"
    "bearer token in --token-file (or VIGIL_TOKEN_FILE; the file must be private: chmod 600).\n"
    "Output, stderr lines and exit status follow the local contract. Each statement is sent as\n"
    "its own request (POST /v1/sql, with a fresh Idempotency-Key, retried under the same key when\n"
    "the connection breaks), so every statement runs and reports its own failure, and -c/-f wait\n"
    "for a statement's index jobs before the next, as locally. Remotely, a BLOB comes back as hex\n"
    "text (x'0a1b') and prints so in every format, a non-finite real as NULL (a vector prints as\n"
    "locally); SET lasts for the rest of the shell (it is sent again with each statement);\n"
    "COPY ... FROM 'path' reads the server's files, under its rules. An https:// URL verifies\n"
    "the server's certificate against the system's CAs (or SSL_CERT_FILE) and the URL's host.\n";

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
    if (shell.broken()) break;
  }
  write_history(history.c_str());
}

// The shell on a server: the token read from its file (never printed, never passed on).
Status OpenRemote(const SqlArgs& args, SqlShell* shell) {
  if (args.token_file.empty()) {
    return Status::InvalidArgument(
        "--url needs --token-file FILE (or VIGIL_TOKEN_FILE): a file holding a bearer token");
  }
  RemoteOptions remote;
  remote.url = args.url;
  remote.token_file = args.token_file;
  VIGIL_ASSIGN_OR_RETURN(remote.token, ReadTokenFile(args.token_file));
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<ShellBackend> backend, OpenRemoteBackend(remote));
  shell->Open(std::move(backend));
  return Status::OK();
}

Status RunSql(const Context& ctx, const SqlArgs& args) {
  if (args.csv && args.json) return Status::InvalidArgument("--csv and --json cannot be used together");
  if (!args.commands.empty() && !args.file.empty()) return Status::InvalidArgument("-c and -f cannot be used together");
  if (!args.url.empty() && !ctx.root_dir.empty()) {
    return Status::InvalidArgument(
        "--root (or VIGIL_ROOT) and --url (or VIGIL_URL) cannot be used together: a shell runs on a local root "
        "or on a server");
  }
  if (args.url.empty() && !args.token_file.empty()) {
    return Status::InvalidArgument("--token-file (or VIGIL_TOKEN_FILE) is only for --url (or VIGIL_URL)");
  }
  const bool one_shot = !args.commands.empty() || !args.file.empty();
  ShellOptions options;
  options.format = args.csv ? OutputFormat::kCsv : args.json ? OutputFormat::kJson : OutputFormat::kTable;
  options.wait_jobs = one_shot && !args.detach;
  options.wait_timeout_s = args.wait_timeout_s;
  std::optional<Root> root;  // declared first: it outlives the shell's local session
  SqlShell shell(options);
  if (!args.url.empty()) {
    VIGIL_RETURN_IF_ERROR(OpenRemote(args, &shell));
  } else {
    VIGIL_ASSIGN_OR_RETURN(root, ctx.OpenRoot());
    VIGIL_RETURN_IF_ERROR(shell.Open(*root));
  }
  if (!one_shot) {
    if (::isatty(STDIN_FILENO)) {
      Interactive(shell);
      // A server that refused the token or went away: the failure was reported.
      return shell.broken() ? Status::Cancelled("") : Status::OK();
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

// The options every shell-backed command shares: output format, where to run, as whom.
void AddShellOptions(CLI::App* sub, SqlArgs* args) {
  sub->add_flag("--csv", args->csv, "RFC 4180 CSV output with a header row");
  sub->add_flag("--json", args->json, "One JSON array of row objects per statement");
  sub->add_option("--url", args->url, "A `vigil serve` server to run the statements on (http[s]://host:port)")
      ->envname("VIGIL_URL");
  sub->add_option("--token-file", args->token_file, "With --url: a file (mode 600) holding the bearer token")
      ->envname("VIGIL_TOKEN_FILE");
}

struct NodesArgs {
  SqlArgs sql;
  std::string drain;   // a node id to drain
  std::string resume;  // a node id to resume
};

Status RunNodes(const Context& ctx, NodesArgs args) {
  if (!args.drain.empty() && !args.resume.empty()) {
    return Status::InvalidArgument("--drain and --resume cannot be used together");
  }
  // The change first, alone: a refused one lists nothing.
  if (!args.drain.empty() || !args.resume.empty()) {
    SqlArgs change = args.sql;
    change.commands = {args.drain.empty() ? "RESUME NODE " + sql::QuoteString(args.resume)
                                          : "DRAIN NODE " + sql::QuoteString(args.drain)};
    VIGIL_RETURN_IF_ERROR(RunSql(ctx, change));
  }
  args.sql.commands = {"SHOW NODES"};
  return RunSql(ctx, args.sql);
}

}  // namespace

void AddNodesCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand(
      "nodes", "List the nodes of the root's metadata store (SHOW NODES), or drain or resume one; needs ADMIN");
  auto args = std::make_shared<NodesArgs>();
  sub->add_option("--drain", args->drain,
                  "DRAIN NODE: the node finishes its running attempts, hands over the leader lease and leads "
                  "nothing until resumed");
  sub->add_option("--resume", args->resume, "RESUME NODE: the node may lead again");
  AddShellOptions(sub, &args->sql);
  sub->footer(kRemoteHelp);
  ctx->actions.emplace_back(sub, [ctx, args] { return RunNodes(*ctx, *args); });
}

void AddSqlCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand("sql",
                                  "Run SQL: interactive, or -c / -f (waits for admitted index jobs); "
                                  "locally on --root, or on a server with --url");
  auto args = std::make_shared<SqlArgs>();
  sub->add_option("-c,--command", args->commands, "Statements to run (repeatable)");
  sub->add_option("-f,--file", args->file, "A file of statements to run");
  sub->add_flag("--detach", args->detach, "Do not wait for admitted index jobs");
  sub->add_option("--wait-timeout", args->wait_timeout_s, "Seconds to wait for each admitted job")
      ->capture_default_str();
  AddShellOptions(sub, args.get());
  sub->footer(kRemoteHelp);
  ctx->actions.emplace_back(sub, [ctx, args] { return RunSql(*ctx, *args); });
}

}  // namespace vigil::cli
