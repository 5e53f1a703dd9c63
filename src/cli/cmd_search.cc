// `hone search record|merge|show|compare|noise`: the search comparison harness.
//   record   measures a response surface: every combination of the given knob values,
//            one real trial each (the session's trial executor: fresh server, warm-up,
//            benchmark) per pass, each pass in a new shuffled order (--repeats), then
//            repeats of a random share of the points at later times (their spread is the
//            noise model); each trial's wall time is kept; after the first pass, one
//            accuracy check per numerics class (the session's gate: token agreement and
//            KL divergence against the stock). Resumable: an existing output file is
//            continued. --shard K/N records a share of the points (one recorder per GPU).
//   merge    joins recordings of one grid (shards recorded on several GPUs).
//   show     what a surface (or a recording's shards) holds, complete or under way: the
//            counts, the noise, the stock, the best points, each value's mean and best.
//   compare  runs hone's planner, random search, grid search and TPE on recorded
//            surfaces at matched budgets over many seeds, every candidate judged by the
//            session's protocol on the recorded noise (lab/compare.h).
//   noise    the false-keep rate (a candidate identical to its incumbent) and the
//            power (a known small true gain) of the session's decision protocol, on
//            the recorded noise of real repeated trials (lab/false_keeps.h, bench/noise/);
//            with --live SPEC, the A/A rate on live trials of the spec's server.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "core/rng.h"
#include "core/strings.h"
#include "lab/compare.h"
#include "lab/false_keeps.h"
#include "lab/record.h"
#include "search/heuristics.h"
#include "search/surface.h"
#include "sys/files.h"
#include "sys/signals.h"
#include "target/catalog.h"
#include "bench/metrics.h"
#include "run/knowledge.h"
#include "run/session.h"
#include "sys/clock.h"
#include "sys/machine.h"

namespace hone::cli {

namespace fs = std::filesystem;

namespace {

struct SearchOpts {
  // record
  std::string spec;
  std::vector<std::string> axes;   // "knob=v1,v2,v3"
  std::vector<std::string> stock;  // "knob=v"
  double repeat_fraction = 0.25;
  int repeats = 1;
  std::string shard;  // "K/N"
  int quiet = -1;     // >= 0: wait for at most this many other runnable tasks before a trial
  double quiet_wait_s = 120;
  std::string run_dir;
  // merge, show
  std::vector<std::string> inputs;
  int top = 5;
  // compare
  std::vector<std::string> surfaces;
  int seeds = 100;
  std::string budgets;
  int horizon = 0;
  int plateau = 0;
  double noise = -1;
  double drift = 0;
  bool no_accuracy = false;  // record: no accuracy checks; compare: the gate left out
  bool recheck_accuracy = false;  // record: check every class again on a continued surface
  bool no_pool_retests = false;  // compare: measurement.pool_retests off
  int screen_recheck = -1;       // compare: measurement.screen_recheck (-1: the session's default)
  int jobs = 1;
  std::string out_dir;
  std::string framework = "llama.cpp";
  std::string version = "0.4.0";
  // noise
  int decisions = 400;
  std::string live;  // a session spec: A/A decisions on live trials of its server
  std::vector<double> effects;  // true gains for the power (default 0.03, 0.10)
  std::vector<std::string> change;  // --live: knob=value, the candidate's real change (none: A/A)
  int reference_pairs = -1;         // --live with a change: pairs measuring its effect first (default 20)
  // both
  std::string out;
  uint64_t seed = 1;
};

Result<std::pair<std::vector<search::SurfaceAxis>, Config>> ParseAxes(const SearchOpts& o) {
  std::vector<search::SurfaceAxis> axes;
  Config stock;
  for (const std::string& a : o.axes) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) return InvalidArgument("--axis wants knob=v1,v2,...: " + a);
    search::SurfaceAxis axis{a.substr(0, eq), Split(a.substr(eq + 1), ',')};
    if (axis.values.size() < 2) return InvalidArgument("--axis " + axis.knob + " needs at least two values");
    axes.push_back(std::move(axis));
  }
  HONE_ASSIGN_OR_RETURN(stock, ParseSettings(o.stock, "--stock"));
  for (const auto& axis : axes) {
    auto v = stock.Get(axis.knob);
    if (!v) return InvalidArgument("--stock has no value for axis " + axis.knob + " (the engine default, spelled out)");
    if (std::find(axis.values.begin(), axis.values.end(), *v) == axis.values.end()) {
      return InvalidArgument("--stock " + axis.knob + "=" + *v + " is not one of the axis values");
    }
  }
  if (stock.size() != axes.size()) return InvalidArgument("--stock names a knob that is not an axis");
  return std::make_pair(axes, stock);
}

