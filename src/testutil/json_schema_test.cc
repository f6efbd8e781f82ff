#include "testutil/json_schema.h"

#include <gtest/gtest.h>

namespace vigil::testing {
namespace {

using Json = nlohmann::json;

Json Doc() {
  return Json::parse(R"({
    "components": {"schemas": {
      "Problem": {"type": "object", "required": ["status", "code"],
                  "properties": {"status": {"type": "integer", "minimum": 100, "maximum": 599},
                                 "code": {"type": "string", "pattern": "^[A-Z_]+$"},
                                 "detail": {"type": "string"}},
                  "additionalProperties": false},
      "Cell": {"type": ["null", "integer", "number", "string"]},
      "Row": {"type": "array", "items": {"$ref": "#/components/schemas/Cell"}},
      "Tree": {"type": "object", "properties": {"children": {"type": "array",
               "items": {"$ref": "#/components/schemas/Tree"}}}},
      "Loop": {"$ref": "#/components/schemas/Loop"},
      "a/b~c": {"const": 7}
    }}
  })");
}

Json Ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

TEST(JsonSchema, TypesIncludingNullAndIntegersWrittenAsFloats) {
  JsonSchemaValidator v(Doc());
  EXPECT_TRUE(v.Validate(Json{{"type", "integer"}}, 3).empty());
  EXPECT_TRUE(v.Validate(Json{{"type", "integer"}}, 3.0).empty());
  EXPECT_FALSE(v.Validate(Json{{"type", "integer"}}, 3.5).empty());
  EXPECT_TRUE(v.Validate(Json{{"type", "number"}}, 3).empty());
  EXPECT_FALSE(v.Validate(Json{{"type", "string"}}, 3).empty());
  EXPECT_FALSE(v.Validate(Json{{"type", "object"}}, Json::array()).empty());
  EXPECT_TRUE(v.Validate(Json{{"type", "boolean"}}, false).empty());
  EXPECT_TRUE(v.Validate(Json{{"type", {"string", "null"}}}, nullptr).empty());
  EXPECT_TRUE(v.Validate(Json{{"type", {"string", "null"}}}, "x").empty());
  auto errors = v.Validate(Json{{"type", {"string", "null"}}}, 1);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "/: expected [\"string\",\"null\"], got integer 1");
  EXPECT_TRUE(v.Validate(true, 1).empty());
  EXPECT_FALSE(v.Validate(false, 1).empty());
}

TEST(JsonSchema, ObjectsRequiredPropertiesAndAdditionalProperties) {
  JsonSchemaValidator v(Doc());
  EXPECT_TRUE(v.Validate(Ref("Problem"), {{"status", 404}, {"code", "NOT_FOUND"}}).empty());
  auto missing = v.Validate(Ref("Problem"), {{"status", 404}});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0], "/: required property \"code\" is missing");
  auto extra = v.Validate(Ref("Problem"), {{"status", 404}, {"code", "X"}, {"surprise", 1}});
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_EQ(extra[0], "/: property \"surprise\" is not allowed");
  auto nested = v.Validate(Ref("Problem"), {{"status", 99}, {"code", "lower"}});
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(nested[0], "/code: \"lower\" does not match the pattern \"^[A-Z_]+$\"");
  EXPECT_EQ(nested[1], "/status: 99 is less than the minimum 100");
  // additionalProperties as a schema applies to the properties not listed.
  const Json map = {{"type", "object"},
                    {"properties", {{"n", {{"type", "integer"}}}}},
                    {"additionalProperties", {{"type", "string"}}}};
  EXPECT_TRUE(v.Validate(map, {{"n", 1}, {"a", "x"}}).empty());
  auto bad = v.Validate(map, {{"n", 1}, {"a", 2}});
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0], "/a: expected \"string\", got integer 2");
  // Keywords about objects say nothing about other values.
  EXPECT_EQ(v.Validate(Ref("Problem"), "text").size(), 1u);  // only "type" fails
  EXPECT_TRUE(v.Validate(Json{{"required", {"x"}}}, "text").empty());
}

TEST(JsonSchema, ArraysItemsAndBounds) {
  JsonSchemaValidator v(Doc());
  EXPECT_TRUE(v.Validate(Ref("Row"), Json::array({1, 2.5, "x", nullptr})).empty());
  auto errors = v.Validate(Ref("Row"), Json::array({1, true, Json::object()}));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].substr(0, 3), "/1:");
  EXPECT_EQ(errors[1].substr(0, 3), "/2:");
  const Json bounded = {{"type", "array"}, {"minItems", 1}, {"maxItems", 2}};
  EXPECT_FALSE(v.Validate(bounded, Json::array()).empty());
  EXPECT_TRUE(v.Validate(bounded, Json::array({1})).empty());
  EXPECT_FALSE(v.Validate(bounded, Json::array({1, 2, 3})).empty());
  const Json text = {{"type", "string"}, {"minLength", 1}, {"maxLength", 3}};
  EXPECT_FALSE(v.Validate(text, "").empty());
  EXPECT_TRUE(v.Validate(text, "\xc3\xa9\xc3\xa9\xc3\xa9").empty());  // three characters, six bytes
  EXPECT_FALSE(v.Validate(text, "abcd").empty());
}

