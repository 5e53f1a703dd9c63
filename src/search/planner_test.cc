#include "search/planner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/strings.h"
#include "search/drive_for_tests.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::search {
namespace {

// A small catalog with one knob of each kind the planner treats differently.
constexpr const char* kCatalog = R"(framework: demo
versions: "*"
knobs:
  - {name: threads, flag: --threads, type: int, min: 1, max: 64, default: "8", category: threads,
     search: ["2", "4", "8", "16", "32"]}
  - {name: ubatch, flag: --ubatch, type: int, min: 1, max: 4096, default: "512", category: batching,
     search: ["64", "128", "256", "512", "1024"]}
  - {name: fa, flag: --fa, type: enum, choices: ["on", "off"], default: "on", category: attention}
  - {name: kv, flag: --kv, type: enum, choices: [f16, q8_0, q4_0], default: f16, category: precision,
     accuracy_risk: high, conflicts: ["fa=off"]}
  - {name: spec, flag: --spec, type: enum, choices: [none, ngram], default: none, category: speculative}
  - {name: slots, flag: --slots, type: int, min: 1, max: 64, default: "1", category: batching}
)";

constexpr const char* kHeuristics = R"(categories:
  threads: {scale: 0.25}
  batching: {scale: 0.20}
  attention: {scale: 0.10}
  precision: {scale: 0.30, cost: 1.5}
  speculative: {scale: 0.10}
risk_penalty: {none: 0, high: 0.35}
diagnosis: {queue_depth: 0.5, roofline: {memory_bandwidth: decode}}
bottlenecks:
  queueing: {batching: 2.0}
  decode: {speculative: 3.0}
frameworks:
  demo:
    value_hints: {slots: [concurrency]}
    interactions: {kv: [ubatch]}
    bundles:
      - {title: "slots = concurrency with fa", when: [queueing], category: batching, delta: {slots: concurrency, fa: "on"}}
)";

class PlannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-planner");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    std::string p = (dir_->path() / "c.yaml").string();
    ASSERT_OK(sys::WriteFileAtomic(p, kCatalog));
    ASSERT_OK_AND_ASSIGN(catalog_, target::KnobCatalog::Load(p));
    ASSERT_OK_AND_ASSIGN(heuristics_, Heuristics::Parse(kHeuristics, "h.yaml"));
    ctx_.cpus = 8;
    ctx_.concurrency = 4;
  }
  std::unique_ptr<Planner> Make(PlannerOptions o = {}) { return std::make_unique<Planner>(catalog_, heuristics_, o); }
  // Proposes, then reports `verdict` with `gain` the way the coordinator does.
  Candidate Step(Planner& p, Verdict verdict, double gain, const std::string& failure = "") {
    std::vector<Candidate> c = Drive(p, ctx_, 1, Always(verdict, gain, failure));
    EXPECT_EQ(c.size(), 1u);
    return c.empty() ? Candidate{} : c[0];
  }
  const IdeaNode* Node(const Planner& p, const std::string& key, IdeaState state) {
    for (const IdeaNode& n : p.tree().nodes()) {
      if (n.key == key && n.state == state) return &n;
    }
    return nullptr;
  }
  const IdeaNode* Open(const Planner& p, const std::string& key) { return Node(p, key, IdeaState::kOpen); }

  std::unique_ptr<sys::TempDir> dir_;
  target::KnobCatalog catalog_;
  Heuristics heuristics_;
  ProposalContext ctx_;
};

TEST_F(PlannerTest, FirstIdeaComesFromTheLargestExpectedGainPerCost) {
  auto p = Make({.domain = {.exclude = {"slots"}}});  // no value hints in play
  auto c = p->Next(ctx_);
  ASSERT_TRUE(c);
  // threads (scale 0.25, cost 1) beats precision (0.30, but cost 1.5 and high risk).
  EXPECT_TRUE(c->idea.starts_with("threads=")) << c->idea;
  EXPECT_GT(c->expected_gain, 0.05);
  EXPECT_NE(c->rationale.find("expected"), std::string::npos);
  // Every open idea was scored; the stock values are no ideas.
  EXPECT_EQ(Open(*p, "threads=8"), nullptr);
  for (const IdeaNode& n : p->tree().nodes()) {
    if (n.proposable()) {
      EXPECT_GT(n.score, 0) << n.key;
    }
  }
}

TEST_F(PlannerTest, DiagnosisScalesCategoriesAndAddsBundles) {
  ctx_.baseline_metrics = {{"queue_depth_mean", 2.0}};
  auto p = Make();
  auto c = p->Next(ctx_);
  ASSERT_TRUE(c);
  EXPECT_EQ(p->diagnosis().bottleneck, Bottleneck::kQueueing);
  // Batching doubled (0.4) now leads; the hint slots = concurrency is its best value.
  EXPECT_EQ(c->idea, "slots=4") << c->idea;
  EXPECT_NE(c->rationale.find("hint: concurrency"), std::string::npos) << c->rationale;
  bool bundle = false;
  for (const IdeaNode& n : p->tree().nodes()) bundle = bundle || n.kind == IdeaKind::kBundle;
  EXPECT_TRUE(bundle);
  // A measured queue outranks the roofline class (the server is not running the load
  // the roofline was computed for); without a queue the roofline class decides.
  ctx_.bottleneck = "memory_bandwidth";
  auto queued = Make();
  ASSERT_TRUE(queued->Next(ctx_));
  EXPECT_EQ(queued->diagnosis().bottleneck, Bottleneck::kQueueing);
  ctx_.baseline_metrics = {{"queue_depth_mean", 0.1}, {"mean_ttft_ms", 900}, {"mean_tpot_ms", 1}, {"osl", 10}};
  auto q = Make({.domain = {.exclude = {"slots"}}});
  auto d = q->Next(ctx_);
  ASSERT_TRUE(d);
  EXPECT_EQ(q->diagnosis().bottleneck, Bottleneck::kDecode);
  EXPECT_EQ(d->idea, "spec=ngram");
}

