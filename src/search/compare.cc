#include "search/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/rng.h"
#include "core/stats.h"
#include "core/strings.h"
#include "search/baselines.h"
#include "search/planner.h"

namespace hone::search {

namespace {

struct Trace {
  std::vector<double> quality;  // incumbent's true quality after trial t (t = 0: stock)
  std::vector<std::string> log;
};

struct SimSetup {
  const ResponseSurface* surface;
  const target::KnobCatalog* catalog;
  ProposalContext base;
  double noise;      // relative sd of one measurement
  double threshold;  // smallest measured gain that keeps a candidate
};

double Measure(const SurfacePoint& p, double noise, Rng& rng) {
  double m = p.mean() * (1.0 + noise * rng.NextGaussian());
  return std::max(m, 0.01 * p.mean());
}

// One simulated session of `proposer` for up to `max_trials` trials.
Trace Simulate(Proposer& proposer, const SimSetup& s, int max_trials, uint64_t noise_seed, bool keep_log) {
  const ResponseSurface& surface = *s.surface;
  Rng rng(noise_seed);
  ProposalContext ctx = s.base;
  ctx.best = surface.stock();
  ctx.tried = {surface.stock().Hash()};
  const SurfacePoint* incumbent = surface.Find(surface.stock());
  Trace t;
  t.quality.push_back(surface.Quality(incumbent->mean()));
  int trials = 0;
  while (trials < max_trials) {
    auto cand = proposer.Next(ctx);
    if (!cand) break;
    Config full = ctx.best.Merged(cand->delta);
    Observation obs;
    obs.candidate = *cand;
    obs.config = full;
    const SurfacePoint* p = surface.Find(full);
    if (!p || !s.catalog->Validate(full)) {
      obs.verdict = Verdict::kInvalid;  // off the surface: not measurable, costs no trial
      ctx.tried.insert(full.Hash());
      proposer.Observe(obs);
      continue;
    }
    ++trials;
    ctx.tried.insert(full.Hash());
    if (p->failed() || p->samples.empty()) {
      obs.verdict = Verdict::kLaunchFailed;
      obs.failure_kind = p->failed() ? p->failure_kind : "unmeasured";
    } else {
      // A pair: the candidate and a fresh measurement of the incumbent, as the
      // coordinator's paired trials do (no stale lucky incumbent to beat).
      double m = Measure(*p, s.noise, rng);
      double a = Measure(*incumbent, s.noise, rng);
      double ratio = surface.maximize() ? m / a : a / m;
      obs.gain = ratio - 1;
      obs.verdict = obs.gain > s.threshold ? Verdict::kKeep : Verdict::kRevert;
      if (obs.verdict == Verdict::kKeep) {
        ctx.best = full;
        incumbent = p;
      }
    }
    proposer.Observe(obs);
    t.quality.push_back(surface.Quality(incumbent->mean()));
    if (keep_log) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "%3d %-44s %-13s %+6.1f%%  incumbent at %.1f%% of best", trials,
                    cand->delta.ToString().c_str(), std::string(VerdictName(obs.verdict)).c_str(), obs.gain * 100, t.quality.back() * 100);
      t.log.push_back(buf);
    }
  }
  return t;
}

int TrialsToReach(const Trace& t, double threshold, int horizon) {
  for (size_t i = 0; i < t.quality.size(); ++i) {
    if (t.quality[i] >= threshold - 1e-12) return static_cast<int>(i);
  }
  return horizon + 1;
}

double QualityAt(const Trace& t, int budget) {
  size_t i = std::min(static_cast<size_t>(budget), t.quality.size() - 1);
  return t.quality[i];
}

std::vector<double> ToDoubles(const std::vector<int>& v) { return std::vector<double>(v.begin(), v.end()); }

std::string Pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", f * 100);
  return buf;
}

std::string Fmt1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

double StrategyResult::MedianTrials() const { return Median(ToDoubles(trials_to_reach)); }
double StrategyResult::Percentile(double p) const { return hone::Percentile(ToDoubles(trials_to_reach), p); }
double StrategyResult::ReachRate(int within) const {
  if (trials_to_reach.empty()) return 0;
  return static_cast<double>(std::count_if(trials_to_reach.begin(), trials_to_reach.end(),
                                           [&](int x) { return x <= within; })) /
         static_cast<double>(trials_to_reach.size());
}
double StrategyResult::MedianFinal() const { return Median(final_quality); }
double StrategyResult::MeanFinal() const { return Mean(final_quality); }
double StrategyResult::P10Final() const { return hone::Percentile(final_quality, 10); }

