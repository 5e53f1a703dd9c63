#include "agent/text.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace hone::agent {
namespace {

TEST(TextTest, SanitizeReplacesInvalidSequences) {
  EXPECT_EQ(SanitizeUtf8("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(SanitizeUtf8("cut \xD0"), "cut \xEF\xBF\xBD");
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
}

TEST(TextTest, ClipNeverSplitsACodePoint) {
  std::string s;
  for (int i = 0; i < 60; ++i) s += "\xD0\x96";  // Ж, 2 bytes
  for (size_t max : {0u, 1u, 2u, 3u, 99u, 100u, 101u}) {
    std::string c = ClipUtf8(s, max);
    EXPECT_LE(c.size(), max);
    EXPECT_EQ(c.size() % 2, 0u);
    EXPECT_NO_THROW(nlohmann::json(c).dump());
  }
  std::string line = OneLine("a\nb\t" + s, 50);
  EXPECT_TRUE(line.starts_with("a b "));
  EXPECT_TRUE(line.ends_with("..."));
  EXPECT_LE(line.size(), 50u);
  EXPECT_NO_THROW(nlohmann::json(line).dump());
}

}  // namespace
}  // namespace hone::agent
