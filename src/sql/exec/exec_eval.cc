// Literal coercion by column type and the row-by-row evaluation of WHERE and
// SET expressions, with SQL's three-valued logic. Comparisons of a column with
// a literal coerce the literal to the column's type (the rule INSERT uses), so
// a pushed-down predicate and a scan agree on every row.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include "sql/exec/exec_internal.h"
#include "vigil/index/scalar.h"
#include "vigil/ingest/ingest.h"

namespace vigil::sql {

namespace {

using Pred = index::ScalarPredicate;

// One evaluated operand: a value, the column type it carries (columns and typed
// literals), and the literal it came from (numbers keep their text for DECIMAL).
struct Operand {
  vigil::Value v;
  std::optional<DataType> type;
  std::optional<Literal> literal;
};

bool IsTemporal(const DataType& t) { return t.id == TypeId::kDate || t.id == TypeId::kTimestamp; }
bool IsPlainNumeric(const DataType& t) { return t.IsInteger() || t.id == TypeId::kFloat32 || t.id == TypeId::kFloat64; }

std::string LiteralKindName(const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::kNull:
      return "NULL";
    case Literal::Kind::kBool:
      return l.bool_value ? "TRUE" : "FALSE";
    case Literal::Kind::kString:
      return "string " + QuoteString(l.text.substr(0, 64));
    case Literal::Kind::kDate:
      return "DATE " + QuoteString(l.text);
    case Literal::Kind::kTimestamp:
      return "TIMESTAMP " + QuoteString(l.text);
    default:
      return "number " + l.text;
  }
}

Status Mismatch(const Literal& l, const DataType& type) {
  return Status::InvalidArgument(LiteralKindName(l) + " is not a value of type " + type.ToString());
}

Result<vigil::Value> ParseNumberLiteral(const Literal& l) {
  if (l.kind == Literal::Kind::kInteger) {
    int64_t v = 0;
    const char* b = l.text.data();
    auto [ptr, ec] = std::from_chars(b, b + l.text.size(), v);
    if (ec == std::errc() && ptr == b + l.text.size()) return vigil::Value(v);
    if (l.text.rfind("0x", 0) != 0 && l.text.rfind("-0x", 0) != 0) {
      return Status::InvalidArgument("integer " + l.text + " is out of range for BIGINT");
    }
  }
  char* end = nullptr;
  double d = std::strtod(l.text.c_str(), &end);
  if (end != l.text.c_str() + l.text.size() || !std::isfinite(d)) {
    return Status::InvalidArgument("number " + l.text + " is out of range");
  }
  return vigil::Value(d);
}

// The text of an untyped operand, to parse as another type.
std::string OperandText(const Operand& o) {
  if (o.literal && !o.literal->text.empty()) return o.literal->text;
  if (const auto* i = std::get_if<int64_t>(&o.v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&o.v)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", *d);
    return buf;
  }
  if (const auto* s = std::get_if<std::string>(&o.v)) return *s;
  if (const auto* b = std::get_if<bool>(&o.v)) return *b ? "true" : "false";
  return "";
}

Operand LiteralOperand(const Literal& l) {
  Operand o;
  o.literal = l;
  switch (l.kind) {
    case Literal::Kind::kNull:
      break;
    case Literal::Kind::kBool:
      o.v = l.bool_value;
      break;
    case Literal::Kind::kString:
      o.v = l.text;
      break;
    case Literal::Kind::kDate:
    case Literal::Kind::kTimestamp: {
      DataType t = DataType::Of(l.kind == Literal::Kind::kDate ? TypeId::kDate : TypeId::kTimestamp);
      Result<vigil::Value> v = ParseTextValue(l.text, t);  // validated by the parser
      if (v.ok()) {
        o.v = *v;
        o.type = t;
      }
      break;
    }
    default: {
      Result<vigil::Value> v = ParseNumberLiteral(l);
      if (v.ok()) o.v = *v;
      break;
    }
  }
  return o;
}

// A value of type `from` as a value of `to`: the same type, DATE to TIMESTAMP, or
// plain numbers between numeric types; nullopt when there is no lossless conversion.
std::optional<vigil::Value> ConvertTyped(const vigil::Value& v, const DataType& from, const DataType& to) {
  if (from == to) return v;
  if (from.id == TypeId::kDate && to.id == TypeId::kTimestamp) {
    return vigil::Value(std::get<int64_t>(v) * int64_t{86'400'000'000});
  }
  if (IsPlainNumeric(from) && (to.id == TypeId::kFloat32 || to.id == TypeId::kFloat64)) {
    if (const auto* i = std::get_if<int64_t>(&v)) return vigil::Value(static_cast<double>(*i));
    return v;
  }
  if (from.IsInteger() && to.IsInteger()) return v;  // the column append checks the range
  return std::nullopt;
}

// `o` (not NULL) as a value of `type`, by the literal rules.
Result<vigil::Value> CoerceOperand(const Operand& o, const DataType& type) {
  if (o.literal) return CoerceLiteral(*o.literal, type);
  if (o.type) {
    std::optional<vigil::Value> v = ConvertTyped(o.v, *o.type, type);
    if (v) return *v;
    return Status::InvalidArgument("a " + o.type->ToString() + " value is not a value of type " + type.ToString());
  }
  if (std::holds_alternative<bool>(o.v)) {
    if (type.id == TypeId::kBool) return o.v;
    return Status::InvalidArgument("a boolean is not a value of type " + type.ToString());
  }
  if (std::holds_alternative<std::string>(o.v) || type.IsNumeric()) return ParseTextValue(OperandText(o), type);
  return Status::InvalidArgument("a number is not a value of type " + type.ToString());
}

bool IsNumber(const Operand& o) {
  if (o.type) return IsPlainNumeric(*o.type);
  return std::holds_alternative<int64_t>(o.v) || std::holds_alternative<double>(o.v);
}

double AsDouble(const vigil::Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}

int Sign(double d) { return d < 0 ? -1 : d > 0 ? 1 : 0; }

// Three-way comparison; nullopt when either side is NULL.
Result<std::optional<int>> Compare(const Operand& a, const Operand& b) {
  if (IsNull(a.v) || IsNull(b.v)) return std::optional<int>();
  if (IsNumber(a) && IsNumber(b)) {
    const auto* ai = std::get_if<int64_t>(&a.v);
    const auto* bi = std::get_if<int64_t>(&b.v);
    if (ai && bi) return std::optional<int>(*ai < *bi ? -1 : *ai > *bi ? 1 : 0);
    return std::optional<int>(Sign(AsDouble(a.v) - AsDouble(b.v)));
  }
  const Operand* typed = a.type ? &a : b.type ? &b : nullptr;
  if (typed == nullptr) {
    if (a.v.index() != b.v.index()) return Status::InvalidArgument("cannot compare a string with a number or boolean");
    if (const auto* s = std::get_if<std::string>(&a.v)) {
      int c = s->compare(std::get<std::string>(b.v));
      return std::optional<int>(c < 0 ? -1 : c > 0 ? 1 : 0);
    }
    return std::optional<int>(static_cast<int>(std::get<bool>(a.v)) - static_cast<int>(std::get<bool>(b.v)));
  }
  const Operand& other = typed == &a ? b : a;
  DataType type = *typed->type;
  if (type.id == TypeId::kVector) return Status::InvalidArgument("VECTOR values cannot be compared");
  // DATE vs TIMESTAMP compares as TIMESTAMP.
  if (other.type && other.type->id == TypeId::kTimestamp && type.id == TypeId::kDate) type = *other.type;
  VIGIL_ASSIGN_OR_RETURN(vigil::Value x, CoerceOperand(a, type));
  VIGIL_ASSIGN_OR_RETURN(vigil::Value y, CoerceOperand(b, type));
  return std::optional<int>(index::CompareValues(x, y, type));
}

Result<Operand> EvalOperand(const Expr& e, const RowSource& row);

Result<std::optional<bool>> Truth(const Operand& o) {
  if (IsNull(o.v)) return std::optional<bool>();
  if (const auto* b = std::get_if<bool>(&o.v)) return std::optional<bool>(*b);
  if (IsNumber(o)) return std::optional<bool>(AsDouble(o.v) != 0);
  return Status::InvalidArgument("expected a condition, found a value that is not boolean");
}

bool CompareHolds(BinaryOp op, int c) {
  switch (op) {
    case BinaryOp::kEq:
      return c == 0;
    case BinaryOp::kNe:
      return c != 0;
    case BinaryOp::kLt:
      return c < 0;
    case BinaryOp::kLe:
      return c <= 0;
    case BinaryOp::kGt:
      return c > 0;
    case BinaryOp::kGe:
      return c >= 0;
    default:
      return false;
  }
}

bool IsComparison(BinaryOp op) {
  return op == BinaryOp::kEq || op == BinaryOp::kNe || op == BinaryOp::kLt || op == BinaryOp::kLe ||
         op == BinaryOp::kGt || op == BinaryOp::kGe;
}

std::optional<bool> Not(std::optional<bool> v) { return v ? std::optional<bool>(!*v) : v; }

Result<std::optional<bool>> EvalAndOr(const Expr& e, const RowSource& row) {
  const bool is_and = e.op == BinaryOp::kAnd;
  bool unknown = false;
  for (const Expr& arg : e.args) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<bool> v, EvalCondition(arg, row));
    if (!v) {
      unknown = true;
    } else if (*v != is_and) {
      return v;  // false decides AND, true decides OR
    }
  }
  return unknown ? std::optional<bool>() : std::optional<bool>(is_and);
}

Result<std::optional<bool>> EvalIn(const Expr& e, const RowSource& row) {
  VIGIL_ASSIGN_OR_RETURN(Operand x, EvalOperand(e.args[0], row));
  bool unknown = false;
  for (size_t i = 1; i < e.args.size(); ++i) {
    VIGIL_ASSIGN_OR_RETURN(Operand item, EvalOperand(e.args[i], row));
    VIGIL_ASSIGN_OR_RETURN(std::optional<int> c, Compare(x, item));
    if (!c) {
      unknown = true;
    } else if (*c == 0) {
      return std::optional<bool>(!e.negated);
    }
  }
  if (unknown) return std::optional<bool>();
  return std::optional<bool>(e.negated);
}

Result<std::optional<bool>> EvalBetween(const Expr& e, const RowSource& row) {
  VIGIL_ASSIGN_OR_RETURN(Operand x, EvalOperand(e.args[0], row));
  VIGIL_ASSIGN_OR_RETURN(Operand lo, EvalOperand(e.args[1], row));
  VIGIL_ASSIGN_OR_RETURN(Operand hi, EvalOperand(e.args[2], row));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int> c1, Compare(x, lo));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int> c2, Compare(x, hi));
  std::optional<bool> a = c1 ? std::optional<bool>(*c1 >= 0) : std::nullopt;
  std::optional<bool> b = c2 ? std::optional<bool>(*c2 <= 0) : std::nullopt;
  std::optional<bool> both;
  if ((a && !*a) || (b && !*b)) {
    both = false;
  } else if (a && b) {
    both = true;
  }
  return e.negated ? Not(both) : both;
}

