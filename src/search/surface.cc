#include "search/surface.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "core/stats.h"
#include "core/strings.h"
#include "sys/files.h"

namespace hone::search {

using nlohmann::json;

double SurfacePoint::mean() const { return samples.empty() ? 0.0 : Mean(samples); }

void ResponseSurface::Reindex() {
  index_.clear();
  for (size_t i = 0; i < points_.size(); ++i) index_[points_[i].config.ToString()] = i;
}

ResponseSurface ResponseSurface::Grid(std::vector<SurfaceAxis> axes, Config stock) {
  ResponseSurface s;
  s.axes_ = std::move(axes);
  s.stock_ = std::move(stock);
  std::vector<Config> configs{Config{}};
  for (const SurfaceAxis& a : s.axes_) {
    std::vector<Config> next;
    for (const Config& c : configs) {
      for (const std::string& v : a.values) {
        Config n = c;
        n.Set(a.knob, v);
        next.push_back(std::move(n));
      }
    }
    configs = std::move(next);
  }
  for (Config& c : configs) s.points_.push_back(SurfacePoint{.config = std::move(c)});
  s.Reindex();
  return s;
}

const SurfacePoint* ResponseSurface::Find(const Config& config) const {
  auto it = index_.find(config.ToString());
  return it == index_.end() ? nullptr : &points_[it->second];
}

SurfacePoint* ResponseSurface::MutableFind(const Config& config) {
  auto it = index_.find(config.ToString());
  return it == index_.end() ? nullptr : &points_[it->second];
}

const SurfacePoint* ResponseSurface::Best() const {
  const SurfacePoint* best = nullptr;
  for (const SurfacePoint& p : points_) {
    if (p.samples.empty() || !p.accuracy_ok()) continue;
    if (!best || (maximize_ ? p.mean() > best->mean() : p.mean() < best->mean())) best = &p;
  }
  return best;
}

std::optional<double> ResponseSurface::BestMean() const {
  const SurfacePoint* b = Best();
  return b ? std::optional<double>(b->mean()) : std::nullopt;
}

double ResponseSurface::Quality(double value) const {
  auto best = BestMean();
  if (!best || *best <= 0 || value <= 0) return 0;
  return maximize_ ? value / *best : *best / value;
}

double ResponseSurface::RelativeNoise() const {
  double sum_sq = 0;
  double dof = 0;
  for (const SurfacePoint& p : points_) {
    if (p.samples.size() < 2) continue;
    double m = p.mean();
    if (m <= 0) continue;
    for (double x : p.samples) sum_sq += (x / m - 1) * (x / m - 1);
    dof += static_cast<double>(p.samples.size() - 1);  // one degree of freedom spent on the mean
  }
  return dof > 0 ? std::sqrt(sum_sq / dof) : 0.0;
}

bool ResponseSurface::timed() const {
  return std::any_of(points_.begin(), points_.end(), [](const SurfacePoint& p) { return !p.seconds.empty(); });
}

double ResponseSurface::TrialSeconds(const SurfacePoint& p) const {
  if (!p.seconds.empty()) return Mean(p.seconds);
  double sum = 0;
  size_t n = 0;
  for (const SurfacePoint& q : points_) {
    for (double s : q.seconds) {
      sum += s;
      ++n;
    }
  }
  if (n > 0) return sum / static_cast<double>(n);
  auto seconds = info_.find("seconds");
  auto trials = info_.find("trials");
  if (seconds != info_.end() && trials != info_.end()) {
    auto s = ParseDouble(seconds->second);
    auto t = ParseDouble(trials->second);
    if (s && t && *s > 0 && *t > 0) return *s / *t;
  }
  return 1.0;
}

double ResponseSurface::AccuracySeconds(const SurfacePoint& p) const {
  if (p.accuracy && p.accuracy->seconds > 0) return p.accuracy->seconds;
  double sum = 0;
  int n = 0;
  for (const SurfacePoint& q : points_) {
    if (q.accuracy && q.accuracy->seconds > 0) {
      sum += q.accuracy->seconds;
      ++n;
    }
  }
  return n > 0 ? sum / n : 5 * TrialSeconds(p);
}

int ResponseSurface::accuracy_checked() const {
  return static_cast<int>(std::count_if(points_.begin(), points_.end(), [](const SurfacePoint& p) { return p.accuracy.has_value(); }));
}
int ResponseSurface::accuracy_failed() const {
  return static_cast<int>(std::count_if(points_.begin(), points_.end(), [](const SurfacePoint& p) { return !p.accuracy_ok(); }));
}

int ResponseSurface::measured() const {
  return static_cast<int>(std::count_if(points_.begin(), points_.end(), [](const SurfacePoint& p) { return !p.samples.empty(); }));
}
int ResponseSurface::repeated() const {
  return static_cast<int>(std::count_if(points_.begin(), points_.end(), [](const SurfacePoint& p) { return p.samples.size() >= 2; }));
}
int ResponseSurface::failed() const {
  return static_cast<int>(std::count_if(points_.begin(), points_.end(), [](const SurfacePoint& p) { return p.failed(); }));
}
int ResponseSurface::pending() const {
  return static_cast<int>(
      std::count_if(points_.begin(), points_.end(), [](const SurfacePoint& p) { return p.samples.empty() && !p.failed(); }));
}

std::string ResponseSurface::ToJson() const {
  json j;
  j["schema"] = "hone.surface/1";
  j["info"] = info_;
  j["maximize"] = maximize_;
  json axes = json::array();
  for (const SurfaceAxis& a : axes_) axes.push_back({{"knob", a.knob}, {"values", a.values}});
  j["axes"] = axes;
  j["stock"] = stock_.values();
  json pts = json::array();
  for (const SurfacePoint& p : points_) {
    json o;
    o["config"] = p.config.values();
    o["samples"] = p.samples;
    if (!p.seconds.empty()) o["seconds"] = p.seconds;
    if (p.accuracy) {
      const PointAccuracy& a = *p.accuracy;
      json acc = {{"passed", a.passed}, {"token_agreement", a.token_agreement}, {"seconds", a.seconds},
                  {"detail", a.detail}, {"of", a.of}};
      if (a.kld_mean) acc["kld_mean"] = *a.kld_mean;
      if (a.same_top) acc["same_top"] = *a.same_top;
      o["accuracy"] = acc;
    }
    if (!p.failure_kind.empty()) o["failure_kind"] = p.failure_kind;
    if (!p.metrics.empty()) o["metrics"] = p.metrics;
    if (!p.trial_ids.empty()) o["trial_ids"] = p.trial_ids;
    pts.push_back(std::move(o));
  }
  j["points"] = pts;
  return j.dump(1) + "\n";
}

Status ResponseSurface::Save(const std::string& path) const { return sys::WriteFileAtomic(path, ToJson()); }

Result<ResponseSurface> ResponseSurface::Parse(const std::string& json_text, const std::string& source_name) {
  auto parsed = TryCatch(ErrorCode::kInvalidArgument, source_name, [&]() -> Result<ResponseSurface> {
    json j = json::parse(json_text);
    if (j.value("schema", "") != "hone.surface/1") {
      return InvalidArgument(source_name + ": not a response surface (schema hone.surface/1)");
    }
    ResponseSurface s;
    s.maximize_ = j.value("maximize", true);
    if (j.contains("info")) s.info_ = j["info"].get<std::map<std::string, std::string>>();
    for (const json& a : j.at("axes")) {
      s.axes_.push_back({a.at("knob").get<std::string>(), a.at("values").get<std::vector<std::string>>()});
    }
    for (const auto& [k, v] : j.at("stock").items()) s.stock_.Set(k, v.get<std::string>());
    for (const json& o : j.at("points")) {
      SurfacePoint p;
      for (const auto& [k, v] : o.at("config").items()) p.config.Set(k, v.get<std::string>());
      p.samples = o.value("samples", std::vector<double>{});
      p.seconds = o.value("seconds", std::vector<double>{});
      if (o.contains("accuracy")) {
        const json& a = o["accuracy"];
        PointAccuracy acc;
        acc.passed = a.value("passed", true);
        acc.token_agreement = a.value("token_agreement", 1.0);
        if (a.contains("kld_mean") && a["kld_mean"].is_number()) acc.kld_mean = a["kld_mean"].get<double>();
        if (a.contains("same_top") && a["same_top"].is_number()) acc.same_top = a["same_top"].get<double>();
        acc.seconds = a.value("seconds", 0.0);
        acc.detail = a.value("detail", "");
        acc.of = a.value("of", "");
        p.accuracy = std::move(acc);
      }
      p.failure_kind = o.value("failure_kind", "");
      if (o.contains("metrics")) p.metrics = o["metrics"].get<std::map<std::string, double>>();
      p.trial_ids = o.value("trial_ids", std::vector<std::string>{});
      if (p.config.size() != s.axes_.size()) {
        return InvalidArgument(source_name + ": point " + p.config.ToString() + " does not set every axis");
      }
      s.points_.push_back(std::move(p));
    }
    if (s.axes_.empty()) return InvalidArgument(source_name + ": no axes");
    s.Reindex();
    if (s.index_.size() != s.points_.size()) return InvalidArgument(source_name + ": duplicate points");
    if (!s.Find(s.stock_)) return InvalidArgument(source_name + ": the stock configuration is not a grid point");
    return s;
  });
  if (!parsed) return Fail(parsed.error());
  return *parsed;
}

std::vector<RecordStep> RecordPlan(const ResponseSurface& surface, int repeats, double repeat_fraction, uint64_t seed,
                                   int shard, int shards) {
  const size_t n = surface.points().size();
  Rng rng(seed);
  auto shuffled = [&]() {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(i) - 1))]);
    return order;
  };
  std::vector<RecordStep> plan;
  std::vector<size_t> order = shuffled();
  // The stock first: a recording cut short (a GPU surface takes sessions) has the point
  // every other is read against. The rest keep the shuffled order, and `order` stays as
  // drawn: the repeats below are picked from it, so a recording under way keeps its set.
  const SurfacePoint* stock = surface.Find(surface.stock());
  const size_t stock_index = stock ? static_cast<size_t>(stock - surface.points().data()) : n;
  if (stock) plan.push_back({stock_index, 1});
  for (size_t i : order) {
    if (i != stock_index) plan.push_back({i, 1});
  }
  const size_t passes = static_cast<size_t>(std::max(1, repeats));
  for (size_t pass = 2; pass <= passes; ++pass) {
    for (size_t i : shuffled()) plan.push_back({i, pass});
  }
  size_t extra = static_cast<size_t>(repeat_fraction * static_cast<double>(n) + 0.5);
  for (size_t k = 0; k < extra && k < n; ++k) plan.push_back({order[(k * 7 + 3) % n], passes + 1});
  if (stock) {
    plan.push_back({stock_index, passes + 1});
    plan.push_back({stock_index, passes + 2});
  }
  if (shards > 1) {
    std::erase_if(plan, [&](const RecordStep& st) {
      return static_cast<int>(st.point % static_cast<size_t>(shards)) != shard;
    });
  }
  return plan;
}