// The host's load while a recording runs: the mean and the largest 1-minute load
// average at the trials' starts, and how many trials started in a quiet moment, kept in
// the surface's info (accumulated over runs that continue the file).
void AddLoad(std::map<std::string, std::string>& info, double load, bool quiet) {
  double sum = ParseDouble(info["load_sum"]).value_or(0) + load;
  double n = ParseDouble(info["load_n"]).value_or(0) + 1;
  double max = std::max(ParseDouble(info["load_max"]).value_or(0), load);
  double quiet_n = ParseDouble(info["quiet_n"]).value_or(0) + (quiet ? 1 : 0);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.3f", sum);
  info["load_sum"] = buf;
  info["load_n"] = std::to_string(static_cast<int64_t>(n));
  info["quiet_n"] = std::to_string(static_cast<int64_t>(quiet_n));
  std::snprintf(buf, sizeof buf, "%.2f", max);
  info["load_max"] = buf;
  std::snprintf(buf, sizeof buf, "mean %.2f, max %.2f over %.0f trials; %.0f started in a quiet moment", sum / n, max,
                n, quiet_n);
  info["load_1min"] = buf;
}

// Waits (up to `max_wait_s`) until no more than `max_runnable` other tasks were runnable
// over the last two seconds (a shared machine between two compiler jobs); returns
// whether it got there, and the 1-minute load average at the end.
std::pair<bool, double> WaitForQuiet(sys::Clock& clock, int max_runnable, double max_wait_s) {
  const double start = clock.MonoSeconds();
  int quiet_polls = 0;
  double load = 0;
  while (true) {
    auto l = sys::ReadHostLoad();
    if (!l) return {false, 0};
    load = l->load_1min;
    quiet_polls = l->runnable <= max_runnable ? quiet_polls + 1 : 0;
    if (quiet_polls >= 5) return {true, load};
    if (clock.MonoSeconds() - start > max_wait_s || sys::InterruptRequested()) return {false, load};
    clock.SleepFor(std::chrono::milliseconds(400));
  }
}

// One accuracy check per numerics class (search::NumericsClasses), given to every point
// of the class. The class's representative is its launched point closest to the stock.
Status RecordAccuracy(search::ResponseSurface& surface, const target::KnobCatalog& catalog,
                      measure::TrialExecutor& executor, sys::Clock& clock, int shard, int shards) {
  auto classes = search::NumericsClasses(surface, catalog);
  for (size_t c = 0; c < classes.size(); ++c) {
    if (static_cast<int>(c % static_cast<size_t>(shards)) != shard) continue;
    const std::vector<size_t>& members = classes[c];
    // Checked in an earlier run: points added since (a grown grid) share its outcome.
    auto checked = std::find_if(members.begin(), members.end(),
                                [&](size_t i) { return surface.points()[i].accuracy.has_value(); });
    if (checked != members.end()) {
      const search::PointAccuracy acc = *surface.points()[*checked].accuracy;
      for (size_t i : members) {
        if (!surface.points()[i].accuracy) surface.mutable_points()[i].accuracy = acc;
      }
      continue;
    }
    const search::SurfacePoint* rep = nullptr;
    int rep_same = -1;
    for (size_t i : members) {
      const search::SurfacePoint& p = surface.points()[i];
      if (p.failed() || p.samples.empty()) continue;
      int same = 0;
      for (const auto& [k, v] : p.config.values()) same += surface.stock().GetOr(k, "") == v ? 1 : 0;
      if (same > rep_same) {
        rep = &p;
        rep_same = same;
      }
    }
    if (!rep) continue;  // nothing of the class launched: nothing to check
    double t0 = clock.MonoSeconds();
    std::string label = "surface-acc-" + rep->config.Hash().substr(0, 8);
    auto a = executor.CheckAccuracy(rep->config, label);
    if (!a) {
      if (a.error().code == ErrorCode::kCancelled) return Fail(a.error());
      std::printf("accuracy of %s not checked: %s\n", rep->config.ToString().c_str(), a.error().message.c_str());
      continue;
    }
    search::PointAccuracy acc{.passed = a->passed, .token_agreement = a->token_agreement, .kld_mean = a->kld_mean,
                              .same_top = a->same_top, .seconds = clock.MonoSeconds() - t0, .detail = a->detail,
                              .of = rep->config.ToString()};
    for (size_t i : members) surface.mutable_points()[i].accuracy = acc;
    std::printf("accuracy %-60s %s (%.0f s): %s\n", rep->config.ToString().c_str(), a->passed ? "pass" : "FAIL",
                acc.seconds, a->detail.c_str());
    std::fflush(stdout);
  }
  return Ok();
}

