// Heuristics: the planner's prior knowledge as data (data/search/heuristics.yaml), and
// the bottleneck diagnosis of a baseline.
//
// Per catalog category: the prior spread of a knob's effect and the trial cost; per
// accuracy risk: a score penalty; per bottleneck (decode-, prefill-, KV-capacity-bound,
// queueing, overhead): multipliers on the categories' spreads; per framework: value
// hints ("parallel = concurrency"), interacting knobs (a KEEP of one re-opens the
// others) and multi-knob bundles proposed for a diagnosis. Diagnose() classifies the
// stock baseline from its bench metrics (or takes the roofline's class). Immutable
// after Load; safe to share.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "target/catalog.h"

namespace hone::spec {
class Field;
}

namespace hone::search {

enum class Bottleneck { kUnknown, kDecode, kPrefill, kKvCapacity, kQueueing, kOverhead };
std::string_view BottleneckName(Bottleneck b);
std::optional<Bottleneck> ParseBottleneck(std::string_view name);

struct CategoryPrior {
  double scale = 0.05;  // prior sd of a knob's effect, in log(objective ratio)
  double cost = 1.0;    // trial cost multiplier
};

struct Bundle {
  std::string title;
  std::vector<Bottleneck> when;
  std::string category;
  Config delta;  // values may be expressions: concurrency, cpus
};

struct FrameworkHeuristics {
  std::map<std::string, std::vector<std::string>> value_hints;
  std::map<std::string, std::vector<std::string>> interactions;
  std::vector<Bundle> bundles;
};

struct DiagnosisRules {
  double kv_usage = 0.9;
  double queue_depth = 0.5;
  double running_fraction = 0.75;
  double prefill_share = 0.5;
  std::map<std::string, Bottleneck> roofline;  // roofline class name -> diagnosis
};

struct Diagnosis {
  Bottleneck bottleneck = Bottleneck::kUnknown;
  std::string evidence;  // "queue depth 2.9 >= 0.5"
};

struct Heuristics {
  std::map<std::string, CategoryPrior> categories;
  CategoryPrior default_category;
  std::map<std::string, double> risk_penalty;  // accuracy risk -> penalty
  DiagnosisRules diagnosis;
  std::map<Bottleneck, std::map<std::string, double>> bottlenecks;  // -> category multipliers
  // Per device the engine runs on ("cpu", "gpu"): category multipliers (1 when absent).
  std::map<std::string, std::map<std::string, double>> devices;
  std::map<std::string, FrameworkHeuristics> frameworks;
  // Recorded response surfaces (file names without .json, bench/search/) these
  // heuristics were tuned or developed on: a comparison on one of them is not a
  // held-out result, and `hone search compare` says so.
  std::vector<std::string> tuned_on;
  bool TunedOn(const std::string& surface) const;

  static Result<Heuristics> Load(const std::string& path);
  static Result<Heuristics> Parse(const std::string& yaml_text, const std::string& source_name);
  static Result<Heuristics> ParseField(const spec::Field& root);

  const CategoryPrior& Category(const std::string& name) const;
  double RiskPenalty(target::AccuracyRisk risk) const;
  // Multiplier on a category's prior spread under a diagnosis (1 when none applies).
  double BottleneckMultiplier(Bottleneck b, const std::string& category) const;
  // Multiplier on a category's prior spread on this device (1 when none applies).
  double DeviceMultiplier(bool gpu, const std::string& category) const;
  const FrameworkHeuristics* Framework(const std::string& name) const;
};

// The baseline's bottleneck: the roofline class when given (`roofline_class`, through
// rules.roofline; a diagnosis name is taken as is), else from bench metrics by the rules
// in the heuristics file; kUnknown when the metrics do not say.
Diagnosis Diagnose(const std::string& roofline_class, const std::map<std::string, double>& metrics,
                   const DiagnosisRules& rules);

// Resolves a value expression of a hint, bundle or a knob's auto_means: "concurrency",
// "cpus", "2*cpus", "cores" (the host's physical cores; left as is when `cores` is 0,
// unknown) or a literal.
std::string ResolveValueExpression(const std::string& expr, int concurrency, int cpus, int cores = 0);

}  // namespace hone::search
