#include "lab/false_keeps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/check.h"
#include "core/rng.h"
#include "core/stats.h"
#include "measure/verdict.h"
#include "session/comparison.h"

namespace hone::lab {

std::vector<double> RecordedResiduals(const search::ResponseSurface& surface) {
  std::vector<double> out;
  for (const search::SurfacePoint& p : surface.points()) {
    const size_t n = p.samples.size();
    if (n < 2) continue;
    const double m = p.mean();
    if (m <= 0) continue;
    const double correction = std::sqrt(static_cast<double>(n) / static_cast<double>(n - 1));
    for (double x : p.samples) out.push_back((x / m - 1.0) * correction);
  }
  return out;
}

void WilsonInterval(int k, int n, double& lo, double& hi) {
  if (n <= 0) {
    lo = 0;
    hi = 1;
    return;
  }
  const double z = 1.959963984540054, p = static_cast<double>(k) / n, nn = static_cast<double>(n);
  const double centre = (p + z * z / (2 * nn)) / (1 + z * z / nn);
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / (1 + z * z / nn);
  lo = std::max(0.0, centre - half);
  hi = std::min(1.0, centre + half);
}

EffectEstimate PairedEffect(const std::vector<double>& ratios, double confidence) {
  EffectEstimate e;
  std::vector<double> logs;
  for (double r : ratios) {
    if (r > 0 && std::isfinite(r)) logs.push_back(std::log(r));
  }
  e.pairs = static_cast<int>(logs.size());
  if (logs.empty()) return e;
  double mean = 0;
  for (double l : logs) mean += l;
  mean /= static_cast<double>(logs.size());
  e.gain = std::exp(mean) - 1;
  if (logs.size() < 2) {
    e.hi = std::numeric_limits<double>::infinity();
    return e;
  }
  double ss = 0;
  for (double l : logs) ss += (l - mean) * (l - mean);
  const double n = static_cast<double>(logs.size());
  const double half = measure::StudentT(confidence, static_cast<int>(logs.size()) - 1) * std::sqrt(ss / (n - 1) / n);
  e.lo = std::exp(mean - half) - 1;
  e.hi = std::exp(mean + half) - 1;
  return e;
}

namespace {

constexpr double kBase = 100;

// Trials replayed from the recorded residuals; the budget never ends a decision.
class ReplayRunner final : public session::TrialRunner {
 public:
  ReplayRunner(const std::vector<double>& residuals, double effect, uint64_t seed)
      : residuals_(residuals), effect_(effect), rng_(seed) {}
  Result<measure::TrialOutcome> RunTrial(const session::Arm& arm, const measure::OperatingPoint& point) override {
    measure::TrialOutcome o;
    o.id = "r" + std::to_string(++trials_);
    o.role = arm.role;
    o.config = arm.config;
    o.point = point;
    o.launched = o.valid = true;
    const double r = residuals_[static_cast<size_t>(rng_.Uniform(0, static_cast<int64_t>(residuals_.size()) - 1))];
    const bool candidate = arm.config.Has("candidate");
    o.objective = kBase * (candidate ? 1 + effect_ : 1.0) * (1 + r);
    return o;
  }
  bool CanAfford(int) const override { return true; }
  Status Save() override { return Ok(); }
  void Progress(const std::string&) override {}