int RunRecord(const SearchOpts& o, const Context& ctx) {
  auto parsed = ParseAxes(o);
  if (!parsed) return ReportError(parsed.error());
  int shard = 0, shards = 1;
  if (!o.shard.empty()) {
    auto parts = Split(o.shard, '/');
    auto k = parts.size() == 2 ? ParseInt(parts[0]) : Result<int64_t>(InvalidArgument(""));
    auto n = parts.size() == 2 ? ParseInt(parts[1]) : Result<int64_t>(InvalidArgument(""));
    if (!k || !n || *n < 1 || *k < 0 || *k >= *n) return ReportError(InvalidArgument("--shard wants K/N with 0 <= K < N").error());
    shard = static_cast<int>(*k);
    shards = static_cast<int>(*n);
  }
  auto spec = spec::LoadSessionSpec(o.spec, bench::MetricNames());
  if (!spec) return ReportError(spec.error());
  std::string run_dir = o.run_dir.empty()
                            ? (fs::path(o.out).parent_path() / (fs::path(o.out).stem().string() + "-trials")).string()
                            : o.run_dir;
  if (auto s = sys::EnsureDir(run_dir); !s) return ReportError(s.error());
  run::RunContext rc{ctx.data_dir, ctx.cache_dir, ctx.clock, ctx.runner, nullptr};
  auto wiring = run::WireSession(*spec, run_dir, rc);
  if (!wiring) return ReportError(wiring.error());
  run::SessionWiring& w = **wiring;
  sys::Clock& clock = *ctx.clock;

  // What this run's samples are of: the engine, model, machine, objective and workload.
  std::map<std::string, std::string> facts = {
      {"framework", spec->target.adapter},
      {"framework_version", w.engine.provisioned.version},
      {"model", w.engine.model_name},
      // The device the engine runs on: a CPU recording on a GPU host names the CPU.
      {"hardware", run::HardwareName(*spec, w.machine)},
      {"cpus", std::to_string(w.machine.cpus)},
      {"gpus", std::to_string(spec->target.num_gpus)},
      {"objective", spec->objective.metric},
      {"workload", spec->workload.kind + " c" + std::to_string(spec->workload.concurrency) + " isl" +
                       std::to_string(spec->workload.isl) + " osl" + std::to_string(spec->workload.osl) + " n" +
                       std::to_string(spec->workload.num_prompts)},
  };
  search::ResponseSurface surface = search::ResponseSurface::Grid(parsed->first, parsed->second);
  if (sys::FileExists(o.out)) {
    auto old = search::ResponseSurface::Load(o.out);
    if (!old) return ReportError(old.error());
    // Samples of another machine, model or workload would be pooled with the recorded ones.
    if (auto same = search::CheckSameRecording(old->info(), facts); !same) {
      return ReportError(Error{ErrorCode::kFailedPrecondition,
                               o.out + " was " + same.error().message +
                                   ": its samples and this run's would not measure the same thing; pick another --out",
                               {}});
    }
    if (auto v = old->info().find("framework_version");
        v != old->info().end() && !v->second.empty() && v->second != facts["framework_version"]) {
      std::printf("note: %s was recorded with %s; this run's engine is %s (their samples are pooled)\n",
                  o.out.c_str(), v->second.c_str(), facts["framework_version"].c_str());
    }
    const bool same = old->points().size() == surface.points().size() && old->stock() == surface.stock();
    if (same) {
      surface = std::move(*old);
    } else {
      // A larger grid that holds the recorded one: its points are carried over.
      const size_t before = old->points().size();
      auto grown = search::ExtendSurface(*old, std::move(surface));
      if (!grown) {
        return ReportError(Error{ErrorCode::kFailedPrecondition,
                                 o.out + " holds a different grid (" + grown.error().message +
                                     "); remove it or pick another --out",
                                 {}});
      }
      surface = std::move(*grown);
      std::printf("extending %s: its %zu points are kept in the new grid of %zu\n", o.out.c_str(), before,
                  surface.points().size());
    }
    std::printf("continuing %s: %d of %zu points measured\n", o.out.c_str(), surface.measured(),
                surface.points().size());
    // A point whose trial faulted twice (the server or the transport misbehaved) says
    // nothing about its configuration: a later run measures it again.
    int faulted = 0;
    for (search::SurfacePoint& p : surface.mutable_points()) {
      if (!p.faulted()) continue;
      p.failure_kind.clear();
      ++faulted;
    }
    if (faulted > 0) std::printf("measuring %d faulted point(s) again: a fault says nothing about the configuration\n", faulted);
    if (o.recheck_accuracy && surface.accuracy_checked() > 0) {
      // The gate changed since they were checked: each class is checked again.
      std::printf("dropping %d points' accuracy results: each numerics class is checked again\n",
                  surface.accuracy_checked());
      for (search::SurfacePoint& p : surface.mutable_points()) p.accuracy.reset();
    }
  }
  for (const auto& p : surface.points()) {
    if (auto v = w.engine.adapter->catalog().Validate(p.config); !v) return ReportError(v.error());
  }
  auto& info = surface.info();
  for (const auto& [key, value] : facts) info[key] = value;
  info["spec"] = o.spec;
  info["repeats"] = std::to_string(o.repeats);
  if (shards > 1) info["shard"] = std::to_string(shard) + "/" + std::to_string(shards);
  surface.set_maximize(spec->objective.maximize);
  // Every model artifact the grid needs (quantized weights, drafts) before the first
  // trial: a trial's time must not include a quantization (parallel shards wait on the
  // store's lock and find the file).
  for (const search::SurfaceAxis& a : surface.axes()) {
    if (a.knob != "weights" && a.knob != "spec_draft_weights") continue;
    for (const std::string& v : a.values) {
      Config c = surface.stock();
      c.Set(a.knob, v);
      auto model = w.engine.models->Resolve(c);
      auto launch = model ? w.engine.models->LaunchConfig(c) : Result<Config>(Fail(model.error()));
      if (!launch) std::printf("%s=%s: no artifact (%s); its trials will fail\n", a.knob.c_str(), v.c_str(),
                               launch.error().message.c_str());
    }
  }
  const bool accuracy = spec->accuracy.enabled && !o.no_accuracy;
  if (accuracy) {
    if (auto s = w.executor->PrepareAccuracy(surface.stock()); !s) return ReportError(s.error());
  }

  std::vector<search::RecordStep> plan = search::RecordPlan(surface, o.repeats, o.repeat_fraction, o.seed, shard, shards);
  measure::OperatingPoint point{spec->workload.concurrency, spec->workload.isl, spec->workload.osl};
  double start = clock.MonoSeconds();
  double seconds_before = ParseDouble(info.count("seconds") ? info["seconds"] : "0").value_or(0);
  int trials = std::stoi(info.count("trials") ? info["trials"] : "0");
  bool accuracy_done = !accuracy;
  auto save = [&]() -> Status {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", seconds_before + clock.MonoSeconds() - start);
    info["seconds"] = buf;
    return surface.Save(o.out);
  };
  lab::PointTrialOptions pt;
  pt.point = point;
  pt.concurrency = spec->workload.concurrency;
  pt.osl = static_cast<double>(spec->workload.osl);
  pt.next_id = [&] {
    char id_buf[16];
    std::snprintf(id_buf, sizeof id_buf, "s%04d", ++trials);
    return std::string(id_buf);
  };
  pt.before = [&] {
    auto [quiet, load] = o.quiet >= 0 ? WaitForQuiet(clock, o.quiet, o.quiet_wait_s)
                                      : std::make_pair(false, sys::ReadHostLoad().value_or(sys::HostLoad{}).load_1min);
    AddLoad(info, load, quiet);
  };
  pt.on_fault = [&](const measure::TrialOutcome& f, bool again) {
    std::printf("[%5.0fs] %s %-60s faulted (%s)%s\n", clock.MonoSeconds() - start, f.id.c_str(),
                f.config.ToString().c_str(), Join(f.faults, ", ").c_str(), again ? ": measured again" : "");
  };
  for (const search::RecordStep& step : plan) {
    if (sys::InterruptRequested()) break;
    // The accuracy checks run once every point was measured once (launch failures known).
    if (!accuracy_done && step.wanted > 1) {
      if (auto s = RecordAccuracy(surface, w.engine.adapter->catalog(), *w.executor, clock, shard, shards); !s) {
        return ReportError(s.error());
      }
      accuracy_done = true;
      if (auto s = save(); !s) return ReportError(s.error());
    }
    search::SurfacePoint& p = surface.mutable_points()[step.point];
    if (p.failed() || p.samples.size() >= step.wanted) continue;
    auto outcome = lab::MeasurePoint(*w.executor, p, pt);
    if (!outcome) return ReportError(outcome.error());
    info["trials"] = std::to_string(trials);
    if (auto s = save(); !s) return ReportError(s.error());
    std::printf("[%5.0fs] %s %-60s %s (%.1f s)\n", clock.MonoSeconds() - start, outcome->id.c_str(),
                p.config.ToString().c_str(),
                p.failed() ? p.failure_kind.c_str() : std::to_string(p.samples.back()).c_str(), outcome->wall_s);
    std::fflush(stdout);
  }
  if (!accuracy_done && !sys::InterruptRequested()) {
    if (auto s = RecordAccuracy(surface, w.engine.adapter->catalog(), *w.executor, clock, shard, shards); !s) {
      return ReportError(s.error());
    }
    if (auto s = save(); !s) return ReportError(s.error());
  }
  std::printf("%d of %zu points measured, %d repeated, %d failed; relative noise %.1f%%; %d accuracy-checked, %d fail "
              "the gate; load %s; wrote %s\n",
              surface.measured(), surface.points().size(), surface.repeated(), surface.failed(),
              surface.RelativeNoise() * 100, surface.accuracy_checked(), surface.accuracy_failed(),
              info.count("load_1min") ? info["load_1min"].c_str() : "?", o.out.c_str());
  return sys::InterruptRequested() ? 130 : 0;
}