std::vector<std::vector<size_t>> NumericsClasses(const ResponseSurface& surface, const target::KnobCatalog& catalog) {
  std::vector<std::string> risky;
  for (const SurfaceAxis& a : surface.axes()) {
    const target::Knob* k = catalog.Find(a.knob);
    if (k && k->accuracy_risk != target::AccuracyRisk::kNone) risky.push_back(a.knob);
  }
  std::map<std::string, std::vector<size_t>> groups;
  std::vector<std::string> order;
  for (size_t i = 0; i < surface.points().size(); ++i) {
    std::string key;
    for (const std::string& k : risky) key += k + "=" + surface.points()[i].config.GetOr(k, "") + " ";
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(i);
  }
  std::vector<std::vector<size_t>> out;
  for (const std::string& key : order) out.push_back(std::move(groups[key]));
  return out;
}

Result<ResponseSurface> ExtendSurface(const ResponseSurface& old, ResponseSurface grid) {
  std::string shape;  // "parallel{4,16} x weights{f16,q8_0}"
  for (const SurfaceAxis& a : old.axes()) {
    auto it = std::find_if(grid.axes().begin(), grid.axes().end(), [&](const SurfaceAxis& b) { return b.knob == a.knob; });
    if (it == grid.axes().end()) return FailedPrecondition("the new grid drops the axis " + a.knob);
    for (const std::string& v : a.values) {
      if (std::find(it->values.begin(), it->values.end(), v) == it->values.end()) {
        return FailedPrecondition("the new grid drops " + a.knob + "=" + v);
      }
    }
    shape += (shape.empty() ? "" : " x ") + a.knob + "{" + Join(a.values, ",") + "}";
  }
  for (const SurfaceAxis& b : grid.axes()) {
    if (old.stock().Get(b.knob) != grid.stock().Get(b.knob) && old.stock().Has(b.knob)) {
      return FailedPrecondition("the stock's " + b.knob + " differs");
    }
  }
  for (const SurfacePoint& p : old.points()) {
    Config at = grid.stock();
    for (const auto& [k, v] : p.config.values()) at.Set(k, v);
    SurfacePoint* t = grid.MutableFind(at);
    if (!t) return FailedPrecondition("no point of the new grid for " + p.config.ToString());
    Config config = t->config;
    *t = p;
    t->config = std::move(config);
  }
  grid.info() = old.info();
  grid.set_maximize(old.maximize());
  std::string from = std::to_string(old.points().size()) + " points: " + shape;
  auto& ext = grid.info()["extended_from"];
  ext = ext.empty() ? from : ext + "; " + from;
  return grid;
}