 private:
  const std::vector<double>& residuals_;
  double effect_;
  Rng rng_;
  int trials_ = 0;
};

}  // namespace

FalseKeepResult MeasureKeeps(const std::vector<double>& residuals, const FalseKeepOptions& options) {
  HONE_CHECK(!residuals.empty());
  auto r = MeasureKeepsWith(
      [&](int d) -> std::unique_ptr<session::TrialRunner> {
        return std::make_unique<ReplayRunner>(residuals, options.effect, MixSeed(options.seed, static_cast<uint64_t>(d)));
      },
      options);
  HONE_CHECK(r.has_value());  // replayed trials never fail
  return *r;
}

Result<FalseKeepResult> MeasureKeepsWith(const std::function<std::unique_ptr<session::TrialRunner>(int)>& make_runner,
                                         const FalseKeepOptions& options,
                                         const std::function<void(const DecisionNote&)>& on_decision) {
  const spec::MeasurementSpec& m = options.measurement;
  const Config stock;
  const Config candidate{{"candidate", "same-as-stock"}};  // another name; the runner alone knows its effect
  FalseKeepResult out;
  int compared = 0, pairs = 0;
  double floors = 0;
  for (int d = 0; d < options.decisions; ++d) {
    std::unique_ptr<session::TrialRunner> owned = make_runner(d);
    session::TrialRunner& runner = *owned;
    // The prelude: A/A pairs of the stock, two more while they differ by > 10%.
    std::vector<std::string> at, bt;
    std::vector<double> av, bv;
    session::PairLog aa(at, av, bt, bv);
    session::PairPlan stock_pairs;
    stock_pairs.a = {measure::TrialRole::kBaseline, stock, ""};
    stock_pairs.b = {measure::TrialRole::kAa, stock, ""};
    stock_pairs.min_pairs = stock_pairs.max_pairs = m.aa_pairs;
    HONE_TRY(session::RunComparison(runner, stock_pairs, aa));
    while (aa.pairs() < m.aa_pairs + 2 && measure::NoiseFloor(aa.a(), aa.b()) > 0.10) {
      stock_pairs.min_pairs = stock_pairs.max_pairs = aa.pairs() + 1;
      HONE_TRY(session::RunComparison(runner, stock_pairs, aa));
    }
    const double noise_floor = measure::NoiseFloor(aa.a(), aa.b());
    floors += noise_floor;
    std::vector<double> reference = aa.a();
    for (double v : aa.b()) reference.push_back(v);
    // The screening trial.
    std::vector<session::Veto> vetoes;
    std::optional<session::ComparisonResult> comparison;
    int decision_pairs = 0;
    if (m.screen) {
      HONE_ASSIGN_OR_RETURN(measure::TrialOutcome screen,
                            runner.RunTrial({measure::TrialRole::kScreen, candidate, ""}, {}));
      if (!screen.launched || !screen.valid) {
        vetoes.push_back({session::VetoKind::kLaunchFailed, "screening trial failed"});
      } else if (screen.objective / Mean(reference) - 1.0 < -m.screen_drop) {
        vetoes.push_back({session::VetoKind::kScreenDrop, "screening trial worse"});
      }
    }
    if (vetoes.empty()) {
      std::vector<std::string> a_ids, b_ids;
      std::vector<double> a, b;
      session::PairLog log(a_ids, a, b_ids, b);
      session::PairPlan plan;
      plan.a = {measure::TrialRole::kIncumbent, stock, ""};
      plan.b = {measure::TrialRole::kCandidate, candidate, ""};
      plan.min_pairs = m.min_pairs;
      plan.max_pairs = m.max_pairs;
      plan.pair_step = m.pair_step;
      measure::VerdictInput judge;  // the coordinator's VerdictSettings
      judge.maximize = true;
      judge.min_gain = m.min_gain;
      judge.noise_floor = noise_floor;
      judge.confidence = m.confidence;
      judge.looks = session::PlannedLooks(m.min_pairs, m.max_pairs, m.pair_step);
      judge.seed = MixSeed(options.seed, 1000003ULL + static_cast<uint64_t>(d));
      plan.judge = judge;
      HONE_ASSIGN_OR_RETURN(comparison, session::RunComparison(runner, plan, log));
      ++compared;
      pairs += log.pairs();
      const std::vector<double> ratios = log.Ratios();
      out.pair_ratios.insert(out.pair_ratios.end(), ratios.begin(), ratios.end());
      decision_pairs = log.pairs();
    }
    const session::Decision decision = session::Decide(comparison, vetoes);
    ++out.decisions;
    switch (decision.verdict) {
      case Verdict::kKeep: ++out.keeps; break;
      case Verdict::kScreenedOut: ++out.screened_out; break;
      case Verdict::kRevert: ++out.reverts; break;
      default: ++out.inconclusive; break;
    }
    if (on_decision) {
      DecisionNote note{d, decision.verdict, decision_pairs, noise_floor, 0};
      if (comparison && comparison->judged) note.gain = comparison->judged->gain;
      on_decision(note);
    }
  }
  out.rate = out.decisions > 0 ? static_cast<double>(out.keeps) / out.decisions : 0;
  WilsonInterval(out.keeps, out.decisions, out.lo, out.hi);
  out.mean_pairs = compared > 0 ? static_cast<double>(pairs) / compared : 0;
  out.mean_noise_floor = out.decisions > 0 ? floors / out.decisions : 0;
  return out;
}

}  // namespace hone::lab
