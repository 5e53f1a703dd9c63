// KnobCatalog: what a serving framework lets hone change, as data.
//
// A catalog file (catalogs/<framework>/<version-range>.yaml) lists each knob's flag or
// environment variable, type and legal values, default, category, accuracy risk,
// dependencies and conflicts, and a short "why". The adapter turns a Config into a
// command line through it; the search reads it to propose candidates; Validate()
// rejects a Config the framework would refuse (unknown knob, bad value, a conflict),
// so such candidates are never launched. Immutable after Load; safe to share.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "spec/yaml.h"

namespace hone::target {

enum class KnobType { kInt, kFloat, kBool, kEnum, kString };
std::string_view KnobTypeName(KnobType t);

// "knob=value" or "knob!=value"; a condition on a Config.
struct Condition {
  std::string knob;
  std::string value;
  bool negate = false;
  // Whether `config` (with `catalog` defaults filling absent knobs) satisfies it.
  std::string ToString() const { return knob + (negate ? "!=" : "=") + value; }
};

// How far a knob can move the model's outputs (the catalog's accuracy_risk).
enum class AccuracyRisk { kNone, kLow, kMedium, kHigh };
std::string_view AccuracyRiskName(AccuracyRisk risk);
Result<AccuracyRisk> ParseAccuracyRisk(std::string_view name);
// Medium and high: the knob changes numerics (precision, KV cache type), so a change
// of it is accuracy-gated before pairs and, on llama.cpp, KL-divergence checked.
bool ChangesNumerics(AccuracyRisk risk);

// The host values a knob's auto_means may name (search::ResolveValueExpression
// resolves them): the host's physical cores and the CPUs the session may use.
inline constexpr std::string_view kHostValues = "cores, cpus";
bool IsHostValue(std::string_view expr);

struct Knob {
  std::string name;
  std::string flag;           // "--threads"; empty for env-only knobs
  std::string negative_flag;  // bools: flag that turns it off ("--no-cont-batching")
  std::string env;            // environment variable, when the knob is one
  KnobType type = KnobType::kString;
  std::vector<std::string> choices;        // enum values
  std::optional<double> min, max;          // numeric range
  std::vector<std::string> search_values;  // values a search may try (subset of legal ones)
  std::string default_value;               // the framework's default, as text ("auto" allowed)
  // What the default resolves to when the engine picks it: a host value expression
  // ("cores": the host's physical cores) or another knob's name (its value). Empty:
  // unknown. Only where the default is that value and nothing else (llama-server's
  // parallel "auto" is 4 slots *and* a unified KV cache: no auto_means). A search drops the value the stock already runs with (threads=2 where
  // llama-server's auto is 2) instead of measuring a no-op.
  std::string auto_means;
  std::string category;                    // threads, batching, scheduling, cache, precision, ...
  // The prior spread of this knob's effect (sd of log objective ratio), where the knob
  // is known to move the objective less or more than its category's scale in the
  // planner's heuristics (data/search/heuristics.yaml): --poll is "threads" for its
  // placement, but moves throughput far less than the thread count. Unset: the category's.
  std::optional<double> effect_scale;
  AccuracyRisk accuracy_risk = AccuracyRisk::kNone;
  std::vector<Condition> requires_;        // all must hold when this knob is set
  std::vector<Condition> conflicts;        // none may hold when this knob is set
  std::string applies_to = "any";          // cpu | gpu | any
  std::string why;
  bool artifact = false;  // changes the model artifact (weight precision), not a flag
  bool searchable = true;

  Status ValidateValue(const std::string& value) const;
};

// How a list of knobs outside a catalog file is read (a spec's knob table).
struct KnobListOptions {
  std::string framework;
  std::string versions = "*";
  std::string path;                   // where the knobs came from, for messages
  std::string default_category;       // "": every knob must name its category
  std::set<std::string> placeholders; // knobs that may have neither flag nor env (a {name} in a template)
};

class KnobCatalog {
 public:
  static Result<KnobCatalog> Load(const std::string& path);
  // The knobs of a catalog file's "knobs:" list, parsed and checked the same way.
  static Result<KnobCatalog> FromKnobList(const spec::Field& knobs, const KnobListOptions& options);

  const std::string& framework() const { return framework_; }
  const std::string& versions() const { return versions_; }
  const std::string& path() const { return path_; }
  const std::vector<Knob>& knobs() const { return knobs_; }
  const Knob* Find(const std::string& name) const;
  // Whether setting any knob of `delta` can change outputs (ChangesNumerics).
  bool ChangesNumerics(const Config& delta) const;

  // The value a knob has in `config`, or its catalog default.
  std::string ValueOf(const Config& config, const Knob& knob) const;
  bool Holds(const Config& config, const Condition& c) const;
  // Unknown knobs, illegal values, unmet requirements and conflicts are errors that
  // name the knob and the rule.
  Status Validate(const Config& config) const;

 private:
  std::string framework_;
  std::string versions_;
  std::string path_;
  std::vector<Knob> knobs_;
};

// Picks the catalog in `catalogs_dir/<framework>/` whose version range contains
// `version` ("0.4.0"); falls back to the newest when none matches (with a note).
Result<KnobCatalog> LoadCatalogFor(const std::string& catalogs_dir, const std::string& framework,
                                   const std::string& version);

// Compares dotted versions numerically ("0.10.1" > "0.9"); -1, 0, 1.
int CompareVersions(const std::string& a, const std::string& b);
// ">=0.4.0,<0.5" style ranges; "*" matches everything.
bool VersionInRange(const std::string& version, const std::string& range);

}  // namespace hone::target
