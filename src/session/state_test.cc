#include "session/state.h"

#include <gtest/gtest.h>

#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::session {
namespace {

TEST(StateTest, RoundTripsEveryField) {
  SessionState s;
  s.session_id = "x-1";
  s.stock = Config{{"threads", "2"}};
  s.best = Config{{"threads", "2"}, {"weights", "q8_0"}};
  s.baseline_values = {1.5, 2.5};
  s.noise_floor = 0.012;
  CandidateRecord c;
  c.id = "c001";
  c.verdict = "KEEP";
  c.delta = Config{{"weights", "q8_0"}};
  c.candidate_values = {3, 3.1};
  c.incumbent_trials = {"t0003"};
  s.candidates.push_back(c);
  s.phases.push_back({"prelude", 1, 0, 12.5, "done", ""});
  s.sweep.push_back({});
  s.validated = true;
  s.validated_gain = 0.6;
  auto back = StateFromJson(StateToJson(s));
  ASSERT_OK(back);
  EXPECT_EQ(StateToJson(*back), StateToJson(s));
  EXPECT_EQ(back->candidates[0].delta.ToString(), "weights=q8_0");
  EXPECT_FALSE(StateFromJson("{not json"));
}

TEST(StateTest, EventsAppendAndSurviveATornLine) {
  auto d = sys::TempDir::Create("hone-events");
  ASSERT_TRUE(d);
  std::string path = ((*d)->path() / "events.jsonl").string();
  EventLog log(path);
  ASSERT_OK(log.Append("a", 1.0, {{"k", "v"}, {"n", "42"}}));
  ASSERT_OK(log.Append("b", 2.0));
  // A crash mid-append leaves a partial line.
  auto text = sys::ReadFile(path);
  ASSERT_OK(sys::WriteFileAtomic(path, *text + "{\"seq\":2,\"typ"));
  auto events = ReadEvents(path);
  ASSERT_OK(events);
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].Get("k"), "v");
  EXPECT_EQ((*events)[0].Get("n"), "42");
  EXPECT_EQ((*events)[1].seq, 1);
  EventLog again(path);  // continues the sequence
  ASSERT_OK(again.Append("c", 3.0));
  EXPECT_EQ(ReadEvents(path)->back().seq, 2);
}

}  // namespace
}  // namespace hone::session
