// ResponseSurface: measured objective values over a grid of knob combinations, as
// data (bench/search/surface-*.json), so that search strategies can be compared on
// real engine behaviour in seconds instead of hours.
//
// Each axis is one knob with the values the grid covers; every point is one full
// combination with the objective values its real trials measured (one or more
// repeats, taken at different times, so their spread is the machine's noise and
// drift). A point whose server failed to launch carries its failure kind and no
// samples. The stock point (the engine's defaults, spelled out) is where every
// strategy starts. The file is written by `hone search record` (one real trial per
// sample) and read by `hone search compare` (search/compare.h).
//
// A surface is a plain value; safe to share read-only between threads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"

namespace hone::search {

struct SurfaceAxis {
  std::string knob;
  std::vector<std::string> values;  // in the order a grid walks them (numeric axes ascending)
};

struct SurfacePoint {
  Config config;                 // one value for every axis
  std::vector<double> samples;   // objective of each repeat (empty: failed or not measured)
  std::string failure_kind;      // launch failure ("out_of_memory"); empty when it ran
  std::map<std::string, double> metrics;  // first repeat's bench metrics (diagnosis)
  std::vector<std::string> trial_ids;
  bool failed() const { return !failure_kind.empty(); }
  double mean() const;           // 0 without samples
};

class ResponseSurface {
 public:
  ResponseSurface() = default;
  static Result<ResponseSurface> Load(const std::string& path);
  static Result<ResponseSurface> Parse(const std::string& json_text, const std::string& source_name);
  std::string ToJson() const;
  Status Save(const std::string& path) const;

  // Builds the full grid (every combination of axis values), unmeasured.
  static ResponseSurface Grid(std::vector<SurfaceAxis> axes, Config stock);

  const std::vector<SurfaceAxis>& axes() const { return axes_; }
  const Config& stock() const { return stock_; }
  const std::vector<SurfacePoint>& points() const { return points_; }
  std::vector<SurfacePoint>& mutable_points() { return points_; }
  // Free-form description: framework, model, workload, objective, hardware, dates.
  std::map<std::string, std::string>& info() { return info_; }
  const std::map<std::string, std::string>& info() const { return info_; }
  bool maximize() const { return maximize_; }
  void set_maximize(bool m) { maximize_ = m; }

  // The point with exactly this configuration (axis knobs only), or null.
  const SurfacePoint* Find(const Config& config) const;
  SurfacePoint* MutableFind(const Config& config);
  // The best mean objective over measured points (direction-adjusted: for a metric to
  // minimize, the smallest); nullopt when nothing was measured.
  std::optional<double> BestMean() const;
  const SurfacePoint* Best() const;
  // Pooled relative spread of repeats: sqrt(mean((x/mean(point) - 1)^2)) over every
  // point with >= 2 samples (with the n/(n-1) small-sample correction); 0 without
  // repeats. The comparison's noise model.
  double RelativeNoise() const;
  // Points with samples / with >= 2 samples / failed.
  int measured() const;
  int repeated() const;
  int failed() const;
  // `value` as a fraction of the best (direction-adjusted, 1.0 = the best).
  double Quality(double value) const;

 private:
  std::vector<SurfaceAxis> axes_;
  Config stock_;
  std::vector<SurfacePoint> points_;
  std::map<std::string, std::string> info_;
  std::map<std::string, size_t> index_;  // config string -> point
  bool maximize_ = true;
  void Reindex();
};

}  // namespace hone::search
