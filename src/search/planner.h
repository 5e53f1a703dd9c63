// Planner: hone's proposer. An idea tree (idea_tree.h) scored by expected gain, cost,
// accuracy risk and urgency, rescored after every observation.
//
// Beliefs. Every knob has a reference value (its stock value), the effects measured so
// far relative to it (log objective ratios), and the value the incumbent holds. The
// prior spread of a knob's effects comes from its catalog category (heuristics.h),
// scaled by the baseline's bottleneck diagnosis (decode-, prefill-, KV-capacity-bound,
// queueing), and is re-estimated from the knob's measured effects (knobs that did
// nothing shrink, knobs that moved the objective grow). Numeric knobs are modelled by a
// Gaussian process over log2(value) (gp.h): a measured neighbour predicts the next
// value. Enum and bool values are independent under the knob's spread, shifted by value
// hints ("parallel = concurrency") and knowledge-base learnings.
//
// Score of an open idea = expected improvement over the incumbent's value of the knob
// (capped by the roofline headroom: nothing gains more than the distance to the bound)
//   x (1 - accuracy-risk penalty x (1 - urgency))
//   x 0.5^(launch failures of the knob this session) x 0.5^(accuracy failures)
//   x (1 - 0.8 x knowledge-base failure confidence) x double-down bonus / trial cost.
// A measurement the planner did not ask for (the warm replay) is not wasted: when it
// changed one knob of the incumbent, the value idea takes it as its first look (a
// non-KEEP leaves a retest open, since ideas already measured are otherwise skipped).
// Outcomes: KEEP makes the value the incumbent's, adds refinements as its children
// (neighbouring numeric values; new in-between values when the domain is not fixed) and
// re-opens rejected ideas of interacting knobs; REVERT/INCONCLUSIVE record the effect
// (the model learns from losers too); LAUNCH_FAILED and ACCURACY_FAILED fail the idea
// and penalize the knob (bad_flag/unsupported prune the whole knob; a retry with another
// value of an interacting knob that launches names a launch conflict no later candidate
// may hold, LearnConflict below); a knowledge-base
// bad_flag prior prunes the value before it is ever tried. A candidate whose full
// configuration the catalog rejects (a conflict) is pruned, never proposed. Next()
// returns nothing once the best remaining expected gain is below min_expected_gain.
//
// State (tree + beliefs) round-trips through Save()/Load(); Describe() prints the tree.
// Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "search/domain.h"
#include "search/gp.h"
#include "search/heuristics.h"
#include "search/idea_tree.h"
#include "search/proposer.h"
#include "search/tpe.h"
#include "search/trial_cost.h"
#include "target/catalog.h"

