#include "kb/rules.h"

#include <algorithm>

#include "spec/yaml.h"

namespace hone::kb {

std::string_view RelaxConstraintName(RelaxConstraint c) {
  switch (c) {
    case RelaxConstraint::kSameMajor: return "same_major";
    case RelaxConstraint::kSameMajorMinor: return "same_major_minor";
    case RelaxConstraint::kNotNewer: return "not_newer";
  }
  return "?";
}

bool FallbackStep::Relaxes(MatchField f) const { return std::find(relax.begin(), relax.end(), f) != relax.end(); }

namespace {

Result<std::vector<MatchField>> ParseFields(const spec::Field& f) {
  std::vector<MatchField> out;
  if (!f.defined()) return out;
  for (const spec::Field& item : f.Items()) {
    HONE_ASSIGN_OR_RETURN(std::string name, item.Str());
    auto field = ParseMatchField(name);
    if (!field) {
      return Fail(item.Err("unknown match field '" + name +
                           "' (model, hardware, framework, model_type, architecture, framework_version, precision)"));
    }
    if (std::find(out.begin(), out.end(), *field) != out.end()) return Fail(item.Err("field listed twice"));
    out.push_back(*field);
  }
  if (!f.is_seq()) return Fail(f.Err("expected a list of match fields"));
  return out;
}

Result<RelaxConstraint> ParseConstraint(const spec::Field& f) {
  HONE_ASSIGN_OR_RETURN(std::string name, f.Str());
  for (RelaxConstraint c : {RelaxConstraint::kSameMajor, RelaxConstraint::kSameMajorMinor, RelaxConstraint::kNotNewer}) {
    if (RelaxConstraintName(c) == name) return c;
  }
  return Fail(f.Err("unknown constraint '" + name + "' (same_major, same_major_minor, not_newer)"));
}

}  // namespace

Result<FallbackPolicy> LoadFallbackPolicy(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"replay_min_confidence", "priors_min_confidence", "never_relaxed", "steps", "operating_point"}));
  FallbackPolicy p;
  HONE_ASSIGN_OR_RETURN(p.replay_min_confidence, root["replay_min_confidence"].Double(0, 1));
  HONE_ASSIGN_OR_RETURN(p.priors_min_confidence, root["priors_min_confidence"].Double(0, 1));
  HONE_ASSIGN_OR_RETURN(p.never_relaxed, ParseFields(root["never_relaxed"]));
  spec::Field steps = root["steps"];
  if (!steps.is_seq() || steps.Items().empty()) return Fail(steps.Err("expected a non-empty list of fallback steps"));
  for (const spec::Field& s : steps.Items()) {
    HONE_TRY(s.RequireMap());
    HONE_TRY(s.CheckKeys({"name", "relax", "constraints", "confidence", "why"}));
    FallbackStep step;
    HONE_ASSIGN_OR_RETURN(step.name, s["name"].Str());
    for (const FallbackStep& earlier : p.steps) {
      if (earlier.name == step.name) return Fail(s["name"].Err("step name '" + step.name + "' used twice"));
    }
    HONE_ASSIGN_OR_RETURN(step.relax, ParseFields(s["relax"]));
    for (const spec::Field& c : s["constraints"].Items()) {
      HONE_ASSIGN_OR_RETURN(RelaxConstraint rc, ParseConstraint(c));
      step.constraints.push_back(rc);
    }
    HONE_ASSIGN_OR_RETURN(step.confidence, s["confidence"].Double(0, 1));
    HONE_ASSIGN_OR_RETURN(step.why, s["why"].StrOr(""));
    if (p.steps.empty() && !step.relax.empty()) {
      return Fail(s["relax"].Err("the first step must be the exact match (relax: [])"));
    }
    if (!p.steps.empty() && step.relax.empty()) return Fail(s["relax"].Err("only the first step may relax nothing"));
    if (!p.steps.empty() && step.confidence >= p.steps.back().confidence) {
      return Fail(s["confidence"].Err("each step must lower the confidence (previous step '" + p.steps.back().name +
                                      "' has " + std::to_string(p.steps.back().confidence) + ")"));
    }
    for (MatchField f : step.relax) {
      if (std::find(p.never_relaxed.begin(), p.never_relaxed.end(), f) != p.never_relaxed.end()) {
        return Fail(s["relax"].Err("field '" + std::string(MatchFieldName(f)) + "' is listed in never_relaxed"));
      }
    }
    p.steps.push_back(std::move(step));
  }
  spec::Field op = root["operating_point"];
  if (op.defined()) {
    HONE_TRY(op.CheckKeys({"other_kind", "other_trace", "per_doubling"}));
    OperatingPointFactors& f = p.operating_point;
    HONE_ASSIGN_OR_RETURN(f.other_kind, op["other_kind"].DoubleOr(f.other_kind, 0, 1));
    HONE_ASSIGN_OR_RETURN(f.other_trace, op["other_trace"].DoubleOr(f.other_trace, 0, 1));
    spec::Field d = op["per_doubling"];
    HONE_TRY(d.CheckKeys({"concurrency", "isl", "osl"}));
    HONE_ASSIGN_OR_RETURN(f.per_concurrency_doubling, d["concurrency"].DoubleOr(f.per_concurrency_doubling, 0, 1));
    HONE_ASSIGN_OR_RETURN(f.per_isl_doubling, d["isl"].DoubleOr(f.per_isl_doubling, 0, 1));
    HONE_ASSIGN_OR_RETURN(f.per_osl_doubling, d["osl"].DoubleOr(f.per_osl_doubling, 0, 1));
  }
  return p;
}

Result<AdmissionRules> LoadAdmissionRules(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"min_objective_trials", "min_baseline_trials", "min_gain_fraction",
                           "require_ci_clear_of_baseline", "reproduce_min_fraction", "inconclusive_replays_to_demote"}));
  AdmissionRules r;
  HONE_ASSIGN_OR_RETURN(r.min_objective_trials, root["min_objective_trials"].Int(1, 1000));
  HONE_ASSIGN_OR_RETURN(r.min_baseline_trials, root["min_baseline_trials"].Int(1, 1000));
  HONE_ASSIGN_OR_RETURN(r.min_gain_fraction, root["min_gain_fraction"].Double(0, 100));
  HONE_ASSIGN_OR_RETURN(r.require_ci_clear_of_baseline, root["require_ci_clear_of_baseline"].Bool());
  HONE_ASSIGN_OR_RETURN(r.reproduce_min_fraction, root["reproduce_min_fraction"].Double(0, 1));
  HONE_ASSIGN_OR_RETURN(r.inconclusive_replays_to_demote,
                        root["inconclusive_replays_to_demote"].IntOr(r.inconclusive_replays_to_demote, 1, 100));
  return r;
}

Result<KbRules> LoadKbRules(const std::string& data_dir) {
  KbRules rules;
  HONE_ASSIGN_OR_RETURN(rules.fallback, LoadFallbackPolicy(data_dir + "/data/kb/fallback.yaml"));
  HONE_ASSIGN_OR_RETURN(rules.admission, LoadAdmissionRules(data_dir + "/data/kb/admission.yaml"));
  return rules;
}

}  // namespace hone::kb