// The recordings named (shards of one grid, or one file), joined.
Result<search::ResponseSurface> LoadJoined(const std::vector<std::string>& paths) {
  std::vector<search::ResponseSurface> parts;
  for (const std::string& path : paths) {
    HONE_ASSIGN_OR_RETURN(search::ResponseSurface s, search::ResponseSurface::Load(path));
    parts.push_back(std::move(s));
  }
  return search::MergeSurfaces(parts);
}

int RunMerge(const SearchOpts& o) {
  auto merged = LoadJoined(o.inputs);
  if (!merged) return ReportError(merged.error());
  merged->info().erase("shard");
  if (auto s = merged->Save(o.out); !s) return ReportError(s.error());
  std::printf("%zu parts: %d of %zu points measured, %d repeated, %d failed, %d accuracy-checked; relative noise "
              "%.1f%%; wrote %s\n",
              o.inputs.size(), merged->measured(), merged->points().size(), merged->repeated(), merged->failed(),
              merged->accuracy_checked(), merged->RelativeNoise() * 100, o.out.c_str());
  return 0;
}

int RunShow(const SearchOpts& o) {
  auto merged = LoadJoined(o.inputs);
  if (!merged) return ReportError(merged.error());
  std::printf("surface    %s%s\n", Join(o.inputs, " + ").c_str(),
              o.inputs.size() > 1 ? " (joined as `hone search merge` joins them)" : "");
  std::fputs(search::DescribeSurface(*merged, o.top).c_str(), stdout);
  return 0;
}

