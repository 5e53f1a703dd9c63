#include "core/strings.h"

#include <gtest/gtest.h>

namespace hone {
namespace {

TEST(StringsTest, SplitKeepsEmptyFields) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string>{""}));
}

TEST(StringsTest, StrictIntParsing) {
  EXPECT_EQ(*ParseInt(" 42 "), 42);
  EXPECT_EQ(*ParseInt("-7"), -7);
  EXPECT_FALSE(ParseInt("42x"));
  EXPECT_FALSE(ParseInt(""));
  EXPECT_FALSE(ParseInt("99999999999999999999999"));
  EXPECT_EQ(ParseInt("4.5").error().message, "not an integer: '4.5'");
}

TEST(StringsTest, StrictDoubleParsing) {
  EXPECT_DOUBLE_EQ(*ParseDouble("1.5e3"), 1500.0);
  EXPECT_FALSE(ParseDouble("nan"));
  EXPECT_FALSE(ParseDouble("1.5.2"));
}

TEST(StringsTest, Booleans) {
  EXPECT_TRUE(*ParseBool("on"));
  EXPECT_FALSE(*ParseBool("Off"));
  EXPECT_FALSE(ParseBool("maybe"));
}

TEST(StringsTest, ShellQuoting) {
  EXPECT_EQ(ShellQuote("--port=8080"), "--port=8080");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellJoin({"llama-server", "-m", "/m x.gguf"}), "llama-server -m '/m x.gguf'");
}

TEST(StringsTest, LastLines) {
  EXPECT_EQ(LastLines("a\nb\nc\n", 2), "b\nc");
  EXPECT_EQ(LastLines("a\nb\nc", 5), "a\nb\nc");
  EXPECT_EQ(LastLines("", 3), "");
}

TEST(StringsTest, HumanUnits) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(3 * 1024 * 1024), "3.0 MiB");
  EXPECT_EQ(HumanSeconds(0.25), "250 ms");
  EXPECT_EQ(HumanSeconds(75), "1m 15s");
}

TEST(StringsTest, StableHashIsStable) {
  EXPECT_EQ(StableHash("hone"), StableHash("hone"));
  EXPECT_NE(StableHash("hone"), StableHash("hone2"));
  EXPECT_EQ(StableHash("").size(), 16u);
}

}  // namespace
}  // namespace hone
