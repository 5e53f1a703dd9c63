#include "run/knowledge.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/strings.h"
#include "kb/spec_workload.h"
#include "model/gguf.h"
#include "sys/term.h"
#include "target/llamacpp.h"

namespace hone::run {

namespace fs = std::filesystem;

std::string HardwareName(const spec::SessionSpec& spec, const sys::MachineInfo& machine) {
  return spec.target.hardware.empty() ? machine.SlugFor(spec.target.num_gpus) : spec.target.hardware;
}

kb::Identity SessionIdentity(const spec::SessionSpec& spec, const std::string& hardware, const std::string& model_name,
                             const std::string& model_path, const std::string& engine_version,
                             const std::string& base_precision) {
  kb::Identity id;
  id.model = model_name;
  id.hardware = hardware;
  id.framework = spec.target.adapter;
  id.model_type = "llama";
  if (auto f = model::ReadGguf(model_path)) id.model_type = f->Str("general.architecture").value_or("llama");
  id.architecture = id.model_type == "llama" ? "LlamaForCausalLM" : id.model_type;
  id.framework_version = target::NumericVersion(engine_version);
  // The stock's weight precision: a base_config `weights` (a fleet's precision axis)
  // names it, else the model file's own type.
  id.precision = spec.target.base_config.Get("weights").value_or(base_precision);
  return id;
}

kb::Workload SessionWorkload(const spec::SessionSpec& spec) {
  return kb::WorkloadOf(spec);
}

Result<std::unique_ptr<kb::RecipeStore>> OpenKnowledgeBase(const spec::SessionSpec& spec, const RunContext& ctx,
                                                           std::string* unavailable,
                                                           std::optional<kb::KbRules>* rules_out) {
  if (!spec.kb.enabled) return std::unique_ptr<kb::RecipeStore>();
  HONE_ASSIGN_OR_RETURN(kb::KbRules rules, kb::LoadKbRules(ctx.data_dir));
  if (rules_out) *rules_out = rules;
  // kb: {url: postgresql://...} (a knowledge base many hosts share), else kb: {path},
  // else the cache's SQLite file.
  std::string where = spec.kb.Location().empty() ? (ctx.cache_dir / "kb.sqlite").string() : spec.kb.Location();
  kb::StoreOptions options;
  options.clock = ctx.clock;
  auto store = kb::RecipeStore::OpenAt(where, std::move(rules), options);
  if (!store) {
    sys::LogWarn("knowledge base disabled: " + store.error().message);
    if (unavailable) *unavailable = store.error().message;
    return std::unique_ptr<kb::RecipeStore>();
  }
  return std::move(*store);
}

std::vector<search::Prior> KbPriors(kb::RecipeStore& store, const kb::MatchQuery& query) {
  std::vector<search::Prior> out;
  if (auto learnings = store.Learnings(query)) {
    for (const kb::PriorLearning& l : *learnings) {
      out.push_back({l.learning.knob, l.learning.value, l.learning.effect, l.confidence, ""});
    }
  }
  if (auto failures = store.Failures(query)) {
    for (const kb::PriorFailure& f : *failures) {
      if (f.failure.kind == kb::FailureKind::kConflict) continue;  // each value may launch alone
      // A failure of several knobs at once blames each of them in part.
      double share = 1.0 / static_cast<double>(std::max<size_t>(1, f.failure.config_delta.size()));
      for (const auto& [knob, value] : f.failure.config_delta.values()) {
        out.push_back({knob, value, 0, f.confidence * share, std::string(kb::FailureKindName(f.failure.kind))});
      }
    }
  }
  return out;
}

std::vector<Config> KbConflicts(kb::RecipeStore& store, const kb::MatchQuery& query) {
  std::vector<Config> out;
  if (auto failures = store.Failures(query)) {
    for (const kb::PriorFailure& f : *failures) {
      if (f.failure.kind != kb::FailureKind::kConflict || f.failure.config_delta.size() < 2) continue;
      if (std::find(out.begin(), out.end(), f.failure.config_delta) == out.end()) out.push_back(f.failure.config_delta);
    }
  }
  return out;
}

std::vector<std::string> KbNoteLines(kb::RecipeStore& store, const kb::MatchQuery& query) {
  std::vector<std::string> out;
  if (auto notes = store.Notes(query)) {
    for (const kb::PriorNote& n : *notes) {
      char conf[32];
      std::snprintf(conf, sizeof conf, "%.2f", n.confidence);
      out.push_back("note from a past session's " + n.note.source + " on " + n.note.subject + ": " + n.note.text +
                    " (recipe #" + std::to_string(n.recipe_id) + ", confidence " + conf + ")");
      if (out.size() >= 12) break;
    }
  }
  return out;
}

std::string ReplayWords(const kb::ReplayVerdict& v) {
  if (v.reproduced) return std::string(v.same_point ? "reproduced" : "transferred") + ": " + v.reason;
  if (v.same_point && !v.demoted && v.inconclusive_in_row > 0) {
    return "undecided, recipe kept active (" + std::to_string(v.inconclusive_in_row) +
           " inconclusive replay(s) in a row): " + v.reason;
  }
  return v.same_point ? "did not reproduce, recipe demoted: " + v.reason
                      : "did not transfer here, recipe kept active (recorded at another operating point): " + v.reason;
}

KbWarmStart::KbWarmStart(kb::RecipeStore& store, const spec::SessionSpec& spec, kb::MatchQuery query,
                         std::string hone_version)
    : store_(store), spec_(spec), query_(std::move(query)), hone_version_(std::move(hone_version)) {}

std::optional<session::WarmCandidate> KbWarmStart::Match(std::string* explanation) {
  auto m = store_.Match(query_);
  if (!m) {
    *explanation = "knowledge base unavailable: " + m.error().message;
    return std::nullopt;
  }
  *explanation = Join(m->explanation, "; ");
  if (!m->recipe || !m->replay || m->confidence < spec_.kb.min_confidence) return std::nullopt;
  session::WarmCandidate c;
  c.config = spec_.target.base_config.Merged(m->recipe->config);
  c.recorded_gain = m->recipe->GainFraction();
  c.recipe_id = m->recipe->id;
  c.explanation = *explanation;
  return c;
}

std::string KbWarmStart::RecordReplay(const session::WarmCandidate& c, const session::ReplayResult& r) {
  kb::ReplayOutcome o;
  o.identity = query_.identity;
  o.workload = query_.workload;
  o.baseline_value = 1.0;
  o.objective_value = 1.0 + r.gain;
  o.accuracy_passed = r.accuracy_passed;
  o.verdict = r.verdict;
  o.reproduce_fraction = spec_.kb.reproduce_fraction;
  o.trial_ids = r.trial_ids;
  o.session_id = r.session_id;
  o.hone_version = hone_version_;
  auto v = store_.RecordReplay(c.recipe_id, o);
  if (!v) {
    sys::LogWarn("knowledge base: " + v.error().message);
    return "not recorded: " + v.error().message;
  }
  return ReplayWords(*v);
}

std::optional<kb::FailureKind> FailureKindFor(const session::CandidateRecord& c) {
  switch (c.verdict) {
    case Verdict::kLaunchFailed:
      // A port race or a missing binary says nothing about the configuration: a later
      // session must not hold it against the values (the launch is retried elsewhere).
      if (c.failure_kind == "port_in_use" || c.failure_kind == "not_found") return std::nullopt;
      if (c.failure_kind == "out_of_memory") return kb::FailureKind::kOutOfMemory;
      if (c.failure_kind == "bad_flag") return kb::FailureKind::kBadFlag;
      if (c.failure_kind == "unsupported") return kb::FailureKind::kUnsupported;
      if (c.failure_kind == "health_timeout") return kb::FailureKind::kTimeout;
      return kb::FailureKind::kCrashed;  // context_create, model_load, crashed, exited
    case Verdict::kAccuracyFailed: return kb::FailureKind::kAccuracyFailed;
    case Verdict::kRevert:
      // Worse here (the interval below 1), or it broke the SLO. A REVERT that only failed
      // to prove a gain above this session's keep threshold (the A/A floor; its interval
      // holds 1 or lies above it) is no regression: a later session with a lower floor
      // may measure it. (A KEEP the critic refused keeps the critic's note instead.)
      if (c.ci_hi < 1.0 || c.slo_excess > 0) return kb::FailureKind::kRegressed;
      return std::nullopt;
    case Verdict::kPending:
    case Verdict::kKeep:
    case Verdict::kInconclusive:
    case Verdict::kScreenedOut:
    case Verdict::kInvalid:
    case Verdict::kSkippedBudget:
    case Verdict::kPatchFailed:
    case Verdict::kBuildFailed:
    case Verdict::kPatchRejected:
    case Verdict::kNotValidated:
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

// What the session learned on the way, whatever won: learnings from single-knob KEEPs,
// launch conflicts, failures from the rest, the critic's notes.
void AddExperience(const session::SessionState& s, const kb::Provenance& provenance, kb::Recipe& r) {
  // A launch conflict the search learned, with the trials of the failures it explains
  // (a candidate that changed only values of the conflict and did not launch); those
  // failures are the conflict's, not their values' (each may launch alone).
  std::set<std::string> explained;
  for (const Config& conflict : s.learned_conflicts) {
    kb::Failure f;
    f.config_delta = conflict;
    f.kind = kb::FailureKind::kConflict;
    for (const session::CandidateRecord& c : s.candidates) {
      // A failure the configuration explains (as the planner learns them), not a port race.
      const bool explains = search::ConfigurationExplains(c.failure_kind);
      if (c.verdict != Verdict::kLaunchFailed || c.delta.size() == 0 || !explains) continue;
      bool within = true;
      for (const auto& [k, v] : c.delta.values()) within = within && conflict.Get(k) == v;
      if (!within) continue;
      explained.insert(c.id);
      if (f.detail.empty()) f.detail = ("does not launch together: " + c.reason).substr(0, 300);
      const auto& trials = c.candidate_trials.empty() ? std::vector<std::string>{c.screen_trial} : c.candidate_trials;
      f.trial_ids.insert(f.trial_ids.end(), trials.begin(), trials.end());
    }
    if (!f.trial_ids.empty()) r.failures.push_back(std::move(f));  // every entry traces to a trial
  }
  for (const session::CandidateRecord& c : s.candidates) {
    if (explained.contains(c.id)) continue;
    if (c.verdict == Verdict::kKeep && c.delta.size() == 1) {
      r.learnings.push_back({c.delta.values().begin()->first, c.delta.values().begin()->second, c.gain, c.ci_lo - 1,
                             c.ci_hi - 1, c.candidate_trials});
    } else if (auto kind = FailureKindFor(c)) {
      kb::Failure f;
      f.config_delta = c.delta;
      f.kind = *kind;
      f.detail = c.reason.substr(0, 300);
      f.trial_ids = c.candidate_trials.empty() ? std::vector<std::string>{c.screen_trial} : c.candidate_trials;
      if (f.trial_ids.empty() || f.trial_ids[0].empty()) continue;  // every entry traces to a trial
      r.failures.push_back(f);
    }
    // What the critic learned from the decision, in its words: a note, not a measurement.
    if (!c.critic_learning.empty()) {
      r.notes.push_back({"critic", c.id + " " + c.Change() + " " + std::string(VerdictName(c.verdict)),
                         c.critic_learning.substr(0, 300), provenance.session_id});
    }
  }
}

}  // namespace

std::optional<kb::AdmissionRequest> AdmissionFor(const session::SessionState& s, const spec::SessionSpec& spec,
                                                 const kb::MatchQuery& query, const kb::Provenance& provenance,
                                                 std::string* why) {
  if (s.BestIsStock()) {
    *why = "nothing to record: the stock configuration won";
    return std::nullopt;
  }
  if (!s.validated) {
    *why = "not recorded: the best configuration was not re-validated at close";
    return std::nullopt;
  }
  // A recipe is knobs a later session replays on the provisioned build; a gain measured
  // on a patched build would be claimed by knobs that did not make it.
  if (!s.server_binary.empty()) {
    *why = "not recorded: the best runs a patched build (" + fs::path(s.server_binary).filename().string() +
           "), which a recipe of knobs cannot replay; its diffs are in " +
           (fs::path(s.run_dir) / "patch" / "diffs").string();
    return std::nullopt;
  }
  kb::AdmissionRequest req;
  kb::Recipe& r = req.recipe;
  r.identity = query.identity;
  r.workload = query.workload;
  r.config = s.best.DeltaFrom(s.stock);
  r.objective = {spec.objective.metric,
                 s.validated_best_objective,
                 s.validated_best_objective * s.validated_lo / (1 + s.validated_gain),
                 s.validated_best_objective * s.validated_hi / (1 + s.validated_gain),
                 "",
                 spec.objective.maximize,
                 s.validation_trials};
  r.baseline = {s.validated_stock_objective, s.validation_trials};
  AddExperience(s, provenance, r);
  r.provenance = provenance;
  req.verdict_keep = s.validation_verdict == Verdict::kKeep;
  req.accuracy_passed = s.close_accuracy.empty() || s.close_accuracy.starts_with("pass");
  req.remeasured_at_close = true;
  return req;
}

std::optional<kb::Recipe> StockRecordFor(const session::SessionState& s, const spec::SessionSpec& spec,
                                         const kb::MatchQuery& query, const kb::Provenance& provenance) {
  if (s.baseline_trials.empty() || !(s.baseline_objective > 0)) return std::nullopt;
  kb::Recipe r;
  r.identity = query.identity;
  r.workload = query.workload;
  AddExperience(s, provenance, r);
  r.learnings.clear();  // a single-knob KEEP no admitted recipe stands behind
  if (r.failures.empty() && r.notes.empty()) return std::nullopt;
  // The stock's own numbers: its baseline trials (the record is never replayed).
  const auto [lo, hi] = s.baseline_values.empty()
                            ? std::pair{s.baseline_objective, s.baseline_objective}
                            : std::pair{std::min(s.baseline_objective, *std::ranges::min_element(s.baseline_values)),
                                        std::max(s.baseline_objective, *std::ranges::max_element(s.baseline_values))};
  r.objective = {spec.objective.metric, s.baseline_objective, lo, hi, "", spec.objective.maximize, s.baseline_trials};
  r.baseline = {s.baseline_objective, s.baseline_trials};
  r.status = kb::RecipeStatus::kDemoted;
  r.demoted_reason = std::string(kb::kStockRecordReason);
  r.provenance = provenance;
  return r;
}

}  // namespace hone::run
