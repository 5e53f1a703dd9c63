// Fast tests of the session's builders on fakes and the shipped data files: no engine,
// no server, no GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "run/agents.h"
#include "run/enablement.h"
#include "run/engine.h"
#include "run/executor.h"
#include "run/knowledge.h"
#include "run/lanes.h"
#include "run/roofline.h"
#include "run/search.h"
#include "run/session.h"
#include "session/coordinator.h"
#include "sys/files.h"
#include "target/llamacpp.h"
#include "testing/fake_clock.h"
#include "testing/fake_process_runner.h"
#include "testing/kb_postgres.h"
#include "testing/kb_recipes.h"
#include "testing/test_util.h"
#include "testing/validated_state.h"

namespace hone::run {
namespace {

namespace fs = std::filesystem;

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-run");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    ctx_.data_dir = ::hone::testing::SourceDir().string();
    ctx_.cache_dir = dir_->path() / "cache";
    ctx_.clock = &clock_;
    ctx_.runner = &runner_;
    spec_.name = "t";
    spec_.target.model.path = (dir_->path() / "m.gguf").string();
  }
  // A data directory holding only `file` with `text` (a broken data file).
  std::string DataDirWith(const std::string& file, const std::string& text) {
    fs::path root = dir_->path() / "data-root";
    EXPECT_OK(sys::EnsureDir((root / file).parent_path()));
    EXPECT_OK(sys::WriteFileAtomic(root / file, text));
    return root.string();
  }

  ::hone::testing::FakeClock clock_;
  ::hone::testing::FakeProcessRunner runner_;
  std::unique_ptr<sys::TempDir> dir_;
  RunContext ctx_;
  spec::SessionSpec spec_;
};

TEST_F(RunTest, TheEnablementLadderIsDataAndABrokenFileNamesItself) {
  ASSERT_OK_AND_ASSIGN(EnablementLadder ladder,
                       EnablementLadder::Load(ctx_.data_dir + "/data/enablement.yaml", "llama.cpp"));
  std::vector<Config> oom = ladder.Rungs("out_of_memory");
  ASSERT_EQ(oom.size(), 3u);
  EXPECT_EQ(oom[0].ToString(), "ctx_size=4096");
  EXPECT_TRUE(ladder.Rungs("no_such_failure").empty());
  // A broken file stops the wiring with its name, instead of "no rungs" at the first failure.
  std::string root = DataDirWith("data/enablement.yaml", "llama.cpp:\n  out_of_memory: [ {ctx_size: 4096\n");
  auto bad = EnablementLadder::Load(root + "/data/enablement.yaml", "llama.cpp");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("enablement.yaml"), std::string::npos) << bad.error().message;
  auto missing = EnablementLadder::Load(dir_->path().string() + "/nowhere.yaml", "llama.cpp");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nowhere.yaml"), std::string::npos);
}

// The sweep's per-point re-tuning (issue 18.3) from the real catalogs and heuristics:
// the knob each framework ties to the load, set to the point's concurrency.
TEST_F(RunTest, PointVariantsSetTheLoadTrackingKnobForThePoint) {
  ASSERT_OK_AND_ASSIGN(search::Heuristics h,
                       search::Heuristics::Load((testing::SourceDir() / "data/search/heuristics.yaml").string()));
  ASSERT_OK_AND_ASSIGN(target::KnobCatalog llama,
                       target::KnobCatalog::Load((testing::SourceDir() / "catalogs/llama.cpp/v0.4.yaml").string()));
  spec::SessionSpec spec;
  spec.target.adapter = "llama.cpp";
  const Config best{{"parallel", "64"}, {"ubatch_size", "512"}};
  auto v = PointVariants(spec, llama, h, best, {16, 1024, 1024});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].ToString(), "parallel=16 ubatch_size=512") << "the rest of the best is kept";
  EXPECT_TRUE(PointVariants(spec, llama, h, best, {64, 1024, 1024}).empty()) << "already set for this load";
  spec.search.exclude = {"parallel"};
  EXPECT_TRUE(PointVariants(spec, llama, h, best, {16, 1024, 1024}).empty()) << "the spec's domain is respected";
  spec.search.exclude.clear();
  spec.search.knobs = {"ubatch_size"};
  EXPECT_TRUE(PointVariants(spec, llama, h, best, {16, 1024, 1024}).empty());
  ASSERT_OK_AND_ASSIGN(target::KnobCatalog vllm,
                       target::KnobCatalog::Load((testing::SourceDir() / "catalogs/vllm/v0.12.yaml").string()));
  spec::SessionSpec vspec;
  vspec.target.adapter = "vllm";
  auto vv = PointVariants(vspec, vllm, h, Config{}, {32, 128, 128});
  ASSERT_EQ(vv.size(), 1u);
  EXPECT_EQ(vv[0].ToString(), "max_num_seqs=32");
  spec::SessionSpec cspec;
  cspec.target.adapter = "command";  // a user's knob table: no heuristics, no variants
  EXPECT_TRUE(PointVariants(cspec, llama, h, best, {16, 1024, 1024}).empty());
}

TEST_F(RunTest, RiskComesFromTheCatalogsLevels) {
  ASSERT_OK_AND_ASSIGN(auto adapter, target::LlamaCppAdapter::Create(ctx_.data_dir, "0.4.0"));
  auto risky = RiskyHook(adapter->catalog());
  EXPECT_TRUE(risky(Config{{"cache_type_k", "q8_0"}}));
  EXPECT_TRUE(risky(Config{{"threads", "2"}, {"weights", "q4_0"}}));
  EXPECT_FALSE(risky(Config{{"threads", "2"}}));
}