Result<CompareReport> Compare(const ResponseSurface& surface, const target::KnobCatalog& catalog,
                              const Heuristics& heuristics, const CompareOptions& options) {
  const SurfacePoint* stock = surface.Find(surface.stock());
  if (!stock || stock->samples.empty()) return FailedPrecondition("the surface's stock point was not measured");
  auto best = surface.Best();
  if (!best) return FailedPrecondition("the surface has no measured point");
  CompareReport r;
  r.points = static_cast<int>(surface.points().size());
  r.horizon = r.points - 1;
  r.budget = options.budget > 0 ? options.budget : std::max(3, r.points / 3);
  r.seeds = options.seeds;
  r.noise = surface.RelativeNoise();
  r.best = best->mean();
  r.best_config = best->config.ToString();
  r.stock_quality = surface.Quality(stock->mean());
  r.threshold = options.threshold;
  for (const SurfacePoint& p : surface.points()) {
    if (!p.samples.empty() && surface.Quality(p.mean()) >= options.threshold - 1e-12) ++r.within_threshold;
  }

  // The coordinator's keep threshold: max(min_gain, A/A noise floor); the floor is the
  // median |ratio - 1| of A/A pairs, 0.6745 x sqrt(2) x the noise of one measurement.
  r.keep_threshold = std::max(0.01, 0.6745 * std::sqrt(2.0) * r.noise);
  SimSetup s{&surface, &catalog, {}, r.noise, r.keep_threshold};
  s.base.stock = surface.stock();
  s.base.cpus = 1;
  if (auto it = surface.info().find("cpus"); it != surface.info().end()) {
    if (auto v = ParseInt(it->second)) s.base.cpus = static_cast<int>(*v);
  }
  s.base.baseline_metrics = stock->metrics;
  if (auto it = stock->metrics.find("concurrency"); it != stock->metrics.end()) {
    s.base.concurrency = static_cast<int>(it->second);
  }
  // A measured gain compares two noisy measurements.
  if (r.noise > 0) s.base.noise_floor = std::sqrt(2.0) * r.noise;
  DomainOptions domain;
  for (const SurfaceAxis& a : surface.axes()) domain.fixed.emplace_back(a.knob, a.values);
  HONE_TRY(SearchDomain::Build(catalog, domain, s.base));  // the axes must be legal knobs and values

  StrategyResult planner{"planner", "idea tree + GP, priors from data/search/heuristics.yaml", {}, {}, {}};
  StrategyResult random{"random", "uniform over the grid, without repeats", {}, {}, {}};
  StrategyResult grid_full{"grid", "the full grid in a random order", {}, {}, {}};
  StrategyResult grid_budget{"grid@budget", "", {}, {}, {}};
  for (int seed_idx = 0; seed_idx < options.seeds; ++seed_idx) {
    uint64_t seed = MixSeed(options.seed, static_cast<uint64_t>(seed_idx));
    PlannerOptions po;
    po.domain = domain;
    Planner p(catalog, heuristics, po);
    Trace tp = Simulate(p, s, r.horizon, MixSeed(seed, 1), seed_idx == 0);
    planner.trials_to_reach.push_back(TrialsToReach(tp, options.threshold, r.horizon));
    planner.final_quality.push_back(QualityAt(tp, r.budget));
    planner.trials_used.push_back(std::min(r.budget, static_cast<int>(tp.quality.size()) - 1));
    if (seed_idx == 0) {
      r.example = tp.log;
      r.diagnosis = p.diagnosis();
      Planner again(catalog, heuristics, po);  // the tree as it stood at the budget
      Simulate(again, s, r.budget, MixSeed(seed, 1), false);
      r.example_tree = again.Describe();
    }

    RandomProposer rp(catalog, domain, MixSeed(seed, 2));
    Trace tr = Simulate(rp, s, r.horizon, MixSeed(seed, 3), false);
    random.trials_to_reach.push_back(TrialsToReach(tr, options.threshold, r.horizon));
    random.final_quality.push_back(QualityAt(tr, r.budget));
    random.trials_used.push_back(std::min(r.budget, static_cast<int>(tr.quality.size()) - 1));

    GridProposer gf(catalog, domain, 0, MixSeed(seed, 4));
    Trace tg = Simulate(gf, s, r.horizon, MixSeed(seed, 5), false);
    grid_full.trials_to_reach.push_back(TrialsToReach(tg, options.threshold, r.horizon));
    grid_full.final_quality.push_back(QualityAt(tg, r.budget));
    grid_full.trials_used.push_back(std::min(r.budget, static_cast<int>(tg.quality.size()) - 1));

    GridProposer gb(catalog, domain, r.budget, MixSeed(seed, 6));
    Trace tb = Simulate(gb, s, r.budget, MixSeed(seed, 7), false);
    grid_budget.trials_to_reach.push_back(TrialsToReach(tb, options.threshold, r.horizon));
    grid_budget.final_quality.push_back(QualityAt(tb, r.budget));
    grid_budget.trials_used.push_back(static_cast<int>(tb.quality.size()) - 1);
    if (seed_idx == 0) grid_budget.detail = "coarse grid " + gb.axes_text();
  }
  int ge = 0;
  for (int i = 0; i < options.seeds; ++i) {
    if (planner.final_quality[static_cast<size_t>(i)] >= grid_budget.final_quality[static_cast<size_t>(i)] - 1e-12) ++ge;
  }
  r.planner_ge_grid = options.seeds > 0 ? static_cast<double>(ge) / options.seeds : 0;
  double pm = std::max(planner.MedianTrials(), 0.5);  // 0 trials (stock already within): avoid dividing by 0
  r.ratio_random = random.MedianTrials() / pm;
  r.ratio_grid = grid_full.MedianTrials() / pm;
  r.strategies = {planner, random, grid_full, grid_budget};
  return r;
}