Result<Operand> Arithmetic(BinaryOp op, const Operand& a, const Operand& b) {
  if (IsNull(a.v) || IsNull(b.v)) return Operand{};
  if (!IsNumber(a) || !IsNumber(b)) {
    return Status::InvalidArgument("arithmetic '" + std::string(BinaryOpName(op)) + "' needs numbers");
  }
  const auto* ai = std::get_if<int64_t>(&a.v);
  const auto* bi = std::get_if<int64_t>(&b.v);
  if (ai && bi) {
    int64_t r = 0;
    bool overflow = false;
    switch (op) {
      case BinaryOp::kAdd:
        overflow = __builtin_add_overflow(*ai, *bi, &r);
        break;
      case BinaryOp::kSub:
        overflow = __builtin_sub_overflow(*ai, *bi, &r);
        break;
      case BinaryOp::kMul:
        overflow = __builtin_mul_overflow(*ai, *bi, &r);
        break;
      case BinaryOp::kDiv:
      case BinaryOp::kMod:
        if (*bi == 0) return Status::InvalidArgument("division by zero");
        if (*bi == -1 && *ai == INT64_MIN)
          overflow = true;
        else
          r = op == BinaryOp::kDiv ? *ai / *bi : *ai % *bi;
        break;
      default:
        break;
    }
    if (overflow) return Status::InvalidArgument("integer overflow in '" + std::string(BinaryOpName(op)) + "'");
    return Operand{vigil::Value(r), std::nullopt, std::nullopt};
  }
  double x = AsDouble(a.v), y = AsDouble(b.v), r = 0;
  switch (op) {
    case BinaryOp::kAdd:
      r = x + y;
      break;
    case BinaryOp::kSub:
      r = x - y;
      break;
    case BinaryOp::kMul:
      r = x * y;
      break;
    case BinaryOp::kDiv:
      if (y == 0) return Status::InvalidArgument("division by zero");
      r = x / y;
      break;
    case BinaryOp::kMod:
      if (y == 0) return Status::InvalidArgument("division by zero");
      r = std::fmod(x, y);
      break;
    default:
      break;
  }
  return Operand{vigil::Value(r), std::nullopt, std::nullopt};
}

