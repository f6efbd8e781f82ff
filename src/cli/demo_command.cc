// `vigil demo`: creates a sample table with the data generator, imports it
// through the JSON Lines path, prints what the table holds, then builds one
// index of each type and runs one query of each kind (demo_indexes.cc).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "cli/demo_indexes.h"
#include "cli/progress.h"
#include "cli/table_printer.h"
#include "vigil/storage/datagen.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/ingest.h"

namespace vigil::cli {

namespace {

struct DemoArgs {
  uint64_t rows = 20000;
  uint32_t dim = 32;
  size_t show = 5;
};

std::string TempBase() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

Result<std::string> MakeTempDir(const std::string& prefix) {
  std::string tmpl = TempBase() + "/" + prefix + "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::FromErrno(errno, "mkdtemp " + tmpl);
  return tmpl;
}

// The --root root (created when missing or empty), or a fresh temporary one.
Result<Root> DemoRoot(const Context& ctx) {
  if (ctx.root_dir.empty()) {
    VIGIL_ASSIGN_OR_RETURN(std::string dir, MakeTempDir("vigil-demo-"));
    return Root::Init(dir);
  }
  Result<Root> root = Root::Open(ctx.root_dir);
  if (root.ok() || !root.status().Is(StatusCode::kFailedPrecondition)) return root;
  return Root::Init(ctx.root_dir);
}

Result<std::shared_ptr<const DataGenerator>> SampleGenerator(const DemoArgs& args) {
  DatagenOptions g;
  g.rows = args.rows;
  g.dim = args.dim;
  g.latent_dim = std::min<uint32_t>(8, args.dim);
  g.words_per_body = 30;
  return DataGenerator::Make(g);
}

Status CreateSample(const std::string& table_path, const TableName& name, const DataGenerator& gen) {
  VIGIL_ASSIGN_OR_RETURN(std::string tmp, MakeTempDir("vigil-demo-data-"));
  std::string file = tmp + "/sample.jsonl";
  Status st = WriteJsonl(gen, file);
  if (st.ok()) {
    ImportOptions o;
    o.create = true;
    o.ingest.schema = gen.schema();
    ProgressBar bar("importing " + name.ToString());
    o.progress = [&bar](uint64_t rows) { bar.Update(rows); };
    st = ImportFile(table_path, file, o).status();
  }
  ::unlink(file.c_str());
  ::rmdir(tmp.c_str());
  return st;
}

Status PrintTable(const std::string& table_path, const TableName& name, size_t show) {
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(table_path));
  std::printf("table    %s\npath     %s\nversion  %llu\nrows     %s\nschema\n", name.ToString().c_str(),
              table_path.c_str(), static_cast<unsigned long long>(ds->version()), GroupDigits(ds->CountRows()).c_str());
  for (const auto& f : ds->schema()->fields()) {
    std::printf("  %-10s %s%s\n", f.name.c_str(), f.type.ToString().c_str(), f.nullable ? "" : " NOT NULL");
  }
  VIGIL_ASSIGN_OR_RETURN(auto scan, ds->Scan());
  std::vector<std::string> header;
  for (const auto& f : ds->schema()->fields()) header.push_back(f.name);
  std::vector<std::vector<std::string>> rows;
  while (rows.size() < show) {
    VIGIL_ASSIGN_OR_RETURN(auto batch, scan->Next());
    if (!batch) break;
    for (size_t r = 0; r < batch->num_rows && rows.size() < show; ++r) {
      rows.emplace_back();
      for (const auto& col : batch->columns) rows.back().push_back(ValueToString(col.ValueAt(r), col.type()));
    }
  }
  std::printf("first %zu rows\n%s", rows.size(), FormatTable(header, rows).c_str());
  return Status::OK();
}

Status RunDemo(const Context& ctx, const DemoArgs& args) {
  VIGIL_ASSIGN_OR_RETURN(Root root, DemoRoot(ctx));
  std::printf("root     %s\n", root.path().c_str());
  VIGIL_ASSIGN_OR_RETURN(TableName name, ParseTableName("demo.sample"));
  VIGIL_ASSIGN_OR_RETURN(std::string path, root.TablePath(name));
  VIGIL_ASSIGN_OR_RETURN(bool exists, root.TableExists(name));
  VIGIL_ASSIGN_OR_RETURN(auto gen, SampleGenerator(args));
  if (exists) {
    std::printf("(table exists; showing it as it is)\n");
    return PrintTable(path, name, args.show);
  }
  VIGIL_RETURN_IF_ERROR(CreateSample(path, name, *gen));
  VIGIL_RETURN_IF_ERROR(PrintTable(path, name, args.show));
  if (args.dim % 8 != 0 || args.rows < 256) {
    std::printf("(no indexes: the demo's IVF_PQ needs --dim divisible by 8 and at least 256 rows)\n");
    return Status::OK();
  }
  return RunIndexDemo(path, *gen);
}

}  // namespace

void AddDemoCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand(
      "demo", "Create a sample table demo.sample (generated data) in --root or a fresh temporary root and show it");
  auto args = std::make_shared<DemoArgs>();
  sub->add_option("--rows", args->rows, "Rows to generate")->check(CLI::Range(1, 10000000));
  sub->add_option("--dim", args->dim, "Embedding dimension")->check(CLI::Range(1, 4096));
  sub->add_option("--show", args->show, "Rows to print")->check(CLI::Range(0, 1000));
  ctx->actions.emplace_back(sub, [ctx, args]() { return RunDemo(*ctx, *args); });
}

}  // namespace vigil::cli