TEST_F(RunTest, IdentityWorkloadAndHardwareName) {
  sys::MachineInfo m;
  m.cpu_model = "AMD EPYC 7B13";
  m.cpus = 2;
  EXPECT_EQ(HardwareName(spec_, m), m.SlugFor(0));
  spec_.target.hardware = "h200";
  EXPECT_EQ(HardwareName(spec_, m), "h200");
  kb::Identity id = SessionIdentity(spec_, "h200", "tiny", "/no/such/model.gguf", "0.4.2-dev (build 1)", "q8_0");
  EXPECT_EQ(id.model_type, "llama");  // an unreadable model is taken for a llama
  EXPECT_EQ(id.architecture, "LlamaForCausalLM");
  EXPECT_EQ(id.framework_version, "0.4.2");
  EXPECT_EQ(id.precision, "q8_0");
  // A base_config `weights` (a fleet's precision axis) names the stock's precision.
  spec_.target.base_config = Config{{"weights", "f16"}};
  EXPECT_EQ(SessionIdentity(spec_, "h200", "tiny", "/no/such/model.gguf", "0.4.2", "q8_0").precision, "f16");
  spec_.workload.kind = "agentic";
  spec_.workload.trace_preset = "cpu";
  EXPECT_EQ(SessionWorkload(spec_).trace_id, "cpu");
}

session::CandidateRecord Candidate(const std::string& id, Config delta, Verdict v, std::string failure_kind = "") {
  session::CandidateRecord c;
  c.id = id;
  c.delta = std::move(delta);
  c.verdict = v;
  c.failure_kind = std::move(failure_kind);
  c.gain = v == Verdict::kRevert ? -0.1 : 0.1;
  c.ci_lo = v == Verdict::kRevert ? 0.85 : 1.05;
  c.ci_hi = v == Verdict::kRevert ? 0.95 : 1.15;
  c.candidate_trials = {"t1" + id};
  c.reason = "because";
  return c;
}

TEST_F(RunTest, TheCloseAdmitsOnlyAValidatedBestWithWhatTheCandidatesTaught) {
  session::SessionState s;
  s.stock = Config{{"threads", "2"}};
  s.best = s.stock;
  kb::MatchQuery q{kb::testing::TestIdentity(), {.kind = "fixed", .concurrency = 4, .isl = 512, .osl = 128}};
  std::string why;
  EXPECT_FALSE(AdmissionFor(s, spec_, q, {}, &why));
  EXPECT_EQ(why, "nothing to record: the stock configuration won");
  s.best = Config{{"threads", "2"}, {"weights", "q8_0"}, {"ubatch", "64"}};
  EXPECT_FALSE(AdmissionFor(s, spec_, q, {}, &why));
  EXPECT_EQ(why, "not recorded: the best configuration was not re-validated at close");

  session::testing::MarkValidatedKeep(s);
  s.close_accuracy = "pass: token agreement 100%";
  s.candidates = {Candidate("c1", Config{{"weights", "q8_0"}}, Verdict::kKeep),
                  Candidate("c2", Config{{"ubatch", "64"}, {"batch", "64"}}, Verdict::kKeep),  // two knobs: no learning
                  Candidate("c3", Config{{"ctx_size", "99999"}}, Verdict::kLaunchFailed, "out_of_memory"),
                  Candidate("c4", Config{{"weights", "q4_0"}}, Verdict::kAccuracyFailed),
                  Candidate("c5", Config{{"threads", "1"}}, Verdict::kRevert),
                  Candidate("c6", Config{{"poll", "0"}}, Verdict::kInconclusive),
                  Candidate("c7", Config{{"mlock", "on"}}, Verdict::kLaunchFailed, "bad_flag")};
  s.candidates[6].candidate_trials.clear();
  s.candidates[6].screen_trial = "t9";
  s.candidates[4].critic_learning = "one thread leaves a core idle";  // c5 threads=1 REVERT
  // Validated on a patched build: the knobs alone did not make the gain.
  s.server_binary = "/run/bin/llama-server-s1-more-default-slots";
  s.run_dir = "/run";
  EXPECT_FALSE(AdmissionFor(s, spec_, q, {}, &why));
  EXPECT_EQ(why, "not recorded: the best runs a patched build (llama-server-s1-more-default-slots), which a recipe "
                 "of knobs cannot replay; its diffs are in /run/patch/diffs");
  s.server_binary.clear();
  auto req = AdmissionFor(s, spec_, q, {"0.1.0", "t-1", "2026-01-01T00:00:00Z"}, &why);
  ASSERT_TRUE(req);
  EXPECT_TRUE(req->verdict_keep);
  EXPECT_TRUE(req->accuracy_passed);
  EXPECT_TRUE(req->remeasured_at_close);
  EXPECT_EQ(req->recipe.config.ToString(), "ubatch=64 weights=q8_0");
  EXPECT_DOUBLE_EQ(req->recipe.objective.value, 120);
  EXPECT_DOUBLE_EQ(req->recipe.baseline.value, 100);
  ASSERT_EQ(req->recipe.learnings.size(), 1u);
  EXPECT_EQ(req->recipe.learnings[0].knob, "weights");
  ASSERT_EQ(req->recipe.failures.size(), 4u);
  EXPECT_EQ(req->recipe.failures[0].kind, kb::FailureKind::kOutOfMemory);
  EXPECT_EQ(req->recipe.failures[1].kind, kb::FailureKind::kAccuracyFailed);
  EXPECT_EQ(req->recipe.failures[2].kind, kb::FailureKind::kRegressed);
  EXPECT_EQ(req->recipe.failures[3].kind, kb::FailureKind::kBadFlag);
  EXPECT_EQ(req->recipe.failures[3].trial_ids, std::vector<std::string>{"t9"});  // its screening trial
  EXPECT_EQ(req->recipe.provenance.session_id, "t-1");
  // What the critic learned is a note on the recipe, naming the decision it came from.
  ASSERT_EQ(req->recipe.notes.size(), 1u);
  EXPECT_EQ(req->recipe.notes[0], (kb::Note{"critic", "c5 threads=1 REVERT", "one thread leaves a core idle", "t-1"}));
  s.close_accuracy = "FAIL: token agreement 50%";
  s.validation_verdict = Verdict::kInconclusive;
  req = AdmissionFor(s, spec_, q, {}, &why);
  EXPECT_FALSE(req->verdict_keep);
  EXPECT_FALSE(req->accuracy_passed);
}

