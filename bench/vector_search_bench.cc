#include "bench/vector_search_bench.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "bench/bench.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/storage/root.h"

namespace vigil::bench {

DatagenOptions VectorDataOptions(const BenchArgs& args, uint64_t default_rows) {
  DatagenOptions o;
  o.rows = static_cast<uint64_t>(args.Int("rows", static_cast<int64_t>(default_rows)));
  o.dim = static_cast<uint32_t>(args.Int("dim", 128));
  o.latent_dim = static_cast<uint32_t>(args.Int("latent_dim", 16));
  o.noise = std::strtof(args.Str("noise", "0.05").c_str(), nullptr);
  o.columns = {"id", "emb"};
  return o;
}

Status MakeBenchRoot(const DataGenerator& gen, const std::string& dir, const std::string& table) {
  auto props = [](std::string op) {
    TransactionProperties p;
    p.operation = std::move(op);
    return p;
  };
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Init(dir));
  VIGIL_ASSIGN_OR_RETURN(auto store, jobs::OpenRootJobStore(root));
  catalog::TableCatalog catalog(&root, &store->catalog());
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry entry,
                         catalog.Create(TableName{"local", "bench", table}, gen.schema(), props("CREATE_TABLE")));
  VIGIL_ASSIGN_OR_RETURN(auto ds, catalog.Open(TableName{"local", "bench", table}));
  auto reader = gen.NewReader();
  return ds->Append(reader.get(), props("APPEND")).status();
}

Status MakeVectorRoot(const DataGenerator& gen, const std::string& dir) { return MakeBenchRoot(gen, dir, "vectors"); }

std::string VectorSearchScript(const std::vector<float>& queries, uint32_t dim, uint64_t count, uint32_t k,
                               const std::string& options_json, ShellVectors how) {
  const std::string call = "SELECT id, _distance FROM vector_search('bench.vectors', 'emb', ";
  const std::string rest = ", " + std::to_string(k) + ", '" + options_json + "')";
  std::string out;
  if (how == ShellVectors::kPrepared) out = "PREPARE q AS " + call + "$1" + rest + ";\n";
  char buf[32];
  for (uint64_t q = 0; q < count; ++q) {
    const float* v = &queries[q * dim];
    if (how == ShellVectors::kLiteral) {
      out += call + "'[";
      for (uint32_t j = 0; j < dim; ++j) {
        std::snprintf(buf, sizeof buf, "%s%.9g", j == 0 ? "" : ", ", v[j]);
        out += buf;
      }
      out += "]'" + rest + ";\n";
      continue;
    }
    out += "EXECUTE q(X'";
    const auto* bytes = reinterpret_cast<const unsigned char*>(v);  // FLOAT32 little-endian, as stored
    for (size_t b = 0; b < dim * sizeof(float); ++b) {
      std::snprintf(buf, sizeof buf, "%02X", bytes[b]);
      out += buf;
    }
    out += "');\n";
  }
  return out;
}

Result<ShellSearch> TimeShellSearch(const std::string& root_dir, const std::string& script, uint64_t queries) {
  auto t0 = std::chrono::steady_clock::now();
  VIGIL_ASSIGN_OR_RETURN(ProgramRun run,
                         RunProgram({VigilProgram(), "--root", root_dir, "sql", "--csv", "-f", script}));
  ShellSearch s;
  s.qps = static_cast<double>(queries) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t at = 0;
  for (size_t end; at < run.output.size(); at = end + 1) {
    end = std::min(run.output.find('\n', at), run.output.size());
    std::string_view line(run.output.data() + at, end - at);
    if (line == "id,_distance") {
      s.ids.emplace_back();
    } else if (!s.ids.empty() && !line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) {
      s.ids.back().push_back(std::strtoll(std::string(line).c_str(), nullptr, 10));
    }
  }
  if (s.ids.size() != queries) {
    return Status::Internal("the shell answered " + std::to_string(s.ids.size()) + " of " + std::to_string(queries) +
                            " statements:\n" + run.output.substr(0, 2000));
  }
  return s;
}

double RecallAtK(const std::vector<std::vector<int64_t>>& got, const std::vector<faiss::Index::idx_t>& exact,
                 uint32_t k) {
  size_t hits = 0;
  for (size_t q = 0; q < got.size(); ++q) {
    for (int64_t id : got[q]) hits += std::count(exact.begin() + q * k, exact.begin() + (q + 1) * k, id);
  }
  return got.empty() ? 0 : static_cast<double>(hits) / (got.size() * k);
}

}  // namespace vigil::bench
