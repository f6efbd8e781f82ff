// Test helper: a JSON Schema (2020-12) validator for the subset an OpenAPI 3.1
// document uses, enough to hold a server's answers to its description:
// type (a name or an array of names, "null" for nullable), enum, const,
// properties, required, additionalProperties, items, minItems / maxItems,
// minLength / maxLength, pattern (ECMAScript), minimum / maximum, allOf,
// anyOf, oneOf, not and $ref to a JSON pointer inside the document
// ("#/components/schemas/Problem"). Annotations (description, title, format,
// examples, default, deprecated, readOnly, writeOnly, content*, x-*) are
// ignored. Any other keyword is reported as unsupported rather than skipped,
// so a schema can never pass by using an assertion this validator does not
// check. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vigil::testing {

class JsonSchemaValidator {
 public:
  // `document` is what "$ref": "#/..." resolves against (the whole OpenAPI document).
  explicit JsonSchemaValidator(nlohmann::json document);

  // What is wrong with `instance` under `schema`, one message per failure, each starting
  // with the JSON pointer of the offending value ("/results/0/columns: ..."); empty when
  // the instance is valid.
  std::vector<std::string> Validate(const nlohmann::json& schema, const nlohmann::json& instance) const;

  // The value at a local reference "#/a/b" (JSON pointer, ~0 and ~1 decoded); nullptr
  // when it does not resolve.
  const nlohmann::json* Resolve(const std::string& ref) const;

  // Every "$ref" in the document that does not resolve, as "<where>: <ref>".
  std::vector<std::string> UnresolvedRefs() const;

 private:
  void Check(const nlohmann::json& schema, const nlohmann::json& instance, const std::string& path, int depth,
             std::vector<std::string>* errors) const;

  nlohmann::json document_;
};

}  // namespace vigil::testing
