#include "testutil/json_schema.h"

#include <cmath>
#include <regex>
#include <set>

namespace vigil::testing {

namespace {

using Json = nlohmann::json;

constexpr int kMaxDepth = 64;

// Keywords that only describe: never an assertion.
const std::set<std::string>& Annotations() {
  static const std::set<std::string> k = {"description", "title",    "format",           "examples",
                                          "example",     "default",  "deprecated",       "readOnly",
                                          "writeOnly",   "$comment", "contentMediaType", "contentEncoding"};
  return k;
}

const std::set<std::string>& Assertions() {
  static const std::set<std::string> k = {"$ref",
                                          "type",
                                          "enum",
                                          "const",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "allOf",
                                          "anyOf",
                                          "oneOf",
                                          "not"};
  return k;
}

std::string TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    case Json::value_t::string:
      return "string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    default:
      return "unknown";
  }
}

bool IsType(const Json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();
    return std::isfinite(d) && d == std::floor(d);
  }
  return false;
}

// A JSON pointer token: "~" -> "~0", "/" -> "~1".
std::string Escape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string Where(const std::string& path) { return path.empty() ? "/" : path; }

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Short(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

std::string Joined(const std::vector<std::string>& errors) {
  std::string out;
  for (size_t i = 0; i < errors.size() && i < 3; ++i) out += (i ? "; " : "") + errors[i];
  if (errors.size() > 3) out += "; ...";
  return out;
}

void FindRefs(const JsonSchemaValidator& v, const Json& node, const std::string& path, std::vector<std::string>* out) {
  if (node.is_object()) {
    for (const auto& [k, child] : node.items()) {
      if (k == "$ref" && child.is_string()) {
        const std::string ref = child.get<std::string>();
        if (v.Resolve(ref) == nullptr) out->push_back(Where(path) + ": " + ref);
      } else {
        FindRefs(v, child, path + "/" + Escape(k), out);
      }
    }
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) FindRefs(v, node[i], path + "/" + std::to_string(i), out);
  }
}

}  // namespace

JsonSchemaValidator::JsonSchemaValidator(nlohmann::json document) : document_(std::move(document)) {}

const nlohmann::json* JsonSchemaValidator::Resolve(const std::string& ref) const {
  if (ref.empty() || ref[0] != '#') return nullptr;
  try {
    const Json::json_pointer ptr(ref.substr(1));
    if (!document_.contains(ptr)) return nullptr;
    return &document_.at(ptr);
  } catch (const Json::exception&) {
    return nullptr;
  }
}

std::vector<std::string> JsonSchemaValidator::UnresolvedRefs() const {
  std::vector<std::string> out;
  FindRefs(*this, document_, "", &out);
  return out;
}

std::vector<std::string> JsonSchemaValidator::Validate(const nlohmann::json& schema,
                                                       const nlohmann::json& instance) const {
  std::vector<std::string> errors;
  Check(schema, instance, "", 0, &errors);
  return errors;
}