TEST(JsonSchema, EnumConstAndNumberBounds) {
  JsonSchemaValidator v(Doc());
  const Json states = {{"enum", {"PENDING", "RUNNING", nullptr}}};
  EXPECT_TRUE(v.Validate(states, "RUNNING").empty());
  EXPECT_TRUE(v.Validate(states, nullptr).empty());
  auto errors = v.Validate(states, "DONE");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "/: \"DONE\" is not one of [\"PENDING\",\"RUNNING\",null]");
  EXPECT_TRUE(v.Validate(Json{{"const", "true"}}, "true").empty());
  EXPECT_FALSE(v.Validate(Json{{"const", "true"}}, true).empty());
  const Json range = {{"exclusiveMinimum", 0}, {"maximum", 10}};
  EXPECT_FALSE(v.Validate(range, 0).empty());
  EXPECT_TRUE(v.Validate(range, 10).empty());
  EXPECT_FALSE(v.Validate(range, 10.5).empty());
}

TEST(JsonSchema, Combinators) {
  JsonSchemaValidator v(Doc());
  const Json one = {{"oneOf", {{{"type", "integer"}}, {{"type", "number"}}}}};
  EXPECT_TRUE(v.Validate(one, 1.5).empty());
  auto both = v.Validate(one, 1);  // an integer is also a number
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0], "/: matches 2 of the oneOf schemas, not exactly one");
  auto neither = v.Validate(one, "x");
  ASSERT_EQ(neither.size(), 1u);
  EXPECT_EQ(neither[0].rfind("/: matches none of the oneOf schemas: [0: ", 0), 0u) << neither[0];
  const Json any = {{"anyOf", {{{"type", "integer"}}, {{"type", "number"}}}}};
  EXPECT_TRUE(v.Validate(any, 1).empty());
  EXPECT_FALSE(v.Validate(any, "x").empty());
  const Json all = {{"allOf", {{{"type", "integer"}}, {{"minimum", 5}}}}};
  EXPECT_TRUE(v.Validate(all, 5).empty());
  EXPECT_EQ(v.Validate(all, 4).size(), 1u);
  EXPECT_TRUE(v.Validate(Json{{"not", {{"type", "null"}}}}, 1).empty());
  EXPECT_FALSE(v.Validate(Json{{"not", {{"type", "null"}}}}, nullptr).empty());
}

TEST(JsonSchema, RefsRecursionAndEscapedPointers) {
  JsonSchemaValidator v(Doc());
  const Json tree = {{"children", {{{"children", Json::array()}}, {{"children", {{{"children", 1}}}}}}}};
  auto errors = v.Validate(Ref("Tree"), tree);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "/children/1/children/0/children: expected \"array\", got integer 1");
  EXPECT_TRUE(v.Validate(Json{{"$ref", "#/components/schemas/a~1b~0c"}}, 7).empty());
  EXPECT_FALSE(v.Validate(Json{{"$ref", "#/components/schemas/a~1b~0c"}}, 8).empty());
  auto loop = v.Validate(Ref("Loop"), 1);
  ASSERT_EQ(loop.size(), 1u);
  EXPECT_NE(loop[0].find("a $ref cycle"), std::string::npos);
  auto dangling = v.Validate(Ref("Nothing"), 1);
  ASSERT_EQ(dangling.size(), 1u);
  EXPECT_EQ(dangling[0], "/: unresolvable $ref \"#/components/schemas/Nothing\"");
  EXPECT_NE(v.Resolve("#/components/schemas/Problem"), nullptr);
  EXPECT_EQ(v.Resolve("#/components/schemas/Nope"), nullptr);
  EXPECT_EQ(v.Resolve("other.json#/x"), nullptr);
  EXPECT_EQ(v.Resolve("#bad-pointer"), nullptr);
}

TEST(JsonSchema, UnknownKeywordsFailInsteadOfPassingAndAnnotationsAreIgnored) {
  JsonSchemaValidator v(Doc());
  auto errors = v.Validate(Json{{"type", "string"}, {"nullable", true}}, nullptr);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0], "/: unsupported schema keyword \"nullable\"");
  EXPECT_EQ(v.Validate(Json{{"uniqueItems", true}}, Json::array()).size(), 1u);
  EXPECT_TRUE(v.Validate(Json{{"type", "string"},
                              {"description", "d"},
                              {"title", "t"},
                              {"format", "date-time"},
                              {"examples", {"x"}},
                              {"x-vigil", 1}},
                         "anything")
                  .empty());
}

TEST(JsonSchema, UnresolvedRefsOfADocument) {
  Json doc = Doc();
  EXPECT_TRUE(JsonSchemaValidator(doc).UnresolvedRefs().empty());
  doc["paths"]["/x"]["get"]["responses"]["200"] = {{"$ref", "#/components/responses/Missing"}};
  auto refs = JsonSchemaValidator(doc).UnresolvedRefs();
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0], "/paths/~1x/get/responses/200: #/components/responses/Missing");
}

}  // namespace
}  // namespace vigil::testing