TEST_F(PlannerTest, DeviceMultipliersReorderTheCategoriesOnAGpu) {
  ASSERT_OK_AND_ASSIGN(Heuristics h,
                       Heuristics::Parse(std::string(kHeuristics) + "devices:\n  gpu: {threads: 0.1, batching: 1.5}\n",
                                         "h.yaml"));
  EXPECT_DOUBLE_EQ(h.DeviceMultiplier(true, "threads"), 0.1);
  EXPECT_DOUBLE_EQ(h.DeviceMultiplier(false, "threads"), 1.0);
  EXPECT_DOUBLE_EQ(h.DeviceMultiplier(true, "attention"), 1.0);
  // On the CPU threads lead (see above); on a GPU the CPU threads barely matter and
  // batching leads.
  Planner gpu(catalog_, h, {.domain = {.exclude = {"slots"}, .gpu = true}});
  auto c = gpu.Next(ctx_);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->idea.starts_with("ubatch=")) << c->idea;
  EXPECT_FALSE(Heuristics::Parse(std::string(kHeuristics) + "devices:\n  tpu: {threads: 0.1}\n", "h.yaml"))
      << "an unknown device is an error";
}

// A knob's catalog effect_scale replaces its category's prior spread (the diagnosis's
// multiplier still applies): llama.cpp's --poll is a "threads" knob, but how threads
// wait moves throughput a few percent where their count moves it 1.7x. Under an
// overhead diagnosis (threads x1.5) the demo on a 2-CPU host tried poll=0 and poll=100
// before weights=q8_0 and ran out of budget.
TEST_F(PlannerTest, AKnobsEffectScaleReplacesItsCategorysSpread) {
  constexpr const char* kWaits = R"(framework: demo
versions: "*"
knobs:
  - {name: threads, flag: --threads, type: int, min: 1, max: 64, default: "8", category: threads, search: ["4"]}
  - {name: poll, flag: --poll, type: int, min: 0, max: 100, default: "50", category: threads, search: ["0"],
     effect_scale: 0.05}
  - {name: ubatch, flag: --ubatch, type: int, min: 1, max: 4096, default: "512", category: batching,
     search: ["128"]}
)";
  std::string path = (dir_->path() / "waits.yaml").string();
  ASSERT_OK(sys::WriteFileAtomic(path, kWaits));
  ASSERT_OK_AND_ASSIGN(target::KnobCatalog waits, target::KnobCatalog::Load(path));
  ASSERT_OK_AND_ASSIGN(Heuristics h, Heuristics::Parse(std::string(kHeuristics) + "devices:\n  gpu: {threads: 0.5}\n",
                                                       "h.yaml"));
  Planner p(waits, h, {});
  auto c = p.Next(ctx_);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(p.KnobScale("threads"), 0.25);
  EXPECT_DOUBLE_EQ(p.KnobScale("poll"), 0.05);
  EXPECT_NE(c->idea, "poll=0") << "the small spread ranks below both ideas of the categories' spreads";
  const IdeaNode* poll = Open(p, "poll=0");
  ASSERT_NE(poll, nullptr);
  for (const IdeaNode& n : p.tree().nodes()) {
    if (n.kind == IdeaKind::kValue && n.knob != "poll") {
      EXPECT_LT(poll->score, n.score) << n.key;
      EXPECT_LT(poll->expected_gain, n.expected_gain) << n.key;
    }
  }
  // The device's multiplier of the knob's category applies on top of its own spread.
  Planner gpu(waits, h, {.domain = {.gpu = true}});
  ASSERT_TRUE(gpu.Next(ctx_));
  EXPECT_DOUBLE_EQ(gpu.KnobScale("poll"), 0.025);
}

// A value hint next to the stock's value is the first try: threads = cpus (2) on a
// 2-CPU host whose stock runs one thread. The stock's zero used to fade the hint of the
// value beside it, so threads=4 and threads=3 came first, and two identical sessions
// that ran out of budget at different points ended with different bests.
TEST_F(PlannerTest, AHintBesideTheStocksValueIsTheFirstTry) {
  ASSERT_OK_AND_ASSIGN(target::KnobCatalog llama,
                       target::KnobCatalog::Load((testing::SourceDir() / "catalogs/llama.cpp/v0.4.yaml").string()));
  ASSERT_OK_AND_ASSIGN(Heuristics h, Heuristics::Load((testing::SourceDir() / "data/search/heuristics.yaml").string()));
  ctx_.cpus = 2;
  ctx_.concurrency = 2;
  ctx_.stock = Config{{"threads", "1"}};
  ctx_.best = ctx_.stock;
  Planner p(llama, h, {.domain = {.only = {"threads"}}});
  auto c = p.Next(ctx_);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->idea, "threads=2") << c->rationale;
  EXPECT_NE(c->rationale.find("hint: cpus"), std::string::npos) << c->rationale;
}

// llama-server's threads "auto" is the host's physical cores (catalog auto_means): on a
// 2-core host threads=2 is the stock itself, and threads_batch=2 likewise (its auto is
// the decode threads). Neither is measured; with the cores unknown both are.
TEST_F(PlannerTest, AValueTheEnginesAutoAlreadyRunsIsNoIdea) {
  ASSERT_OK_AND_ASSIGN(target::KnobCatalog llama,
                       target::KnobCatalog::Load((testing::SourceDir() / "catalogs/llama.cpp/v0.4.yaml").string()));
  ASSERT_OK_AND_ASSIGN(Heuristics h, Heuristics::Load((testing::SourceDir() / "data/search/heuristics.yaml").string()));
  ctx_.cpus = 2;
  ctx_.concurrency = 2;
  ctx_.stock = Config{};
  ctx_.best = ctx_.stock;
  auto proposed = [&](int cores) {
    ctx_.cores = cores;
    ctx_.tried.clear();
    ctx_.best = ctx_.stock;
    Planner p(llama, h, {.domain = {.only = {"threads", "threads_batch"}}, .explore = false});
    std::vector<std::string> ideas;
    for (const Candidate& c : Drive(p, ctx_, 21, Always(Verdict::kRevert, -0.1))) ideas.push_back(c.idea);
    return ideas;
  };
  std::vector<std::string> known = proposed(2);
  EXPECT_FALSE(known.empty());
  for (const std::string& idea : known) {
    EXPECT_NE(idea, "threads=2");
    EXPECT_NE(idea, "threads_batch=2");
  }
  EXPECT_NE(std::find(known.begin(), known.end(), "threads=1"), known.end()) << Join(known, ", ");
  std::vector<std::string> unknown = proposed(0);
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), "threads=2"), unknown.end()) << Join(unknown, ", ");
  // With threads=1 kept, threads_batch's auto is 1: threads_batch=2 is a change again.
  ctx_.cores = 2;
  ctx_.tried.clear();
  ctx_.stock = Config{{"threads", "1"}};
  ctx_.best = ctx_.stock;
  Planner p(llama, h, {.domain = {.only = {"threads_batch"}}, .explore = false});
  auto c = p.Next(ctx_);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->idea, "threads_batch=2") << c->rationale;
}

