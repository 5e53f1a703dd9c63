#include "lab/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include "core/rng.h"
#include "core/stats.h"
#include "core/strings.h"
#include "search/baselines.h"
#include "search/planner.h"
#include "search/tpe.h"

namespace hone::lab {

namespace {

constexpr double kEps = 1e-12;

// One simulated session: quality and search time after each judged candidate.
struct Run {
  std::vector<double> quality;  // [k]: after k candidates (k = 0: the stock)
  std::vector<double> seconds;  // [k]: search seconds (after the prelude)
  std::vector<int> trials;      // [k]: server runs in the search
  std::vector<int> failed;      // [k]: candidates by then that never served a valid run
  double prelude_s = 0;
  double noise_floor = 0;
  std::vector<std::string> log;
};

struct Setup {
  const search::ResponseSurface* surface;
  const SurfaceFacts* facts;
  const target::KnobCatalog* catalog;
  ProtocolOptions protocol;
  search::ProposalContext base;
  double threshold;
  int plateau = 0;
};

// Runs `proposer` until it has judged `max_candidates` candidates, it has nothing left,
// or `enough(run)` says the rest is not needed.
Run Simulate(search::Proposer& proposer, const Setup& s, uint64_t noise_seed, int max_candidates,
             const std::function<bool(const Run&)>& enough, bool keep_log) {
  SurfaceSession session(*s.surface, *s.facts, *s.catalog, s.protocol, noise_seed);
  session.Prelude();
  Run run;
  run.prelude_s = session.elapsed_s();
  run.noise_floor = session.noise_floor();
  const int prelude_trials = session.trials();
  search::ProposalContext ctx = s.base;
  if (session.noise_floor() > 0) ctx.noise_floor = session.noise_floor();
  run.quality.push_back(session.quality());
  run.seconds.push_back(0);
  run.trials.push_back(0);
  run.failed.push_back(0);
  int invalid_streak = 0;
  int misses = 0;
  while (static_cast<int>(run.quality.size()) - 1 < max_candidates && !enough(run) &&
         (s.plateau <= 0 || misses < s.plateau)) {
    ctx.best = session.incumbent();
    ctx.tried = session.tried();
    auto cand = proposer.Next(ctx);
    if (!cand) break;
    Step step = session.Evaluate(*cand);
    proposer.Observe(step.obs);
    if (!step.counted) {
      if (++invalid_streak > 10000) break;  // a proposer stuck off the surface
      continue;
    }
    invalid_streak = 0;
    misses = step.obs.verdict == Verdict::kKeep ? 0 : misses + 1;
    run.quality.push_back(session.quality());
    run.seconds.push_back(session.elapsed_s() - run.prelude_s);
    run.trials.push_back(session.trials() - prelude_trials);
    const bool never_served = step.obs.verdict == Verdict::kLaunchFailed || step.obs.verdict == Verdict::kInvalid;
    run.failed.push_back(run.failed.back() + (never_served ? 1 : 0));
    if (keep_log) {
      char buf[320];
      std::snprintf(buf, sizeof buf, "%3zu %-46s %-15s %+6.1f%%  %2d runs  incumbent at %5.1f%% of best",
                    run.quality.size() - 1, cand->delta.ToString().c_str(), std::string(VerdictName(step.obs.verdict)).c_str(),
                    step.obs.gain * 100, step.trials, run.quality.back() * 100);
      run.log.push_back(buf);
    }
  }
  return run;
}

int ToReach(const Run& r, double threshold, int horizon) {
  for (size_t k = 0; k < r.quality.size(); ++k) {
    if (r.quality[k] >= threshold - kEps) return static_cast<int>(k);
  }
  return horizon + 1;
}

double QualityAtTime(const Run& r, double t) {
  // The last candidate finished by t (search time).
  auto it = std::upper_bound(r.seconds.begin(), r.seconds.end(), t + kEps);
  size_t k = static_cast<size_t>(it - r.seconds.begin());
  return r.quality[k == 0 ? 0 : k - 1];
}

std::vector<double> MeanCurve(const std::vector<std::vector<double>>& curves, const std::vector<size_t>& pick) {
  std::vector<double> m(curves.empty() ? 0 : curves[0].size(), 0.0);
  for (size_t i : pick) {
    for (size_t t = 0; t < m.size(); ++t) m[t] += curves[i][t];
  }
  for (double& x : m) x /= static_cast<double>(std::max<size_t>(1, pick.size()));
  return m;
}

std::vector<double> PFrom(const std::vector<double>& s, const std::vector<double>& r) {
  std::vector<double> p(s.size());
  for (size_t t = 0; t < s.size(); ++t) {
    double den = 1.0 - r[t];
    p[t] = den > 1e-9 ? (s[t] - r[t]) / den : 0.0;
  }
  return p;
}

std::string Pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", f * 100);
  return buf;
}

std::string Seconds(double s, bool timed) {
  if (!std::isfinite(s)) return "never";
  char buf[32];
  if (!timed) {
    std::snprintf(buf, sizeof buf, "%.0f tu", s);
  } else if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  } else if (s >= 120) {
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  }
  return buf;
}

}  // namespace

