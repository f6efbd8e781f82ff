// `vigil sql --url`: the shell's statements run on a `vigil serve` server
// through POST /v1/sql, as the user of a bearer token, one statement per
// request, so the shell keeps its local contract exactly: every statement
// runs and reports its own failure, the statements of a script run in order
// and a one-shot run waits for each statement's jobs before the next. Results
// come back as JSON and become sql::ResultSet, printed by the same code as a
// local session's. What differs from a local session:
//   - a BLOB arrives as its table text x'<hex>' and prints so in every format, a
//     non-finite real (JSON has none) as NULL;
//   - a session setting (SET) lasts for the statements after it in this shell:
//     the settings made so far are sent again before each statement, since the
//     server's pooled sessions are reset for every request;
//   - COPY ... FROM 'path' reads the server's file, under the server's rules.
// Every request carries a fresh random Idempotency-Key; a request whose
// connection broke is sent again under the same key (the server replays the
// answer or says it is still running), so a statement never runs twice. A 503
// is retried for reads (job polling) and for a request the server refused
// before reading it; a statement's own failure is never retried.
// Single-threaded.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/sql_shell.h"
#include "vigil/common/status.h"
#include "vigil/sql/result.h"

namespace vigil::cli {

// The bearer token held in the file at `path`, surrounding whitespace trimmed. Refused
// (InvalidArgument naming the file, never its content) when the file is not a regular
// file, is accessible by group or others (like ssh's private keys: chmod 600), is empty,
// or holds anything but one token of printable ASCII.
Result<std::string> ReadTokenFile(const std::string& path);

// One element of POST /v1/sql's "results" as a ResultSet: null, integers, reals and text
// cells; a BLOB is text (the server sends x'<hex>').
Result<sql::ResultSet> ResultFromJson(const nlohmann::json& j);

struct RemoteOptions {
  std::string url;         // "http://host:port"
  std::string token;       // the bearer token; never printed
  std::string token_file;  // where it came from, for messages
};

// Connects to the server (IOError when it cannot be reached).
Result<std::unique_ptr<ShellBackend>> OpenRemoteBackend(const RemoteOptions& options);

}  // namespace vigil::cli
