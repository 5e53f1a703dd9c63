// `hone search record|compare`: the search comparison harness.
//   record   measures a response surface: every combination of the given knob values,
//            one real trial each (the session's trial executor: fresh server, warm-up,
//            benchmark), in a shuffled order, then repeats of a random share of the
//            points at later times (their spread is the noise model). Resumable: an
//            existing output file is continued.
//   compare  runs hone's planner, random search and grid search on a recorded surface
//            with the same trial budget over many seeds (search/compare.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "core/rng.h"
#include "core/strings.h"
#include "search/compare.h"
#include "search/heuristics.h"
#include "search/surface.h"
#include "sys/files.h"
#include "sys/signals.h"
#include "target/catalog.h"
#include "bench/metrics.h"
#include "run/session.h"
#include "sys/clock.h"

namespace hone::cli {

namespace fs = std::filesystem;

namespace {

struct SearchOpts {
  // record
  std::string spec;
  std::vector<std::string> axes;   // "knob=v1,v2,v3"
  std::vector<std::string> stock;  // "knob=v"
  double repeat_fraction = 0.25;
  std::string run_dir;
  // compare
  std::string surface;
  int seeds = 100;
  int budget = 0;
  std::string framework = "llama.cpp";
  std::string version = "0.4.0";
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
  for (const std::string& s : o.stock) {
    size_t eq = s.find('=');
    if (eq == std::string::npos) return InvalidArgument("--stock wants knob=value: " + s);
    stock.Set(s.substr(0, eq), s.substr(eq + 1));
  }
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

int RunRecord(const SearchOpts& o, const Context& ctx) {
  auto parsed = ParseAxes(o);
  if (!parsed) return ReportError(parsed.error());
  auto spec = spec::LoadSessionSpec(o.spec, bench::MetricNames());
  if (!spec) return ReportError(spec.error());
  std::string run_dir = o.run_dir.empty() ? (fs::path(o.out).parent_path() / "surface-trials").string() : o.run_dir;
  if (auto s = sys::EnsureDir(run_dir); !s) return ReportError(s.error());
  run::RunContext rc{ctx.data_dir, ctx.cache_dir, ctx.clock, ctx.runner, nullptr};
  auto wiring = run::WireSession(*spec, run_dir, rc);
  if (!wiring) return ReportError(wiring.error());
  run::SessionWiring& w = **wiring;

  search::ResponseSurface surface = search::ResponseSurface::Grid(parsed->first, parsed->second);
  if (sys::FileExists(o.out)) {
    auto old = search::ResponseSurface::Load(o.out);
    if (!old) return ReportError(old.error());
    if (old->points().size() != surface.points().size() || !(old->stock() == surface.stock())) {
      return ReportError(Error{ErrorCode::kFailedPrecondition,
                               o.out + " holds a different grid; remove it or pick another --out", {}});
    }
    surface = std::move(*old);
    std::printf("continuing %s: %d of %zu points measured\n", o.out.c_str(), surface.measured(),
                surface.points().size());
  }
  for (const auto& p : surface.points()) {
    if (auto v = w.engine.adapter->catalog().Validate(p.config); !v) return ReportError(v.error());
  }
  auto& info = surface.info();
  info["framework"] = spec->target.adapter;
  info["framework_version"] = w.engine.provisioned.version;
  info["model"] = w.engine.model_name;
  info["hardware"] = w.machine.Slug();
  info["cpus"] = std::to_string(w.machine.cpus);
  info["objective"] = spec->objective.metric;
  info["workload"] = spec->workload.kind + " c" + std::to_string(spec->workload.concurrency) + " isl" +
                     std::to_string(spec->workload.isl) + " osl" + std::to_string(spec->workload.osl) + " n" +
                     std::to_string(spec->workload.num_prompts);
  info["spec"] = o.spec;
  surface.set_maximize(spec->objective.maximize);

  // Pass 1: every point once, shuffled (drift spreads over the grid instead of
  // following one axis). Pass 2: repeats of a random share, later in time.
  Rng rng(o.seed);
  std::vector<size_t> order(surface.points().size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(i) - 1))]);
  std::vector<std::pair<size_t, size_t>> plan;  // (point, wanted samples)
  for (size_t i : order) plan.emplace_back(i, 1);
  size_t repeats = static_cast<size_t>(o.repeat_fraction * static_cast<double>(order.size()) + 0.5);
  for (size_t k = 0; k < repeats && k < order.size(); ++k) plan.emplace_back(order[(k * 7 + 3) % order.size()], 2);
  const search::SurfacePoint* stock_point = surface.Find(surface.stock());
  plan.emplace_back(static_cast<size_t>(stock_point - surface.points().data()), 2);
  plan.emplace_back(static_cast<size_t>(stock_point - surface.points().data()), 3);