int RunCompare(const SearchOpts& o, const Context& ctx) {
  auto heuristics = search::Heuristics::Load(ctx.data_dir + "/data/search/heuristics.yaml");
  if (!heuristics) return ReportError(heuristics.error());
  // Before the first surface's minutes of simulation, not after them.
  if (!o.out_dir.empty()) {
    if (auto s = sys::EnsureDir(o.out_dir); !s) return ReportError(s.error());
  }
  lab::CompareOptions co;
  co.seeds = o.seeds;
  co.seed = o.seed;
  co.horizon = o.horizon;
  if (o.plateau < 0) {
    std::fprintf(stderr, "hone: error: --plateau must be 0 (off) or a number of candidates\n");
    return 2;
  }
  co.plateau = o.plateau;
  co.jobs = o.jobs;
  co.protocol.accuracy = !o.no_accuracy;
  co.protocol.measurement.pool_retests = !o.no_pool_retests;
  if (o.screen_recheck >= 0) co.protocol.measurement.screen_recheck = o.screen_recheck;
  if (o.noise >= 0) co.protocol.noise = o.noise;
  if (o.drift < 0 || o.drift > 1) {
    std::fprintf(stderr, "hone: error: --drift must be a log sd per 10 minutes in [0, 1] (0.1: ~10%%)\n");
    return 2;
  }
  co.protocol.drift = o.drift;
  if (!o.budgets.empty()) {
    co.budgets.clear();
    for (const std::string& b : Split(o.budgets, ',')) {
      auto v = ParseInt(b);
      if (!v || *v < 1) return ReportError(InvalidArgument("--budgets wants positive integers: " + o.budgets).error());
      co.budgets.push_back(static_cast<int>(*v));
    }
  }
  std::string all;
  std::vector<lab::CompareReport> reports;
  for (const std::string& path : o.surfaces) {
    auto surface = search::ResponseSurface::Load(path);
    if (!surface) return ReportError(surface.error());
    std::string framework = surface->info().count("framework") ? surface->info().at("framework") : o.framework;
    auto catalog = target::LoadCatalogFor(ctx.data_dir + "/catalogs", framework, o.version);
    if (!catalog) return ReportError(catalog.error());
    co.surface_name = fs::path(path).stem().string();
    auto report = lab::Compare(*surface, *catalog, *heuristics, co);
    if (!report) return ReportError(Error{report.error().code, path + ": " + report.error().message, {}});
    std::string text = lab::FormatCompare(*surface, *report, path);
    std::fputs(text.c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    all += text + "\n";
    if (!o.out_dir.empty()) {
      std::string file = (fs::path(o.out_dir) / ("compare-" + co.surface_name + ".txt")).string();
      if (auto s = sys::WriteFileAtomic(file, text); !s) return ReportError(s.error());
    }
    reports.push_back(std::move(*report));
  }
  std::string summary = "goals per surface (" + std::to_string(co.seeds) + " seeds):\n" + lab::FormatSummary(reports);
  std::fputs(summary.c_str(), stdout);
  all += summary;
  if (!o.out.empty()) {
    if (auto s = sys::WriteFileAtomic(o.out, all); !s) return ReportError(s.error());
  }
  if (!o.out_dir.empty() && reports.size() > 1) {
    if (auto s = sys::WriteFileAtomic((fs::path(o.out_dir) / "compare-summary.txt").string(), summary); !s) {
      return ReportError(s.error());
    }
  }
  return 0;
}

// Live trials for the false-keep measurement: both arms launch the spec's stock
// configuration at its operating point. The "candidate" arm (its config has the knob
// "candidate") launches the stock under another name (an A/A candidate: every KEEP is
// a false keep) or, with --candidate, the stock with a real change (the power).
class LiveRunner final : public session::TrialRunner {
 public:
  LiveRunner(measure::TrialExecutor& executor, Config stock, Config candidate, measure::OperatingPoint point,
             int& next_trial)
      : executor_(executor),
        stock_(std::move(stock)),
        candidate_(std::move(candidate)),
        point_(point),
        next_trial_(next_trial) {}
  Result<measure::TrialOutcome> RunTrial(const session::Arm& arm, const measure::OperatingPoint&) override {
    measure::TrialRequest req;
    char id[16];
    std::snprintf(id, sizeof id, "t%05d", ++next_trial_);
    req.id = id;
    req.role = arm.role;
    req.config = arm.config.Has("candidate") ? candidate_ : stock_;
    req.point = point_;
    return executor_.Run(req);
  }
  bool CanAfford(int) const override { return true; }
  Status Save() override { return Ok(); }
  void Progress(const std::string&) override {}

 private:
  measure::TrialExecutor& executor_;
  Config stock_, candidate_;
  measure::OperatingPoint point_;
  int& next_trial_;
};

std::string EffectText(const lab::EffectEstimate& e) {
  if (e.pairs == 0) return "no pairs";
  if (e.pairs == 1) return (e.gain >= 0 ? "+" : "") + std::to_string(e.gain * 100) + "% over 1 pair (no interval)";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%+.2f%% [95%% CI %+.2f%%, %+.2f%%] over %d pairs", e.gain * 100, e.lo * 100,
                e.hi * 100, e.pairs);
  return buf;
}