Result<Operand> EvalOperand(const Expr& e, const RowSource& row) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return LiteralOperand(e.literal);
    case ExprKind::kColumn: {
      VIGIL_ASSIGN_OR_RETURN(auto cell, row.Column(e.column));
      return Operand{std::move(cell.first), cell.second, std::nullopt};
    }
    case ExprKind::kNegate: {
      VIGIL_ASSIGN_OR_RETURN(Operand x, EvalOperand(e.args[0], row));
      return Arithmetic(BinaryOp::kSub, Operand{vigil::Value(int64_t{0}), std::nullopt, std::nullopt}, x);
    }
    case ExprKind::kBinary:
      if (e.op == BinaryOp::kAdd || e.op == BinaryOp::kSub || e.op == BinaryOp::kMul || e.op == BinaryOp::kDiv ||
          e.op == BinaryOp::kMod) {
        VIGIL_ASSIGN_OR_RETURN(Operand x, EvalOperand(e.args[0], row));
        for (size_t i = 1; i < e.args.size(); ++i) {
          VIGIL_ASSIGN_OR_RETURN(Operand y, EvalOperand(e.args[i], row));
          VIGIL_ASSIGN_OR_RETURN(x, Arithmetic(e.op, x, y));
        }
        return x;
      }
      [[fallthrough]];
    default: {
      VIGIL_ASSIGN_OR_RETURN(std::optional<bool> b, EvalCondition(e, row));
      Operand o;
      if (b) o.v = *b;
      return o;
    }
  }
}

