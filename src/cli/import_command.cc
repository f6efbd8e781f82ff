// `vigil import db.table FILE [--format F] [--create]`.
#include <cstdio>

#include "cli/commands.h"
#include "cli/progress.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/ingest/ingest.h"
#include "vigil/jobs/root_jobs.h"

namespace vigil::cli {

namespace {

struct ImportArgs {
  std::string table;
  std::string file;
  std::string format;
  bool create = false;
};

Status RunImport(const Context& ctx, const ImportArgs& args) {
  VIGIL_ASSIGN_OR_RETURN(TableName name, ParseTableName(args.table));
  VIGIL_ASSIGN_OR_RETURN(Root root, ctx.OpenRoot());
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<jobs::JobStore> store, jobs::OpenRootJobStore(root));
  catalog::TableCatalog catalog(&root, &store->catalog());
  ImportOptions options;
  options.create = args.create;
  if (!args.format.empty()) {
    VIGIL_ASSIGN_OR_RETURN(options.ingest.format, ParseIngestFormat(args.format));
  }
  ProgressBar bar("importing " + name.ToString());
  options.progress = [&bar](uint64_t rows) { bar.Update(rows); };
  const int64_t start = root.env()->MonotonicMicros();
  Result<ImportResult> r = catalog.Import(name, args.file, options);
  bar.Finish();
  if (r.status().Is(StatusCode::kNotFound) && !args.create) {
    return r.status().WithContext("import into " + name.ToString() + " (use --create to create it from the file)");
  }
  if (!r.ok()) return r.status().WithContext("import into " + name.ToString() + " failed; nothing was committed");
  double secs = static_cast<double>(root.env()->MonotonicMicros() - start) / 1e6;
  std::printf("%s %s rows into %s (version %llu) in %.2fs (%s rows/s)\n",
              r->created ? "created table with" : "imported", GroupDigits(r->rows).c_str(), name.ToString().c_str(),
              static_cast<unsigned long long>(r->version), secs,
              GroupDigits(secs > 0 ? static_cast<uint64_t>(r->rows / secs) : r->rows).c_str());
  return Status::OK();
}

}  // namespace

void AddImportCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand("import", "Append a CSV, JSON Lines, .fvecs or .npy file to a table in one commit");
  auto args = std::make_shared<ImportArgs>();
  sub->add_option("TABLE", args->table, "Table as db.table or local.db.table")->required();
  sub->add_option("FILE", args->file, "Input file")->required();
  sub->add_option("--format", args->format, "csv | jsonl | fvecs | npy (default: from the extension)")
      ->check(CLI::IsMember({"csv", "jsonl", "json", "ndjson", "fvecs", "npy"}));
  sub->add_flag("--create", args->create, "Create the table (schema inferred from the file) when it does not exist");
  sub->footer(
      "Vector files create (id BIGINT, vector VECTOR(FLOAT32, dim)); CSV needs a header; vectors in CSV/JSONL are\n"
      "JSON arrays. A bad row fails the whole import with file:line:column and leaves the table unchanged.");
  ctx->actions.emplace_back(sub, [ctx, args]() { return RunImport(*ctx, *args); });
}

}  // namespace vigil::cli