// A launch conflict the search learned goes into the recipe as one failure of kind
// conflict, with the trials of the failure it explains; that failure is not also
// recorded as its value's crash (the value launches with the partner's other value).
// A later session gets it as a conflict, not as a prior against either value.
TEST_F(RunTest, ALearnedLaunchConflictIsRecordedAndComesBackAsAConflict) {
  session::SessionState s;
  s.stock = Config{{"threads", "2"}};
  s.best = Config{{"threads", "2"}, {"cache_type_k", "q8_0"}, {"flash_attn", "off"}};
  session::testing::MarkValidatedKeep(s);
  s.close_accuracy = "pass: token agreement 100%";
  s.candidates = {Candidate("c1", Config{{"cache_type_k", "q8_0"}}, Verdict::kLaunchFailed, "context_create"),
                  Candidate("c2", Config{{"ctx_size", "99999"}}, Verdict::kLaunchFailed, "out_of_memory"),
                  Candidate("c3", Config{{"cache_type_k", "q8_0"}, {"flash_attn", "off"}}, Verdict::kKeep)};
  s.candidates[0].reason = "context_create: failed to create context";
  s.learned_conflicts = {Config{{"cache_type_k", "q8_0"}, {"flash_attn", "auto"}},
                         Config{{"a", "1"}, {"b", "2"}}};  // no failed trial of this session: not recorded
  kb::MatchQuery q{kb::testing::TestIdentity(), {.kind = "fixed", .concurrency = 4, .isl = 512, .osl = 128}};
  std::string why;
  auto req = AdmissionFor(s, spec_, q, {"0.1.0", "t-1", "2026-01-01T00:00:00Z"}, &why);
  ASSERT_TRUE(req) << why;
  ASSERT_EQ(req->recipe.failures.size(), 2u);
  const kb::Failure& conflict = req->recipe.failures[0];
  EXPECT_EQ(conflict.kind, kb::FailureKind::kConflict);
  EXPECT_EQ(conflict.config_delta.ToString(), "cache_type_k=q8_0 flash_attn=auto");
  EXPECT_EQ(conflict.trial_ids, std::vector<std::string>{"t1c1"});
  EXPECT_EQ(conflict.detail, "does not launch together: context_create: failed to create context");
  EXPECT_EQ(req->recipe.failures[1].kind, kb::FailureKind::kOutOfMemory);
  {
    // A port race is no evidence of the conflict, nor of anything about its values: it
    // is not recorded at all.
    session::SessionState raced = s;
    raced.candidates.push_back(Candidate("c4", Config{{"cache_type_k", "q8_0"}}, Verdict::kLaunchFailed, "port_in_use"));
    auto r2 = AdmissionFor(raced, spec_, q, {"0.1.0", "t-1", "2026-01-01T00:00:00Z"}, &why);
    ASSERT_TRUE(r2) << why;
    ASSERT_EQ(r2->recipe.failures.size(), 2u);
    EXPECT_EQ(r2->recipe.failures[0].trial_ids, std::vector<std::string>{"t1c1"});
    EXPECT_EQ(r2->recipe.failures[1].kind, kb::FailureKind::kOutOfMemory);
  }

  spec_.kb.path = (dir_->path() / "kb.sqlite").string();
  ASSERT_OK_AND_ASSIGN(auto store, OpenKnowledgeBase(spec_, ctx_));
  ASSERT_TRUE(store);
  ASSERT_OK(store->Admit(*req));
  EXPECT_EQ(KbConflicts(*store, q), (std::vector<Config>{Config{{"cache_type_k", "q8_0"}, {"flash_attn", "auto"}}}));
  for (const search::Prior& p : KbPriors(*store, q)) {
    EXPECT_NE(p.knob, "flash_attn");
    if (p.knob == "cache_type_k") {
      EXPECT_TRUE(p.failure_kind.empty()) << p.failure_kind;  // the KEEP's learning only
    }
  }
}

