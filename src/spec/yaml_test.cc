#include "spec/yaml.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace hone::spec {
namespace {

TEST(FieldTest, TypedGettersWithLocations) {
  auto f = Field::Parse("workload:\n  concurrency: 0\n  name: chat\n", "s.yaml");
  ASSERT_OK(f);
  auto c = (*f)["workload"]["concurrency"].Int(1, 1024);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "s.yaml:2:16: workload.concurrency: must be >= 1 (got 0)");
  EXPECT_EQ(*(*f)["workload"]["name"].Str(), "chat");
}

TEST(FieldTest, MissingFieldPointsAtParent) {
  auto f = Field::Parse("target:\n  adapter: llama.cpp\n", "s.yaml");
  ASSERT_OK(f);
  auto m = (*f)["target"]["model"].Str();
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "s.yaml:2:3: target.model: required field is missing");
  EXPECT_EQ(*(*f)["target"]["port"].IntOr(8080), 8080);
}

TEST(FieldTest, UnknownKeysAreRejected) {
  auto f = Field::Parse("a: 1\nbogus: 2\n", "x.yaml");
  ASSERT_OK(f);
  auto s = f->CheckKeys({"a", "b"});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "x.yaml:2:8: bogus: unknown field (expected one of: a, b)");
}

TEST(FieldTest, SyntaxErrorNamesLine) {
  auto f = Field::Parse("a: [1, 2\nb: 3\n", "bad.yaml");
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("bad.yaml:"), std::string::npos);
  EXPECT_NE(f.error().message.find("syntax error"), std::string::npos);
}

TEST(FieldTest, JsonIsAccepted) {
  auto f = Field::Parse("{\"num_hidden_layers\": 2, \"rope_theta\": 10000.0, \"list\": [1,2]}", "config.json");
  ASSERT_OK(f);
  EXPECT_EQ(*(*f)["num_hidden_layers"].Int(), 2);
  EXPECT_EQ(*(*f)["rope_theta"].Double(), 10000.0);
  EXPECT_EQ(*(*f)["list"].IntList(), (std::vector<int64_t>{1, 2}));
}

TEST(FieldTest, BadTypes) {
  auto f = Field::Parse("n: abc\nb: maybe\nm: {x: 1}\n", "t.yaml");
  ASSERT_OK(f);
  EXPECT_EQ((*f)["n"].Int().error().message, "t.yaml:1:4: n: expected an integer (got 'abc')");
  EXPECT_FALSE((*f)["b"].Bool());
  EXPECT_EQ((*f)["m"].Str().error().message, "t.yaml:3:4: m: expected a scalar value");
}

TEST(FieldTest, MissingFileIsNotFound) {
  auto f = Field::LoadFile("/nonexistent/spec.yaml");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace hone::spec
