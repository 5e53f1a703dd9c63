// TpeProposer: the Tree-structured Parzen Estimator, the field's standard
// model-based baseline (Bergstra, Bardenet, Bengio, Kegl, "Algorithms for
// Hyper-Parameter Optimization", NeurIPS 2011; the default sampler of Optuna and
// hyperopt). A plain, independent (univariate) implementation on a discrete space,
// with Optuna's TPESampler defaults:
//   - the first `startup` configurations (10) are uniform random draws;
//   - then the observations are split by value: the best gamma(n) = min(ceil(0.1 n), 25)
//     are "good", the rest "bad"; per knob, a Parzen estimator of each group, l(x) and
//     g(x), with a uniform prior of weight 1 (categorical knobs: smoothed counts;
//     numeric knobs: Gaussian kernels over the value's rank, bandwidth shrinking with
//     the number of observations);
//   - 24 candidates are drawn from l(x), and the one with the largest l(x)/g(x) (the
//     expected-improvement criterion of the paper) that was not measured yet is proposed.
// Observations are what every strategy gets from the coordinator: a verdict and the
// measured gain relative to the incumbent. TPE turns them into objective levels (log
// ratio to the stock): the incumbent's level (the sum of kept gains) plus the gain. A
// configuration that failed to launch or failed the accuracy gate is scored below the
// worst level seen (a constraint violation; Optuna would drop it and sample there again).
// Candidates are whole configurations expressed as deltas on the incumbent, like
// random search's. Not thread-safe.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/rng.h"
#include "search/baselines.h"
#include "search/domain.h"
#include "search/proposer.h"
#include "target/catalog.h"

namespace hone::search {

struct TpeOptions {
  int startup = 10;         // random configurations before the model is used (Optuna: 10)
  int candidates = 24;      // draws from l(x) per proposal (Optuna: n_ei_candidates 24)
  double prior_weight = 1;  // weight of the uniform prior in each estimator (Optuna: 1.0)
  int gamma_cap = 25;       // gamma(n) = min(ceil(0.1 n), gamma_cap)
};

class TpeProposer final : public Proposer {
 public:
  TpeProposer(const target::KnobCatalog& catalog, DomainOptions options, uint64_t seed, TpeOptions tpe = {});
  std::optional<Candidate> Next(const ProposalContext& ctx) override;
  void Observe(const Observation& obs) override;
  std::string Save() const override;
  Status Load(const std::string& saved) override;
  std::string Describe() const override;

  // Builds the knob options from the context (Next() does it on its first call).
  Status Prepare(const ProposalContext& ctx);
  // An observation of a candidate another proposer made (hone's planner, which draws its
  // exploring moves from this model): the configuration it measured becomes a point.
  // Ignored before Prepare(), for this proposer's own candidates (Observe takes those),
  // and when a value lies outside the knob options.
  void Record(const Config& full, const Observation& obs);
  // The number of observations that count as good among n (gamma(n)).
  int GoodCount(int n) const;
  // Another model's value of a full configuration (higher is better). When set, the
  // model's proposal is the draw from l(x) this ranks highest instead of the one with
  // the largest l(x)/g(x): TPE says where to look, the ranker which of its draws to
  // measure. hone's planner ranks its exploring draws by what its own beliefs expect
  // them to prove: the planner's measurements crowd around its incumbent, so g(x) holds
  // mostly the incumbent's values and l(x)/g(x) favours values the planner moved away
  // from on purpose (a kept win undone). The draws themselves, and so the random
  // stream, are the same either way.
  using Ranker = std::function<double(const Config& full)>;
  void SetRanker(Ranker ranker) { ranker_ = std::move(ranker); }

 private:
  struct Point {
    std::vector<int> index;  // per knob: the value's index in options_.values
    double level = 0;        // log objective ratio to the stock (higher is better)
    bool failed = false;
  };
  // Per knob: probabilities over its values from a group of observations.
  std::vector<std::vector<double>> Density(const std::vector<const Point*>& group) const;
  std::optional<Config> Draw(const ProposalContext& ctx, bool model);
  Config ToConfig(const std::vector<int>& index, const Config& base) const;
  // The point of a full configuration (nullopt: a value outside the options).
  std::optional<Point> IndexOf(const Config& full) const;
  void Add(Point p, const Observation& obs);
  // numeric_ from options_; the options are built.
  void SetNumeric();

  const target::KnobCatalog& catalog_;
  DomainOptions domain_;
  uint64_t seed_;
  TpeOptions tpe_;
  Rng rng_;
  bool built_ = false;
  KnobOptions options_;
  std::vector<bool> numeric_;
  std::set<std::string> proposed_;
  std::vector<Point> points_;
  std::optional<Point> pending_;
  double incumbent_level_ = 0;
  int keeps_ = 0;
  int modelled_ = 0;  // proposals that came from the model (not the random start-up)
  Ranker ranker_;
};

}  // namespace hone::search