// A launch failure is recorded under the kind the engine's failure names, so a later
// session's priors prune what the engine does not support and penalize the rest; a
// failure of the host (a port race, a missing binary) is not the configuration's.
TEST_F(RunTest, ALaunchFailureIsRecordedAsWhatItWasAndAHostFailureNotAtAll) {
  const Config delta{{"cache_type_k", "q8_0"}};
  auto kind = [&](const char* failure) { return FailureKindFor(Candidate("c1", delta, Verdict::kLaunchFailed, failure)); };
  EXPECT_EQ(kind("out_of_memory"), kb::FailureKind::kOutOfMemory);
  EXPECT_EQ(kind("bad_flag"), kb::FailureKind::kBadFlag);
  EXPECT_EQ(kind("unsupported"), kb::FailureKind::kUnsupported);
  EXPECT_EQ(kind("health_timeout"), kb::FailureKind::kTimeout);
  for (const char* f : {"context_create", "model_load", "crashed", "exited", ""}) {
    EXPECT_EQ(kind(f), kb::FailureKind::kCrashed) << f;
  }
  EXPECT_EQ(kind("port_in_use"), std::nullopt);
  EXPECT_EQ(kind("not_found"), std::nullopt);
  EXPECT_EQ(FailureKindFor(Candidate("c2", delta, Verdict::kAccuracyFailed)), kb::FailureKind::kAccuracyFailed);
  EXPECT_EQ(FailureKindFor(Candidate("c3", delta, Verdict::kRevert)), kb::FailureKind::kRegressed);  // [0.85, 0.95]
  EXPECT_EQ(FailureKindFor(Candidate("c4", delta, Verdict::kScreenedOut)), std::nullopt);
}

// A REVERT is a regression where the value measured worse or broke the SLO; one that
// only failed to prove a gain above the session's keep threshold (its interval holds 1
// or lies above it) is none: a session with a lower A/A floor may measure it again.
TEST_F(RunTest, ARevertThatOnlyMissedTheKeepThresholdIsNoRegression) {
  const Config delta{{"ubatch_size", "256"}};
  auto revert = [&](double lo, double hi, double slo_excess = -1) {
    session::CandidateRecord c = Candidate("c1", delta, Verdict::kRevert);
    c.ci_lo = lo;
    c.ci_hi = hi;
    c.gain = (lo + hi) / 2 - 1;
    c.slo_excess = slo_excess;
    return FailureKindFor(c);
  };
  EXPECT_EQ(revert(0.96, 1.04), std::nullopt);                   // +0%, under a 5% threshold
  EXPECT_EQ(revert(0.99, 1.0), std::nullopt);                    // touching 1: not worse
  EXPECT_EQ(revert(0.90, 0.99), kb::FailureKind::kRegressed);    // worse
  EXPECT_EQ(revert(1.01, 1.04), std::nullopt);                   // a real gain, under the threshold
  EXPECT_EQ(revert(0.97, 1.05, 0.3), kb::FailureKind::kRegressed);  // broke the SLO by 30%
}

// A session whose stock won has no recipe, but what it learned is the stock's record:
// its failures and conflicts (a KEEP the close did not confirm is not a learning), the
// stock's baseline as its numbers; a later session's priors get the failures.
TEST_F(RunTest, AStockWinKeepsWhatTheSessionLearnedAsTheStocksRecord) {
  session::SessionState s;
  s.stock = Config{{"threads", "2"}};
  s.best = s.stock;
  kb::MatchQuery q{kb::testing::TestIdentity(), {.kind = "fixed", .concurrency = 4, .isl = 512, .osl = 128}};
  const kb::Provenance provenance{"0.1.0", "t-1", "2026-01-01T00:00:00Z"};
  EXPECT_FALSE(StockRecordFor(s, spec_, q, provenance));  // no baseline measured
  s.baseline_trials = {"t0001", "t0002", "t0003"};
  s.baseline_values = {98, 103, 99};
  s.baseline_objective = 100;
  EXPECT_FALSE(StockRecordFor(s, spec_, q, provenance));  // nothing learned
  s.candidates = {Candidate("c1", Config{{"weights", "q4_0"}}, Verdict::kAccuracyFailed),
                  Candidate("c2", Config{{"threads", "1"}}, Verdict::kRevert),
                  Candidate("c3", Config{{"cache_type_k", "q8_0"}}, Verdict::kLaunchFailed, "context_create"),
                  Candidate("c4", Config{{"cache_type_k", "q8_0"}, {"flash_attn", "off"}}, Verdict::kKeep),
                  Candidate("c5", Config{{"poll", "0"}}, Verdict::kScreenedOut),
                  Candidate("c6", Config{{"ubatch", "64"}}, Verdict::kLaunchFailed, "port_in_use")};
  s.learned_conflicts = {Config{{"cache_type_k", "q8_0"}, {"flash_attn", "auto"}}};
  auto record = StockRecordFor(s, spec_, q, provenance);
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->IsStockRecord());
  EXPECT_TRUE(record->learnings.empty());
  ASSERT_EQ(record->failures.size(), 3u);
  EXPECT_EQ(record->failures[0].kind, kb::FailureKind::kConflict);
  EXPECT_EQ(record->failures[0].trial_ids, std::vector<std::string>{"t1c3"});
  EXPECT_EQ(record->failures[1].kind, kb::FailureKind::kAccuracyFailed);
  EXPECT_EQ(record->failures[2].kind, kb::FailureKind::kRegressed);
  EXPECT_EQ(record->objective.value, 100);
  EXPECT_EQ(record->objective.ci_lo, 98);
  EXPECT_EQ(record->objective.ci_hi, 103);
  EXPECT_EQ(record->baseline.trial_ids, s.baseline_trials);
  // A best that was not re-validated admits no recipe either: what was learned is the
  // same record (no learning from the KEEP no admitted recipe stands behind).
  s.best = Config{{"threads", "2"}, {"cache_type_k", "q8_0"}, {"flash_attn", "off"}};
  std::string why;
  EXPECT_FALSE(AdmissionFor(s, spec_, q, provenance, &why));
  EXPECT_EQ(why, "not recorded: the best configuration was not re-validated at close");
  auto unvalidated = StockRecordFor(s, spec_, q, provenance);
  ASSERT_TRUE(unvalidated);
  EXPECT_TRUE(unvalidated->learnings.empty());
  EXPECT_EQ(unvalidated->failures, record->failures);

  s.best = s.stock;
  spec_.kb.path = (dir_->path() / "kb.sqlite").string();
  ASSERT_OK_AND_ASSIGN(auto store, OpenKnowledgeBase(spec_, ctx_));
  ASSERT_TRUE(store);
  ASSERT_OK(store->KeepStockRecord(*record, "the stock configuration won"));
  std::set<std::string> penalized;
  for (const search::Prior& p : KbPriors(*store, q)) penalized.insert(p.knob + "=" + p.value + " " + p.failure_kind);
  EXPECT_EQ(penalized, (std::set<std::string>{"weights=q4_0 accuracy_failed", "threads=1 regressed"}));
  EXPECT_EQ(KbConflicts(*store, q), (std::vector<Config>{Config{{"cache_type_k", "q8_0"}, {"flash_attn", "auto"}}}));
}