std::string FormatCompare(const ResponseSurface& surface, const CompareReport& r, const std::string& source) {
  std::string out;
  char buf[512];
  auto line = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof buf, fmt, args...);
    out += buf;
  };
  std::string axes;
  for (const SurfaceAxis& a : surface.axes()) axes += (axes.empty() ? "" : " ") + a.knob + "{" + Join(a.values, ",") + "}";
  line("surface   %s: %d points, %s\n", source.c_str(), r.points, axes.c_str());
  std::string info;
  for (const char* k : {"model", "framework_version", "workload", "hardware", "cpus"}) {
    auto it = surface.info().find(k);
    if (it != surface.info().end()) info += std::string(info.empty() ? "" : "; ") + k + " " + it->second;
  }
  line("          %s\n", info.c_str());
  line("          %d points repeated, relative noise of one trial %.1f%%, %d failed\n", surface.repeated(),
       r.noise * 100, surface.failed());
  auto obj = surface.info().find("objective");
  line("objective %s (%s): best %.1f at %s; stock at %s of best; %d point(s) within %.0f%%\n",
       obj == surface.info().end() ? "?" : obj->second.c_str(), surface.maximize() ? "maximize" : "minimize", r.best,
       r.best_config.c_str(), Pct(r.stock_quality).c_str(), r.within_threshold, r.threshold * 100);
  line("planner   diagnosis of the stock baseline: %s (%s)\n", std::string(BottleneckName(r.diagnosis.bottleneck)).c_str(),
       r.diagnosis.evidence.c_str());
  line("setup     %d seeds; a trial judges one candidate: it and the incumbent are measured once each (recorded mean "
       "x (1 + noise)), the candidate is kept when it measures more than %.1f%% higher (the coordinator's threshold: "
       "max(min_gain 1%%, A/A noise floor))\n\n",
       r.seeds, r.keep_threshold * 100);
  line("trials to reach %.0f%% of the best (incumbent's recorded mean; up to all %d other points)\n", r.threshold * 100,
       r.horizon);
  line("  %-12s %7s %6s %6s %9s   %s\n", "strategy", "median", "p25", "p75", "reached", "");
  for (size_t i = 0; i < 3; ++i) {
    const StrategyResult& s = r.strategies[i];
    double med = s.MedianTrials();
    std::string m = med > r.horizon ? "never" : Fmt1(med);
    line("  %-12s %7s %6.0f %6.0f %8s   %s\n", s.name.c_str(), m.c_str(), s.Percentile(25), s.Percentile(75),
         Pct(s.ReachRate(r.horizon)).c_str(), s.detail.c_str());
  }
  line("  ratio random/planner %.2fx, grid/planner %.2fx (goal: random/planner >= 3x: %s)\n\n", r.ratio_random,
       r.ratio_grid, r.ratio_random >= 3 ? "met" : "NOT met");
  line("final configuration after a budget of %d trials (incumbent's recorded mean as %% of the best)\n", r.budget);
  line("  %-12s %7s %7s %7s %9s %7s   %s\n", "strategy", "median", "mean", "p10", ">=95%", "trials", "");
  for (size_t i : {0u, 1u, 3u}) {
    const StrategyResult& s = r.strategies[i];
    double within = 0;
    for (double q : s.final_quality) within += q >= r.threshold - 1e-12 ? 1 : 0;
    within /= std::max<size_t>(1, s.final_quality.size());
    line("  %-12s %7s %7s %7s %9s %7.0f   %s\n", s.name.c_str(), Pct(s.MedianFinal()).c_str(),
         Pct(s.MeanFinal()).c_str(), Pct(s.P10Final()).c_str(), Pct(within).c_str(),
         Median(std::vector<double>(s.trials_used.begin(), s.trials_used.end())), s.detail.c_str());
  }
  line("  planner >= grid in %s of seeds (same budget, paired by seed); median planner %s vs grid %s (goal: at least "
       "as good: %s)\n\n",
       Pct(r.planner_ge_grid).c_str(), Pct(r.strategies[0].MedianFinal()).c_str(),
       Pct(r.strategies[3].MedianFinal()).c_str(),
       r.strategies[0].MedianFinal() >= r.strategies[3].MedianFinal() - 1e-12 ? "met" : "NOT met");
  out += "planner, first seed: the trials in order\n";
  for (const std::string& l : r.example) out += "  " + l + "\n";
  out += "\nplanner, first seed: the idea tree at the budget\n";
  for (const std::string& l : Split(r.example_tree, '\n')) {
    if (!l.empty()) out += "  " + l + "\n";
  }
  return out;
}

}  // namespace hone::search