namespace hone::search {

// Experience from the knowledge base (kb::RecipeStore::Learnings/Failures), as the
// search sees it. A learning has an empty failure_kind and a measured relative effect;
// a failure names its kind ("bad_flag", "out_of_memory", "crashed", "accuracy_failed",
// "regressed", ...). `confidence` is the recipe's match confidence (0..1).
struct Prior {
  std::string knob;
  std::string value;
  double effect = 0;
  double confidence = 0;
  std::string failure_kind;
};

struct PlannerOptions {
  DomainOptions domain;
  std::vector<Prior> priors;
  // Heuristics section to use (default: the catalog's framework).
  std::string framework;
  // Below this expected relative gain the planner stops proposing.
  double min_expected_gain = 0.002;
  // Observation noise sd (log ratio) when the context gives no noise floor.
  double default_noise = 0.03;
  // GP length scale in doublings of the value.
  double length_scale = 1.0;
  // Trust in a knob's spread prior, in pseudo-observations.
  double prior_weight = 1.5;
  // The session's measurement protocol: when set, an idea's score is its expected gain
  // per expected server run (search/trial_cost.h), so ideas likely to end near neutral
  // (every look of the pairs) rank below ideas a screen or one look decides.
  std::optional<MeasurementProtocol> protocol;
  // Seeds the draws of jump moves (below); a session passes search.seed, so two
  // identical sessions propose the same jumps.
  uint64_t seed = 0;
  // Explore with TPE once the tree has nothing worth measuring (instead of stopping).
  bool explore = true;
  // Which of TPE's draws an exploring move measures: the one the planner's own beliefs
  // expect to prove the most (the additive model over the knobs' effects, as a
  // combination is scored), instead of TPE's l(x)/g(x) pick (TpeProposer::SetRanker).
  bool rank_explore = true;
  // Launch conflicts known before the session (the knowledge base's, kb::FailureKind
  // kConflict): held like the ones a session learns (a configuration holding one is
  // never proposed), and each value's idea gets a two-knob try with every other value
  // of its partner from the start (cache_type_k=q8_0 with flash_attn=off), the way a
  // failure is retried, without the failed trial.
  std::vector<Config> conflicts;
};

class Planner final : public Proposer {
 public:
  Planner(const target::KnobCatalog& catalog, Heuristics heuristics, PlannerOptions options);
  // The explorer ranks its draws through this planner (rank_explore): not copyable.
  Planner(const Planner&) = delete;
  Planner& operator=(const Planner&) = delete;
  std::optional<Candidate> Next(const ProposalContext& ctx) override;
  void Observe(const Observation& obs) override;
  std::string Save() const override;
  Status Load(const std::string& saved) override;
  std::string Describe() const override;
  // The conflicts learned from this session's failures (not the ones it was given).
  std::vector<Config> LearnedConflicts() const override;

  // For tests and the report.
  const IdeaTree& tree() const { return tree_; }
  const Diagnosis& diagnosis() const { return diagnosis_; }
  // Rescores every open idea with the last context (Next() does it with the new one).
  void Rescore();
  // The current spread (sd of log effects) of a knob's values.
  double KnobScale(const std::string& knob) const;

 private:
  struct Belief {
    std::string reference;                 // value the effects are relative to
    std::map<std::string, std::vector<double>> effects;  // value -> measured log effects vs reference
    std::string current;                   // value in the incumbent
    double current_effect = 0;             // its effect when it was never measured here
    double sum_sq = 0;                     // evidence for the spread, kept across rebases
    int n = 0;
    int crashes = 0;
    int accuracy_failures = 0;
    bool pruned = false;
  };
  struct Context {  // what rescoring needs from the last ProposalContext
    std::optional<double> headroom;
    double noise = 0.03;   // log sd of a measured gain
    double floor = 0.03;   // the A/A noise floor (or the default noise when unknown)
    int concurrency = 1;
    int cpus = 1;
    int cores = 0;
  };