int RunLiveNoise(const SearchOpts& o, const Context& ctx) {
  auto spec = spec::LoadSessionSpec(o.live, bench::MetricNames());
  if (!spec) return ReportError(spec.error());
  if (!spec->objective.maximize) {
    return ReportError(InvalidArgument("--live: the objective must be one to maximize (" + spec->objective.metric + ")").error());
  }
  const std::string run_dir = o.run_dir.empty() ? "hone-runs/noise-live" : o.run_dir;
  if (auto s = sys::EnsureDir(run_dir); !s) return ReportError(s.error());
  run::RunContext rc{ctx.data_dir, ctx.cache_dir, ctx.clock, ctx.runner, nullptr};
  auto wiring = run::WireSession(*spec, run_dir, rc);
  if (!wiring) return ReportError(wiring.error());
  run::SessionWiring& w = **wiring;
  const Config stock = spec->target.base_config;
  auto parsed = ParseSettings(o.change, "--candidate");
  if (!parsed) return ReportError(parsed.error());
  const Config& change = *parsed;
  const Config candidate = stock.Merged(change);
  if (!change.empty()) {
    if (auto v = w.engine.adapter->catalog().Validate(candidate); !v) return ReportError(v.error());
    if (candidate == stock) return ReportError(InvalidArgument("--candidate changes nothing: " + change.ToString()).error());
  }
  const bool aa = change.empty();
  const int reference_pairs = o.reference_pairs >= 0 ? o.reference_pairs : (aa ? 0 : 20);
  const measure::OperatingPoint point{spec->workload.concurrency, spec->workload.isl, spec->workload.osl};
  lab::FalseKeepOptions fo;
  fo.measurement = spec->measurement;
  fo.decisions = o.decisions;
  fo.seed = o.seed;
  int next_trial = 0;
  const double start = ctx.clock->MonoSeconds();
  std::string all;
  auto print = [&](const std::string& line) {
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    all += line;
  };
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: live trials of %s %s (%s) on %s, %s c%d isl%lld osl%lld; the candidate is the stock "
                "%s %s%s; each decision: A/A prelude, screen, sequential pairs, Decide (the spec's "
                "measurement settings); trials in %s\n",
                o.live.c_str(), spec->target.adapter.c_str(), w.engine.provisioned.version.c_str(),
                w.engine.model_name.c_str(), w.machine.Slug().c_str(), spec->objective.metric.c_str(),
                point.concurrency, static_cast<long long>(point.isl), static_cast<long long>(point.osl),
                stock.empty() ? "(engine defaults)" : stock.ToString().c_str(),
                aa ? "under another name" : "with ", aa ? "" : change.ToString().c_str(), run_dir.c_str());
  print(buf);
  auto make_runner = [&](int) -> std::unique_ptr<session::TrialRunner> {
    return std::make_unique<LiveRunner>(*w.executor, stock, candidate, point, next_trial);
  };
  // The change's effect, measured apart from the decisions: paired trials, stock then
  // candidate, no verdict. The decisions' power is read against it.
  std::optional<lab::EffectEstimate> reference;
  if (reference_pairs > 0) {
    std::vector<std::string> a_ids, b_ids;
    std::vector<double> a, b;
    session::PairLog log(a_ids, a, b_ids, b);
    session::PairPlan plan;
    plan.a = {measure::TrialRole::kIncumbent, Config{}, ""};
    plan.b = {measure::TrialRole::kCandidate, Config{{"candidate", "reference"}}, ""};
    plan.point = point;
    plan.min_pairs = plan.max_pairs = reference_pairs;
    auto runner = make_runner(-1);
    auto done = session::RunComparison(*runner, plan, log);
    if (!done) return ReportError(done.error());
    reference = lab::PairedEffect(log.Ratios());
    print("  the change's effect, measured first: " + EffectText(*reference) + "\n");
    if (reference->pairs < 2) {
      return ReportError(Error{ErrorCode::kFailedPrecondition,
                               "the reference pairs did not measure (" + std::to_string(log.pairs()) +
                                   " of " + std::to_string(reference_pairs) + " pairs valid); see " + run_dir,
                               {}});
    }
  }
  auto r = lab::MeasureKeepsWith(
      make_runner, fo,
      [&](const lab::DecisionNote& n) {
        std::snprintf(buf, sizeof buf, "  decision %3d/%d: %-13s gain %+6.2f%%, %d pairs, noise floor %.1f%% (%d trials, %.0f s)\n",
                      n.index + 1, o.decisions, std::string(VerdictName(n.verdict)).c_str(), n.gain * 100, n.pairs,
                      n.noise_floor * 100, next_trial, ctx.clock->MonoSeconds() - start);
        print(buf);
      });
  if (!r) return ReportError(r.error());
  const lab::EffectEstimate pooled = lab::PairedEffect(r->pair_ratios);
  print("  the change's effect over the decisions' pairs: " + EffectText(pooled) + "\n");
  std::string label = "A/A (false keeps)";
  if (!aa) {
    const lab::EffectEstimate& known = reference ? *reference : pooled;
    std::snprintf(buf, sizeof buf, "%s %+.1f%% (power)", change.ToString().c_str(), known.gain * 100);
    label = buf;
  }
  std::snprintf(buf, sizeof buf,
                "  %-22s KEEP %4d / %d = %5.1f%% [95%% CI %.1f%%, %.1f%%]  (screened out %d, revert %d, "
                "inconclusive %d; %.1f pairs per comparison; noise floor %.1f%%; %d live trials in %.0f s)\n",
                label.c_str(), r->keeps, r->decisions, r->rate * 100, r->lo * 100, r->hi * 100, r->screened_out,
                r->reverts, r->inconclusive, r->mean_pairs, r->mean_noise_floor * 100, next_trial,
                ctx.clock->MonoSeconds() - start);
  print(buf);
  if (!o.out.empty()) {
    if (auto s = sys::WriteFileAtomic(o.out, all); !s) return ReportError(s.error());
  }
  return 0;
}