TEST_F(PlannerTest, RescoringAfterAnObservationMovesTheNumericModel) {
  auto p = Make({.domain = {.only = {"threads"}}});
  Candidate first = Step(*p, Verdict::kRevert, -0.40);  // a much worse thread count
  auto first_value = *NumericValue(first.delta.values().begin()->second);
  // The GP now expects values on the same side to be bad too: the next idea lies on
  // the other side of the stock value (8).
  auto c = p->Next(ctx_);
  ASSERT_TRUE(c);
  double next_value = *NumericValue(c->delta.values().begin()->second);
  EXPECT_EQ(first_value < 8, next_value > 8) << first.idea << " then " << c->idea;
}

TEST_F(PlannerTest, AWinDoublesDownOnItsNeighbours) {
  auto p = Make({.domain = {.only = {"ubatch"}}});
  Candidate c = Step(*p, Verdict::kKeep, 0.20);
  const IdeaNode* kept = Node(*p, c.idea, IdeaState::kKept);
  ASSERT_NE(kept, nullptr);
  double won = *NumericValue(kept->value);
  // Not a fixed domain: new values next to the win (between it and its neighbours, or
  // one step past the edge) became its children, with the double-down bonus.
  int refined = 0;
  for (int id : kept->children) {
    const IdeaNode& n = p->tree().at(id);
    if (n.origin != "expansion") continue;
    ++refined;
    EXPECT_GT(n.bonus, 1.0);
    double v = *NumericValue(n.value);
    EXPECT_TRUE(v >= won / 2 - 1e-9 && v <= won * 2 + 1e-9 && v != won) << n.key;
  }
  EXPECT_GE(refined, 1);
  // The next proposal refines the win.
  auto next = p->Next(ctx_);
  ASSERT_TRUE(next);
  bool is_child = false;
  for (int id : Node(*p, c.idea, IdeaState::kKept)->children) {
    is_child = is_child || (p->tree().at(id).key == next->idea && p->tree().at(id).state == IdeaState::kProposed);
  }
  EXPECT_TRUE(is_child) << c.idea << " then " << next->idea;
}

TEST_F(PlannerTest, FixedDomainsReparentNeighboursInsteadOfInventingValues) {
  PlannerOptions o;
  o.domain.fixed = {{"ubatch", {"64", "256", "512", "1024"}}};
  auto p = Make(o);
  ctx_.stock = Config{{"ubatch", "512"}};
  ctx_.best = ctx_.stock;
  Candidate c = Step(*p, Verdict::kKeep, 0.2);
  const IdeaNode* kept = Node(*p, c.idea, IdeaState::kKept);
  ASSERT_NE(kept, nullptr);
  for (const IdeaNode& n : p->tree().nodes()) EXPECT_NE(n.origin, "expansion") << n.key;
  // The win's untried neighbours in the domain now hang under it.
  const std::vector<std::string> values = {"64", "256", "512", "1024"};
  size_t pos = std::find(values.begin(), values.end(), kept->value) - values.begin();
  int moved = 0;
  for (size_t nb : {pos - 1, pos + 1}) {
    if (nb >= values.size()) continue;
    const IdeaNode* n = Open(*p, "ubatch=" + values[nb]);
    if (!n) continue;
    EXPECT_EQ(n->parent, kept->id) << n->key;
    ++moved;
  }
  EXPECT_GE(moved, 1);
}