  Status Init(const ProposalContext& ctx);
  int AddValueIdea(const KnobDomain& kd, const std::string& value, int parent, const std::string& origin);
  void AddBundles();
  void ScoreNode(IdeaNode& n);
  // Belief about a value's effect vs the knob's reference after what was measured:
  // a GP over log2(value) for numeric knobs, a conjugate normal per value otherwise.
  GpPrediction Posterior(const std::string& knob, const std::string& value, double prior_mean) const;
  // The estimated effect of the incumbent's value of a knob.
  double IncumbentEffect(const std::string& knob) const;
  // A knob's prior spread before any measurement: its catalog effect_scale, else its
  // category's scale; times the diagnosis's and the device's multipliers of its category.
  double PriorScale(const target::Knob* knob) const;
  // The gain a change believed N(mean, sd^2) (log, vs the incumbent) is expected to
  // prove under the session's keep rule (gp.h KeptGain): the protocol's threshold,
  // max(min_gain, noise floor), and the estimate's noise after the last look. (The
  // interval's half-width is a higher bar than the threshold at high noise; scoring
  // against it did worse on every surface tried, docs/search.md.)
  // `looks`: the comparisons its verdict will see (a pooled re-test's earlier ones too).
  double Kept(double mean, double sd, int looks = 1) const;
  // The beliefs about a configuration's members that differ from the incumbent: each
  // member's effect over the incumbent's value (mean, variance) and their sums (the
  // additive model), and 0.5 per crash or accuracy failure of a member's knob.
  struct DeltaBelief {
    struct Member {
      std::string knob, value;
      double mean, var, base;  // base: the incumbent value's effect
    };
    std::vector<Member> members;
    double mean = 0, var = 0, penalty = 1;
  };
  DeltaBelief BeliefOf(const Config& full) const;
  // What the beliefs expect a full configuration to prove over the incumbent: BeliefOf's
  // sums scored like an idea (Kept), times its penalty. Ranks the explorer's draws.
  double RankConfig(const Config& full) const;
  // The INCONCLUSIVE looks a re-test continues (protocol pool_retests): its chain of
  // earlier looks at the same value since the incumbent last moved; 0 otherwise.
  int PooledLooks(const IdeaNode& n) const;
  // One trial's log noise, from the A/A floor.
  double TrialNoise() const;
  // What any idea can still gain under the roofline (log; the headroom less the kept
  // gains), or nothing when the headroom is unknown.
  std::optional<double> RoofCap() const;
  Config Resolve(const Config& delta) const;
  // A knob's value in `config` as the engine runs it: its default resolved through the
  // catalog's auto_means where that is known here (llama.cpp's threads "auto" -> the
  // host's physical cores), else the value as written.
  std::string Effective(const Config& config, const target::Knob& knob, int depth = 0) const;
  // Whether `full` runs any knob of `delta` differently from `base` (threads=2 on a
  // stock whose auto threads are 2 does not).
  bool Changes(const Config& base, const Config& full, const Config& delta) const;
  void RecordEffect(const std::string& knob, const std::string& value, double log_effect);
  void Rebase(const std::string& knob, const std::string& new_value);
  void ExpandWin(int id);
  // The pattern move (Hooke and Jeeves, "Direct search solution of numerical and
  // statistical problems", J. ACM 1961): every knob's measured value that beats the
  // incumbent's on the evidence (posterior mean above 0), set together in one
  // candidate. Near misses of single knobs (each gain under the noise) add up to a gain
  // one comparison can prove. Refreshed before every proposal; an open combination the
  // evidence no longer supports is pruned.
  void UpdateCombination();
  void ReopenInteractions(const std::string& knob, int win_id);
  // Exploration: where the keep threshold blocks single moves (the tree's best-scored
  // idea is a single value expected to prove less than half its expected improvement,
  // gp.h KeptGain), or the tree has nothing left worth measuring, the next candidate
  // is a multi-knob move
  // drawn from TPE (tpe.h) that has seen every configuration this planner measured: on
  // noisy surfaces with interacting knobs a gain large enough to prove takes several
  // knobs at once, and the univariate good/bad densities find values that only pay
  // together (parallel=2 with threads=1) where the planner's additive belief cannot.
  // The draw spells out every knob; the candidate changes the knobs where it differs
  // from the incumbent as the engine runs it (Effective): usually several, one when
  // the draw agrees with the incumbent elsewhere.
  // The move is a tree node (origin "explore"); its outcome updates the beliefs like a
  // bundle's.
  std::optional<Candidate> Explore(const ProposalContext& ctx, const std::string& why);
  std::optional<Candidate> FromTree(const ProposalContext& ctx);
  bool FloorBlocksSingleMoves() const;
  // A multi-knob candidate that was not kept still says something about each member:
  // under the additive belief, the measured log gain g of members with beliefs
  // N(m_k, v_k) moves each to m_k + v_k / (sum v + noise^2) (g - sum m), recorded as
  // the member's measured effect.
  void AttributeEffect(const Config& resolved, double log_gain);
  // A value that failed to launch may work with another value of a knob it interacts
  // with (heuristics' interactions, both directions: cache_type_k=q8_0 with
  // flash_attn=off): one two-knob retry per other value, as children of the failure.
  // A retry that launched explains its knob's failures: its open siblings are pruned
  // (Observe), and the next failure of that knob is retried with the explaining value
  // alone first (`all` = false), the others only if that one fails too (`all` = true).
  void AddRetries(int failed_id, bool all = false);
  // One two-knob retry of the value idea `of` with j=w, its child, once per key
  // (`existing`: every key in the tree).
  void AddRetry(const IdeaNode& of, const std::string& j, const std::string& w, std::string note,
                std::set<std::string>& existing);
  // Whether knob j can take part in a retry of a value of `knob` (searched, not pruned).
  bool RetryPartner(const std::string& knob, const std::string& j) const;
  // Launch conflicts learned this session. A value that failed to launch and launched
  // in a retry with another value of a partner knob names a conflict: the value with
  // the partner's value in the failed configuration (cache_type_k=q8_0 with
  // flash_attn=on). Like a catalog conflict, a configuration that holds one is never
  // proposed again: a tree idea waits until the incumbent moves, an exploration draw is
  // redrawn (TPE learns it as a failure without a trial). Learned from failures a
  // configuration explains (not a port race, a model that does not load or a flag the
  // engine rejects, which prunes the knob).
  void LearnConflict(const IdeaNode& retry, const Observation& obs);
  // A conflict known before the session (PlannerOptions::conflicts): held, and the
  // open value ideas it names get their two-knob tries with the partner's other values.
  void SeedConflict(const Config& conflict);
  // Whether `conflict` was given (PlannerOptions::conflicts), not learned.
  bool GivenConflict(const Config& conflict) const;
  // The learned conflict `full` holds ("cache_type_k=q8_0 flash_attn=on"), or nothing.
  std::optional<std::string> HeldConflict(const Config& full) const;
  int FindProposed(const Observation& obs) const;
  // An observation of a candidate this planner did not propose (the warm replay of a
  // knowledge-base recipe): when it changed one knob of the current incumbent, the
  // matching value idea takes the measurement as if it had been proposed. Returns its
  // id, or -1 when nothing in the tree matches.
  int AdoptForeign(const Observation& obs);

