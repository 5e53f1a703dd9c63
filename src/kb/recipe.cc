#include "kb/recipe.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/check.h"
#include "core/strings.h"

namespace hone::kb {

std::string_view MatchFieldName(MatchField f) {
  switch (f) {
    case MatchField::kModel: return "model";
    case MatchField::kHardware: return "hardware";
    case MatchField::kFramework: return "framework";
    case MatchField::kModelType: return "model_type";
    case MatchField::kArchitecture: return "architecture";
    case MatchField::kFrameworkVersion: return "framework_version";
    case MatchField::kPrecision: return "precision";
  }
  return "?";
}

std::optional<MatchField> ParseMatchField(std::string_view name) {
  for (MatchField f : kMatchFields) {
    if (MatchFieldName(f) == name) return f;
  }
  return std::nullopt;
}

const std::string& Identity::Get(MatchField f) const { return const_cast<Identity*>(this)->Mutable(f); }

std::string& Identity::Mutable(MatchField f) {
  switch (f) {
    case MatchField::kModel: return model;
    case MatchField::kHardware: return hardware;
    case MatchField::kFramework: return framework;
    case MatchField::kModelType: return model_type;
    case MatchField::kArchitecture: return architecture;
    case MatchField::kFrameworkVersion: return framework_version;
    case MatchField::kPrecision: return precision;
  }
  HONE_CHECK(false);
  return model;
}

std::string Identity::CanonicalId() const {
  std::string out = "inference";
  for (MatchField f : kMatchFields) out += ":" + Get(f);
  return out;
}

std::string Workload::ToString() const {
  if (kind.empty()) return "(any workload)";
  std::string out = kind;
  if (!trace_id.empty()) out += " " + trace_id;
  if (concurrency > 0) out += " c=" + std::to_string(concurrency);
  if (isl > 0) out += " isl=" + std::to_string(isl);
  if (osl > 0) out += " osl=" + std::to_string(osl);
  return out;
}

std::string_view FailureKindName(FailureKind k) {
  switch (k) {
    case FailureKind::kCrashed: return "crashed";
    case FailureKind::kBadFlag: return "bad_flag";
    case FailureKind::kOutOfMemory: return "out_of_memory";
    case FailureKind::kTimeout: return "timeout";
    case FailureKind::kRegressed: return "regressed";
    case FailureKind::kAccuracyFailed: return "accuracy_failed";
    case FailureKind::kUnsupported: return "unsupported";
    case FailureKind::kConflict: return "conflict";
  }
  return "?";
}

Result<FailureKind> ParseFailureKind(std::string_view name) {
  for (FailureKind k : {FailureKind::kCrashed, FailureKind::kBadFlag, FailureKind::kOutOfMemory, FailureKind::kTimeout,
                        FailureKind::kRegressed, FailureKind::kAccuracyFailed, FailureKind::kUnsupported,
                        FailureKind::kConflict}) {
    if (FailureKindName(k) == name) return k;
  }
  return InvalidArgument("unknown failure kind '" + std::string(name) +
                         "' (crashed, bad_flag, out_of_memory, timeout, regressed, accuracy_failed, unsupported, "
                         "conflict)");
}

std::string_view RecipeStatusName(RecipeStatus s) { return s == RecipeStatus::kActive ? "active" : "demoted"; }

std::string Recipe::Key() const {
  // Unit/record separators cannot appear in the canonical fields' meaning, so the
  // concatenation is unambiguous.
  std::string canon = identity.CanonicalId();
  canon += '\x1e';
  canon += workload.kind + '\x1f' + std::to_string(workload.concurrency) + '\x1f' + std::to_string(workload.isl) +
           '\x1f' + std::to_string(workload.osl) + '\x1f' + workload.trace_id;
  canon += '\x1e';
  for (const auto& [k, v] : config.values()) canon += k + '\x1f' + v + '\x1f';
  return StableHash(canon);
}

double GainFraction(double value, double baseline, bool higher_is_better) {
  if (baseline == 0) return 0;
  double g = (value - baseline) / baseline;
  return higher_is_better ? g : -g;
}

double Recipe::GainFraction() const {
  return kb::GainFraction(objective.value, baseline.value, objective.higher_is_better);
}

namespace {

Status CheckTrialIds(const std::vector<std::string>& ids, const std::string& what, int64_t min_count) {
  if (static_cast<int64_t>(ids.size()) < min_count) {
    return InvalidArgument(what + " has " + std::to_string(ids.size()) + " trial id(s), needs at least " +
                           std::to_string(min_count));
  }
  for (const std::string& id : ids) {
    bool bad = id.empty();
    for (char c : id) bad = bad || c == ',' || std::isspace(static_cast<unsigned char>(c));
    if (bad) return InvalidArgument(what + ": malformed trial id '" + id + "' (empty, or holds a comma or space)");
  }
  return Ok();
}

}  // namespace

Status CheckRecipeShape(const Recipe& r, int64_t min_objective_trials, int64_t min_baseline_trials) {
  for (MatchField f : kMatchFields) {
    if (Trim(r.identity.Get(f)).empty()) {
      return InvalidArgument("identity field '" + std::string(MatchFieldName(f)) + "' is empty");
    }
  }
  if (r.workload.kind.empty()) return InvalidArgument("workload kind is empty");
  if (r.workload.concurrency < 0 || r.workload.isl < 0 || r.workload.osl < 0) {
    return InvalidArgument("workload has a negative dimension: " + r.workload.ToString());
  }
  if (r.config.empty() && r.status != RecipeStatus::kDemoted) {
    return InvalidArgument("the winning config is empty (stock): nothing to replay");
  }
  if (r.objective.name.empty()) return InvalidArgument("objective name is empty");
  const Objective& o = r.objective;
  if (!std::isfinite(o.value) || !std::isfinite(o.ci_lo) || !std::isfinite(o.ci_hi)) {
    return InvalidArgument("objective value or CI is not finite");
  }
  if (!(o.ci_lo <= o.value && o.value <= o.ci_hi)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "objective CI [%g, %g] does not contain its value %g", o.ci_lo, o.ci_hi, o.value);
    return InvalidArgument(buf);
  }
  HONE_TRY(CheckTrialIds(o.trial_ids, "objective", min_objective_trials));
  if (!std::isfinite(r.baseline.value) || r.baseline.value <= 0) {
    return InvalidArgument("baseline value must be positive (got " + std::to_string(r.baseline.value) + ")");
  }
  HONE_TRY(CheckTrialIds(r.baseline.trial_ids, "baseline", min_baseline_trials));
  for (const Learning& l : r.learnings) {
    if (l.knob.empty()) return InvalidArgument("a learning has no knob");
    HONE_TRY(CheckTrialIds(l.trial_ids, "learning " + l.knob + "=" + l.value, 0));
  }
  for (const Failure& f : r.failures) {
    HONE_TRY(CheckTrialIds(f.trial_ids, "failure " + f.config_delta.ToString(), 0));
  }
  return Ok();
}

std::string JoinTrialIds(const std::vector<std::string>& ids) { return Join(ids, ","); }

std::vector<std::string> SplitTrialIds(std::string_view joined) {
  std::vector<std::string> out;
  if (joined.empty()) return out;
  for (std::string& s : Split(joined, ',')) {
    if (!s.empty()) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace hone::kb