TEST_F(PlannerTest, LaunchFailuresHalveTheKnobsOtherIdeas) {
  auto p = Make({.domain = {.only = {"threads"}}});
  auto fresh = Make({.domain = {.only = {"threads"}}});
  ProposalContext ctx = ctx_;
  ASSERT_TRUE(fresh->Next(ctx));
  Candidate c = Step(*p, Verdict::kLaunchFailed, 0, "crashed");
  const IdeaNode* failed = Node(*p, c.idea, IdeaState::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_NE(failed->note.find("crashed"), std::string::npos);
  int compared = 0;
  for (const IdeaNode& n : p->tree().nodes()) {
    if (!n.proposable()) continue;
    const IdeaNode* f = Open(*fresh, n.key);
    ASSERT_NE(f, nullptr);
    EXPECT_NEAR(n.score, f->score * 0.5, 1e-9) << n.key;
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

TEST_F(PlannerTest, ABadFlagPrunesEveryValueOfTheKnob) {
  auto p = Make({.domain = {.only = {"ubatch", "fa"}}});
  ctx_.baseline_metrics = {{"queue_depth_mean", 2.0}};  // batching first
  Candidate c = Step(*p, Verdict::kLaunchFailed, 0, "bad_flag");
  ASSERT_TRUE(c.idea.starts_with("ubatch=")) << c.idea;
  int pruned = 0;
  for (const IdeaNode& n : p->tree().nodes()) {
    if (n.knob != "ubatch" || n.kind != IdeaKind::kValue || n.key == c.idea) continue;
    EXPECT_EQ(n.state, IdeaState::kPruned) << n.key;
    EXPECT_NE(n.note.find("bad_flag"), std::string::npos);
    ++pruned;
  }
  EXPECT_GE(pruned, 3);
  auto next = p->Next(ctx_);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->idea, "fa=off");
}

TEST_F(PlannerTest, KnowledgeBasePriorsPenalizeCrashesPruneBadFlagsAndRaiseLearnings) {
  PlannerOptions o;
  o.domain.only = {"threads", "kv"};
  o.priors = {{"threads", "16", 0, 0.85, "crashed"},  // below KnownLaunchFailure: a penalty
              {"threads", "32", 0, 0.9, "bad_flag"},
              {"kv", "q8_0", 0.30, 0.8, ""}};
  auto p = Make(o);
  auto c = p->Next(ctx_);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->idea, "kv=q8_0");  // the learning beats the generic threads prior
  EXPECT_NE(c->rationale.find("kb: +30.0%"), std::string::npos) << c->rationale;
  EXPECT_NE(Node(*p, "threads=32", IdeaState::kPruned), nullptr);
  const IdeaNode* t16 = Open(*p, "threads=16");
  const IdeaNode* t4 = Open(*p, "threads=4");
  ASSERT_NE(t16, nullptr);
  ASSERT_NE(t4, nullptr);
  EXPECT_LT(t16->score, t4->score * 0.5);
}

TEST_F(PlannerTest, AKeepReopensRejectedValuesOfInteractingKnobs) {
  auto p = Make({.domain = {.only = {"kv", "ubatch"}}});
  // Reject every ubatch idea first, then keep a kv value.
  std::set<std::string> rejected;
  Drive(*p, ctx_, 30, [&](const Candidate& c, const Config&) {
    if (c.idea.starts_with("kv=")) return Outcome{Verdict::kKeep, 0.25, "", true};
    rejected.insert(c.idea);
    return Outcome{Verdict::kRevert, -0.02};
  });
  ASSERT_FALSE(rejected.empty());
  ASSERT_TRUE(ctx_.best.Has("kv"));
  int reopened = 0;
  for (const IdeaNode& n : p->tree().nodes()) {
    if (n.origin != "reopen") continue;
    ++reopened;
    EXPECT_TRUE(rejected.contains(n.key)) << n.key;
    EXPECT_EQ(p->tree().at(n.parent).state, IdeaState::kKept);
    EXPECT_NE(n.prior_note.find("re-test after kv="), std::string::npos);
  }
  EXPECT_GT(reopened, 0);
}

TEST_F(PlannerTest, ConflictingCandidatesAreNeverProposed) {
  auto p = Make({.domain = {.only = {"kv", "fa"}}});
  ctx_.best = Config{{"fa", "off"}};  // any kv value conflicts with fa=off
  ctx_.stock = ctx_.best;
  Drive(*p, ctx_, 10, [&](const Candidate&, const Config& full) {
    EXPECT_OK(catalog_.Validate(full));
    return Outcome{Verdict::kRevert, -0.01};
  });
  bool pruned = false;
  for (const IdeaNode& n : p->tree().nodes()) {
    if (n.knob == "kv" && n.state == IdeaState::kPruned) {
      pruned = true;
      EXPECT_NE(n.note.find("conflicts with fa=off"), std::string::npos) << n.note;
    }
  }
  EXPECT_TRUE(pruned);
}

TEST_F(PlannerTest, HeadroomCapsExpectedGainsAndStopsTheSearchAtTheRoof) {
  ctx_.headroom = 0.5;  // at most 2x from here
  auto p = Make();
  auto c = p->Next(ctx_);
  ASSERT_TRUE(c);
  EXPECT_LE(c->expected_gain, 1.0 + 1e-9);
  ctx_.headroom = 0.999;  // at the roofline: nothing worth a trial
  auto q = Make();
  EXPECT_FALSE(q->Next(ctx_).has_value());
  EXPECT_NE(q->Describe().find("converged"), std::string::npos);
}

TEST_F(PlannerTest, NearMissesGetAnotherLookAndLosersDoNot) {
  auto p = Make({.domain = {.only = {"kv"}}});
  Candidate c = Step(*p, Verdict::kRevert, -0.01);  // within noise
  const IdeaNode* retest = nullptr;
  for (const IdeaNode& n : p->tree().nodes()) {
    if (n.key == c.idea && n.origin == "retest" && n.state == IdeaState::kOpen) retest = &n;
  }
  ASSERT_NE(retest, nullptr);
  double near_miss = retest->score;
  auto q = Make({.domain = {.only = {"kv"}}});
  ctx_.tried.clear();
  ctx_.best = {};
  Candidate d = Step(*q, Verdict::kRevert, -0.6);  // clearly worse
  ASSERT_EQ(c.idea, d.idea);
  for (const IdeaNode& n : q->tree().nodes()) {
    if (n.key == d.idea && n.origin == "retest" && n.state == IdeaState::kOpen) {
      EXPECT_LT(n.score, near_miss / 10);
    }
  }
}

// The warm replay measures a recipe before the planner has a tree. Its measurement is
// the value idea's first look: with the configuration already tried, only a retest can
// measure it again, and a promising near miss ranks first.
TEST_F(PlannerTest, AWarmReplaysMeasurementBecomesTheIdeasFirstLook) {
  PlannerOptions o;
  o.domain.only = {"threads", "kv"};
  o.priors = {{"kv", "q8_0", 0.30, 0.8, ""}};
  auto p = Make(o);
  Candidate replay;
  replay.idea = "warm-replay:recipe-1";
  replay.delta = Config{{"kv", "q8_0"}};
  Config full = ctx_.best.Merged(replay.delta);
  p->Observe({replay, full, Verdict::kInconclusive, 0.12, ""});  // before the first Next()
  ctx_.tried.insert(full.Hash());
  // Buffered across a save and a restore (a crash between the prelude and the search).
  auto q = Make(o);
  ASSERT_OK(q->Load(p->Save()));
  for (Planner* x : {p.get(), q.get()}) {
    const IdeaNode* first = Node(*x, "kv=q8_0", IdeaState::kInconclusive);
    EXPECT_EQ(first, nullptr);  // no tree yet
    ProposalContext ctx = ctx_;
    bool retested = false;
    Drive(*x, ctx, 8, [&](const Candidate& c, const Config&) -> std::optional<Outcome> {
      retested = c.idea == "kv=q8_0";
      if (retested) return std::nullopt;
      return Outcome{Verdict::kRevert, -0.3};
    });
    EXPECT_TRUE(retested) << x->Describe();
    first = Node(*x, "kv=q8_0", IdeaState::kInconclusive);
    ASSERT_NE(first, nullptr) << x->Describe();
    EXPECT_NE(first->note.find("warm-replay:recipe-1"), std::string::npos) << first->note;
    EXPECT_NEAR(first->gain, 0.12, 1e-9);
  }
  // A measurement of several knobs, or of a knob outside the domain, changes nothing.
  auto r = Make(o);
  replay.delta = Config{{"kv", "q8_0"}, {"threads", "4"}};
  r->Observe({replay, ctx_.best.Merged(replay.delta), Verdict::kRevert, -0.1, ""});
  auto c = r->Next(ctx_);
  ASSERT_TRUE(c);
  EXPECT_EQ(Node(*r, "threads=4", IdeaState::kReverted), nullptr);
  EXPECT_EQ(Node(*r, "kv=q8_0", IdeaState::kInconclusive), nullptr);
}

TEST_F(PlannerTest, StateRoundTripsAndDescribeShowsTheTree) {
  auto p = Make();
  Step(*p, Verdict::kKeep, 0.12);
  Step(*p, Verdict::kRevert, -0.05);
  Step(*p, Verdict::kLaunchFailed, 0, "out_of_memory");
  std::string saved = p->Save();
  auto q = Make();
  ASSERT_OK(q->Load(saved));
  EXPECT_EQ(q->Save(), saved);
  // Both continue identically.
  auto a = p->Next(ctx_);
  auto b = q->Next(ctx_);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->idea, b->idea);
  std::string d = q->Describe();
  EXPECT_NE(d.find("4 ideas proposed: 1 kept, 1 reverted, 0 inconclusive, 1 failed"), std::string::npos) << d;
  EXPECT_NE(d.find("KEEP"), std::string::npos);
  EXPECT_NE(d.find("launch failed: out_of_memory"), std::string::npos) << d;
  auto bad = Make();
  EXPECT_FALSE(bad->Load("{not json"));
  // Another strategy's saved state (the catalog proposer's lines): a fresh tree.
  auto other = Make();
  ASSERT_OK(other->Load("p weights=q8_0\no weights=q8_0 REVERT\n"));
  EXPECT_TRUE(other->Next(ctx_).has_value());
}