  const target::KnobCatalog& catalog_;
  Heuristics heuristics_;
  PlannerOptions options_;
  std::optional<TrialCostModel> cost_;
  const FrameworkHeuristics* fw_ = nullptr;
  bool initialized_ = false;
  SearchDomain domain_;
  IdeaTree tree_;
  std::map<std::string, Belief> beliefs_;
  Diagnosis diagnosis_;
  Context ctx_;
  double best_level_ = 0;  // log(best / stock), from kept gains
  int proposals_ = 0;
  int pending_ = -1;
  // Foreign observations made before the tree exists (the replay is judged in the
  // prelude, before the first Next()): applied once the tree is built.
  std::vector<Observation> foreign_;
  std::string stop_note_;
  TpeProposer explorer_;
  Config pending_full_;  // the configuration of the pending proposal
  // Full configurations whose value idea failed to launch (a retry names the partner's
  // value from them), and the conflicts learned (each a sub-configuration).
  std::vector<Config> failed_launches_;  // the latest kMaxFailedLaunches
  static constexpr size_t kMaxFailedLaunches = 32;
  std::vector<Config> conflicts_;
  // A value idea the knowledge base says did not launch at this point (KnownLaunchFailure)
  // is pruned with this note; its retries are added once the tree is built.
  static constexpr std::string_view kKbUnlaunchedNote = "knowledge base: did not launch here";
  static bool KbUnlaunchedIdea(const IdeaNode& n);
  // `delta` (from the incumbent) is exactly a value the knowledge base saw fail to launch.
  bool KbUnlaunched(const Config& delta) const;
};

// The proposer a session's `search.strategy` names: planner, random or grid.
Result<std::unique_ptr<Proposer>> MakeProposer(const std::string& strategy, const target::KnobCatalog& catalog,
                                               const Heuristics& heuristics, PlannerOptions options, uint64_t seed);

}  // namespace hone::search