Status CheckSameRecording(const std::map<std::string, std::string>& recorded,
                          const std::map<std::string, std::string>& now) {
  static constexpr std::string_view kKeys[] = {"framework", "model", "hardware", "cpus", "gpus", "objective", "workload"};
  std::string diff;
  for (std::string_view key : kKeys) {
    auto a = recorded.find(std::string(key));
    auto b = now.find(std::string(key));
    if (a == recorded.end() || b == now.end() || a->second == b->second) continue;
    if (!diff.empty()) diff += "; ";
    diff += std::string(key) + ": recorded " + a->second + ", now " + b->second;
  }
  if (diff.empty()) return Ok();
  return FailedPrecondition("recorded elsewhere (" + diff + ")");
}

Result<ResponseSurface> MergeSurfaces(const std::vector<ResponseSurface>& parts) {
  if (parts.empty()) return InvalidArgument("nothing to merge");
  ResponseSurface out = parts[0];
  double trials = 0, seconds = 0;
  auto add_info = [&](const ResponseSurface& p) {
    if (auto it = p.info().find("trials"); it != p.info().end()) trials += ParseDouble(it->second).value_or(0);
    if (auto it = p.info().find("seconds"); it != p.info().end()) seconds += ParseDouble(it->second).value_or(0);
  };
  add_info(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    const ResponseSurface& p = parts[i];
    if (p.points().size() != out.points().size() || !(p.stock() == out.stock())) {
      return FailedPrecondition("part " + std::to_string(i + 1) + " holds a different grid");
    }
    if (auto same = CheckSameRecording(out.info(), p.info()); !same) {
      return FailedPrecondition("part " + std::to_string(i + 1) + " was " + same.error().message);
    }
    add_info(p);
    for (const SurfacePoint& q : p.points()) {
      SurfacePoint* t = out.MutableFind(q.config);
      if (!t) return FailedPrecondition("part " + std::to_string(i + 1) + " has a point off the grid: " + q.config.ToString());
      t->samples.insert(t->samples.end(), q.samples.begin(), q.samples.end());
      t->seconds.insert(t->seconds.end(), q.seconds.begin(), q.seconds.end());
      t->trial_ids.insert(t->trial_ids.end(), q.trial_ids.begin(), q.trial_ids.end());
      if (t->failure_kind.empty()) t->failure_kind = q.failure_kind;
      if (!t->accuracy) t->accuracy = q.accuracy;
      if (t->metrics.empty()) t->metrics = q.metrics;
    }
  }
  if (trials > 0) out.info()["trials"] = std::to_string(static_cast<int64_t>(trials));
  if (seconds > 0) out.info()["seconds"] = std::to_string(static_cast<int64_t>(seconds));
  return out;
}