// With the session's protocol known, an idea the evidence says will end near neutral
// (every look of the pairs, 19 runs) ranks below one a screen or one look decides.
TEST_F(PlannerTest, TheProtocolsCostRanksIdeasByGainPerRun) {
  PlannerOptions o{.domain = {.only = {"fa", "spec"}}};
  ctx_.noise_floor = 0.02;
  auto plain = Make(o);
  o.protocol = MeasurementProtocol{};
  auto costed = Make(o);
  ASSERT_TRUE(plain->Next(ctx_));
  ASSERT_TRUE(costed->Next(ctx_));
  const IdeaNode* a = Open(*costed, "spec=ngram");
  if (!a) a = Node(*costed, "spec=ngram", IdeaState::kProposed);
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->why.find("runs"), std::string::npos) << a->why;
  const IdeaNode* b = Open(*plain, "spec=ngram");
  if (!b) b = Node(*plain, "spec=ngram", IdeaState::kProposed);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->why.find("runs"), std::string::npos) << b->why;
  // Same expected gain, the score divided by the expected runs per decisive candidate.
  EXPECT_DOUBLE_EQ(a->expected_gain, b->expected_gain);
  EXPECT_NE(a->score, b->score);
}

// Under a protocol that pools a re-test with its INCONCLUSIVE look, the re-test of a near
// miss is worth more than one judged alone: its verdict sees twice the pairs.
TEST_F(PlannerTest, ARetestThatPoolsItsEarlierLookIsScoredWithTheirPairs) {
  ctx_.noise_floor = 0.15;
  double gain[2] = {0, 0};
  for (int pool = 0; pool < 2; ++pool) {
    SCOPED_TRACE(pool ? "pooled" : "alone");
    ctx_.tried.clear();
    ctx_.best = {};
    MeasurementProtocol protocol;
    protocol.pool_retests = pool == 1;
    auto p = Make({.domain = {.only = {"kv"}}, .protocol = protocol});
    Candidate c = Step(*p, Verdict::kInconclusive, 0.14);  // under the 15% threshold
    (void)p->Next(ctx_);                                   // rescored
    const IdeaNode* retest = nullptr;
    for (const IdeaNode& n : p->tree().nodes()) {
      if (n.key == c.idea && n.origin == "retest") retest = &n;
    }
    ASSERT_NE(retest, nullptr);
    EXPECT_EQ(retest->why.find("pools 1 earlier look(s)") != std::string::npos, pool == 1) << retest->why;
    gain[pool] = retest->expected_gain;
  }
  EXPECT_GT(gain[1], gain[0]);
}

// Two knobs whose values each measured a little better than the incumbent (under the
// noise: no KEEP) are tried together: the pattern move.
TEST_F(PlannerTest, NearMissesOfTwoKnobsAreCombinedIntoOneCandidate) {
  auto p = Make({.domain = {.only = {"fa", "spec"}}, .protocol = MeasurementProtocol{}});
  ctx_.noise_floor = 0.05;
  std::optional<Candidate> combined;
  Drive(*p, ctx_, 6, [&](const Candidate& c, const Config&) -> std::optional<Outcome> {
    if (c.delta.size() == 2) {
      combined = c;
      return std::nullopt;
    }
    // fa=off and spec=ngram each measure +4%: inconclusive under 5% noise.
    return Outcome{Verdict::kInconclusive, 0.04};
  });
  ASSERT_TRUE(combined.has_value());
  EXPECT_EQ(combined->delta.ToString(), "fa=off spec=ngram");
  EXPECT_EQ(combined->idea, "combine:fa=off spec=ngram");
  EXPECT_NE(combined->rationale.find("expected"), std::string::npos);
  // Kept: both knobs move; the combination is not proposed again.
  Config full = ctx_.best.Merged(combined->delta);
  ctx_.best = full;
  p->Observe({*combined, full, Verdict::kKeep, 0.08, ""});
  EXPECT_NE(Node(*p, "combine:fa=off spec=ngram", IdeaState::kKept), nullptr);
  auto next = p->Next(ctx_);
  if (next) {
    EXPECT_NE(next->idea, "combine:fa=off spec=ngram");
  }
  // The tree survives a save and load with the combination's belief.
  auto q = Make({.domain = {.only = {"fa", "spec"}}, .protocol = MeasurementProtocol{}});
  ASSERT_OK(q->Load(p->Save()));
  EXPECT_EQ(q->Save(), p->Save());
}