double StrategyResult::MedianToReach() const {
  return Median(std::vector<double>(to_reach.begin(), to_reach.end()));
}
double StrategyResult::ReachPercentile(double p) const {
  return Percentile(std::vector<double>(to_reach.begin(), to_reach.end()), p);
}
double StrategyResult::ReachRate(int horizon) const {
  if (to_reach.empty()) return 0;
  return static_cast<double>(std::count_if(to_reach.begin(), to_reach.end(), [&](int x) { return x <= horizon; })) /
         static_cast<double>(to_reach.size());
}
double StrategyResult::MedianSecondsToReach() const {
  std::vector<double> v = to_reach_s;
  std::sort(v.begin(), v.end());
  if (v.empty()) return INFINITY;
  size_t n = v.size();
  if (!std::isfinite(v[(n - 1) / 2]) || !std::isfinite(v[n / 2])) return INFINITY;
  return Median(v);
}
double StrategyResult::MedianTrialsToReach() const {
  std::vector<double> v;
  for (int t : to_reach_trials) v.push_back(t < 0 ? INFINITY : t);
  std::sort(v.begin(), v.end());
  if (v.empty() || !std::isfinite(v[v.size() / 2]) || !std::isfinite(v[(v.size() - 1) / 2])) return -1;
  return Median(v);
}

bool Goals::all() const {
  return reach_vs_random && reach_vs_tpe && p_above_zero &&
         std::all_of(at_budget.begin(), at_budget.end(), [](bool b) { return b; });
}

Interval MeanDifference(std::span<const double> a, std::span<const double> b) {
  Interval out;
  out.estimate = Mean(a) - Mean(b);
  // Sample variances (n - 1) of the two means; a normal interval at 95%.
  auto var_of_mean = [](std::span<const double> x) {
    if (x.size() < 2) return 0.0;
    const double sd = PopulationStd(x);
    return sd * sd / static_cast<double>(x.size() - 1);
  };
  const double half = 1.959964 * std::sqrt(var_of_mean(a) + var_of_mean(b));
  out.lo = out.estimate - half;
  out.hi = out.estimate + half;
  return out;
}

bool DeadEnd(double quality, double bar) { return quality * (1.0 + bar) > 1.0 + kEps; }

PCurve PerformanceCurve(const std::string& name, const std::vector<std::vector<double>>& strategy,
                        const std::vector<std::vector<double>>& random, double stock, int bootstrap, uint64_t seed) {
  PCurve c;
  c.strategy = name;
  std::vector<size_t> all_s(strategy.size()), all_r(random.size());
  for (size_t i = 0; i < all_s.size(); ++i) all_s[i] = i;
  for (size_t i = 0; i < all_r.size(); ++i) all_r[i] = i;
  std::vector<double> qs = MeanCurve(strategy, all_s);
  std::vector<double> qr = MeanCurve(random, all_r);
  c.p = PFrom(qs, qr);
  c.area = c.p.empty() ? 0 : Mean(c.p);
  // Before either strategy judged anything both sit at the stock: P is 0 by definition.
  c.first_active = static_cast<int>(c.p.size());
  for (size_t t = 0; t < c.p.size(); ++t) {
    if (std::abs(qs[t] - stock) > kEps || std::abs(qr[t] - stock) > kEps) {
      c.first_active = static_cast<int>(t);
      break;
    }
  }
  c.above_zero = true;
  c.min_p = INFINITY;
  for (size_t t = 0; t < c.p.size(); ++t) {
    if (static_cast<int>(t) >= c.first_active) {
      c.min_p = std::min(c.min_p, c.p[t]);
      if (c.p[t] <= 0) c.above_zero = false;
    } else if (c.p[t] < 0) {
      c.above_zero = false;
    }
  }
  if (!std::isfinite(c.min_p)) c.min_p = 0;
  // Bootstrap over seeds: each side resampled on its own (independent runs).
  Rng rng(seed);
  std::vector<std::vector<double>> ps(c.p.size());
  std::vector<double> areas;
  for (int b = 0; b < bootstrap && !strategy.empty() && !random.empty(); ++b) {
    std::vector<size_t> ps_pick(strategy.size()), pr_pick(random.size());
    for (size_t& i : ps_pick) i = static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(strategy.size()) - 1));
    for (size_t& i : pr_pick) i = static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(random.size()) - 1));
    std::vector<double> p = PFrom(MeanCurve(strategy, ps_pick), MeanCurve(random, pr_pick));
    for (size_t t = 0; t < p.size(); ++t) ps[t].push_back(p[t]);
    areas.push_back(p.empty() ? 0 : Mean(p));
  }
  for (size_t t = 0; t < c.p.size(); ++t) {
    c.lo.push_back(ps[t].empty() ? c.p[t] : Percentile(ps[t], 5));
    c.hi.push_back(ps[t].empty() ? c.p[t] : Percentile(ps[t], 95));
  }
  c.area_lo = areas.empty() ? c.area : Percentile(areas, 5);
  c.area_hi = areas.empty() ? c.area : Percentile(areas, 95);
  return c;
}

