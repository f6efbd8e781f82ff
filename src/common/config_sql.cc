// The [sql] settings of vigil.toml: server-side file access (COPY, external
// tables) and the statement timeout.
#include "common/config_settings.h"

namespace vigil {

namespace config_detail {

std::vector<Setting> SqlSettings() {
  return {
      {"sql", "copy_allowed_directories", Kind::kPathList, 0, kMaxCopyAllowedDirectories,
       "Server-side file access, as PostgreSQL's pg_read_server_files: a COPY ... FROM\n"
       "'path' run for a principal (not the local user's own `vigil sql` shell, which\n"
       "reads the user's own files) needs ADMIN, and the path with every symbolic\n"
       "link resolved must lie below one of these absolute directories. Empty: no\n"
       "server-side COPY from files at all. Example: [\"/srv/imports\"].",
       VIGIL_LIST_(sql, copy_allowed_directories)},

      {"sql", "external_table_allowed_directories", Kind::kPathList, 0, kMaxCopyAllowedDirectories,
       "Where external tables may live: CREATE EXTERNAL TABLE ... LOCATION 'path' needs\n"
       "ADMIN, and the path with every symbolic link resolved must lie below one of\n"
       "these absolute directories (the resolved path is what is registered). The\n"
       "Lance runner then reads and changes the dataset there with the server's\n"
       "rights, for whoever may ALTER the table. Empty: no external tables can be\n"
       "registered. Example: [\"/srv/lance\"].",
       VIGIL_LIST_(sql, external_table_allowed_directories)},

      {"sql", "statement_timeout", Kind::kDurationMs, 0, kMaxStatementTimeoutMs,
       "A SELECT or EXPLAIN running longer ends with DeadlineExceeded and the session\n"
       "stays usable; a session overrides it with SET statement_timeout = '5s' (an\n"
       "integer there is milliseconds, as in PostgreSQL). One minute stops a runaway\n"
       "query (an unbounded recursive WITH, a cross join) long before it matters and\n"
       "is far above an interactive query. \"<n>ms|s|m|h|d\"; 0 means no timeout.",
       VIGIL_NUM_(sql, statement_timeout_ms)},
  };
}

}  // namespace config_detail

}  // namespace vigil