// A value that failed to launch is retried with each other value of a knob it
// interacts with (kv interacts with ubatch here); a flag the engine rejects is not.
TEST_F(PlannerTest, ALaunchFailureIsRetriedWithTheValuesOfInteractingKnobs) {
  PlannerOptions o{.domain = {.only = {"kv", "ubatch"}}};
  auto p = Make(o);
  std::optional<Candidate> kv;
  auto fail_kv = [&](const std::string& why) {
    return [&kv, why](const Candidate& c, const Config&) {
      if (!c.idea.starts_with("kv=")) return Outcome{Verdict::kRevert, -0.3};
      kv = c;
      return Outcome{Verdict::kLaunchFailed, 0, why, true};
    };
  };
  Drive(*p, ctx_, 8, fail_kv("context_create"));
  ASSERT_TRUE(kv.has_value());
  int retries = 0;
  for (const IdeaNode& n : p->tree().nodes()) {
    if (n.origin != "retry") continue;
    ++retries;
    EXPECT_TRUE(n.key.starts_with("retry:" + kv->idea + ",ubatch=")) << n.key;
    EXPECT_EQ(p->tree().at(n.parent).key, kv->idea);
    EXPECT_EQ(n.delta.size(), 2u);
    EXPECT_NE(n.prior_note.find("failed to launch with ubatch=512"), std::string::npos) << n.prior_note;
  }
  EXPECT_EQ(retries, 4);  // ubatch 64, 128, 256, 1024
  // The engine does not know the flag: nothing to retry.
  ctx_ = {};
  ctx_.cpus = 8;
  ctx_.concurrency = 4;
  auto q = Make(o);
  kv.reset();
  Drive(*q, ctx_, 8, fail_kv("bad_flag"));
  ASSERT_TRUE(kv.has_value());
  for (const IdeaNode& n : q->tree().nodes()) EXPECT_NE(n.origin, "retry") << n.key;
}

// A retry that launched explains the failure: its sibling retries are pruned, and the
// next value of the knob that fails is retried with the explaining value alone, the
// others only when that one fails too (weights=q8_0 and q4_0 crash with repack=on).
TEST_F(PlannerTest, ARetryThatLaunchedExplainsTheKnobsNextFailure) {
  PlannerOptions o{.domain = {.only = {"kv", "ubatch"}}};
  auto p = Make(o);
  std::string explaining;  // the retry that launched
  std::string second;      // the second value of kv that failed
  auto retries_under = [&](const std::string& key) {
    std::vector<const IdeaNode*> out;
    for (const IdeaNode& n : p->tree().nodes()) {
      if (n.origin == "retry" && n.parent >= 0 && p->tree().at(n.parent).key == key) out.push_back(&n);
    }
    return out;
  };
  Drive(*p, ctx_, 30, [&](const Candidate& c, const Config&) {
    if (c.idea.starts_with("kv=") && (explaining.empty() || second.empty())) {
      if (!explaining.empty()) second = c.idea;
      return Outcome{Verdict::kLaunchFailed, 0, "crashed"};
    }
    if (c.idea.starts_with("retry:") && explaining.empty()) {
      explaining = c.idea;
      return Outcome{Verdict::kRevert, -0.05};
    }
    if (!second.empty() && c.idea.starts_with("retry:" + second)) {
      // The explanation does not hold for the second value: the other retries follow.
      EXPECT_EQ(retries_under(second).size(), 1u);
      return Outcome{Verdict::kLaunchFailed, 0, "crashed", true};
    }
    return Outcome{Verdict::kRevert, -0.3};
  });
  ASSERT_FALSE(explaining.empty());
  ASSERT_FALSE(second.empty());
  const std::string first = explaining.substr(6, explaining.find(',') - 6);  // "retry:kv=q8_0,ubatch=64"
  const std::string partner = explaining.substr(explaining.find(',') + 1);
  int pruned = 0;
  for (const IdeaNode* r : retries_under(first)) {
    if (r->key == explaining) continue;
    EXPECT_EQ(r->state, IdeaState::kPruned) << r->key;
    EXPECT_NE(r->note.find("not needed: " + explaining + " launched"), std::string::npos) << r->note;
    ++pruned;
  }
  EXPECT_EQ(pruned, 3);
  // The second failure's retries: the explaining one first, then the other three.
  auto under = retries_under(second);
  ASSERT_EQ(under.size(), 4u);
  EXPECT_EQ(under[0]->key, "retry:" + second + "," + partner);
  EXPECT_NE(under[0]->prior_note.find("let an earlier value of kv launch"), std::string::npos) << under[0]->prior_note;
  for (size_t k = 1; k < under.size(); ++k) EXPECT_EQ(under[k]->state, IdeaState::kOpen) << under[k]->key;
}

// A retry that launched names a conflict (kv=q8_0 fails with ubatch=512, launches with
// 64): no later candidate of the tree or the explorer holds it, and the conflict
// survives a save and load. The world: kv=q8_0 with ubatch=512 never launches.
TEST_F(PlannerTest, ALearnedLaunchConflictIsNeverProposedAgain) {
  PlannerOptions o{.domain = {.only = {"kv", "ubatch", "threads"}}, .protocol = MeasurementProtocol{}, .seed = 3};
  ctx_.noise_floor = 0.25;  // explorations too
  auto p = Make(o);
  auto holds = [&](const Config& full) { return full.GetOr("kv", "f16") == "q8_0" && full.GetOr("ubatch", "512") == "512"; };
  bool learned = false, resumed = false;
  int failures_after = 0, launched_after = 0;
  auto world = [&](const Candidate& c, const Config& full) {
    if (holds(full)) {
      failures_after += learned;
      return Outcome{Verdict::kLaunchFailed, 0, "context_create"};
    }
    const bool keep = c.idea.starts_with("retry:kv=q8_0");
    learned = learned || keep;
    launched_after += learned;
    // The first lesson ends the first drive: the session resumes from its saved state.
    return Outcome{keep ? Verdict::kKeep : Verdict::kRevert, keep ? 0.5 : -0.2, "", keep && !resumed};
  };
  const size_t steps = Drive(*p, ctx_, 60, world).size();
  ASSERT_TRUE(learned);
  // Through a save and load (a resumed session): the conflict holds there too.
  auto q = Make(o);
  ASSERT_OK(q->Load(p->Save()));
  p = std::move(q);
  resumed = true;
  Drive(*p, ctx_, 60 - static_cast<int>(steps), world);
  EXPECT_GT(launched_after, 5);
  EXPECT_EQ(failures_after, 0);
  EXPECT_NE(p->Describe().find("learned launch conflict: kv=q8_0 ubatch=512"), std::string::npos) << p->Describe();
  // What the session records in its knowledge base.
  EXPECT_EQ(p->LearnedConflicts(), (std::vector<Config>{Config{{"kv", "q8_0"}, {"ubatch", "512"}}}));
}

