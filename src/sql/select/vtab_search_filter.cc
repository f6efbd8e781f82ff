#include "sql/select/vtab_search_filter.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "sql/select/vtab.h"
#include "vigil/common/bounds.h"
#include "vigil/common/json_nesting.h"
#include "vigil/index/ivf_pq.h"
#include "vigil/ingest/ingest.h"
#include "vigil/sql/parser.h"

namespace vigil::sql::internal {

namespace {

using Op = index::ScalarPredicate::Op;
using Conj = std::vector<query::ColumnPredicate>;
using Dnf = std::vector<Conj>;

Result<uint32_t> PositiveInt(const nlohmann::json& v, const std::string& key, bool allow_zero) {
  if (!v.is_number_integer() || v.get<int64_t>() < (allow_zero ? 0 : 1) || v.get<int64_t>() > 1'000'000) {
    return Status::InvalidArgument("option \"" + key + "\" must be an integer in " + (allow_zero ? "0" : "1") +
                                   "..1000000");
  }
  return static_cast<uint32_t>(v.get<int64_t>());
}

Result<Op> OpFromText(const std::string& op) {
  static const std::pair<const char*, Op> kOps[] = {
      {"=", Op::kEq},  {"<", Op::kLt},  {"<=", Op::kLe},           {">", Op::kGt},
      {">=", Op::kGe}, {"IN", Op::kIn}, {"BETWEEN", Op::kBetween}, {"ISNULL", Op::kIsNull}};
  for (const auto& [text, value] : kOps) {
    if (op == text) return value;
  }
  return Status::Internal("unknown prefilter operator " + op);
}

Result<const Field*> FieldOf(const Schema& schema, const std::string& column) {
  auto idx = schema.IndexOf(column);
  if (!idx) return Status::InvalidArgument("unknown column '" + column + "' in the filter");
  const Field& f = schema.field(*idx);
  if (f.type.id == TypeId::kVector || f.type.id == TypeId::kDecimal) {
    return Status::NotSupported("column '" + column + "' of type " + f.type.ToString() + " cannot be filtered");
  }
  return &f;
}

// A literal of the filter as a value of `field`'s type; nullopt for NULL.
Result<std::optional<Value>> LiteralValue(const Field& field, const Literal& lit) {
  if (lit.kind == Literal::Kind::kNull) return std::optional<Value>();
  if (lit.kind == Literal::Kind::kBool) {
    if (field.type.id != TypeId::kBool) return Status::InvalidArgument("a boolean compared with '" + field.name + "'");
    return std::optional<Value>(Value(lit.bool_value));
  }
  bool text_kind =
      lit.kind == Literal::Kind::kString || lit.kind == Literal::Kind::kDate || lit.kind == Literal::Kind::kTimestamp;
  if (text_kind !=
      (field.type.id == TypeId::kString || field.type.id == TypeId::kDate || field.type.id == TypeId::kTimestamp)) {
    return Status::InvalidArgument("filter value '" + lit.text + "' does not match column '" + field.name + "' (" +
                                   field.type.ToString() + ")");
  }
  auto v = ParseTextValue(lit.text, field.type);
  if (!v.ok()) return v.status().WithContext("filter value for column '" + field.name + "'");
  return std::optional<Value>(std::move(*v));
}

Result<Dnf> Product(const Dnf& a, const Dnf& b) {
  if (a.size() * b.size() > kMaxFilterTerms) {
    return Status::InvalidArgument("the filter expands to more than " + std::to_string(kMaxFilterTerms) + " terms");
  }
  Dnf out;
  for (const auto& x : a) {
    for (const auto& y : b) {
      Conj c = x;
      c.insert(c.end(), y.begin(), y.end());
      out.push_back(std::move(c));
    }
  }
  return out;
}

Dnf Single(const std::string& column, Op op, std::vector<Value> values) {
  return Dnf{Conj{query::ColumnPredicate{column, {op, std::move(values)}}}};
}

Op Flip(Op op) {
  switch (op) {
    case Op::kLt:
      return Op::kGt;
    case Op::kLe:
      return Op::kGe;
    case Op::kGt:
      return Op::kLt;
    case Op::kGe:
      return Op::kLe;
    default:
      return op;
  }
}

// column OP value, negated when asked (NOT x < v is x >= v; x != v is x < v OR x > v).
Dnf Comparison(const std::string& column, BinaryOp op, const Value& v, bool negate) {
  if (op == BinaryOp::kNe) {
    op = BinaryOp::kEq;
    negate = !negate;
  }
  if (op == BinaryOp::kEq) {
    if (!negate) return Single(column, Op::kEq, {v});
    Dnf out = Single(column, Op::kLt, {v});
    out.push_back(Conj{query::ColumnPredicate{column, {Op::kGt, {v}}}});
    return out;
  }
  Op o = op == BinaryOp::kLt ? Op::kLt : op == BinaryOp::kLe ? Op::kLe : op == BinaryOp::kGt ? Op::kGt : Op::kGe;
  if (negate) o = o == Op::kLt ? Op::kGe : o == Op::kLe ? Op::kGt : o == Op::kGt ? Op::kLe : Op::kLt;
  return Single(column, o, {v});
}

Result<Dnf> ToDnf(const Schema& schema, const Expr& e, bool negate);

Result<Dnf> Junction(const Schema& schema, const Expr& e, bool negate) {
  const bool conjunction = (e.op == BinaryOp::kAnd) != negate;
  Dnf acc;
  bool first = true;
  for (const auto& arg : e.args) {
    VIGIL_ASSIGN_OR_RETURN(Dnf d, ToDnf(schema, arg, negate));
    if (first) {
      acc = std::move(d);
      first = false;
    } else if (conjunction) {
      VIGIL_ASSIGN_OR_RETURN(acc, Product(acc, d));
    } else {
      acc.insert(acc.end(), d.begin(), d.end());
      if (acc.size() > kMaxFilterTerms) return Status::InvalidArgument("the filter has too many OR terms");
    }
  }
  return acc;
}

Result<Dnf> BinaryComparison(const Schema& schema, const Expr& e, bool negate) {
  if (e.args.size() != 2) return Status::InvalidArgument("malformed comparison in the filter");
  const Expr* col = &e.args[0];
  const Expr* lit = &e.args[1];
  BinaryOp op = e.op;
  if (col->kind != ExprKind::kColumn) {
    std::swap(col, lit);
    Op flipped = Flip(op == BinaryOp::kLt   ? Op::kLt
                      : op == BinaryOp::kLe ? Op::kLe
                      : op == BinaryOp::kGt ? Op::kGt
                      : op == BinaryOp::kGe ? Op::kGe
                                            : Op::kEq);
    if (flipped == Op::kLt) op = BinaryOp::kLt;
    if (flipped == Op::kLe) op = BinaryOp::kLe;
    if (flipped == Op::kGt) op = BinaryOp::kGt;
    if (flipped == Op::kGe) op = BinaryOp::kGe;
  }
  if (col->kind != ExprKind::kColumn || lit->kind != ExprKind::kLiteral) {
    return Status::InvalidArgument("the filter supports comparisons of a column with a literal");
  }
  VIGIL_ASSIGN_OR_RETURN(const Field* f, FieldOf(schema, col->column));
  VIGIL_ASSIGN_OR_RETURN(auto v, LiteralValue(*f, lit->literal));
  if (!v) return Dnf{};  // a comparison with NULL is never true
  return Comparison(f->name, op, *v, negate);
}

Result<Dnf> InList(const Schema& schema, const Expr& e, bool negate) {
  if (e.args.empty() || e.args[0].kind != ExprKind::kColumn) {
    return Status::InvalidArgument("the filter supports IN on a column");
  }
  VIGIL_ASSIGN_OR_RETURN(const Field* f, FieldOf(schema, e.args[0].column));
  std::vector<Value> values;
  for (size_t i = 1; i < e.args.size(); ++i) {
    if (e.args[i].kind != ExprKind::kLiteral) return Status::InvalidArgument("IN lists of the filter hold literals");
    VIGIL_ASSIGN_OR_RETURN(auto v, LiteralValue(*f, e.args[i].literal));
    if (v) values.push_back(std::move(*v));
  }
  if (e.negated == negate) return values.empty() ? Dnf{} : Single(f->name, Op::kIn, values);
  Dnf acc{Conj{}};
  for (const auto& v : values) {
    VIGIL_ASSIGN_OR_RETURN(acc, Product(acc, Comparison(f->name, BinaryOp::kNe, v, false)));
  }
  return acc;
}

Result<Dnf> Between(const Schema& schema, const Expr& e, bool negate) {
  if (e.args.size() != 3 || e.args[0].kind != ExprKind::kColumn || e.args[1].kind != ExprKind::kLiteral ||
      e.args[2].kind != ExprKind::kLiteral) {
    return Status::InvalidArgument("the filter supports BETWEEN of a column and two literals");
  }
  VIGIL_ASSIGN_OR_RETURN(const Field* f, FieldOf(schema, e.args[0].column));
  VIGIL_ASSIGN_OR_RETURN(auto lo, LiteralValue(*f, e.args[1].literal));
  VIGIL_ASSIGN_OR_RETURN(auto hi, LiteralValue(*f, e.args[2].literal));
  if (!lo || !hi) return Dnf{};
  if (e.negated == negate) return Single(f->name, Op::kBetween, {*lo, *hi});
  Dnf out = Single(f->name, Op::kLt, {*lo});
  out.push_back(Conj{query::ColumnPredicate{f->name, {Op::kGt, {*hi}}}});
  return out;
}

Result<Dnf> ToDnf(const Schema& schema, const Expr& e, bool negate) {
  switch (e.kind) {
    case ExprKind::kNot:
      return ToDnf(schema, e.args.at(0), !negate);
    case ExprKind::kBinary:
      if (e.op == BinaryOp::kAnd || e.op == BinaryOp::kOr) return Junction(schema, e, negate);
      if (e.op == BinaryOp::kEq || e.op == BinaryOp::kNe || e.op == BinaryOp::kLt || e.op == BinaryOp::kLe ||
          e.op == BinaryOp::kGt || e.op == BinaryOp::kGe) {
        return BinaryComparison(schema, e, negate);
      }
      return Status::InvalidArgument("the filter supports no arithmetic");
    case ExprKind::kIn:
      return InList(schema, e, negate);
    case ExprKind::kBetween:
      return Between(schema, e, negate);
    case ExprKind::kIsNull: {
      if (e.args.empty() || e.args[0].kind != ExprKind::kColumn) {
        return Status::InvalidArgument("the filter supports IS NULL on a column");
      }
      if (e.negated != negate) return Status::NotSupported("IS NOT NULL is not supported in a filter");
      VIGIL_ASSIGN_OR_RETURN(const Field* f, FieldOf(schema, e.args[0].column));
      return Single(f->name, Op::kIsNull, {});
    }
    default:
      return Status::InvalidArgument("the filter must be a predicate over the table's columns");
  }
}

}  // namespace

Result<SearchOptions> ParseSearchOptions(const std::string& json, uint32_t k) {
  SearchOptions out;
  out.query.k = k;
  if (json.empty()) return out;
  VIGIL_RETURN_IF_ERROR(CheckJsonNesting(json, bounds::kMaxJsonDepth, "vector_search options"));
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("vector_search options must be a JSON object, got: " + json.substr(0, 200));
  }
  for (const auto& [key, v] : j.items()) {
    if (key == "nprobes") {
      VIGIL_ASSIGN_OR_RETURN(out.query.nprobes, PositiveInt(v, key, false));
    } else if (key == "refine_factor") {
      VIGIL_ASSIGN_OR_RETURN(out.query.refine_factor, PositiveInt(v, key, true));
    } else if (key == "use_index") {
      if (!v.is_boolean()) return Status::InvalidArgument("option \"use_index\" must be true or false");
      out.query.use_index = v.get<bool>();
    } else if (key == "metric") {
      if (!v.is_string()) return Status::InvalidArgument("option \"metric\" must be a string");
      VIGIL_ASSIGN_OR_RETURN(auto m, index::ParseMetric(v.get<std::string>()));
      out.query.metric = m;
    } else if (key == "filter") {
      if (!v.is_string()) return Status::InvalidArgument("option \"filter\" must be a string");
      out.filter = v.get<std::string>();
    } else {
      return Status::InvalidArgument("unknown vector_search option \"" + key +
                                     "\" (known: nprobes, refine_factor, use_index, metric, filter)");
    }
  }
  const uint64_t candidates = uint64_t{k} * out.query.refine_factor;
  if (candidates > index::kIvfPqMaxSearchK) {
    return Status::InvalidArgument("option \"refine_factor\" = " + std::to_string(out.query.refine_factor) +
                                   " re-ranks k x refine_factor = " + std::to_string(candidates) +
                                   " candidates; at most " + std::to_string(index::kIvfPqMaxSearchK) +
                                   " (lower refine_factor or k)");
  }
  return out;
}

