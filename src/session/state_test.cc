#include "session/state.h"

#include <gtest/gtest.h>

#include "core/strings.h"
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
  c.verdict = Verdict::kKeep;
  c.delta = Config{{"weights", "q8_0"}};
  c.candidate_values = {3, 3.1};
  c.incumbent_trials = {"t0003"};
  s.candidates.push_back(c);
  s.phases.push_back({Phase::kPrelude, 1, 0, 12.5, PhaseStatus::kDone, ""});
  s.sweep.push_back({});
  s.validated = true;
  s.validated_gain = 0.6;
  s.accuracy_gate.prepared = true;
  s.accuracy_gate.positions = 128;
  s.accuracy_gate.aa_ran = true;
  s.accuracy_gate.aa_agreement = 0.97;
  s.accuracy_gate.aa_kl = 0.003;
  s.accuracy_gate.nondeterministic = true;
  s.accuracy_gate.note = "widened";
  s.learned_conflicts = {Config{{"cache_type_k", "q8_0"}, {"flash_attn", "on"}}};
  auto back = StateFromJson(StateToJson(s));
  ASSERT_OK(back);
  EXPECT_EQ(StateToJson(*back), StateToJson(s));
  EXPECT_EQ(back->candidates[0].delta.ToString(), "weights=q8_0");
  EXPECT_EQ(back->accuracy_gate.positions, 128);
  EXPECT_EQ(back->accuracy_gate.aa_kl, 0.003);
  EXPECT_TRUE(back->accuracy_gate.nondeterministic);
  ASSERT_EQ(back->learned_conflicts.size(), 1u);
  EXPECT_EQ(back->learned_conflicts[0].ToString(), "cache_type_k=q8_0 flash_attn=on");
  EXPECT_FALSE(StateFromJson("{not json"));
}

// The typed states are written as the words docs/session-state.md lists, and read back.
TEST(StateTest, EnumsAreWrittenAsTheirNamesAndUnknownNamesAreErrors) {
  SessionState s;
  s.phase = Phase::kSweep;
  CandidateRecord c;
  c.id = "c001";
  c.phase = CandidatePhase::kPrelude;
  c.verdict = Verdict::kScreenedOut;
  c.recipe_id = 7;
  s.candidates.push_back(c);
  s.phases.push_back({Phase::kFramework, 2, 1, 2, PhaseStatus::kInterrupted, ""});
  SweepPointRecord p;
  p.verdict = Verdict::kInvalid;
  s.sweep.push_back(p);
  s.sweep.push_back({});  // not measured: ""
  s.validation_verdict = Verdict::kNotValidated;
  const std::string text = StateToJson(s);
  for (const char* word : {"\"phase\": \"sweep\"", "\"phase\": \"prelude\"", "\"verdict\": \"SCREENED_OUT\"",
                           "\"status\": \"interrupted\"", "\"verdict\": \"INVALID\"", "\"verdict\": \"\"",
                           "\"validation_verdict\": \"NOT_VALIDATED\"", "\"recipe_id\": 7"}) {
    EXPECT_NE(text.find(word), std::string::npos) << word;
  }
  ASSERT_OK_AND_ASSIGN(SessionState back, StateFromJson(text));
  EXPECT_EQ(back.phase, Phase::kSweep);
  EXPECT_EQ(back.candidates[0].phase, CandidatePhase::kPrelude);
  EXPECT_EQ(back.candidates[0].verdict, Verdict::kScreenedOut);
  EXPECT_EQ(back.candidates[0].recipe_id, 7);
  EXPECT_EQ(back.phases[0].status, PhaseStatus::kInterrupted);
  EXPECT_EQ(back.sweep[0].verdict, Verdict::kInvalid);
  EXPECT_FALSE(back.sweep[1].verdict.has_value());
  EXPECT_EQ(back.validation_verdict, Verdict::kNotValidated);
  // A word this hone does not know is a data error that names it.
  std::string bad = text;
  bad.replace(bad.find("SCREENED_OUT"), 12, "SCREENED_OFF");
  auto err = StateFromJson(bad);
  ASSERT_FALSE(err);
  EXPECT_EQ(err.error().code, ErrorCode::kDataLoss);
  EXPECT_NE(err.error().message.find("SCREENED_OFF"), std::string::npos) << err.error().message;
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

// A damaged line in the middle of the log is reported by number (never silently
// dropped); the events around it are read.
TEST(StateTest, DamagedEventLinesAreReportedByNumber) {
  auto d = sys::TempDir::Create("hone-events");
  ASSERT_TRUE(d);
  std::string path = ((*d)->path() / "events.jsonl").string();
  EventLog log(path);
  for (const char* type : {"a", "b", "c"}) ASSERT_OK(log.Append(type, 1.0));
  auto text = sys::ReadFile(path);
  auto lines = Split(*text, '\n');
  ASSERT_OK(sys::WriteFileAtomic(path, lines[0] + "\n" + "{\"seq\":1,\"t\":1,\"ty\x01pe\"" + "\n" + lines[2] + "\n"));
  std::vector<int> damaged;
  auto events = ReadEvents(path, &damaged);
  ASSERT_OK(events);
  EXPECT_EQ(events->size(), 2u);
  EXPECT_EQ(damaged, std::vector<int>{2});
}

// state.json is written atomically, so only damage from outside hone can break it:
// then the previous save (state.json.prev) takes its place, with a note, and trial
// ids on disk are never reused. Without a whole previous save, a clear error.
TEST(StateTest, ADamagedStateResumesFromThePreviousSave) {
  auto d = sys::TempDir::Create("hone-state");
  ASSERT_TRUE(d);
  const std::string dir = (*d)->path().string();
  SessionState s;
  s.session_id = "x-1";
  s.next_trial = 4;
  ASSERT_OK(SaveState(dir, s));
  s.next_trial = 6;
  CandidateRecord c;
  c.id = "c001";
  c.verdict = Verdict::kKeep;
  s.candidates.push_back(c);
  ASSERT_OK(SaveState(dir, s));
  ASSERT_OK(sys::EnsureDir((*d)->path() / "trials" / "t0005"));
  // Damage: a truncated state.json.
  auto text = sys::ReadFile((*d)->path() / "state.json");
  ASSERT_OK(sys::WriteFileAtomic((*d)->path() / "state.json", text->substr(0, text->size() / 2)));
  ASSERT_OK_AND_ASSIGN(SessionState back, LoadState(dir));
  EXPECT_TRUE(back.candidates.empty());  // the previous save
  EXPECT_EQ(back.next_trial, 6);         // past t0005 on disk
  EXPECT_NE(back.recovered.find("state.json is damaged"), std::string::npos) << back.recovered;
  EXPECT_NE(back.recovered.find("state.json.prev"), std::string::npos);
  // Both damaged: an error that says so.
  ASSERT_OK(sys::WriteFileAtomic((*d)->path() / "state.json.prev", "{"));
  auto none = LoadState(dir);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("cannot be resumed"), std::string::npos) << none.error().message;
  // A whole state.json loads as it is, with no note.
  ASSERT_OK(SaveState(dir, s));
  ASSERT_OK_AND_ASSIGN(SessionState whole, LoadState(dir));
  EXPECT_EQ(whole.candidates.size(), 1u);
  EXPECT_TRUE(whole.recovered.empty());
}

}  // namespace
}  // namespace hone::session
