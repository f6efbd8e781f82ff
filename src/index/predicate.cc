// Reference semantics of scalar predicates (scans of uncovered fragments) and
// the value order that BTREE pages and BITMAP dictionaries are sorted by.
// Order: booleans false < true; numbers numerically and exactly across int64
// and double (-0 == +0; NaN equals NaN and sorts above +inf; for DECIMAL an
// int64 is the unscaled value, a double the real value); strings bytewise.
// Pure functions; thread-safe.
#include <cmath>
#include <limits>
#include <optional>

#include "index/scalar_format.h"

namespace vigil::index {

namespace {

int Sign(int64_t a, int64_t b) { return a < b ? -1 : (a > b ? 1 : 0); }

int CompareDoubles(double a, double b) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  return a < b ? -1 : (a > b ? 1 : 0);
}

// Exact comparison of an integer with a real number (NaN is above everything).
int CompareIntToReal(int64_t i, long double x) {
  if (std::isnan(x)) return -1;
  constexpr long double kTwo63 = 9223372036854775808.0L;
  if (x >= kTwo63) return -1;
  if (x < -kTwo63) return 1;
  const long double t = std::trunc(x);
  const int c = Sign(i, static_cast<int64_t>(t));
  if (c != 0) return c;
  const long double frac = x - t;
  return frac > 0 ? -1 : (frac < 0 ? 1 : 0);
}

long double Pow10(int n) {
  long double p = 1;
  for (int k = 0; k < n; ++k) p *= 10;
  return p;
}

// `i` (an int64 value of `type`) against a double; a DECIMAL's double is scaled up first.
int CompareIntToDouble(int64_t i, double d, const DataType& type) {
  long double x = d;
  if (type.id == TypeId::kDecimal && !std::isnan(d)) x *= Pow10(type.scale);
  return CompareIntToReal(i, x);
}

// nullopt when either side is NULL or the two cannot be compared under `type`.
std::optional<int> TryCompare(const Value& a, const Value& b, const DataType& type) {
  if (const auto* ai = std::get_if<int64_t>(&a)) {
    if (const auto* bi = std::get_if<int64_t>(&b)) return Sign(*ai, *bi);
    if (const auto* bd = std::get_if<double>(&b)) return CompareIntToDouble(*ai, *bd, type);
    return std::nullopt;
  }
  if (const auto* ad = std::get_if<double>(&a)) {
    if (const auto* bd = std::get_if<double>(&b)) return CompareDoubles(*ad, *bd);
    if (const auto* bi = std::get_if<int64_t>(&b)) return -CompareIntToDouble(*bi, *ad, type);
    return std::nullopt;
  }
  if (const auto* as = std::get_if<std::string>(&a)) {
    if (const auto* bs = std::get_if<std::string>(&b)) {
      const int c = as->compare(*bs);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    return std::nullopt;
  }
  if (const auto* ab = std::get_if<bool>(&a)) {
    if (const auto* bb = std::get_if<bool>(&b)) return Sign(*ab, *bb);
  }
  return std::nullopt;
}

bool Holds(const std::optional<int>& c, bool (*accept)(int)) { return c.has_value() && accept(*c); }

}  // namespace

int CompareValues(const Value& a, const Value& b, const DataType& type) {
  if (auto c = TryCompare(a, b, type)) return *c;
  return Sign(static_cast<int64_t>(a.index()),
              static_cast<int64_t>(b.index()));  // incomparable kinds
}

bool PredicateMatches(const ScalarPredicate& p, const Value& v, const DataType& type) {
  using Op = ScalarPredicate::Op;
  if (IsNull(v)) return p.op == Op::kIsNull;
  if (p.op == Op::kIsNull || !internal::Comparable(v, type)) return false;
  if (p.op == Op::kIn) {
    for (const Value& x : p.values) {
      if (internal::Comparable(x, type) && TryCompare(v, x, type) == 0) return true;
    }
    return false;
  }
  if (p.op == Op::kBetween) {
    if (p.values.size() != 2 || !internal::Comparable(p.values[0], type) || !internal::Comparable(p.values[1], type)) {
      return false;
    }
    return Holds(TryCompare(v, p.values[0], type), [](int c) { return c >= 0; }) &&
           Holds(TryCompare(v, p.values[1], type), [](int c) { return c <= 0; });
  }
  if (p.values.size() != 1 || !internal::Comparable(p.values[0], type)) return false;
  const std::optional<int> c = TryCompare(v, p.values[0], type);
  switch (p.op) {
    case Op::kEq:
      return Holds(c, [](int x) { return x == 0; });
    case Op::kLt:
      return Holds(c, [](int x) { return x < 0; });
    case Op::kLe:
      return Holds(c, [](int x) { return x <= 0; });
    case Op::kGt:
      return Holds(c, [](int x) { return x > 0; });
    case Op::kGe:
      return Holds(c, [](int x) { return x >= 0; });
    default:
      return false;
  }
}

namespace internal {

bool Comparable(const Value& v, const DataType& type) {
  switch (type.id) {
    case TypeId::kBool:
      return std::holds_alternative<bool>(v);
    case TypeId::kString:
      return std::holds_alternative<std::string>(v);
    case TypeId::kVector:
      return false;
    default:
      return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
  }
}

Status ValidatePredicateShape(const ScalarPredicate& p, const DataType& type) {
  using Op = ScalarPredicate::Op;
  size_t want = 1;
  if (p.op == Op::kBetween) want = 2;
  if (p.op == Op::kIsNull) want = 0;
  if (p.op != Op::kIn && p.values.size() != want) {
    return Status::InvalidArgument("predicate needs " + std::to_string(want) + " value(s); got " +
                                   std::to_string(p.values.size()));
  }
  for (size_t i = 0; i < p.values.size(); ++i) {
    const Value& v = p.values[i];
    if (!IsNull(v) && !Comparable(v, type)) {
      return Status::InvalidArgument("predicate value " + std::to_string(i) + " cannot be compared with a " +
                                     type.ToString() + " column");
    }
  }
  return Status::OK();
}

}  // namespace internal

}  // namespace vigil::index