int RunNoise(const SearchOpts& o, const Context& ctx) {
  if (!o.live.empty()) {
    if (!o.surfaces.empty()) return ReportError(InvalidArgument("--live and --surface: one source of trials").error());
    return RunLiveNoise(o, ctx);
  }
  if (o.surfaces.empty()) return ReportError(InvalidArgument("noise needs --surface FILE or --live SPEC").error());
  if (!o.change.empty() || o.reference_pairs >= 0) {
    return ReportError(InvalidArgument("--candidate and --reference-pairs are for --live (a recorded replay takes --effect)").error());
  }
  std::vector<double> effects = o.effects.empty() ? std::vector<double>{0.03, 0.10} : o.effects;
  std::string all;
  auto print = [&](const std::string& line) {
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    all += line;
  };
  for (const std::string& path : o.surfaces) {
    auto surface = search::ResponseSurface::Load(path);
    if (!surface) return ReportError(surface.error());
    const std::vector<double> residuals = lab::RecordedResiduals(*surface);
    if (residuals.empty()) return ReportError(InvalidArgument(path + ": no point was measured twice").error());
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s: recorded noise of real trials, %zu residuals from %d repeated points (relative spread %.1f%%, "
                  "hardware %s); each decision: A/A prelude, screen, sequential pairs, Decide (session defaults)\n",
                  path.c_str(), residuals.size(), surface->repeated(), surface->RelativeNoise() * 100,
                  surface->info().count("hardware") ? surface->info().at("hardware").c_str() : "?");
    print(buf);
    std::vector<double> all_effects = {0.0};
    all_effects.insert(all_effects.end(), effects.begin(), effects.end());
    for (double effect : all_effects) {
      lab::FalseKeepOptions fo;
      fo.effect = effect;
      fo.decisions = o.decisions;
      fo.seed = o.seed;
      const lab::FalseKeepResult r = lab::MeasureKeeps(residuals, fo);
      char label[64];
      std::snprintf(label, sizeof label, "true gain %+.0f%% (power)", effect * 100);
      std::snprintf(buf, sizeof buf,
                    "  %-22s KEEP %4d / %d = %5.1f%% [95%% CI %.1f%%, %.1f%%]  (screened out %d, revert %d, "
                    "inconclusive %d; %.1f pairs per comparison; noise floor %.1f%%)\n",
                    effect == 0 ? "A/A (false keeps)" : label,
                    r.keeps, r.decisions, r.rate * 100, r.lo * 100, r.hi * 100, r.screened_out, r.reverts,
                    r.inconclusive, r.mean_pairs, r.mean_noise_floor * 100);
      print(buf);
    }
  }
  if (!o.out.empty()) {
    if (auto s = sys::WriteFileAtomic(o.out, all); !s) return ReportError(s.error());
  }
  return 0;
}

}  // namespace