TEST_F(RunTest, TheKnowledgeBasesReplayJudgmentInWords) {
  kb::ReplayVerdict v;
  v.reason = "why";
  v.reproduced = true;
  v.same_point = true;
  EXPECT_EQ(ReplayWords(v), "reproduced: why");
  v.same_point = false;
  EXPECT_EQ(ReplayWords(v), "transferred: why");
  v.reproduced = false;
  EXPECT_EQ(ReplayWords(v), "did not transfer here, recipe kept active (recorded at another operating point): why");
  v.same_point = true;
  v.demoted = true;
  EXPECT_EQ(ReplayWords(v), "did not reproduce, recipe demoted: why");
  v.demoted = false;
  v.inconclusive_in_row = 1;
  EXPECT_EQ(ReplayWords(v), "undecided, recipe kept active (1 inconclusive replay(s) in a row): why");
}

TEST_F(RunTest, TheKnowledgeBaseGivesPriorsAndAWarmStart) {
  spec_.kb.path = (dir_->path() / "kb.sqlite").string();
  ASSERT_OK_AND_ASSIGN(auto store, OpenKnowledgeBase(spec_, ctx_));
  ASSERT_TRUE(store);
  kb::MatchQuery q{kb::testing::TestIdentity(), {.kind = "fixed", .concurrency = 4, .isl = 512, .osl = 128}};
  KbWarmStart warm(*store, spec_, q, "0.1.0");
  std::string explanation;
  EXPECT_FALSE(warm.Match(&explanation));  // an empty store
  kb::Recipe r = kb::testing::TestRecipe();
  r.failures.push_back({Config{{"ubatch", "9999"}, {"batch", "9999"}}, kb::FailureKind::kOutOfMemory, "oom", {"t-8"}});
  ASSERT_OK(store->Admit(kb::testing::Validated(r)));
  std::vector<search::Prior> priors = KbPriors(*store, q);
  int learnings = 0;
  double ubatch_share = 0;
  for (const auto& p : priors) {
    learnings += p.failure_kind.empty();
    if (p.knob == "ubatch") ubatch_share = p.confidence;
  }
  EXPECT_EQ(learnings, 2);
  double batch_share = 0;
  for (const auto& p : priors) {
    if (p.knob == "batch") batch_share = p.confidence;
  }
  EXPECT_GT(ubatch_share, 0);
  EXPECT_DOUBLE_EQ(ubatch_share, batch_share);  // a failure of two knobs blames each in part
  // The critic's notes reach the orchestrator as lines with their recipe and confidence.
  const std::vector<std::string> notes = KbNoteLines(*store, q);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "note from a past session's critic on c003 threads=4 REVERT: threads past the core count slowed "
                      "decode (recipe #1, confidence 1.00)");
  auto matched = warm.Match(&explanation);
  ASSERT_TRUE(matched) << explanation;
  EXPECT_DOUBLE_EQ(matched->recorded_gain, 0.2);
  // A replay whose pairs decided nothing leaves the recipe to the next session; two in
  // a row (the repository's admission.yaml) demote it.
  session::ReplayResult undecided{Verdict::kInconclusive, 0.12, true, {"t-r1"}, "straddles", "s-2"};
  EXPECT_EQ(warm.RecordReplay(*matched, undecided),
            "undecided, recipe kept active (1 inconclusive replay(s) in a row): the replay's verdict is INCONCLUSIVE "
            "(re-measured gain 12.0%), not a KEEP");
  ASSERT_TRUE(warm.Match(&explanation)) << explanation;
  undecided.session_id = "s-3";
  EXPECT_EQ(warm.RecordReplay(*matched, undecided),
            "did not reproduce, recipe demoted: the replay's verdict is INCONCLUSIVE (re-measured gain 12.0%), not a "
            "KEEP (2 replays in a row)");
  EXPECT_FALSE(warm.Match(&explanation));
  // A disabled knowledge base is none; broken rules are an error naming the file.
  spec_.kb.enabled = false;
  ASSERT_OK_AND_ASSIGN(auto none, OpenKnowledgeBase(spec_, ctx_));
  EXPECT_FALSE(none);
  spec_.kb.enabled = true;
  ctx_.data_dir = DataDirWith("data/kb/admission.yaml", "min_trials: [\n");
  auto broken = OpenKnowledgeBase(spec_, ctx_);
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("data/kb/"), std::string::npos) << broken.error().message;
}