// The column and literal of `column op literal` (either order); `flipped` when the literal is first.
bool ColumnAndLiteral(const Expr& e, const Expr** column, const Expr** literal, bool* flipped) {
  if (e.args.size() != 2) return false;
  const Expr& a = e.args[0];
  const Expr& b = e.args[1];
  *flipped = a.kind == ExprKind::kLiteral;
  *column = *flipped ? &b : &a;
  *literal = *flipped ? &a : &b;
  return (*column)->kind == ExprKind::kColumn && (*literal)->kind == ExprKind::kLiteral &&
         (*literal)->literal.kind != Literal::Kind::kNull;
}

std::optional<Pred::Op> PredOp(BinaryOp op, bool flipped) {
  switch (op) {
    case BinaryOp::kEq:
      return Pred::Op::kEq;
    case BinaryOp::kLt:
      return flipped ? Pred::Op::kGt : Pred::Op::kLt;
    case BinaryOp::kLe:
      return flipped ? Pred::Op::kGe : Pred::Op::kLe;
    case BinaryOp::kGt:
      return flipped ? Pred::Op::kLt : Pred::Op::kGt;
    case BinaryOp::kGe:
      return flipped ? Pred::Op::kLe : Pred::Op::kGe;
    default:
      return std::nullopt;
  }
}