Action RegisterSearch(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("search", "Search strategies: record a response surface, compare strategies on it");
  cmd->require_subcommand(1);
  auto o = std::make_shared<SearchOpts>();
  auto* record = cmd->add_subcommand("record", "Measure a response surface with real trials (one per point and repeat)");
  record->add_option("--spec", o->spec, "Session spec: target, workload, objective")->required();
  record->add_option("--axis", o->axes, "knob=v1,v2,... (repeat for each axis)")->required();
  record->add_option("--stock", o->stock, "knob=value: the engine default of each axis, spelled out")->required();
  record->add_option("--repeats", o->repeats, "Measurements of every point (each pass in a new shuffled order)");
  record->add_option("--repeat-fraction", o->repeat_fraction, "Share of points measured once more after that (noise)");
  record->add_flag("--no-accuracy", o->no_accuracy, "Skip the accuracy checks (one per numerics class)");
  record->add_flag("--recheck-accuracy", o->recheck_accuracy,
                   "Continuing a recording: drop its accuracy results and check every numerics class again "
                   "(after a change to the gate)");
  record->add_option("--quiet", o->quiet,
                     "Before each trial, wait until at most this many other tasks were runnable for 2 s (a shared "
                     "machine's quiet moment)");
  record->add_option("--quiet-wait", o->quiet_wait_s, "Longest wait for a quiet moment, seconds (default 120)");
  record->add_option("--shard", o->shard, "K/N: only the points whose index is K modulo N (one recorder per GPU)");
  record->add_option("--run-dir", o->run_dir, "Trial directories (default: next to --out)");
  record->add_option("--out", o->out, "Surface file (JSON); continued when it exists")->required();
  record->add_option("--seed", o->seed, "Order of the trials");
  auto* merge = cmd->add_subcommand("merge", "Join recordings of the same grid (shards, or several runs)");
  merge->add_option("inputs", o->inputs, "Surface files")->required();
  merge->add_option("--out", o->out, "Merged surface file")->required();
  auto* show = cmd->add_subcommand(
      "show", "What a surface holds, complete or under way: counts, noise, the stock, the best points, each value's mean");
  show->add_option("inputs", o->inputs, "Surface file, or the shards of one recording (joined as merge does)")
      ->required();
  show->add_option("--top", o->top, "Best points listed (default 5)")->check(CLI::NonNegativeNumber);
  auto* compare = cmd->add_subcommand(
      "compare", "Planner vs random, grid and TPE on recorded surfaces, each judged by the session's protocol");
  compare->add_option("--surface", o->surfaces, "Surface file from `hone search record` (repeat for several)")
      ->required();
  compare->add_option("--seeds", o->seeds, "Runs per strategy (noise and random choices differ by seed)");
  compare->add_option("--budgets", o->budgets, "Candidates per run for the matched-budget scores (default 8,16,32,64)");
  compare->add_option("--horizon", o->horizon, "Most candidates a run may judge (default: every other point)");
  compare->add_option("--plateau", o->plateau,
                      "End a run after N candidates in a row without a KEEP, as a session's framework phase does "
                      "(default 0: matched budgets only)");
  compare->add_option("--noise", o->noise, "Relative noise of one trial (default: the surface's recorded spread)");
  compare->add_option("--drift", o->drift,
                      "Host drift: the log of a factor on every trial walks with this sd per 10 minutes of trials "
                      "(default 0: none)");
  compare->add_flag("--no-accuracy", o->no_accuracy, "Leave the recorded accuracy gate out");
  compare->add_flag("--no-pool-retests", o->no_pool_retests,
                    "Judge a re-test on its own pairs alone (measurement.pool_retests: false)");
  compare->add_option("--screen-recheck", o->screen_recheck,
                      "Screen drops in a row before the next drop re-measures the incumbent "
                      "(measurement.screen_recheck; 0 = never; default the session's 2)")
      ->check(CLI::NonNegativeNumber);
  compare->add_option("--jobs", o->jobs, "Threads (seeds run in parallel)");
  compare->add_option("--version", o->version, "Framework version for the catalog (default 0.4.0)");
  compare->add_option("--seed", o->seed, "Base seed");
  compare->add_option("--out", o->out, "Also write everything printed here");
  compare->add_option("--out-dir", o->out_dir, "Also write compare-<surface>.txt per surface (and a summary) here");
  auto* noise = cmd->add_subcommand(
      "noise",
      "False-keep rate and power of the session's decision protocol on recorded trial noise, or on live trials (A/A)");
  noise->add_option("--surface", o->surfaces, "Surface file with repeated points (repeat for several)");
  noise->add_option("--live", o->live,
                    "Session spec: decisions on live trials of its server (A/A: the stock under another name)");
  noise->add_option("--candidate", o->change,
                    "--live: knob=value (repeat): the candidate is the stock with this real change (the power); "
                    "its effect is measured first");
  noise->add_option("--reference-pairs", o->reference_pairs,
                    "--live --candidate: paired trials measuring the change's effect before the decisions "
                    "(default 20, 0 = none)");
  noise->add_option("--run-dir", o->run_dir, "--live: trial directories (default hone-runs/noise-live)");
  noise->add_option("--decisions", o->decisions, "Independent decisions per effect (default 400)");
  noise->add_option("--effect", o->effects, "True relative gain for the power (repeat; default 0.03 and 0.10)");
  noise->add_option("--seed", o->seed, "Base seed");
  noise->add_option("--out", o->out, "Also write everything printed here");
  return [=, &ctx]() -> int {
    if (record->parsed()) return RunRecord(*o, ctx);
    if (noise->parsed()) return RunNoise(*o, ctx);
    if (compare->parsed()) return RunCompare(*o, ctx);
    if (merge->parsed()) return RunMerge(*o);
    if (show->parsed()) return RunShow(*o);
    return 2;
  };
}

}  // namespace hone::cli