TEST_F(RunTest, KbUrlSelectsThePostgresKnowledgeBase) {
  // kb: {url: postgresql://...} opens the shared database (scripts/test-services.sh
  // starts one; without it the test skips).
  auto db = kb::testing::PgTestDb::Create();
  HONE_REQUIRE_PG(db);
  spec_.kb.path = (dir_->path() / "unused.sqlite").string();
  spec_.kb.url = db->url();
  ASSERT_OK_AND_ASSIGN(auto store, OpenKnowledgeBase(spec_, ctx_));
  ASSERT_TRUE(store);
  EXPECT_EQ(store->dialect(), kb::Dialect::kPostgres);
  EXPECT_FALSE(fs::exists(spec_.kb.path));  // the url wins over the path
  ASSERT_OK(store->Admit(kb::testing::Validated(kb::testing::TestRecipe())));
  ASSERT_OK_AND_ASSIGN(auto recipes, store->List());
  EXPECT_EQ(recipes.size(), 1u);
}

TEST_F(RunTest, AnUnreachableKbUrlDisablesTheKnowledgeBaseNotTheSession) {
  // Port 1 on the loopback: nothing listens there.
  spec_.kb.url = "postgresql://hone@127.0.0.1:1/kb?connect_timeout=2";
  ASSERT_OK_AND_ASSIGN(auto store, OpenKnowledgeBase(spec_, ctx_));
  EXPECT_FALSE(store);
}

TEST_F(RunTest, TheSessionsDeviceComesFromTheTable) {
  ASSERT_OK_AND_ASSIGN(auto table, roofline::HardwareTable::Load(ctx_.data_dir + "/data/hardware.yaml"));
  sys::MachineInfo cpu_host;
  cpu_host.cpu_model = "AMD EPYC 7B13";
  cpu_host.cpus = 2;
  auto hw = SessionHardware(table, spec_, cpu_host);
  ASSERT_TRUE(hw);
  EXPECT_EQ(hw->id, "epyc-zen3-2vcpu");  // by the table's CPU family rule
  sys::MachineInfo gpu_host = cpu_host;
  gpu_host.gpus = {"NVIDIA H200"};
  EXPECT_EQ(SessionHardware(table, spec_, gpu_host)->id, "epyc-zen3-2vcpu");  // a CPU session on a GPU host
  spec_.target.num_gpus = 1;
  EXPECT_EQ(SessionHardware(table, spec_, gpu_host)->id, "h200");
  spec_.target.num_gpus = 0;
  spec_.target.hardware = "xeon-emr-2vcpu";
  EXPECT_EQ(SessionHardware(table, spec_, cpu_host)->id, "xeon-emr-2vcpu");  // the spec's override
  spec_.target.hardware.clear();
  sys::MachineInfo unknown;
  unknown.cpu_model = "Some Other CPU";
  unknown.cpus = 96;
  EXPECT_FALSE(SessionHardware(table, spec_, unknown));
}

TEST_F(RunTest, ProbedCeilingsReplaceTheTablesAndTheHookNamesThem) {
  ASSERT_OK_AND_ASSIGN(auto table, roofline::HardwareTable::Load(ctx_.data_dir + "/data/hardware.yaml"));
  ASSERT_OK_AND_ASSIGN(roofline::Hardware cpu, table.Find("epyc-zen3-2vcpu"));
  sys::MachineInfo m;
  m.cpus = 2;
  int threads_asked = 0;
  CeilingProbes probes;
  probes.read_bandwidth = [&](int threads) -> Result<double> {
    threads_asked = threads;
    return 33e9;
  };
  probes.cpu_compute = [](int) -> Result<roofline::ComputePeaks> {
    return roofline::ComputePeaks{250e9, 900e9, "avx2+fma", "avx2"};
  };
  probes.gpu = []() -> Result<roofline::GpuCeilings> { return Unavailable("no GPU here"); };
  roofline::Hardware probed = WithProbedCeilings(cpu, m, probes);
  EXPECT_EQ(threads_asked, 2);
  EXPECT_DOUBLE_EQ(probed.MemoryBandwidth(), 33e9);
  EXPECT_DOUBLE_EQ(*probed.FlopsPerSecond("fp32"), 250e9);
  ASSERT_OK_AND_ASSIGN(roofline::Hardware gpu, table.Find("h200"));
  EXPECT_DOUBLE_EQ(WithProbedCeilings(gpu, m, probes).MemoryBandwidth(), gpu.MemoryBandwidth());  // probe failed
  // The hook over the probed device, for a small dense model.
  ASSERT_OK_AND_ASSIGN(roofline::ModelSpec model,
                       roofline::ModelSpecFromHfConfigText(
                           R"({"hidden_size": 512, "intermediate_size": 1536, "num_attention_heads": 8,
                               "num_hidden_layers": 8, "num_key_value_heads": 8, "vocab_size": 32000,
                               "torch_dtype": "float16"})",
                           "config.json"));
  RooflineHook hook = MakeRooflineHook(probed, model, spec_);
  auto note = hook(Config{}, 500, 100);
  ASSERT_OK(note);
  EXPECT_EQ(note->summary.rfind("epyc-zen3-2vcpu (probed 33.0 GB/s, 250 GFLOP/s fp32, 900 GOP/s int8): ", 0), 0u)
      << note->summary;
  EXPECT_GT(note->ratio, 0);
  // With the last-level cache probed (256 MiB at 100 GB/s), the model (a few MB) is
  // bounded by the cache's bandwidth: the same measurement sits lower under the bound.
  probes.cpu_cache = [](int) -> Result<std::pair<double, double>> { return std::make_pair(256.0 * (1 << 20), 100e9); };
  roofline::Hardware cached = WithProbedCeilings(cpu, m, probes);
  EXPECT_DOUBLE_EQ(cached.llc_bytes, 256.0 * (1 << 20));
  ASSERT_OK_AND_ASSIGN(auto cached_note, MakeRooflineHook(cached, model, spec_)(Config{}, 500, 100));
  EXPECT_EQ(cached_note.summary.rfind(
                "epyc-zen3-2vcpu (probed 33.0 GB/s, 250 GFLOP/s fp32, 900 GOP/s int8, 256 MiB LLC at 100.0 GB/s): ", 0),
            0u)
      << cached_note.summary;
  EXPECT_LT(cached_note.ratio, note->ratio);
  probes.cpu_cache = nullptr;
  // A broken table stops the wiring naming the file.
  ctx_.data_dir = DataDirWith("data/hardware.yaml", "devices: [\n");
  auto bad = BuildRoofline(spec_, spec_.target.model.path, m, ctx_, probes);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("hardware.yaml"), std::string::npos) << bad.error().message;
}

