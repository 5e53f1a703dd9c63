#include "net/sse.h"

#include <gtest/gtest.h>

#include <vector>

namespace hone::net {
namespace {

struct Collected {
  std::vector<std::string> events;
  std::vector<int64_t> times;
  SseParser parser{[this](std::string_view d, int64_t t) {
    events.emplace_back(d);
    times.push_back(t);
  }};
};

TEST(SseTest, EventsSplitAnywhere) {
  const std::string stream = "data: {\"a\":1}\n\n: ping\n\ndata: {\"b\":2}\r\n\r\ndata: [DONE]\n\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    Collected c;
    c.parser.Feed(stream.substr(0, cut), 1);
    c.parser.Feed(stream.substr(cut), 2);
    ASSERT_EQ(c.events.size(), 3u) << cut;
    EXPECT_EQ(c.events[0], "{\"a\":1}");
    EXPECT_EQ(c.events[1], "{\"b\":2}");
    EXPECT_EQ(c.events[2], "[DONE]");
    EXPECT_EQ(c.parser.comments(), 1u);
    EXPECT_FALSE(c.parser.HasPartialEvent());
  }
}

TEST(SseTest, TimestampIsWhenTheEventCompleted) {
  Collected c;
  c.parser.Feed("data: x", 10);
  c.parser.Feed("y\n", 20);
  c.parser.Feed("\n", 30);
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0], "xy");
  EXPECT_EQ(c.times[0], 30);
}

TEST(SseTest, MultiLineDataAndOtherFields) {
  Collected c;
  c.parser.Feed("event: message\nid: 7\ndata: line1\ndata:line2\nretry: 10\n\n", 1);
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0], "line1\nline2");
}

TEST(SseTest, BareCrLineEndingsAndSplitCrLf) {
  Collected c;
  c.parser.Feed("data: a\r", 1);
  c.parser.Feed("\n\r", 2);
  c.parser.Feed("\ndata: b\r\r", 3);
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[0], "a");
  EXPECT_EQ(c.events[1], "b");
}

TEST(SseTest, TruncatedEventIsReportedAsPartial) {
  Collected c;
  c.parser.Feed("data: {\"a\":1}\n\ndata: {\"trunc", 1);
  EXPECT_EQ(c.events.size(), 1u);
  EXPECT_TRUE(c.parser.HasPartialEvent());
}

TEST(SseTest, OversizedEventIsMalformed) {
  SseParser p([](std::string_view, int64_t) {}, 16);
  EXPECT_FALSE(p.Feed("data: 0123456789abcdefXYZ", 1));
  EXPECT_TRUE(p.malformed());
}

}  // namespace
}  // namespace hone::net