Result<std::vector<query::ColumnPredicate>> ParsePrefilter(const Schema& schema, const std::string& spec,
                                                           sqlite3_value** values, int num_values, bool* empty) {
  std::vector<query::ColumnPredicate> out;
  if (spec.empty()) return out;
  auto j = nlohmann::json::parse(spec, nullptr, false);
  if (!j.is_array()) return Status::Internal("malformed prefilter spec");
  for (const auto& item : j) {
    VIGIL_ASSIGN_OR_RETURN(const Field* f, FieldOf(schema, item.at("c").get<std::string>()));
    VIGIL_ASSIGN_OR_RETURN(Op op, OpFromText(item.at("o").get<std::string>()));
    query::ColumnPredicate cp{f->name, {op, {}}};
    for (const auto& n : item.at("v")) {
      int i = n.get<int>();
      if (i < 0 || i >= num_values || values[i] == nullptr) return Status::Internal("prefilter value missing");
      if (sqlite3_value_type(values[i]) == SQLITE_NULL) {
        if (op != Op::kIn) *empty = true;
        continue;
      }
      auto v = ToVigilValue(values[i], f->type);
      if (!v) {
        return Status::InvalidArgument("prefilter value for column '" + f->name + "' is not a " + f->type.ToString() +
                                       " (" + reinterpret_cast<const char*>(sqlite3_value_text(values[i])) + ")");
      }
      cp.predicate.values.push_back(std::move(*v));
    }
    if (op == Op::kIn && cp.predicate.values.empty()) *empty = true;
    out.push_back(std::move(cp));
  }
  return out;
}

