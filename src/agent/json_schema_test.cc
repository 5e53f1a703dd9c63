#include "agent/json_schema.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace hone::agent {
namespace {

using json = nlohmann::json;

TEST(JsonSchemaTest, AcceptsAConformingValue) {
  ASSERT_OK_AND_ASSIGN(JsonSchema s, JsonSchema::Parse(R"({
    "type": "object", "additionalProperties": false, "required": ["a"],
    "properties": {"a": {"type": "array", "maxItems": 2, "items": {"type": "integer", "minimum": 0}},
                   "b": {"type": ["string", "null"], "maxLength": 3}}})", "t"));
  EXPECT_TRUE(s.Validate(json::parse(R"({"a": [1, 2], "b": "xyz"})")).empty());
  EXPECT_TRUE(s.Validate(json::parse(R"({"a": [], "b": null})")).empty());
}

TEST(JsonSchemaTest, ReportsEveryViolationWithItsPath) {
  ASSERT_OK_AND_ASSIGN(JsonSchema s, JsonSchema::Parse(R"({
    "type": "object", "additionalProperties": false, "required": ["a", "c"],
    "properties": {"a": {"type": "array", "maxItems": 2, "items": {"type": "integer", "minimum": 0}},
                   "b": {"type": "string", "maxLength": 3, "enum": ["x", "yyyy"]}}})", "t"));
  auto v = s.Validate(json::parse(R"({"a": [1, -1, 2.5], "b": "yyyy", "z": 1})"));
  std::string all = JoinViolations(v, 20);
  EXPECT_NE(all.find("/: missing required property 'c'"), std::string::npos) << all;
  EXPECT_NE(all.find("/a: more than 2 items"), std::string::npos) << all;
  EXPECT_NE(all.find("/a/1: -1 < minimum 0"), std::string::npos) << all;
  EXPECT_NE(all.find("/a/2: expected integer, got number"), std::string::npos) << all;
  EXPECT_NE(all.find("/b: string longer than 3"), std::string::npos) << all;
  EXPECT_NE(all.find("unexpected property 'z'"), std::string::npos) << all;
}

TEST(JsonSchemaTest, CountsCodePointsNotBytes) {
  ASSERT_OK_AND_ASSIGN(JsonSchema s, JsonSchema::Parse(R"({"type": "string", "maxLength": 2})", "t"));
  EXPECT_TRUE(s.Validate(json("\xC3\xA9\xC3\xA9")).empty());  // two 2-byte code points
  EXPECT_FALSE(s.Validate(json("abc")).empty());
}

TEST(JsonSchemaTest, RefusesKeywordsItCannotCheck) {
  auto s = JsonSchema::Parse(R"({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}})", "t.json");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("t.json/properties/a: unsupported schema keyword 'pattern'"), std::string::npos)
      << s.error().message;
  EXPECT_FALSE(JsonSchema::Parse(R"({"type": "strin"})", "t"));
  EXPECT_FALSE(JsonSchema::Parse("{not json", "t"));
}

TEST(JsonSchemaTest, TheShippedSchemasLoad) {
  for (const char* name : {"orchestrator", "critic", "robustness", "specialist"}) {
    auto s = JsonSchema::Load((testing::SourceDir() / "data/agent" / (std::string(name) + ".schema.json")).string());
    EXPECT_TRUE(s) << name << ": " << s.error().ToString();
  }
}

}  // namespace
}  // namespace hone::agent
