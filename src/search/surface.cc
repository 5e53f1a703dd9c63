#include "search/surface.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/stats.h"
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
    if (p.samples.empty()) continue;
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

int ResponseSurface::measured() const {
  return static_cast<int>(std::count_if(points_.begin(), points_.end(), [](const SurfacePoint& p) { return !p.samples.empty(); }));
}
int ResponseSurface::repeated() const {
  return static_cast<int>(std::count_if(points_.begin(), points_.end(), [](const SurfacePoint& p) { return p.samples.size() >= 2; }));
}
int ResponseSurface::failed() const {
  return static_cast<int>(std::count_if(points_.begin(), points_.end(), [](const SurfacePoint& p) { return p.failed(); }));
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

Result<ResponseSurface> ResponseSurface::Load(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  return Parse(text, path);
}

}  // namespace hone::search