  measure::OperatingPoint point{spec->workload.concurrency, spec->workload.isl, spec->workload.osl};
  double start = ctx.clock->MonoSeconds();
  int trials = std::stoi(info.count("trials") ? info["trials"] : "0");
  for (const auto& [idx, wanted] : plan) {
    if (sys::InterruptRequested()) break;
    search::SurfacePoint& p = surface.mutable_points()[idx];
    if (p.failed() || p.samples.size() >= wanted) continue;
    measure::TrialRequest req;
    char id_buf[16];
    std::snprintf(id_buf, sizeof id_buf, "s%04d", ++trials);
    req.id = id_buf;
    req.role = measure::TrialRole::kSurface;
    req.config = p.config;
    req.point = point;
    auto outcome = w.executor->Run(req);
    if (!outcome) return ReportError(outcome.error());
    p.trial_ids.push_back(outcome->id);
    if (!outcome->launched) {
      p.failure_kind = outcome->failure_kind.empty() ? "launch_failed" : outcome->failure_kind;
    } else if (!outcome->valid) {
      p.failure_kind = "invalid: " + (outcome->invalid_reasons.empty() ? std::string("?") : outcome->invalid_reasons[0]);
    } else {
      p.samples.push_back(outcome->objective);
      if (p.metrics.empty()) {
        for (const std::string& m : bench::MetricNames()) {
          if (auto v = bench::Metric(outcome->result, m)) p.metrics[m] = *v;
        }
        const bench::BenchResult& r = outcome->result;
        if (r.kv_usage_max) p.metrics["kv_usage_max"] = *r.kv_usage_max;
        if (r.queue_depth_mean) p.metrics["queue_depth_mean"] = *r.queue_depth_mean;
        if (r.running_mean) p.metrics["running_mean"] = *r.running_mean;
        p.metrics["concurrency"] = spec->workload.concurrency;
        p.metrics["osl"] = static_cast<double>(spec->workload.osl);
      }
    }
    info["trials"] = std::to_string(trials);
    if (auto s = surface.Save(o.out); !s) return ReportError(s.error());
    std::printf("[%5.0fs] %s %-60s %s\n", ctx.clock->MonoSeconds() - start, req.id.c_str(),
                p.config.ToString().c_str(),
                p.failed() ? p.failure_kind.c_str() : std::to_string(p.samples.back()).c_str());
    std::fflush(stdout);
  }
  std::printf("%d of %zu points measured, %d repeated, %d failed; relative noise %.1f%%; wrote %s\n", surface.measured(),
              surface.points().size(), surface.repeated(), surface.failed(), surface.RelativeNoise() * 100,
              o.out.c_str());
  return sys::InterruptRequested() ? 130 : 0;
}

int RunCompare(const SearchOpts& o, const Context& ctx) {
  auto surface = search::ResponseSurface::Load(o.surface);
  if (!surface) return ReportError(surface.error());
  std::string framework = surface->info().count("framework") ? surface->info().at("framework") : o.framework;
  auto catalog = target::LoadCatalogFor(ctx.data_dir + "/catalogs", framework, o.version);
  if (!catalog) return ReportError(catalog.error());
  auto heuristics = search::Heuristics::Load(ctx.data_dir + "/data/search/heuristics.yaml");
  if (!heuristics) return ReportError(heuristics.error());
  search::CompareOptions co;
  co.seeds = o.seeds;
  co.budget = o.budget;
  co.seed = o.seed;
  auto report = search::Compare(*surface, *catalog, *heuristics, co);
  if (!report) return ReportError(report.error());
  std::string text = search::FormatCompare(*surface, *report, o.surface);
  std::fputs(text.c_str(), stdout);
  if (!o.out.empty()) {
    if (auto s = sys::WriteFileAtomic(o.out, text); !s) return ReportError(s.error());
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
  record->add_option("--repeat-fraction", o->repeat_fraction, "Share of points measured a second time (noise)");
  record->add_option("--run-dir", o->run_dir, "Trial directories (default: next to --out)");
  record->add_option("--out", o->out, "Surface file (JSON); continued when it exists")->required();
  record->add_option("--seed", o->seed, "Order of the trials");
  auto* compare = cmd->add_subcommand("compare", "Planner vs random vs grid search on a recorded surface");
  compare->add_option("--surface", o->surface, "Surface file from `hone search record`")->required();
  compare->add_option("--seeds", o->seeds, "Runs per strategy (noise and random choices differ by seed)");
  compare->add_option("--budget", o->budget, "Trials per run (default: a third of the grid)");
  compare->add_option("--version", o->version, "Framework version for the catalog (default 0.4.0)");
  compare->add_option("--seed", o->seed, "Base seed");
  compare->add_option("--out", o->out, "Also write the printed report here");
  return [=, &ctx]() -> int {
    if (record->parsed()) return RunRecord(*o, ctx);
    if (compare->parsed()) return RunCompare(*o, ctx);
    return 2;
  };
}

}  // namespace hone::cli