// The coerced literals, or nullopt when one is NULL or does not coerce.
std::optional<std::vector<vigil::Value>> CoerceAll(const std::vector<Expr>& items, size_t from, const DataType& type) {
  std::vector<vigil::Value> out;
  for (size_t i = from; i < items.size(); ++i) {
    if (items[i].kind != ExprKind::kLiteral || items[i].literal.kind == Literal::Kind::kNull) return std::nullopt;
    Result<vigil::Value> v = CoerceLiteral(items[i].literal, type);
    if (!v.ok()) return std::nullopt;
    out.push_back(std::move(*v));
  }
  return out;
}

void SplitConjuncts(const Expr& e, std::vector<const Expr*>* out) {
  if (e.kind == ExprKind::kBinary && e.op == BinaryOp::kAnd) {
    for (const Expr& a : e.args) SplitConjuncts(a, out);
    return;
  }
  out->push_back(&e);
}

void CollectColumns(const Expr& e, std::set<std::string>* out) {
  if (e.kind == ExprKind::kColumn) out->insert(e.column);
  for (const Expr& a : e.args) CollectColumns(a, out);
}

}  // namespace

Result<vigil::Value> CoerceLiteral(const Literal& l, const DataType& type) {
  switch (l.kind) {
    case Literal::Kind::kNull:
      return vigil::Value();
    case Literal::Kind::kBool:
      if (type.id != TypeId::kBool) return Mismatch(l, type);
      return vigil::Value(l.bool_value);
    case Literal::Kind::kString:
      return ParseTextValue(l.text, type);
    case Literal::Kind::kDate:
      if (!IsTemporal(type)) return Mismatch(l, type);
      return ParseTextValue(l.text, type);
    case Literal::Kind::kTimestamp:
      if (type.id != TypeId::kTimestamp) return Mismatch(l, type);
      return ParseTextValue(l.text, type);
    default:
      if (!type.IsNumeric()) return Mismatch(l, type);
      return ParseTextValue(l.text, type);
  }
}

Result<std::optional<bool>> EvalCondition(const Expr& e, const RowSource& row) {
  switch (e.kind) {
    case ExprKind::kNot: {
      VIGIL_ASSIGN_OR_RETURN(std::optional<bool> v, EvalCondition(e.args[0], row));
      return Not(v);
    }
    case ExprKind::kIsNull: {
      VIGIL_ASSIGN_OR_RETURN(Operand x, EvalOperand(e.args[0], row));
      return std::optional<bool>(IsNull(x.v) != e.negated);
    }
    case ExprKind::kIn:
      return EvalIn(e, row);
    case ExprKind::kBetween:
      return EvalBetween(e, row);
    case ExprKind::kBinary:
      if (e.op == BinaryOp::kAnd || e.op == BinaryOp::kOr) return EvalAndOr(e, row);
      if (IsComparison(e.op)) {
        VIGIL_ASSIGN_OR_RETURN(Operand a, EvalOperand(e.args[0], row));
        VIGIL_ASSIGN_OR_RETURN(Operand b, EvalOperand(e.args[1], row));
        VIGIL_ASSIGN_OR_RETURN(std::optional<int> c, Compare(a, b));
        if (!c) return std::optional<bool>();
        return std::optional<bool>(CompareHolds(e.op, *c));
      }
      [[fallthrough]];
    default: {
      VIGIL_ASSIGN_OR_RETURN(Operand x, EvalOperand(e, row));
      return Truth(x);
    }
  }
}

Result<vigil::Value> EvalForColumn(const Expr& expr, const RowSource& row, const DataType& type) {
  VIGIL_ASSIGN_OR_RETURN(Operand o, EvalOperand(expr, row));
  if (IsNull(o.v)) return vigil::Value();
  return CoerceOperand(o, type);
}