// A conflict the knowledge base knows (PlannerOptions::conflicts) is held from the start:
// no candidate holds it, and the value it names is tried with the partner's other
// values without a failed trial first. It is not this session's learning.
TEST_F(PlannerTest, AKnownConflictIsNeverLaunchedAndItsValueIsTriedWithThePartnersOtherValues) {
  PlannerOptions o{.domain = {.only = {"kv", "ubatch", "threads"}}, .protocol = MeasurementProtocol{}, .seed = 3};
  o.conflicts = {Config{{"kv", "q8_0"}, {"ubatch", "512"}}};
  ctx_.noise_floor = 0.05;
  auto p = Make(o);
  auto holds = [&](const Config& full) { return full.GetOr("kv", "f16") == "q8_0" && full.GetOr("ubatch", "512") == "512"; };
  int held = 0, detours = 0;
  Drive(*p, ctx_, 40, [&](const Candidate& c, const Config& full) {
    if (holds(full)) {
      ++held;
      return Outcome{Verdict::kLaunchFailed, 0, "context_create"};
    }
    if (c.idea.starts_with("retry:kv=q8_0,ubatch=")) {
      ++detours;
      const IdeaNode* n = nullptr;
      for (const IdeaNode& x : p->tree().nodes()) {
        if (x.key == c.idea) n = &x;
      }
      EXPECT_NE(n, nullptr);
      if (n) {
        EXPECT_NE(n->prior_note.find("knowledge base: kv=q8_0 does not launch with ubatch=512"), std::string::npos)
            << n->prior_note;
      }
    }
    return Outcome{Verdict::kRevert, -0.05};
  });
  EXPECT_EQ(held, 0);
  EXPECT_GE(detours, 1);
  EXPECT_NE(p->Describe().find("launch conflict from the knowledge base: kv=q8_0 ubatch=512"), std::string::npos)
      << p->Describe();
  EXPECT_TRUE(p->LearnedConflicts().empty());
}

// A value the knowledge base says crashed at this very point (an exact match) is never
// launched alone again: it is tried with its partners' other values, as a launch failure
// of this session would be. At another machine's confidence it is only penalized.
TEST_F(PlannerTest, AValueTheKnowledgeBaseSawCrashHereIsOnlyTriedWithItsPartners) {
  PlannerOptions o{.domain = {.only = {"kv", "ubatch", "threads"}}, .protocol = MeasurementProtocol{}, .seed = 3};
  o.priors = {{"kv", "q8_0", 0, 1.0, "crashed"}};
  ctx_.noise_floor = 0.05;
  auto p = Make(o);
  int alone = 0, retries = 0;
  for (const Candidate& c : Drive(*p, ctx_, 40, Always(Verdict::kRevert, -0.05))) {
    if (c.delta == Config{{"kv", "q8_0"}}) ++alone;
    if (c.idea.starts_with("retry:kv=q8_0,")) ++retries;
  }
  EXPECT_EQ(alone, 0);
  EXPECT_GE(retries, 1);
  EXPECT_NE(p->Describe().find("kv=q8_0: knowledge base: did not launch here (crashed, conf 1)"), std::string::npos)
      << p->Describe();

  o.priors = {{"kv", "q8_0", 0, 0.6, "crashed"}};  // another machine's crash: a penalty only
  auto elsewhere = Make(o);
  ctx_.tried.clear();
  bool proposed = false;
  Drive(*elsewhere, ctx_, 40, [&](const Candidate& c, const Config&) {
    proposed = c.delta == Config{{"kv", "q8_0"}};
    return Outcome{Verdict::kRevert, -0.05, "", proposed};
  });
  EXPECT_TRUE(proposed);
}

// Under a keep threshold no single knob is expected to clear (a 40% A/A floor), the
// planner draws a multi-knob move from TPE instead of a single value; under a low floor
// it proposes single values. A multi-knob move that lost moves its members' beliefs.
TEST_F(PlannerTest, AHighNoiseFloorMakesTheNextMoveAMultiKnobExploration) {
  PlannerOptions o{.domain = {.exclude = {"slots"}}, .protocol = MeasurementProtocol{}, .seed = 7};
  ctx_.noise_floor = 0.01;
  auto low = Make(o);
  auto c = low->Next(ctx_);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->idea.starts_with("tpe:")) << c->idea;
  EXPECT_EQ(c->delta.size(), 1u);

  ctx_.noise_floor = 0.40;
  auto high = Make(o);
  auto e = high->Next(ctx_);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->idea.starts_with("tpe:")) << e->idea;
  EXPECT_NE(e->rationale.find("keep threshold blocks single moves"), std::string::npos) << e->rationale;
  const IdeaNode* node = Node(*high, e->idea, IdeaState::kProposed);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->origin, "explore");
  // Identical options draw the same move; the state round-trips with the explorer's.
  auto twin = Make(o);
  auto t = twin->Next(ctx_);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->idea, e->idea);
  auto restored = Make(o);
  ASSERT_OK(restored->Load(high->Save()));
  EXPECT_EQ(restored->Save(), high->Save());
  // Restored with the draw out for measurement (a session killed mid-candidate), it
  // continues exactly as the uninterrupted planner: same outcome, same next moves.
  {
    ProposalContext ctx = ctx_;
    Config f = ctx.best.Merged(e->delta);
    ctx.tried.insert(f.Hash());
    for (Planner* q : {twin.get(), restored.get()}) q->Observe({*e, f, Verdict::kRevert, -0.05, ""});
    for (int i = 0; i < 4; ++i) {
      auto a = twin->Next(ctx);
      auto b = restored->Next(ctx);
      ASSERT_TRUE(a && b);
      ASSERT_EQ(a->idea, b->idea) << i;
      Config g = ctx.best.Merged(a->delta);
      ctx.tried.insert(g.Hash());
      twin->Observe({*a, g, Verdict::kInconclusive, 0.02, ""});
      auto again = Make(o);  // and once more through a save and load between moves
      ASSERT_OK(again->Load(restored->Save()));
      again->Observe({*b, g, Verdict::kInconclusive, 0.02, ""});
      restored = std::move(again);
    }
  }

  // The move loses by 60%: every member that moved has a measured effect now (and the
  // knobs whose spread that raised may come first again).
  Config full = ctx_.best.Merged(e->delta);
  ctx_.tried.insert(full.Hash());
  high->Observe({*e, full, Verdict::kScreenedOut, -0.6, ""});
  for (const auto& [knob, value] : e->delta.values()) {
    high->Rescore();
    const IdeaNode* idea = Open(*high, knob + "=" + value);
    if (!idea) continue;  // a value the tree never had (an expression's resolution)
    EXPECT_NE(idea->why.find("1 measurement(s)"), std::string::npos) << knob << ": " << idea->why;
  }
  auto next = high->Next(ctx_);
  ASSERT_TRUE(next);
  EXPECT_NE(next->idea, e->idea);
}

