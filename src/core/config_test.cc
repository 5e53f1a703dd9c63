#include "core/config.h"

#include <gtest/gtest.h>

namespace hone {
namespace {

TEST(ConfigTest, CanonicalStringIsOrdered) {
  Config c;
  c.Set("ubatch", "256");
  c.Set("threads", "2");
  EXPECT_EQ(c.ToString(), "threads=2 ubatch=256");
  EXPECT_EQ(Config{}.ToString(), "(stock)");
}

TEST(ConfigTest, MergeAndDelta) {
  Config base{{"threads", "2"}, {"flash_attn", "on"}};
  Config delta{{"flash_attn", "off"}, {"ubatch", "64"}};
  Config merged = base.Merged(delta);
  EXPECT_EQ(merged.ToString(), "flash_attn=off threads=2 ubatch=64");
  EXPECT_EQ(merged.DeltaFrom(base), delta);
  EXPECT_TRUE(base.DeltaFrom(base).empty());
}

TEST(ConfigTest, HashFollowsContent) {
  Config a{{"threads", "2"}};
  Config b{{"threads", "2"}};
  Config c{{"threads", "1"}};
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_NE(a.Hash(), c.Hash());
  EXPECT_EQ(a.Hash().size(), 12u);
}

}  // namespace
}  // namespace hone