Result<CompareReport> Compare(const search::ResponseSurface& surface, const target::KnobCatalog& catalog,
                              const search::Heuristics& heuristics, const CompareOptions& options) {
  // A recording still under way (a shard between device calls) would be replayed with
  // its unmeasured points as launch failures, and a surface without a repeated point as
  // noiseless: neither is the surface the comparison would claim to be of.
  if (const int pending = surface.pending(); pending > 0) {
    return FailedPrecondition(std::to_string(pending) + " of " + std::to_string(surface.points().size()) +
                              " points are not measured yet (a recording under way?): a replay would take them for "
                              "launch failures; `hone search record` continues the recording");
  }
  if (!options.protocol.noise && surface.repeated() == 0) {
    return FailedPrecondition(
        "no point was measured twice, so the noise of one trial is unknown: record repeats (`hone search record "
        "--repeat-fraction`) or give the noise (--noise)");
  }
  const search::SurfacePoint* stock = surface.Find(surface.stock());
  if (!stock || stock->samples.empty()) return FailedPrecondition("the surface's stock point was not measured");
  const search::SurfacePoint* best = surface.Best();
  if (!best) return FailedPrecondition("the surface has no measured point that passes the accuracy gate");
  if (options.seeds < 1) return InvalidArgument("--seeds must be at least 1");
  if (options.budgets.empty()) return InvalidArgument("at least one budget");
  const SurfaceFacts facts = SurfaceFacts::Of(surface);

  CompareReport r;
  r.name = options.surface_name;
  r.points = static_cast<int>(surface.points().size());
  r.horizon = options.horizon > 0 ? std::min(options.horizon, r.points - 1) : r.points - 1;
  r.plateau = options.plateau;
  r.pool_retests = options.protocol.measurement.pool_retests;
  r.screen_recheck = options.protocol.measurement.screen_recheck;
  r.min_pairs = options.protocol.measurement.min_pairs;
  r.max_pairs = options.protocol.measurement.max_pairs;
  r.seeds = options.seeds;
  r.budgets = options.budgets;
  std::sort(r.budgets.begin(), r.budgets.end());
  const int max_budget = r.budgets.back();
  r.noise = options.protocol.noise ? *options.protocol.noise : facts.noise;
  r.drift = options.protocol.drift;
  r.best = best->mean();
  r.best_config = best->config.ToString();
  r.stock_quality = surface.Quality(stock->mean());
  r.threshold = options.threshold;
  const bool averaged = surface.info().count("seconds") && surface.info().count("trials");
  r.timed = surface.timed() || averaged;
  r.time_basis = surface.timed() ? "recorded trial and accuracy-check times"
                 : averaged     ? "every trial the recording's average (info seconds / trials)"
                                : "trial units (tu; no times recorded)";
  r.tuned_on = heuristics.tuned_on;
  r.held_out = !heuristics.TunedOn(options.surface_name);
  for (const search::SurfacePoint& p : surface.points()) {
    if (!p.samples.empty() && p.accuracy_ok() && surface.Quality(p.mean()) >= options.threshold - kEps) {
      ++r.within_threshold;
    }
  }

  Setup s{&surface, &facts, &catalog, options.protocol, {}, options.threshold, options.plateau};
  s.base.stock = surface.stock();
  s.base.cpus = 1;
  if (auto it = surface.info().find("cpus"); it != surface.info().end()) {
    if (auto v = ParseInt(it->second)) s.base.cpus = static_cast<int>(*v);
  }
  s.base.gpu = surface.info().count("gpus") && surface.info().at("gpus") != "0";
  s.base.baseline_metrics = stock->metrics;
  if (auto it = stock->metrics.find("concurrency"); it != stock->metrics.end()) {
    s.base.concurrency = static_cast<int>(it->second);
  }
  search::DomainOptions domain;
  domain.gpu = s.base.gpu;
  for (const search::SurfaceAxis& a : surface.axes()) domain.fixed.emplace_back(a.knob, a.values);
  HONE_TRY(search::SearchDomain::Build(catalog, domain, s.base));  // the axes must be legal knobs and values

  const size_t n = static_cast<size_t>(options.seeds);
  const size_t nb = r.budgets.size();
  auto make_result = [&](const std::string& name, const std::string& detail) {
    StrategyResult x;
    x.name = name;
    x.detail = detail;
    x.to_reach.assign(n, 0);
    x.to_reach_s.assign(n, 0);
    x.to_reach_trials.assign(n, 0);
    x.at_budget.assign(nb, std::vector<double>(n, 0));
    x.used.assign(nb, std::vector<double>(n, 0));
    x.failed.assign(nb, std::vector<double>(n, 0));
    x.curve.assign(n, {});
    return x;
  };
  StrategyResult planner = make_result("planner", "hone: idea tree + GP, priors from data/search/heuristics.yaml");
  StrategyResult random = make_result("random", "uniform over the grid, without repeats");
  StrategyResult tpe = make_result("tpe", "TPE (Bergstra et al. 2011), Optuna's defaults: 10 random, gamma 10%, 24 EI draws");
  StrategyResult grid = make_result("grid", "");
  std::vector<double> prelude_s(n), floors(n);
  std::vector<std::string> grid_axes(nb);

  // A strategy's cells at budget b for one seed: the value, the candidates used, the failed.
  auto record_budget = [&](StrategyResult& x, size_t b, size_t seed_idx, const Run& run) {
    size_t k = std::min(static_cast<size_t>(r.budgets[b]), run.quality.size() - 1);
    x.at_budget[b][seed_idx] = run.quality[k];
    x.used[b][seed_idx] = static_cast<double>(k);
    x.failed[b][seed_idx] = run.failed[k];
  };
  auto record = [&](StrategyResult& x, size_t seed_idx, const Run& run, bool budgets) {
    int reach = ToReach(run, options.threshold, r.horizon);
    x.to_reach[seed_idx] = reach;
    bool reached = reach <= r.horizon && static_cast<size_t>(reach) < run.quality.size();
    x.to_reach_s[seed_idx] = reached ? run.seconds[static_cast<size_t>(reach)] : INFINITY;
    x.to_reach_trials[seed_idx] = reached ? run.trials[static_cast<size_t>(reach)] : -1;
    if (!budgets) return;
    for (size_t b = 0; b < nb; ++b) record_budget(x, b, seed_idx, run);
  };

  // Pass 1: random search to the horizon (it sets the time range of P(t)).
  std::vector<Run> random_runs(n);
  auto run_seeds = [&](const std::function<void(size_t)>& body) {
    int jobs = std::max(1, std::min(options.jobs, options.seeds));
    std::vector<std::thread> threads;
    for (int j = 0; j < jobs; ++j) {
      threads.emplace_back([&, j]() {
        for (size_t i = static_cast<size_t>(j); i < n; i += static_cast<size_t>(jobs)) body(i);
      });
    }
    for (std::thread& t : threads) t.join();
  };
  auto never = [](const Run&) { return false; };
  run_seeds([&](size_t i) {
    uint64_t seed = MixSeed(options.seed, i);
    search::RandomProposer rp(catalog, domain, MixSeed(seed, 2));
    random_runs[i] = Simulate(rp, s, MixSeed(seed, 3), r.horizon, never, false);
    record(random, i, random_runs[i], true);
    prelude_s[i] = random_runs[i].prelude_s;
    floors[i] = random_runs[i].noise_floor;
  });
  std::vector<double> t_end;
  for (const Run& run : random_runs) {
    t_end.push_back(run.seconds[std::min(static_cast<size_t>(max_budget), run.seconds.size() - 1)]);
  }
  const double horizon_s = std::max(Median(t_end), 1e-9);
  for (int k = 1; k <= options.curve_points; ++k) r.times.push_back(horizon_s * k / options.curve_points);
  auto curve_of = [&](const Run& run) {
    std::vector<double> c;
    for (double t : r.times) c.push_back(QualityAtTime(run, t));
    return c;
  };
  for (size_t i = 0; i < n; ++i) random.curve[i] = curve_of(random_runs[i]);
  random_runs.clear();

  // Pass 2: the others, until they reached the threshold, judged the largest budget and
  // covered the time range (or their horizon).
  auto enough = [&](const Run& run) {
    return static_cast<int>(run.quality.size()) - 1 >= max_budget && run.seconds.back() >= horizon_s &&
           run.quality.back() >= options.threshold - kEps;
  };
  std::vector<std::string> example;
  std::string example_tree;
  search::Diagnosis diagnosis;
  run_seeds([&](size_t i) {
    uint64_t seed = MixSeed(options.seed, i);
    search::PlannerOptions po;
    po.domain = domain;
    po.protocol = search::MeasurementProtocol::Of(options.protocol.measurement);
    po.seed = MixSeed(seed, 10);
    search::Planner p(catalog, heuristics, po);
    Run tp = Simulate(p, s, MixSeed(seed, 1), r.horizon, enough, i == 0);
    record(planner, i, tp, true);
    planner.curve[i] = curve_of(tp);
    if (i == 0) {
      example = tp.log;
      diagnosis = p.diagnosis();
      search::Planner again(catalog, heuristics, po);  // the tree as it stood at the largest budget
      Simulate(again, s, MixSeed(seed, 1), max_budget, never, false);
      example_tree = again.Describe();
    }

    search::TpeProposer tq(catalog, domain, MixSeed(seed, 8));
    Run tt = Simulate(tq, s, MixSeed(seed, 9), r.horizon, enough, false);
    record(tpe, i, tt, true);
    tpe.curve[i] = curve_of(tt);

    // Grid: the full grid in a random order (to 95%), and a coarse grid per budget.
    search::GridProposer gf(catalog, domain, 0, MixSeed(seed, 4));
    Run tg = Simulate(gf, s, MixSeed(seed, 5), r.horizon, enough, false);
    record(grid, i, tg, false);
    for (size_t b = 0; b < nb; ++b) {
      search::GridProposer gb(catalog, domain, r.budgets[b], MixSeed(seed, 6 + 10 * b));
      Run tb = Simulate(gb, s, MixSeed(seed, 7 + 10 * b), r.budgets[b], never, false);
      record_budget(grid, b, i, tb);
      if (b + 1 == nb) grid.curve[i] = curve_of(tb);
      if (i == 0) grid_axes[b] = gb.axes_text();
    }
  });
  r.example = std::move(example);
  r.example_tree = std::move(example_tree);
  r.diagnosis = diagnosis;
  grid.detail = "full grid in a random order (to 95%); per budget a coarse grid that fits it (at budget, P(t): the " +
                std::to_string(max_budget) + "-candidate grid " + grid_axes.back() + ")";
  r.prelude_s = Median(prelude_s);
  r.noise_floor_median = Median(floors);
  r.keep_threshold_median = std::max(options.protocol.measurement.min_gain, r.noise_floor_median);
  r.dead_end_from = 1.0 / (1.0 + r.keep_threshold_median);
  auto stuck_below = [&](double q) { return DeadEnd(q, r.keep_threshold_median) && q < options.threshold - kEps; };
  for (const search::SurfacePoint& p : surface.points()) {
    if (p.samples.empty() || !p.accuracy_ok()) continue;
    const double q = surface.Quality(p.mean());
    r.dead_ends += DeadEnd(q, r.keep_threshold_median);
    r.dead_ends_below += stuck_below(q);
  }
  for (StrategyResult* x : {&planner, &random, &tpe, &grid}) {
    const std::vector<double>& last = x->at_budget.back();
    const auto stuck = std::count_if(last.begin(), last.end(), stuck_below);
    x->dead_end = last.empty() ? 0 : static_cast<double>(stuck) / static_cast<double>(last.size());
  }

  r.strategies = {planner, random, tpe, grid};
  uint64_t bseed = MixSeed(options.seed, 77);
  r.curves.push_back(PerformanceCurve("planner", planner.curve, random.curve, r.stock_quality, options.bootstrap, bseed));
  r.curves.push_back(PerformanceCurve("tpe", tpe.curve, random.curve, r.stock_quality, options.bootstrap, bseed + 1));
  r.curves.push_back(PerformanceCurve("grid", grid.curve, random.curve, r.stock_quality, options.bootstrap, bseed + 2));

  // The goals.
  r.goals.held_out = r.held_out;
  double pm = planner.MedianToReach();
  r.goals.reach_vs_random = pm <= 0.5 * random.MedianToReach() + kEps && pm <= r.horizon;
  r.goals.reach_vs_tpe = pm <= tpe.MedianToReach() + kEps && pm <= r.horizon;
  for (size_t b = 0; b < nb; ++b) {
    double mp = Mean(planner.at_budget[b]);
    bool ok = mp >= Mean(random.at_budget[b]) - kEps && mp >= Mean(tpe.at_budget[b]) - kEps &&
              mp >= Mean(grid.at_budget[b]) - kEps;
    r.goals.at_budget.push_back(ok);
  }
  r.goals.p_above_zero = r.curves[0].above_zero;
  return r;
}

