// `vigil demo`: everything through SQL on an embedded root: creates a sample
// table, COPYs generated JSON Lines into it, admits one index of each type as a
// job (run by `vigil supervise`, started on demand, each build in `vigil-worker`)
// and waits for them, then runs one query of each kind and lists the jobs.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "cli/sql_shell.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/ingest/datagen.h"
#include "vigil/ingest/ingest.h"
#include "vigil/jobs/root_jobs.h"

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

// The demo's SQL: the table, its import, one index of each type through jobs
// (waited for), one query of each kind, and the job and index listings.
std::string DemoScript(const DataGenerator& gen, const std::string& file, uint64_t rows) {
  const uint32_t dim = gen.options().dim;
  const std::string partitions = std::to_string(std::min<uint64_t>(64, std::max<uint64_t>(1, rows / 256)));
  std::string query = "[";
  std::vector<float> q(dim);
  gen.Embedding(123, q.data());
  for (uint32_t i = 0; i < dim; ++i) query += (i ? ", " : "") + std::to_string(q[i]);
  query += "]";
  std::string body = gen.Body(7);
  std::string word = body.substr(0, body.find(' '));
  std::string s;
  s += "CREATE TABLE demo.sample (" + gen.schema()->ToString() + ");\n";
  s += "COPY demo.sample FROM '" + file + "' WITH (FORMAT jsonl);\n";
  s += "SELECT count(*) AS rows FROM demo.sample;\n";
  s += "SELECT id, category, ts, substr(body, 1, 40) AS body FROM demo.sample ORDER BY id LIMIT 5;\n";
  s += "CREATE INDEX emb_idx ON demo.sample (emb) USING ANN PROPERTIES (\"index_type\" = \"IVF_PQ\", "
       "\"metric\" = \"l2\", \"num_partitions\" = \"" +
       partitions + "\", \"num_sub_vectors\" = \"8\");\n";
  s += "CREATE INDEX cat_idx ON demo.sample (category) USING BITMAP;\n";
  s += "CREATE INDEX ts_idx ON demo.sample (ts) USING BTREE;\n";
  s += "CREATE INDEX body_idx ON demo.sample (body) USING FTS PROPERTIES (\"tokenizer\" = \"porter\");\n";
  s += "SHOW INDEX JOBS;\n";
  s += "SHOW INDEX FROM demo.sample;\n";
  s += "SELECT id, category, _distance FROM vector_search('demo.sample', 'emb', '" + query +
       "', 5, '{\"nprobes\": 8, \"refine_factor\": 4}');\n";
  s += "SELECT count(*) AS matching FROM demo.sample WHERE category = '" + gen.Category(0) + "';\n";
  s += "SELECT id, _score FROM fts_search('demo.sample', 'body', '" + word + "', 5);\n";
  s +=
      "EXPLAIN ANALYZE SELECT count(*) FROM demo.sample WHERE ts < " + std::to_string(gen.Timestamp(rows / 10)) + ";\n";
  return s;
}

Status RunDemo(const Context& ctx, const DemoArgs& args) {
  VIGIL_ASSIGN_OR_RETURN(Root root, DemoRoot(ctx));
  std::printf("root     %s\n", root.path().c_str());
  VIGIL_ASSIGN_OR_RETURN(TableName name, ParseTableName("demo.sample"));
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<jobs::JobStore> store, jobs::OpenRootJobStore(root));
  catalog::TableCatalog catalog(&root, &store->catalog());
  VIGIL_ASSIGN_OR_RETURN(std::optional<catalog::TableEntry> found, catalog.Find(name));
  const bool exists = found.has_value();
  ShellOptions options;
  options.echo = true;
  options.wait_jobs = true;
  SqlShell shell(options);
  VIGIL_RETURN_IF_ERROR(shell.Open(root));
  if (exists) {
    std::printf("(demo.sample exists; showing it as it is)\n");
    return shell.RunScript("SELECT count(*) AS rows FROM demo.sample; SHOW INDEX FROM demo.sample; SHOW INDEX JOBS;")
               ? Status::OK()
               : Status::Cancelled("");
  }
  if (args.dim % 8 != 0 || args.rows < 256) {
    return Status::InvalidArgument("the demo's IVF_PQ index needs --dim divisible by 8 and at least 256 rows");
  }
  VIGIL_ASSIGN_OR_RETURN(auto gen, SampleGenerator(args));
  VIGIL_ASSIGN_OR_RETURN(std::string tmp, MakeTempDir("vigil-demo-data-"));
  const std::string file = tmp + "/sample.jsonl";
  Status written = WriteJsonl(*gen, file);
  bool ok = written.ok() && shell.RunScript(DemoScript(*gen, file, args.rows));
  ::unlink(file.c_str());
  ::rmdir(tmp.c_str());
  VIGIL_RETURN_IF_ERROR(written);
  return ok ? Status::OK() : Status::Cancelled("");
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