std::optional<query::ColumnPredicate> ToColumnPredicate(const Expr& e, const Schema& schema) {
  const Expr* column = nullptr;
  const Expr* literal = nullptr;
  bool flipped = false;
  if (e.kind == ExprKind::kBinary && ColumnAndLiteral(e, &column, &literal, &flipped)) {
    std::optional<Pred::Op> op = PredOp(e.op, flipped);
    std::optional<size_t> i = schema.IndexOf(column->column);
    if (!op || !i) return std::nullopt;
    const DataType& type = schema.field(*i).type;
    if (type.id == TypeId::kVector) return std::nullopt;
    std::optional<std::vector<vigil::Value>> v = CoerceAll({*literal}, 0, type);
    if (!v) return std::nullopt;
    return query::ColumnPredicate{schema.field(*i).name, Pred{*op, std::move(*v)}};
  }
  if ((e.kind != ExprKind::kIn && e.kind != ExprKind::kBetween && e.kind != ExprKind::kIsNull) || e.negated ||
      e.args.empty() || e.args[0].kind != ExprKind::kColumn) {
    return std::nullopt;
  }
  std::optional<size_t> i = schema.IndexOf(e.args[0].column);
  if (!i || schema.field(*i).type.id == TypeId::kVector) return std::nullopt;
  const std::string& name = schema.field(*i).name;
  if (e.kind == ExprKind::kIsNull) return query::ColumnPredicate{name, Pred{Pred::Op::kIsNull, {}}};
  std::optional<std::vector<vigil::Value>> v = CoerceAll(e.args, 1, schema.field(*i).type);
  if (!v) return std::nullopt;
  return query::ColumnPredicate{name, Pred{e.kind == ExprKind::kIn ? Pred::Op::kIn : Pred::Op::kBetween, *v}};
}

Result<std::vector<RowAddress>> MatchRows(const query::TableSnapshot& snapshot, const std::optional<Expr>& where) {
  const Schema& schema = *snapshot.dataset()->schema();
  std::vector<query::ColumnPredicate> pushed;
  std::vector<const Expr*> residual;
  if (where) {
    std::vector<const Expr*> conjuncts;
    SplitConjuncts(*where, &conjuncts);
    for (const Expr* c : conjuncts) {
      std::optional<query::ColumnPredicate> p = ToColumnPredicate(*c, schema);
      if (p) {
        pushed.push_back(std::move(*p));
      } else {
        residual.push_back(c);
      }
    }
  }
  std::optional<Roaring64Map> candidates;
  if (!pushed.empty()) {
    VIGIL_ASSIGN_OR_RETURN(candidates, query::FilterRows(snapshot, pushed));
  }
  if (candidates && residual.empty()) {
    std::vector<RowAddress> out;
    out.reserve(candidates->cardinality());
    for (uint64_t a : *candidates) out.push_back(a);
    return out;
  }
  std::set<std::string> names;
  for (const Expr* c : residual) CollectColumns(*c, &names);
  ScanOptions scan;
  for (const std::string& n : names) {
    std::optional<size_t> i = schema.IndexOf(n);
    if (!i) return Status::InvalidArgument("table has no column '" + n + "'");
    scan.columns.push_back(schema.field(*i).name);
  }
  if (scan.columns.empty()) scan.columns.push_back(schema.field(0).name);
  VIGIL_ASSIGN_OR_RETURN(auto reader, snapshot.dataset()->Scan(scan));
  std::vector<RowAddress> out;
  while (true) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, reader->Next());
    if (!batch) break;
    BatchRow row(*batch, "");
    for (size_t r = 0; r < batch->num_rows; ++r) {
      RowAddress addr = batch->row_addresses[r];
      if (candidates && !candidates->contains(addr)) continue;
      row.set_row(r);
      bool keep = true;
      for (const Expr* c : residual) {
        VIGIL_ASSIGN_OR_RETURN(std::optional<bool> v, EvalCondition(*c, row));
        if (!v || !*v) {
          keep = false;
          break;
        }
      }
      if (keep) out.push_back(addr);
    }
  }
  return out;
}

}  // namespace vigil::sql