std::string FormatCompare(const search::ResponseSurface& surface, const CompareReport& r, const std::string& source) {
  std::string out;
  char buf[1024];
  auto line = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof buf, fmt, args...);
    out += buf;
  };
  auto met = [](bool b) { return b ? "met" : "NOT met"; };
  std::string axes;
  for (const search::SurfaceAxis& a : surface.axes()) {
    axes += (axes.empty() ? "" : " ") + a.knob + "{" + Join(a.values, ",") + "}";
  }
  line("surface    %s (%s): %d points, %s\n", r.name.c_str(), source.c_str(), r.points, axes.c_str());
  std::string info;
  for (const char* k : {"model", "framework_version", "workload", "hardware", "cpus", "recorded"}) {
    auto it = surface.info().find(k);
    if (it != surface.info().end()) info += std::string(info.empty() ? "" : "; ") + k + " " + it->second;
  }
  line("           %s\n", info.c_str());
  // A failed point either never served (launch) or served no valid measurement (a stalled
  // server: "invalid: no token arrived inside the measurement window").
  int invalid = 0;
  for (const auto& p : surface.points()) invalid += p.no_valid_run();
  const int failed = surface.failed();
  const std::string failures = invalid == 0 ? std::to_string(failed) + " failed to launch"
                               : invalid == failed
                                   ? std::to_string(failed) + " failed (no valid run)"
                                   : std::to_string(failed) + " failed (" + std::to_string(failed - invalid) +
                                         " to launch, " + std::to_string(invalid) + " without a valid run)";
  line("           %d of %d points repeated: relative noise of one trial %.1f%%; %s; accuracy gate: "
       "%d points checked, %d fail it\n",
       surface.repeated(), r.points, r.noise * 100, failures.c_str(), surface.accuracy_checked(),
       surface.accuracy_failed());
  auto obj = surface.info().find("objective");
  line("objective  %s (%s): best %.1f at %s; stock at %s of the best; %d point(s) within %.0f%%\n",
       obj == surface.info().end() ? "?" : obj->second.c_str(), surface.maximize() ? "maximize" : "minimize", r.best,
       r.best_config.c_str(), Pct(r.stock_quality).c_str(), r.within_threshold, r.threshold * 100);
  if (r.held_out) {
    line("hold-out   HELD OUT: the planner's heuristics were not tuned on this surface (tuned on: %s)\n",
         r.tuned_on.empty() ? "none named" : Join(r.tuned_on, ", ").c_str());
  } else {
    line("hold-out   TUNED ON THIS SURFACE: the planner's heuristics were tuned on it (tuned_on in "
         "data/search/heuristics.yaml): not a held-out result\n");
  }
  line("planner    diagnosis of the stock baseline: %s (%s)\n",
       std::string(search::BottleneckName(r.diagnosis.bottleneck)).c_str(), r.diagnosis.evidence.c_str());
  if (r.drift > 0) {
    line("drift      the host drifts: trial values scaled by a factor whose log walks %.1f%% per 10 minutes of "
         "trials (--drift)\n",
         r.drift * 100);
  }
  line("protocol   the session's, on the recorded noise: A/A prelude (median noise floor %.1f%%, keep threshold "
       "%.1f%%), screen%s, accuracy gate%s, %d-%d paired looks%s; a candidate = one configuration judged%s\n",
       r.noise_floor_median * 100, r.keep_threshold_median * 100,
       r.screen_recheck > 0
           ? (" (after " + std::to_string(r.screen_recheck) + " drops in a row the incumbent is measured again)").c_str()
           : " (its reference never re-checked)",
       surface.accuracy_checked() > 0 ? "" : " (not recorded: off)",
       r.min_pairs, r.max_pairs,
       r.pool_retests ? ", a re-test pools its INCONCLUSIVE looks" : ", a re-test judged alone",
       r.plateau > 0 ? ("; a run ends after " + std::to_string(r.plateau) +
                        " candidates in a row without a KEEP (the session's plateau rule)").c_str()
                     : "");
  line("setup      %d seeds; budgets %s candidates; horizon %d candidates; time: %s; prelude %s (median)\n\n", r.seeds,
       [&] {
         std::string b;
         for (int x : r.budgets) b += (b.empty() ? "" : ",") + std::to_string(x);
         return b;
       }().c_str(),
       r.horizon, r.time_basis.c_str(),
       Seconds(r.prelude_s, r.timed).c_str());

  line("to %.0f%% of the best: candidates judged (median, quartiles), server runs and search time (median)\n",
       r.threshold * 100);
  line("  %-9s %7s %5s %5s %8s %7s %10s   %s\n", "strategy", "median", "p25", "p75", "reached", "runs", "time", "");
  for (const StrategyResult& s : r.strategies) {
    double med = s.MedianToReach();
    std::string m = med > r.horizon ? "never" : [&] {
      char b[16];
      std::snprintf(b, sizeof b, "%.1f", med);
      return std::string(b);
    }();
    double tr = s.MedianTrialsToReach();
    std::string runs = tr < 0 ? "-" : std::to_string(static_cast<int>(std::lround(tr)));
    line("  %-9s %7s %5.0f %5.0f %8s %7s %10s   %s\n", s.name.c_str(), m.c_str(), s.ReachPercentile(25),
         s.ReachPercentile(75), Pct(s.ReachRate(r.horizon)).c_str(), runs.c_str(),
         Seconds(s.MedianSecondsToReach(), r.timed).c_str(), s.name == "grid" ? "full grid in a random order" : "");
  }
  const StrategyResult& pl = r.strategies[0];
  const StrategyResult& rnd = r.strategies[1];
  const StrategyResult& tp = r.strategies[2];
  double pm = std::max(pl.MedianToReach(), 0.5);
  line("  random/planner %.2fx (goal >= 2x: %s); tpe/planner %.2fx (goal >= 1x: %s)\n", rnd.MedianToReach() / pm,
       met(r.goals.reach_vs_random), tp.MedianToReach() / pm, met(r.goals.reach_vs_tpe));
  // Where the keep bar leaves no way up: what a run's first keeps into that band decide.
  line("  dead ends of the keep bar: an incumbent above %.1f%% of the best is never replaced (no point is the median "
       "keep threshold, %.1f%%, better); %d point(s) there, %d below %.0f%%",
       r.dead_end_from * 100, r.keep_threshold_median * 100, r.dead_ends, r.dead_ends_below, r.threshold * 100);
  if (r.dead_ends_below > 0) {
    line("; at B=%d the incumbent is one of those in", r.budgets.back());
    for (const StrategyResult& s : r.strategies) {
      line(" %s %s%s", s.name.c_str(), Pct(s.dead_end).c_str(), &s == &r.strategies.back() ? " of seeds" : ",");
    }
  }
  out += "\n\n";

  line("at a budget of B candidates: the incumbent's true quality, mean [p10, median, p90] over seeds (candidates "
       "judged, median)\n");
  out += "  strategy ";
  for (int b : r.budgets) line(" %-31s", ("B=" + std::to_string(b)).c_str());
  out += "\n";
  for (const StrategyResult& s : r.strategies) {
    line("  %-9s", s.name.c_str());
    for (size_t b = 0; b < r.budgets.size(); ++b) {
      const auto& q = s.at_budget[b];
      char cell[64];
      std::snprintf(cell, sizeof cell, "%5.1f [%5.1f %5.1f %5.1f] (%2.0f)", Mean(q) * 100, Percentile(q, 10) * 100,
                    Median(q) * 100, Percentile(q, 90) * 100, Median(s.used[b]));
      line(" %-31s", cell);
    }
    out += "\n";
  }
  // Candidates a strategy spent on configurations that never served (a launch failure
  // or no valid run): each costs a launch, and the planner learns conflicts from them.
  out += "  failed candidates by then (never launched or no valid run), mean:";
  for (const StrategyResult& s : r.strategies) {
    std::string cells;
    for (size_t b = 0; b < r.budgets.size(); ++b) {
      char cell[32];
      std::snprintf(cell, sizeof cell, "%s%.1f", b == 0 ? "" : "/", Mean(s.failed[b]));
      cells += cell;
    }
    line(" %s %s%s", s.name.c_str(), cells.c_str(), &s == &r.strategies.back() ? "" : ";");
  }
  out += "\n";
  out += "  planner's mean >= every baseline's:";
  for (size_t b = 0; b < r.budgets.size(); ++b) {
    line(" B=%d %s%s", r.budgets[b], met(r.goals.at_budget[b]), b + 1 < r.budgets.size() ? ";" : "");
  }
  out += "\n";
  for (size_t b = 0; b < r.budgets.size(); ++b) {
    if (r.goals.at_budget[b]) continue;
    double mp = Mean(pl.at_budget[b]);
    std::string worse;
    for (size_t i = 1; i < r.strategies.size(); ++i) {
      double mo = Mean(r.strategies[i].at_budget[b]);
      if (mo > mp + kEps) {
        // Seeds are independent runs: is the gap larger than the means' own spread?
        const Interval gap = MeanDifference(pl.at_budget[b], r.strategies[i].at_budget[b]);
        char w[192];
        std::snprintf(w, sizeof w, "%s %.2f%% (planner %.2f%%; planner - %s %+.2f points, 95%% interval [%+.2f, %+.2f]%s)",
                      r.strategies[i].name.c_str(), mo * 100, mp * 100, r.strategies[i].name.c_str(),
                      gap.estimate * 100, gap.lo * 100, gap.hi * 100,
                      gap.hi >= 0 ? ": within the seeds' spread" : "");
        worse += (worse.empty() ? "" : ", ") + std::string(w);
      }
    }
    line("    B=%d: behind %s\n", r.budgets[b], worse.c_str());
  }
  out += "\n";

  line("P(t) against random search (Kernel Tuner methodology; t = search time after the prelude, %d points up to %s, "
       "the median time random search takes for %d candidates); [5%%, 95%%] bootstrap over seeds\n",
       static_cast<int>(r.times.size()), Seconds(r.times.empty() ? 0 : r.times.back(), r.timed).c_str(),
       r.budgets.back());
  line("  %10s", "t");
  for (const PCurve& c : r.curves) line("  %-22s", c.strategy.c_str());
  out += "\n";
  size_t rows = std::min<size_t>(10, r.times.size());
  for (size_t k = 1; k <= rows; ++k) {
    size_t t = k * r.times.size() / rows - 1;
    line("  %10s", Seconds(r.times[t], r.timed).c_str());
    for (const PCurve& c : r.curves) {
      char cell[64];
      std::snprintf(cell, sizeof cell, "%+.3f [%+.3f %+.3f]", c.p[t], c.lo[t], c.hi[t]);
      line("  %-22s", cell);
    }
    out += "\n";
  }
  out += "  area (mean of P over the range):";
  for (const PCurve& c : r.curves) {
    line(" %s %+.3f [%+.3f, %+.3f]%s", c.strategy.c_str(), c.area, c.area_lo, c.area_hi,
         &c == &r.curves.back() ? "" : ";");
  }
  out += "\n";
  const PCurve& pc = r.curves[0];
  if (pc.first_active < static_cast<int>(r.times.size())) {
    line("  planner: P(t) > 0 from the first judged candidate on (t >= %s): %s (min %+.3f)\n\n",
         Seconds(r.times[static_cast<size_t>(pc.first_active)], r.timed).c_str(), met(pc.above_zero), pc.min_p);
  } else {
    line("  planner: no candidate was judged inside the range: NOT met\n\n");
  }

  line("goals (%s): to 95%% <= 1/2 random: %s; <= TPE: %s; mean at every budget >= baselines: %s; P(t) > 0: %s => %s\n\n",
       r.held_out ? "held out" : "TUNED ON: not a held-out result", met(r.goals.reach_vs_random),
       met(r.goals.reach_vs_tpe),
       met(std::all_of(r.goals.at_budget.begin(), r.goals.at_budget.end(), [](bool b) { return b; })),
       met(r.goals.p_above_zero), r.goals.all() ? "ALL MET" : "NOT ALL MET");

  out += "planner, first seed: the candidates in order (verdict, measured gain, server runs, true quality after)\n";
  for (const std::string& l : r.example) out += "  " + l + "\n";
  out += "\nplanner, first seed: the idea tree after " + std::to_string(r.budgets.back()) + " candidates\n";
  for (const std::string& l : Split(r.example_tree, '\n')) {
    if (!l.empty()) out += "  " + l + "\n";
  }
  return out;
}