std::string DescribeSurface(const ResponseSurface& surface, int top) {
  const bool max = surface.maximize();
  auto better = [&](double a, double b) { return max ? a > b : a < b; };
  auto fmt = [](const char* f, auto... args) {
    char buf[256];
    std::snprintf(buf, sizeof buf, f, args...);
    return std::string(buf);
  };
  // A configuration as its changes from the stock.
  auto changes = [&](const Config& c) {
    std::vector<std::string> out;
    for (const auto& [k, v] : c.values()) {
      if (surface.stock().GetOr(k, "") != v) out.push_back(k + "=" + v);
    }
    return out.empty() ? std::string("the stock") : Join(out, " ");
  };
  auto info = [&](const char* key) {
    auto it = surface.info().find(key);
    return it == surface.info().end() ? std::string() : it->second;
  };
  const size_t n = surface.points().size();
  std::string out;
  out += fmt("points     %d of %zu measured", surface.measured(), n);
  if (surface.pending() > 0) out += fmt(" (%d not yet: a recording under way)", surface.pending());
  out += fmt(", %d repeated, %d failed; %d accuracy-checked, %d fail the gate\n", surface.repeated(), surface.failed(),
             surface.accuracy_checked(), surface.accuracy_failed());
  out += "objective  " + (info("objective").empty() ? std::string("the objective") : info("objective")) +
         (max ? " (maximize)" : " (minimize)");
  if (!info("hardware").empty()) out += "; recorded on " + info("hardware");
  if (!info("workload").empty()) out += "; workload " + info("workload");
  out += "\n";
  out += surface.repeated() > 0
             ? fmt("noise      %.1f%% relative spread of one trial (%d points measured more than once)\n",
                   surface.RelativeNoise() * 100, surface.repeated())
             : std::string("noise      unknown: no point measured twice yet\n");
  const SurfacePoint* stock = surface.Find(surface.stock());
  const double stock_mean = stock && !stock->samples.empty() ? stock->mean() : 0;
  out += "stock      " + surface.stock().ToString() + ": ";
  if (stock_mean > 0) {
    out += fmt("%.1f (%zu samples)\n", stock_mean, stock->samples.size());
  } else {
    out += stock && stock->failed() ? "failed (" + stock->failure_kind + ")\n" : std::string("not measured yet\n");
  }
  auto versus = [&](double v) {
    return stock_mean > 0 && v > 0 ? fmt("  %.2fx the stock", v / stock_mean) : std::string();
  };
  std::vector<const SurfacePoint*> ranked;
  for (const SurfacePoint& p : surface.points()) {
    if (!p.samples.empty() && p.accuracy_ok()) ranked.push_back(&p);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const SurfacePoint* a, const SurfacePoint* b) { return better(a->mean(), b->mean()); });
  if (ranked.empty()) {
    out += "best       nothing measured that passes the accuracy gate\n";
    return out;
  }
  out += fmt("best%s %.1f at ", surface.pending() > 0 ? " so far" : "      ", ranked[0]->mean()) +
         changes(ranked[0]->config) + versus(ranked[0]->mean()) + "\n";
  const size_t shown = std::min(ranked.size(), static_cast<size_t>(std::max(0, top)));
  if (shown > 0) out += fmt("top %zu (mean of the samples, their count, the changes from the stock):\n", shown);
  for (size_t i = 0; i < shown; ++i) {
    const SurfacePoint& p = *ranked[i];
    out += fmt("  %10.1f (%zu)  ", p.mean(), p.samples.size()) + changes(p.config) + versus(p.mean()) + "\n";
  }
  out += "by value (mean and best over the measured points that pass the gate, and their count):\n";
  size_t width = 0;
  for (const SurfaceAxis& a : surface.axes()) width = std::max(width, a.knob.size());
  for (const SurfaceAxis& a : surface.axes()) {
    out += "  " + a.knob + std::string(width - a.knob.size(), ' ');
    for (const std::string& v : a.values) {
      double sum = 0, best = 0;
      int count = 0;
      for (const SurfacePoint* p : ranked) {
        if (p->config.GetOr(a.knob, "") != v) continue;
        if (count == 0 || better(p->mean(), best)) best = p->mean();
        sum += p->mean();
        ++count;
      }
      out += count > 0 ? fmt("  %s: %.1f, best %.1f (%d)", v.c_str(), sum / count, best, count)
                       : fmt("  %s: none (0)", v.c_str());
    }
    out += "\n";
  }
  return out;
}

Result<ResponseSurface> ResponseSurface::Load(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  return Parse(text, path);
}

}  // namespace hone::search