void JsonSchemaValidator::Check(const nlohmann::json& schema, const nlohmann::json& v, const std::string& path,
                                int depth, std::vector<std::string>* errors) const {
  auto fail = [&](const std::string& what) { errors->push_back(Where(path) + ": " + what); };
  if (depth > kMaxDepth) return fail("schema nesting deeper than " + std::to_string(kMaxDepth) + " (a $ref cycle?)");
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) fail("no value is allowed here (schema false)");
    return;
  }
  if (!schema.is_object()) return fail("the schema is not an object or a boolean: " + Short(schema));

  for (const auto& [key, arg] : schema.items()) {
    if (Annotations().count(key) || key.rfind("x-", 0) == 0) continue;
    if (!Assertions().count(key)) {
      fail("unsupported schema keyword \"" + key + "\"");
      continue;
    }
    if (key == "$ref") {
      const Json* target = arg.is_string() ? Resolve(arg.get<std::string>()) : nullptr;
      if (target == nullptr) {
        fail("unresolvable $ref " + Short(arg));
      } else {
        Check(*target, v, path, depth + 1, errors);
      }
    } else if (key == "type") {
      std::vector<std::string> types;
      if (arg.is_string()) types.push_back(arg.get<std::string>());
      if (arg.is_array()) {
        for (const Json& t : arg) {
          if (t.is_string()) types.push_back(t.get<std::string>());
        }
      }
      if (types.empty()) {
        fail("\"type\" must be a type name or an array of them");
        continue;
      }
      bool ok = false;
      for (const std::string& t : types) ok = ok || IsType(v, t);
      if (!ok) fail("expected " + Short(arg) + ", got " + TypeName(v) + " " + Short(v));
    } else if (key == "enum") {
      if (!arg.is_array()) {
        fail("\"enum\" must be an array");
        continue;
      }
      bool found = false;
      for (const Json& e : arg) found = found || e == v;
      if (!found) fail(Short(v) + " is not one of " + Short(arg));
    } else if (key == "const") {
      if (arg != v) fail(Short(v) + " is not " + Short(arg));
    } else if (key == "properties") {
      if (!arg.is_object()) {
        fail("\"properties\" must be an object");
        continue;
      }
      if (!v.is_object()) continue;
      for (const auto& [name, sub] : arg.items()) {
        if (v.contains(name)) Check(sub, v[name], path + "/" + Escape(name), depth + 1, errors);
      }
    } else if (key == "required") {
      if (!arg.is_array()) {
        fail("\"required\" must be an array");
        continue;
      }
      if (!v.is_object()) continue;
      for (const Json& name : arg) {
        if (name.is_string() && !v.contains(name.get<std::string>())) {
          fail("required property \"" + name.get<std::string>() + "\" is missing");
        }
      }
    } else if (key == "additionalProperties") {
      if (!v.is_object()) continue;
      const Json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
      for (const auto& [name, sub] : v.items()) {
        if (props != nullptr && props->is_object() && props->contains(name)) continue;
        if (arg.is_boolean() && !arg.get<bool>()) {
          fail("property \"" + name + "\" is not allowed");
        } else {
          Check(arg, sub, path + "/" + Escape(name), depth + 1, errors);
        }
      }
    } else if (key == "items") {
      if (!v.is_array()) continue;
      for (size_t i = 0; i < v.size(); ++i) Check(arg, v[i], path + "/" + std::to_string(i), depth + 1, errors);
    } else if (key == "minItems" || key == "maxItems") {
      if (!arg.is_number_unsigned() && !arg.is_number_integer()) {
        fail("\"" + key + "\" must be an integer");
        continue;
      }
      if (!v.is_array()) continue;
      const auto bound = arg.get<int64_t>();
      const auto n = static_cast<int64_t>(v.size());
      if (key == "minItems" && n < bound) fail(std::to_string(n) + " items, fewer than " + std::to_string(bound));
      if (key == "maxItems" && n > bound) fail(std::to_string(n) + " items, more than " + std::to_string(bound));
    } else if (key == "minLength" || key == "maxLength") {
      if (!arg.is_number_unsigned() && !arg.is_number_integer()) {
        fail("\"" + key + "\" must be an integer");
        continue;
      }
      if (!v.is_string()) continue;
      const auto bound = arg.get<int64_t>();
      const auto n = static_cast<int64_t>(CodePoints(v.get<std::string>()));
      if (key == "minLength" && n < bound)
        fail("a string of " + std::to_string(n) + " characters, fewer than " + std::to_string(bound));
      if (key == "maxLength" && n > bound)
        fail("a string of " + std::to_string(n) + " characters, more than " + std::to_string(bound));
    } else if (key == "pattern") {
      if (!arg.is_string()) {
        fail("\"pattern\" must be a string");
        continue;
      }
      if (!v.is_string()) continue;
      try {
        if (!std::regex_search(v.get<std::string>(), std::regex(arg.get<std::string>(), std::regex::ECMAScript))) {
          fail(Short(v) + " does not match the pattern " + Short(arg));
        }
      } catch (const std::regex_error&) {
        fail("the pattern " + Short(arg) + " is not a valid ECMAScript regular expression");
      }
    } else if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" || key == "exclusiveMaximum") {
      if (!arg.is_number()) {
        fail("\"" + key + "\" must be a number");
        continue;
      }
      if (!v.is_number()) continue;
      const double x = v.get<double>();
      const double b = arg.get<double>();
      if (key == "minimum" && x < b) fail(Short(v) + " is less than the minimum " + Short(arg));
      if (key == "maximum" && x > b) fail(Short(v) + " is more than the maximum " + Short(arg));
      if (key == "exclusiveMinimum" && x <= b) fail(Short(v) + " is not more than " + Short(arg));
      if (key == "exclusiveMaximum" && x >= b) fail(Short(v) + " is not less than " + Short(arg));
    } else if (key == "allOf" || key == "anyOf" || key == "oneOf") {
      if (!arg.is_array() || arg.empty()) {
        fail("\"" + key + "\" must be a non-empty array of schemas");
        continue;
      }
      std::vector<std::vector<std::string>> branch(arg.size());
      size_t passed = 0;
      for (size_t i = 0; i < arg.size(); ++i) {
        Check(arg[i], v, path, depth + 1, &branch[i]);
        passed += branch[i].empty();
      }
      if (key == "allOf") {
        for (auto& b : branch) errors->insert(errors->end(), b.begin(), b.end());
      } else if (passed == 0 || (key == "oneOf" && passed > 1)) {
        std::string why;
        for (size_t i = 0; i < branch.size(); ++i) {
          if (!branch[i].empty()) why += " [" + std::to_string(i) + ": " + Joined(branch[i]) + "]";
        }
        fail(passed == 0 ? "matches none of the " + key + " schemas:" + why
                         : "matches " + std::to_string(passed) + " of the oneOf schemas, not exactly one");
      }
    } else if (key == "not") {
      std::vector<std::string> sub;
      Check(arg, v, path, depth + 1, &sub);
      if (sub.empty()) fail(Short(v) + " matches the schema under \"not\"");
    }
  }
}

}  // namespace vigil::testing