std::string FormatSummary(const std::vector<CompareReport>& reports) {
  std::string out;
  char buf[1024];
  out += "surface                       hold-out  points noise  to 95%: planner random  tpe  grid | mean at budgets "
         "(planner / best baseline)            | P(t) area       | goals\n";
  for (const CompareReport& r : reports) {
    auto med = [&](size_t i) {
      double m = r.strategies[i].MedianToReach();
      if (m > r.horizon) return std::string("never");
      std::snprintf(buf, sizeof buf, "%.0f", m);
      return std::string(buf);
    };
    std::string budgets;
    for (size_t b = 0; b < r.budgets.size(); ++b) {
      double mp = Mean(r.strategies[0].at_budget[b]);
      double mo = 0;
      for (size_t i = 1; i < r.strategies.size(); ++i) mo = std::max(mo, Mean(r.strategies[i].at_budget[b]));
      std::snprintf(buf, sizeof buf, "%s%.1f/%.1f", budgets.empty() ? "" : " ", mp * 100, mo * 100);
      budgets += buf;
    }
    std::snprintf(buf, sizeof buf, "%-29s %-9s %6d %4.1f%% %15s %6s %4s %5s | %-46s | %+.3f [%+.2f] | %s\n",
                  r.name.c_str(), r.held_out ? "held-out" : "TUNED", r.points, r.noise * 100, med(0).c_str(),
                  med(1).c_str(), med(2).c_str(), med(3).c_str(), budgets.c_str(), r.curves[0].area,
                  r.curves[0].area_lo, r.goals.all() ? "all met" : "NOT all met");
    out += buf;
    if (!r.goals.all()) {
      std::string missed;
      if (!r.goals.reach_vs_random) missed += " to-95%-vs-random";
      if (!r.goals.reach_vs_tpe) missed += " to-95%-vs-TPE";
      for (size_t b = 0; b < r.budgets.size(); ++b) {
        if (!r.goals.at_budget[b]) missed += " budget-" + std::to_string(r.budgets[b]);
      }
      if (!r.goals.p_above_zero) missed += " P(t)>0";
      out += "    missed:" + missed + "\n";
    }
  }
  return out;
}

}  // namespace hone::lab