// The explorer's draws are ranked by the planner's beliefs (rank_explore): on an
// additive surface whose one large win (threads=16, +49%) was kept, TPE's l(x)/g(x)
// alone keeps drawing configurations that undo it (the planner's measurements crowd
// around its incumbent, so g(x) is mostly threads=16 and any other value looks rare
// and good); ranked, the exploring moves hold the win and spend their trials on the
// knobs still open.
TEST_F(PlannerTest, ExploringDrawsKeepWhatTheBeliefsKnowToWin) {
  const std::map<std::string, std::map<std::string, double>> effect = {
      {"threads", {{"2", -0.6}, {"4", -0.25}, {"16", 0.4}, {"32", 0.05}}},
      {"ubatch", {{"64", -0.08}, {"128", -0.03}, {"256", 0.02}, {"1024", 0.03}}},
      {"fa", {{"off", -0.06}}},
      {"kv", {{"q8_0", 0.04}, {"q4_0", -0.12}}},
      {"spec", {{"ngram", 0.03}}}};
  auto level = [&](const Config& c) {
    double sum = 0;
    for (const auto& [knob, values] : effect) {
      if (auto it = values.find(c.GetOr(knob, "")); it != values.end()) sum += it->second;
    }
    return sum;
  };
  auto run = [&](bool rank) {
    PlannerOptions o{.domain = {.exclude = {"slots"}}, .protocol = MeasurementProtocol{}, .seed = 11};
    o.rank_explore = rank;
    auto p = Make(o);
    ProposalContext ctx = ctx_;
    ctx.noise_floor = 0.15;  // a move under +15% is never kept: the planner explores
    int explored = 0, undone = 0;
    Drive(*p, ctx, 30, [&](const Candidate& c, const Config& full) {
      const double gain = std::expm1(level(full) - level(ctx.best));
      const bool kept = ctx.best.GetOr("threads", "") == "16";
      if (c.idea.starts_with("tpe:") && kept) {
        ++explored;
        if (full.GetOr("threads", "") != "16") ++undone;
      }
      return Outcome{gain > 0.15 ? Verdict::kKeep : gain < -0.15 ? Verdict::kScreenedOut : Verdict::kInconclusive, gain};
    });
    EXPECT_EQ(ctx.best.GetOr("threads", ""), "16") << "the large win is kept either way";
    return std::make_pair(explored, undone);
  };
  auto [ranked_explored, ranked_undone] = run(true);
  auto [plain_explored, plain_undone] = run(false);
  ASSERT_GT(ranked_explored, 5);
  ASSERT_GT(plain_explored, 5);
  EXPECT_GT(plain_undone, 0) << "l(x)/g(x) alone draws away from the kept win";
  EXPECT_LT(ranked_undone * plain_explored, plain_undone * ranked_explored)
      << "ranked: " << ranked_undone << " of " << ranked_explored << " exploring moves undo it; plain: "
      << plain_undone << " of " << plain_explored;
}

// When the tree has nothing left worth a trial the planner explores instead of
// stopping (the session's budget and plateau rule end the search), unless told not to.
TEST_F(PlannerTest, AConvergedTreeExploresUntilNothingNewIsLeft) {
  PlannerOptions o{.domain = {.only = {"fa", "spec"}}, .protocol = MeasurementProtocol{}};
  ctx_.noise_floor = 0.02;
  auto run = [&](PlannerOptions opts) {
    auto p = Make(opts);
    ProposalContext ctx = ctx_;
    std::vector<std::string> ideas;
    for (const Candidate& c : Drive(*p, ctx, 10, Always(Verdict::kScreenedOut, -0.7))) {  // everything loses by far
      ideas.push_back(c.idea);
    }
    return std::make_pair(ideas, p->Describe());
  };
  auto [explored, d1] = run(o);
  ASSERT_FALSE(explored.empty());
  EXPECT_TRUE(explored.back().starts_with("tpe:")) << explored.back();
  EXPECT_EQ(explored.back(), "tpe:fa=off spec=ngram");  // the one configuration left
  // Then nothing new: stopped.
  EXPECT_TRUE(d1.find("converged") != std::string::npos || d1.find("no open idea left") != std::string::npos) << d1;
  o.explore = false;
  auto [stopped, d2] = run(o);
  for (const std::string& idea : stopped) EXPECT_FALSE(idea.starts_with("tpe:")) << idea;
  EXPECT_LT(stopped.size(), explored.size());
  EXPECT_TRUE(d2.find("converged") != std::string::npos || d2.find("no open idea left") != std::string::npos) << d2;
}

}  // namespace
}  // namespace hone::search