TEST_F(RunTest, LanesAreBuiltOnlyWhenAskedFor) {
  Engine engine;
  engine.provisioned.server = "/usr/bin/llama-server";  // from PATH: no configure arguments
  ASSERT_OK_AND_ASSIGN(auto none, BuildPatchLane(spec_, engine, dir_->path().string(), ctx_));
  EXPECT_FALSE(none);
  spec_.patches = {"fix.diff"};
  auto from_path = BuildPatchLane(spec_, engine, dir_->path().string(), ctx_);
  ASSERT_FALSE(from_path);
  EXPECT_EQ(from_path.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(from_path.error().message.find("came from PATH"), std::string::npos);

  sys::MachineInfo m;
  m.cpu_model = "cpu";
  ASSERT_OK_AND_ASSIGN(auto no_kernel, BuildKernelLane(spec_, m, dir_->path().string(), ctx_));
  EXPECT_FALSE(no_kernel);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> tasks, KernelTaskFiles(spec_, ctx_.data_dir));
  ASSERT_FALSE(tasks.empty());
  EXPECT_TRUE(std::is_sorted(tasks.begin(), tasks.end()));
  for (const auto& t : tasks) {
    EXPECT_NE(fs::path(t).filename(), "ops.yaml");
    EXPECT_NE(fs::path(t).filename(), "integration.yaml");
  }
  EXPECT_FALSE(KernelTaskFiles(spec_, dir_->path().string()));  // no data/kernel/ there
  spec_.kernel.backend = {"kbench", "lane"};
  ASSERT_OK_AND_ASSIGN(auto kernel, BuildKernelLane(spec_, m, dir_->path().string(), ctx_));
  EXPECT_TRUE(kernel);
}

TEST_F(RunTest, SearchExecutorAndEngineBuilders) {
  EXPECT_TRUE(std::find(PlannerOptionsFor(spec_, "q8_0").domain.exclude.begin(),
                        PlannerOptionsFor(spec_, "q8_0").domain.exclude.end(),
                        "weights") != PlannerOptionsFor(spec_, "q8_0").domain.exclude.end());
  EXPECT_TRUE(PlannerOptionsFor(spec_, "f16").domain.exclude.empty());
  ASSERT_OK_AND_ASSIGN(bench::ServerProfile profile, BenchProfileFor("llama.cpp", ctx_.data_dir));
  EXPECT_FALSE(profile.exact_length_fields.empty());
  EXPECT_EQ(BenchProfileFor("tgi", ctx_.data_dir).error().code, ErrorCode::kInvalidArgument);

  target::Provisioned p;
  p.version = "0.4.0";
  p.server = "/x/llama-server";
  p.src_dir = dir_->path() / "src";  // no README: the KLD text is a fixed filler
  auto missing = BuildEngine(spec_, ctx_, p);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("m.gguf"), std::string::npos);

  Engine engine;
  engine.provisioned = p;
  ASSERT_OK_AND_ASSIGN(engine.adapter, target::LlamaCppAdapter::Create(ctx_.data_dir, "0.4.0"));
  engine.model_path = spec_.target.model.path;
  engine.models = std::make_unique<measure::ModelStore>(engine.model_path, "", (dir_->path() / "v").string());
  spec_.workload.kind = "agentic";
  spec_.workload.trace_preset = "cpu";
  spec_.workload.trace_sessions = 3;
  const std::string run_dir = (dir_->path() / "run").string();
  ASSERT_OK_AND_ASSIGN(auto executor, BuildExecutor(spec_, run_dir, engine, "cpu-test", ctx_));
  EXPECT_TRUE(executor);
  EXPECT_EQ(sys::ReadFile(fs::path(run_dir) / "accuracy" / "kld-text.txt").value_or(""), std::string(3000, 'a'));
  EXPECT_TRUE(sys::FileExists(fs::path(run_dir) / "traces.jsonl"));
  EXPECT_EQ(LaunchCommand(engine, spec_, Config{{"threads", "2"}}, "").rfind("/x/llama-server", 0), 0u)
      << LaunchCommand(engine, spec_, Config{{"threads", "2"}}, "");
}

