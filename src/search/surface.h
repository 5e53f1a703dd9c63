// ResponseSurface: measured objective values over a grid of knob combinations, as
// data (bench/search/surface-*.json), so that search strategies can be compared on
// real engine behaviour in seconds instead of hours.
//
// Each axis is one knob with the values the grid covers; every point is one full
// combination with the objective values its real trials measured (one or more
// repeats, taken at different times, so their spread is the machine's noise and
// drift). A point whose server failed to launch carries its failure kind and no
// samples. The stock point (the engine's defaults, spelled out) is where every
// strategy starts. Each sample keeps its trial's wall time (launch to teardown), so a
// replay can charge a strategy the time its trials took; a point may carry the accuracy
// gate's outcome (token agreement, KL divergence against the stock), so the gate is
// part of the surface: a point that fails it can never be kept, and "the best" is the
// best point that passes. The file is written by `hone search record` (one real trial
// per sample) and read by `hone search compare` (lab/compare.h).
//
// A surface is a plain value; safe to share read-only between threads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "search/proposer.h"
#include "target/catalog.h"

namespace hone::search {

struct SurfaceAxis {
  std::string knob;
  std::vector<std::string> values;  // in the order a grid walks them (numeric axes ascending)
};

// The accuracy gate's outcome for a point (measure::AccuracyOutcome, as data). The
// recorder checks one configuration per numerics class (the values of the axes whose
// catalog accuracy risk is not "none") and gives every point of the class its result;
// `of` names the configuration that was checked.
struct PointAccuracy {
  bool passed = true;
  double token_agreement = 1.0;
  std::optional<double> kld_mean;
  std::optional<double> same_top;
  double seconds = 0;  // what the check took
  std::string detail;
  std::string of;
};

struct SurfacePoint {
  Config config;                 // one value for every axis
  std::vector<double> samples;   // objective of each repeat (empty: failed or not measured)
  std::vector<double> seconds;   // wall time of each trial (samples, then a failed launch)
  std::optional<PointAccuracy> accuracy;  // unset: not checked (the gate passes it)
  std::string failure_kind;      // launch failure ("out_of_memory"); empty when it ran
  std::map<std::string, double> metrics;  // first repeat's bench metrics (diagnosis)
  std::vector<std::string> trial_ids;
  bool failed() const { return !failure_kind.empty(); }
  // It launched but served no valid measurement (failure_kind "invalid: <reason>", e.g. a
  // stalled server), as opposed to a launch failure.
  bool no_valid_run() const { return failure_kind.starts_with(kInvalidRunPrefix); }
  static constexpr std::string_view kInvalidRunPrefix = kNoValidRunPrefix;
  // Its trial faulted twice (failure_kind "faulted: <faults>"): a session vetoes such a
  // candidate without a failure kind, so the search learns nothing from it.
  bool faulted() const { return failure_kind.starts_with(kFaultedPrefix); }
  static constexpr std::string_view kFaultedPrefix = "faulted: ";
  bool accuracy_ok() const { return !accuracy || accuracy->passed; }
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
  // The best mean objective over measured points that pass the accuracy gate
  // (direction-adjusted: for a metric to minimize, the smallest); nullopt when nothing
  // was measured.
  std::optional<double> BestMean() const;
  const SurfacePoint* Best() const;
  // Seconds one trial of the point takes: the mean of its recorded trial times; without
  // any, the mean over the surface's recorded trials; without those, info "seconds" /
  // info "trials" (the recording's total); else 1 (time counts trials).
  double TrialSeconds(const SurfacePoint& p) const;
  // Seconds one accuracy check takes (recorded on the point, else the mean recorded,
  // else 5 trials' worth: a server start and the probes, plus the KL pass).
  double AccuracySeconds(const SurfacePoint& p) const;
  // Whether trial times were recorded (wall time in seconds) or estimated.
  bool timed() const;
  // Points that carry an accuracy outcome / fail the gate.
  int accuracy_checked() const;
  int accuracy_failed() const;
  // Pooled relative spread of repeats: sqrt(mean((x/mean(point) - 1)^2)) over every
  // point with >= 2 samples (with the n/(n-1) small-sample correction); 0 without
  // repeats. The comparison's noise model.
  double RelativeNoise() const;
  // Points with samples / with >= 2 samples / failed / with neither a sample nor a
  // failure (not taken yet: a recording under way).
  int measured() const;
  int repeated() const;
  int failed() const;
  int pending() const;
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

// The order in which `hone search record` measures a grid: the stock first, then every
// other point once in a shuffled order (drift spreads over the grid instead of following
// one axis), then `repeats - 1` more shuffled passes, then a second look at a
// `repeat_fraction` share of the points, then two more of the stock: each step names a
// point and the number of samples it should have after it (a step whose point already
// has them, or failed, is skipped, so a recording continues where it stopped). With
// shards > 1 only the points whose index is `shard` modulo `shards` (one recorder per
// GPU; MergeSurfaces joins them).
struct RecordStep {
  size_t point = 0;
  size_t wanted = 1;
};
std::vector<RecordStep> RecordPlan(const ResponseSurface& surface, int repeats, double repeat_fraction, uint64_t seed,
                                   int shard = 0, int shards = 1);

// Points grouped by the values of the axes whose knobs can change the outputs (catalog
// accuracy risk other than none): every point of a group computes the same numbers, so
// one accuracy check answers for the group. Without such axes: one group of every point.
std::vector<std::vector<size_t>> NumericsClasses(const ResponseSurface& surface, const target::KnobCatalog& catalog);

// A recording carried onto a larger grid: `grid` (unmeasured, from Grid()) holds every
// axis of `old` with at least its values, may add axes, and has the same stock; each
// of old's points (at the stock's value of every added axis) gives its samples, times,
// trial ids, failure and accuracy to the matching point of `grid`, and old's info is
// kept with "extended_from" naming the smaller grid. So a surface grows over sessions
// (more values of a knob, another knob) without measuring its points again; anything
// else is a different grid (FailedPrecondition).
Result<ResponseSurface> ExtendSurface(const ResponseSurface& old, ResponseSurface grid);

// What a recording's samples must share to be pooled into one surface: the engine, the
// model, the machine (a class name: identical hosts share it), its CPU and GPU counts, the
// objective and the workload (the info keys `hone search record` writes). Samples from
// another machine or workload would join one noise model and one "best" with the
// recorded ones. Returns FailedPrecondition naming every difference ("hardware: recorded
// cpu-intel-xeon-2c, now cpu-amd-epyc-2c"); a key either side lacks is not compared
// (surfaces of older versions), and the engine's version is not one of them (a build
// from a local source names a commit of its own in every session).
Status CheckSameRecording(const std::map<std::string, std::string>& recorded,
                          const std::map<std::string, std::string>& now);

// Joins recordings of the same grid (shards, or runs on different days): samples,
// times and trial ids are concatenated, a failure or an accuracy outcome from any of
// them is kept, info is the first's with the trial counts and seconds added up. Parts
// recorded on another machine or workload (CheckSameRecording) are refused.
Result<ResponseSurface> MergeSurfaces(const std::vector<ResponseSurface>& parts);

// What a surface holds, for a reader (`hone search show`), complete or under way: the
// counts, the noise of one trial, the stock's value (or that it is not measured yet),
// the best so far and the `top` best points as their changes from the stock, and per
// axis value the mean and best over the measured points that pass the accuracy gate.
// Values are the objective's (direction-adjusted: "best" is the smallest for a metric to
// minimize); ratios are against the stock where it was measured.
std::string DescribeSurface(const ResponseSurface& surface, int top = 5);

}  // namespace hone::search