Result<std::vector<std::vector<query::ColumnPredicate>>> FilterToDnf(const Schema& schema, const std::string& filter) {
  static const std::string kPrefix = "DELETE FROM t WHERE ";
  ParseError error;
  auto stmt = ParseStatement(kPrefix + filter, &error);
  if (!stmt.ok()) {
    size_t col = error.pos.column > kPrefix.size() ? error.pos.column - kPrefix.size() : 1;
    return Status::InvalidArgument("filter option, column " + std::to_string(col) + ": " + error.message);
  }
  const auto* del = std::get_if<DeleteStatement>(&stmt->node);
  if (del == nullptr || !del->where) return Status::InvalidArgument("the filter option must be one predicate");
  return ToDnf(schema, *del->where, false);
}

void MergeHits(std::vector<query::VectorHit>* hits, uint32_t k) {
  std::sort(hits->begin(), hits->end(), [](const query::VectorHit& a, const query::VectorHit& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.row < b.row);
  });
  std::set<RowAddress> seen;
  std::vector<query::VectorHit> out;
  for (const auto& h : *hits) {
    if (out.size() >= k) break;
    if (seen.insert(h.row).second) out.push_back(h);
  }
  *hits = std::move(out);
}

std::string DescribeSearch(const std::string& column, const SearchOptions& opts,
                           const std::vector<query::ColumnPredicate>& prefilter, size_t filter_terms) {
  std::string out = "column " + column + ", k " + std::to_string(opts.query.k);
  out += opts.query.use_index ? ", nprobes " + std::to_string(opts.query.nprobes)
                              : std::string(", exact (use_index false)");
  if (opts.query.refine_factor > 0) out += ", refine_factor " + std::to_string(opts.query.refine_factor);
  if (!prefilter.empty()) {
    out += ", prefilter:";
    for (size_t i = 0; i < prefilter.size(); ++i) out += (i ? " AND " : " ") + prefilter[i].column;
  }
  if (!opts.filter.empty()) out += ", filter: " + std::to_string(filter_terms) + " term(s)";
  return out;
}

}  // namespace vigil::sql::internal