TEST_F(RunTest, TheCriticSeesTheEvidenceAndTheRealNoiseFloor) {
  session::CandidateRecord c = Candidate("c4", Config{{"threads", "4"}}, Verdict::kPending);
  c.incumbent = Config{{"threads", "2"}};
  c.config = Config{{"threads", "4"}};
  c.pairs = 3;
  c.incumbent_values = {1, 2, 3};
  c.candidate_values = {2, 3, 4};
  agent::Decision d = CriticDecision(c, Verdict::kKeep, 0.031);
  EXPECT_EQ(d.subject, "c4");
  EXPECT_EQ(d.measured_verdict, Verdict::kKeep);
  EXPECT_DOUBLE_EQ(d.noise_floor, 0.031);
  EXPECT_EQ(d.incumbent, "threads=2");
  EXPECT_EQ(d.pairs, 3);
  EXPECT_EQ(agent::EvidenceProblem(d), "");
  std::unique_ptr<search::Proposer> planner;
  ASSERT_OK_AND_ASSIGN(Agents none, BuildAgents(spec_, dir_->path().string(), ctx_, AgentsInputs{}, planner));
  EXPECT_FALSE(none.critic);
  EXPECT_EQ(AgentSummary(none, {}), "");
}

// `hone resume` of a closed session answers from its state, without an engine.
TEST_F(RunTest, ResumingAClosedSessionRunsNothing) {
  session::SessionState s = session::Coordinator::NewState(spec_, dir_->path().string(), clock_);
  s.phase = session::Phase::kDone;
  s.stop_reason = "completed";
  ASSERT_OK(session::SaveState(dir_->path().string(), s));
  ASSERT_OK_AND_ASSIGN(SessionOutcome out, RunSession(spec_, dir_->path().string(), ctx_, /*resume=*/true));
  EXPECT_TRUE(out.already_closed);
  EXPECT_EQ(out.state.stop_reason, "completed");
  // A new session needs its engine: the error says how to get one.
  auto fresh = RunSession(spec_, (dir_->path() / "new").string(), ctx_, /*resume=*/false);
  ASSERT_FALSE(fresh);
  EXPECT_NE(fresh.error().message.find("hone provision llama.cpp"), std::string::npos) << fresh.error().message;
}

// The engine comes from the spec's adapter; nothing after BuildEngine knows which.
TEST_F(RunTest, EveryAdapterBuildsAnEngine) {
  const std::string standin = (::hone::testing::SourceDir() / "src/target/testdata/standin").string();
  spec_.target.model.path = "meta-llama/Llama-3.1-8B-Instruct";
  spec_.target.adapter = "vllm";
  spec_.target.command = {standin + "/vllm"};
  ASSERT_OK_AND_ASSIGN(Engine vllm, BuildEngine(spec_, ctx_));
  EXPECT_EQ(vllm.adapter->name(), "vllm");
  EXPECT_EQ(vllm.provisioned.version, "0.12.0");
  EXPECT_EQ(vllm.provisioned.server, standin + "/vllm");
  EXPECT_EQ(vllm.model_name, "Llama-3.1-8B-Instruct");
  EXPECT_EQ(vllm.base_precision, "source");  // not a GGUF file: the engine's own weights
  EXPECT_TRUE(BenchProfileFor(*vllm.adapter).send_min_tokens);
  EXPECT_EQ(BenchProfileFor(*vllm.adapter).metrics.prompt_tokens_total, "vllm:prompt_tokens_total");
  EXPECT_NE(LaunchCommand(vllm, spec_, Config{{"max_num_seqs", "64"}}, "")
                .find("/vllm serve meta-llama/Llama-3.1-8B-Instruct --host 127.0.0.1 --port 8080"),
            std::string::npos);

  spec_.target.adapter = "sglang";
  spec_.target.command = {standin + "/python"};
  ASSERT_OK_AND_ASSIGN(Engine sglang, BuildEngine(spec_, ctx_));
  EXPECT_EQ(sglang.adapter->name(), "sglang");
  EXPECT_EQ(sglang.provisioned.version, "0.5.4");
  EXPECT_NE(LaunchCommand(sglang, spec_, Config{}, "").find("python -m sglang.launch_server --model-path "),
            std::string::npos);

  // Not installed: the error says what to install.
  spec_.target.command = {(dir_->path() / "no-python").string()};
  auto missing = BuildEngine(spec_, ctx_);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("pip install \"sglang[all]\""), std::string::npos) << missing.error().message;
  spec_.target.model = {.preset = "tiny"};
  spec_.target.command = {standin + "/vllm"};
  spec_.target.adapter = "vllm";
  auto preset = BuildEngine(spec_, ctx_);
  ASSERT_FALSE(preset);
  EXPECT_NE(preset.error().message.find("synthetic presets are llama.cpp GGUF files"), std::string::npos);

  spec_.target.adapter = "command";
  spec_.target.model = {.path = "/models/m.gguf"};
  spec_.target.command = {"my-server", "--model", "{model}", "--port", "{port}"};
  spec_.target.version = "1.2";
  spec_.target.knobs_yaml = "- {name: threads, flag: --threads, type: int, min: 1, max: 8, default: '4'}\n";
  ASSERT_OK_AND_ASSIGN(Engine command, BuildEngine(spec_, ctx_));
  EXPECT_EQ(command.adapter->name(), "command");
  EXPECT_EQ(command.provisioned.version, "1.2");
  EXPECT_EQ(command.model_name, "m");
  EXPECT_EQ(LaunchCommand(command, spec_, Config{{"threads", "2"}}, ""),
            "my-server --model /models/m.gguf --port 8080 --threads 2");
  EXPECT_FALSE(BenchProfileFor(*command.adapter).send_min_tokens);
}

}  // namespace
}  // namespace hone::run
