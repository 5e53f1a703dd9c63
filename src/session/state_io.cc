// JSON (de)serialization of the session state and events: the session layer's edge.
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "core/strings.h"
#include "session/state.h"
#include "sys/clock.h"
#include "sys/files.h"

namespace hone::session {

using json = nlohmann::ordered_json;

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kPrelude: return "prelude";
    case Phase::kFramework: return "framework";
    case Phase::kKernel: return "kernel";
    case Phase::kSweep: return "sweep";
    case Phase::kClose: return "close";
    case Phase::kDone: return "done";
  }
  return "?";
}

std::string_view PhaseStatusName(PhaseStatus status) {
  switch (status) {
    case PhaseStatus::kRunning: return "running";
    case PhaseStatus::kDone: return "done";
    case PhaseStatus::kSkipped: return "skipped";
    case PhaseStatus::kFailed: return "failed";
    case PhaseStatus::kInterrupted: return "interrupted";
  }
  return "?";
}

std::string_view CandidatePhaseName(CandidatePhase phase) {
  switch (phase) {
    case CandidatePhase::kPrelude: return "prelude";
    case CandidatePhase::kEnablement: return "enablement";
    case CandidatePhase::kFramework: return "framework";
    case CandidatePhase::kKernel: return "kernel";
  }
  return "?";
}

namespace {

// The inverse of a Name function over every value of E.
template <class E, size_t N>
Result<E> ParseName(std::string_view name, const E (&all)[N], std::string_view (*name_of)(E), const char* what) {
  for (E e : all) {
    if (name_of(e) == name) return e;
  }
  return InvalidArgument("unknown " + std::string(what) + " '" + std::string(name) + "'");
}

}  // namespace

Result<Phase> ParsePhase(std::string_view name) {
  static constexpr Phase kAll[] = {Phase::kPrelude, Phase::kFramework, Phase::kKernel,
                                   Phase::kSweep,   Phase::kClose,     Phase::kDone};
  return ParseName(name, kAll, PhaseName, "phase");
}

Result<PhaseStatus> ParsePhaseStatus(std::string_view name) {
  static constexpr PhaseStatus kAll[] = {PhaseStatus::kRunning, PhaseStatus::kDone, PhaseStatus::kSkipped,
                                         PhaseStatus::kFailed, PhaseStatus::kInterrupted};
  return ParseName(name, kAll, PhaseStatusName, "phase status");
}

Result<CandidatePhase> ParseCandidatePhase(std::string_view name) {
  static constexpr CandidatePhase kAll[] = {CandidatePhase::kPrelude, CandidatePhase::kEnablement,
                                            CandidatePhase::kFramework, CandidatePhase::kKernel};
  return ParseName(name, kAll, CandidatePhaseName, "candidate phase");
}

namespace {

// Enums are written as their names (the file format, docs/session-state.md). A name
// this hone does not know throws here, and StateFromJson's TryCatch turns that into
// a kDataLoss error naming it.
std::string Name(const std::optional<Verdict>& v) { return v ? std::string(VerdictName(*v)) : std::string(); }
Verdict VerdictFrom(const std::string& name) {
  auto v = ParseVerdict(name);
  if (!v) throw std::runtime_error(v.error().message);
  return *v;
}
std::optional<Verdict> OptionalVerdictFrom(const std::string& name) {
  if (name.empty()) return std::nullopt;
  return VerdictFrom(name);
}
template <class T>
T Must(Result<T> r) {
  if (!r) throw std::runtime_error(r.error().message);
  return *r;
}

json ConfigJson(const Config& c) {
  json j = json::object();
  for (const auto& [k, v] : c.values()) j[k] = v;
  return j;
}

Config ConfigFrom(const json& j) {
  Config c;
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) c.Set(k, v.get<std::string>());
  }
  return c;
}

json GateJson(const measure::AccuracyGateInfo& g) {
  if (!g.prepared) return json(nullptr);
  return {{"probes", g.probes},
          {"method", g.method},
          {"positions", g.positions},
          {"min_agreement", g.min_agreement},
          {"max_kld", g.max_kld},
          {"max_ppl_delta", g.max_ppl_delta},
          {"kld_tool", g.kld_tool},
          {"aa_ran", g.aa_ran},
          {"aa_agreement", g.aa_agreement},
          {"aa_positions", g.aa_positions},
          {"aa_kl", g.aa_kl ? json(*g.aa_kl) : json(nullptr)},
          {"nondeterministic", g.nondeterministic},
          {"note", g.note}};
}

measure::AccuracyGateInfo GateFromJson(const json& j) {
  measure::AccuracyGateInfo g;
  if (!j.is_object()) return g;
  g.prepared = true;
  g.probes = j.value("probes", "");
  g.method = j.value("method", "");
  g.positions = j.value("positions", 0);
  g.min_agreement = j.value("min_agreement", 0.0);
  g.max_kld = j.value("max_kld", 0.0);
  g.max_ppl_delta = j.value("max_ppl_delta", 0.0);
  g.kld_tool = j.value("kld_tool", false);
  g.aa_ran = j.value("aa_ran", false);
  g.aa_agreement = j.value("aa_agreement", 1.0);
  g.aa_positions = j.value("aa_positions", 0);
  if (j.contains("aa_kl") && j["aa_kl"].is_number()) g.aa_kl = j["aa_kl"].get<double>();
  g.nondeterministic = j.value("nondeterministic", false);
  g.note = j.value("note", "");
  return g;
}

json CandidateJson(const CandidateRecord& c) {
  return {{"id", c.id},
          {"phase", CandidatePhaseName(c.phase)},
          {"cycle", c.cycle},
          {"idea", c.idea},
          {"rationale", c.rationale},
          {"delta", ConfigJson(c.delta)},
          {"config", ConfigJson(c.config)},
          {"incumbent", ConfigJson(c.incumbent)},
          {"verdict", VerdictName(c.verdict)},
          {"reason", c.reason},
          {"gain", c.gain},
          {"ci_lo", c.ci_lo},
          {"ci_hi", c.ci_hi},
          {"threshold", c.threshold},
          {"pairs", c.pairs},
          {"incumbent_trials", c.incumbent_trials},
          {"candidate_trials", c.candidate_trials},
          {"incumbent_values", c.incumbent_values},
          {"candidate_values", c.candidate_values},
          {"screen_trial", c.screen_trial},
          {"recheck_trial", c.recheck_trial},
          {"pooled_with", c.pooled_with},
          {"failure_kind", c.failure_kind},
          {"accuracy", c.accuracy},
          {"accuracy_passed", c.accuracy_passed},
          {"predicted_gain", c.predicted_gain},
          {"critic", c.critic},
          {"critic_learning", c.critic_learning},
          {"slo", c.slo},
          {"slo_excess", c.slo_excess},
          {"patch", c.patch},
          {"recipe_id", c.recipe_id},
          {"server_binary", c.server_binary},
          {"incumbent_binary", c.incumbent_binary},
          {"started_s", c.started_s},
          {"finished_s", c.finished_s}};
}

CandidateRecord CandidateFrom(const json& j) {
  CandidateRecord c;
  c.id = j.value("id", "");
  c.phase = Must(ParseCandidatePhase(j.value("phase", "framework")));
  c.cycle = j.value("cycle", 0);
  c.idea = j.value("idea", "");
  c.rationale = j.value("rationale", "");
  c.delta = ConfigFrom(j["delta"]);
  c.config = ConfigFrom(j["config"]);
  c.incumbent = ConfigFrom(j["incumbent"]);
  c.verdict = j.contains("verdict") ? VerdictFrom(j.at("verdict").get<std::string>()) : Verdict::kPending;
  c.reason = j.value("reason", "");
  c.gain = j.value("gain", 0.0);
  c.ci_lo = j.value("ci_lo", 0.0);
  c.ci_hi = j.value("ci_hi", 0.0);
  c.threshold = j.value("threshold", 0.0);
  c.pairs = j.value("pairs", 0);
  c.incumbent_trials = j.value("incumbent_trials", std::vector<std::string>{});
  c.candidate_trials = j.value("candidate_trials", std::vector<std::string>{});
  c.incumbent_values = j.value("incumbent_values", std::vector<double>{});
  c.candidate_values = j.value("candidate_values", std::vector<double>{});
  c.screen_trial = j.value("screen_trial", "");
  c.recheck_trial = j.value("recheck_trial", "");
  c.pooled_with = j.value("pooled_with", std::vector<std::string>{});
  c.failure_kind = j.value("failure_kind", "");
  c.accuracy = j.value("accuracy", "");
  c.accuracy_passed = j.value("accuracy_passed", true);
  c.predicted_gain = j.value("predicted_gain", 0.0);
  c.critic = j.value("critic", "");
  c.critic_learning = j.value("critic_learning", "");
  c.slo = j.value("slo", "");
  c.slo_excess = j.value("slo_excess", -1.0);
  c.patch = j.value("patch", "");
  c.recipe_id = j.value("recipe_id", int64_t{0});
  c.server_binary = j.value("server_binary", "");
  c.incumbent_binary = j.value("incumbent_binary", "");
  c.started_s = j.value("started_s", 0.0);
  c.finished_s = j.value("finished_s", 0.0);
  return c;
}

}  // namespace

std::string CandidateRecord::Change() const {
  if (patch.empty()) return delta.ToString();
  return delta.empty() ? "patch " + patch : delta.ToString() + " + patch " + patch;
}

std::string BuildNote(const std::string& server_binary) {
  if (server_binary.empty()) return "";
  // A kept build's copy is named after its patch; the build directory's own binary is
  // named by its path.
  const std::string name = std::filesystem::path(server_binary).filename().string();
  return " on build " + (name.find('-', std::string("llama-server").size()) == std::string::npos ? server_binary : name);
}

CandidateRecord* SessionState::Pending() {
  for (auto& c : candidates) {
    if (c.verdict == Verdict::kPending) return &c;
  }
  return nullptr;
}

std::string StateToJson(const SessionState& s) {
  json cands = json::array();
  for (const auto& c : s.candidates) cands.push_back(CandidateJson(c));
  json phases = json::array();
  for (const auto& p : s.phases) {
    phases.push_back({{"phase", PhaseName(p.phase)}, {"cycle", p.cycle}, {"started_s", p.started_s},
                      {"finished_s", p.finished_s}, {"status", PhaseStatusName(p.status)}, {"note", p.note}});
  }
  json sweep = json::array();
  for (const auto& p : s.sweep) {
    sweep.push_back({{"concurrency", p.concurrency}, {"isl", p.isl}, {"osl", p.osl}, {"best_config", p.best_config},
                     {"stock_objective", p.stock_objective}, {"best_objective", p.best_objective},
                     {"stock_intvty", p.stock_intvty}, {"best_intvty", p.best_intvty}, {"stock_tps", p.stock_tps},
                     {"best_tps", p.best_tps}, {"stock_trials", p.stock_trials}, {"best_trials", p.best_trials},
                     {"stock_slo", p.stock_slo}, {"best_slo", p.best_slo}, {"stock_slo_excess", p.stock_slo_excess},
                     {"best_slo_excess", p.best_slo_excess}, {"verdict", Name(p.verdict)},
                     {"retune_config", p.retune_config}, {"retune_against", p.retune_against},
                     {"retune_base_trials", p.retune_base_trials}, {"retune_trials", p.retune_trials},
                     {"retune_verdict", Name(p.retune_verdict)}, {"retune_gain", p.retune_gain}});
  }
  json learned_conflicts = json::array();
  for (const Config& c : s.learned_conflicts) learned_conflicts.push_back(ConfigJson(c));
  json slo_loads = json::array();
  for (const auto& l : s.slo_loads) {
    json probes = json::array();
    for (const auto& p : l.probes) {
      probes.push_back({{"concurrency", p.concurrency}, {"trials", p.trials}, {"met", p.met}, {"excess", p.excess},
                        {"tps", p.tps}, {"slo", p.slo}});
    }
    slo_loads.push_back({{"isl", l.isl}, {"osl", l.osl}, {"arm", l.arm}, {"config", l.config},
                         {"grid_lo", l.grid_lo}, {"grid_hi", l.grid_hi}, {"grid_lo_tps", l.grid_lo_tps},
                         {"lo", l.lo}, {"hi", l.hi}, {"probes", probes}, {"note", l.note}});
  }
  json j = {{"version", s.version},
            {"session_id", s.session_id},
            {"name", s.name},
            {"spec_path", s.spec_path},
            {"run_dir", s.run_dir},
            {"started_unix_us", s.started_unix_us},
            {"started_utc", sys::FormatUtc(s.started_unix_us)},
            {"deadline_unix_s", s.deadline_unix_s},
            {"phase", PhaseName(s.phase)},
            {"cycle", s.cycle},
            {"stop_reason", s.stop_reason},
            {"interrupted", s.interrupted},
            {"interrupted_in", s.interrupted_in ? json(PhaseName(*s.interrupted_in)) : json(nullptr)},
            {"warmup_trial", s.warmup_trial},
            {"stock", ConfigJson(s.stock)},
            {"stock_note", s.stock_note},
            {"baseline_trials", s.baseline_trials},
            {"baseline_values", s.baseline_values},
            {"baseline_objective", s.baseline_objective},
            {"noise_floor", s.noise_floor},
            {"aa_trials", s.aa_trials},
            {"aa_values", s.aa_values},
            {"best", ConfigJson(s.best)},
            {"server_binary", s.server_binary},
            {"best_trials", s.best_trials},
            {"best_values", s.best_values},
            {"screen_drops_in_row", s.screen_drops_in_row},
            {"candidates", cands},
            {"phases", phases},
            {"sweep", sweep},
            {"last_sweep_config", s.last_sweep_config},
            {"slo_loads", slo_loads},
            {"validated", s.validated},
            {"validated_gain", s.validated_gain},
            {"validated_lo", s.validated_lo},
            {"validated_hi", s.validated_hi},
            {"validated_best_objective", s.validated_best_objective},
            {"validated_stock_objective", s.validated_stock_objective},
            {"validation_trials", s.validation_trials},
            {"close_pairs", {{"a_trials", s.close_pairs.a_trials},
                             {"a_values", s.close_pairs.a_values},
                             {"b_trials", s.close_pairs.b_trials},
                             {"b_values", s.close_pairs.b_values},
                             {"best_total_sum", s.close_pairs.best_total_sum},
                             {"best_output_sum", s.close_pairs.best_output_sum}}},
            {"validation_verdict", Name(s.validation_verdict)},
            {"close_accuracy", s.close_accuracy},
            {"accuracy_gate", GateJson(s.accuracy_gate)},
            {"stock_slo", s.stock_slo},
            {"stock_slo_excess", s.stock_slo_excess},
            {"best_slo", s.best_slo},
            {"best_slo_excess", s.best_slo_excess},
            {"slo_infeasible", s.slo_infeasible},
            {"warm_replay", s.warm_replay},
            {"kb_result", s.kb_result},
            {"kernel", s.kernel},
            {"agents", s.agents},
            {"roofline", s.roofline},
            {"roofline_saturated", s.roofline_saturated},
            {"roofline_ratio", s.roofline_ratio},
            {"roofline_bound", s.roofline_bound},
            {"baseline_metrics", s.baseline_metrics},
            {"baseline_metric_trials", s.baseline_metric_trials},
            {"baseline_total_tps", s.baseline_total_tps},
            {"baseline_output_tps", s.baseline_output_tps},
            {"search_state", s.search_state},
            {"learned_conflicts", learned_conflicts},
            {"next_trial", s.next_trial},
            {"next_candidate", s.next_candidate},
            {"trials_run", s.trials_run},
            {"trial_seconds_total", s.trial_seconds_total},
            {"longest_trial_s", s.longest_trial_s},
            {"builds_run", s.builds_run},
            {"build_seconds_total", s.build_seconds_total},
            {"accuracy_checks_run", s.accuracy_checks_run},
            {"accuracy_seconds_total", s.accuracy_seconds_total}};
  return j.dump(2) + "\n";
}

Result<SessionState> StateFromJson(const std::string& text) {
  return TryCatch(ErrorCode::kDataLoss, "reading state.json", [&] {
    json j = json::parse(text);
    SessionState s;
    s.version = j.value("version", 1);
    s.session_id = j.value("session_id", "");
    s.name = j.value("name", "");
    s.spec_path = j.value("spec_path", "");
    s.run_dir = j.value("run_dir", "");
    s.started_unix_us = j.value("started_unix_us", int64_t{0});
    s.deadline_unix_s = j.value("deadline_unix_s", 0.0);
    s.phase = Must(ParsePhase(j.value("phase", "prelude")));
    s.cycle = j.value("cycle", 1);
    s.stop_reason = j.value("stop_reason", "");
    s.interrupted = j.value("interrupted", false);
    if (j.contains("interrupted_in") && j["interrupted_in"].is_string()) {
      s.interrupted_in = Must(ParsePhase(j["interrupted_in"].get<std::string>()));
    }
    s.warmup_trial = j.value("warmup_trial", "");
    s.stock = ConfigFrom(j["stock"]);
    s.stock_note = j.value("stock_note", "");
    s.baseline_trials = j.value("baseline_trials", std::vector<std::string>{});
    s.baseline_values = j.value("baseline_values", std::vector<double>{});
    s.baseline_objective = j.value("baseline_objective", 0.0);
    s.noise_floor = j.value("noise_floor", 0.0);
    s.aa_trials = j.value("aa_trials", std::vector<std::string>{});
    s.aa_values = j.value("aa_values", std::vector<double>{});
    s.best = ConfigFrom(j["best"]);
    s.server_binary = j.value("server_binary", "");
    s.best_trials = j.value("best_trials", std::vector<std::string>{});
    s.best_values = j.value("best_values", std::vector<double>{});
    s.screen_drops_in_row = j.value("screen_drops_in_row", 0);
    for (const auto& c : j["candidates"]) s.candidates.push_back(CandidateFrom(c));
    for (const auto& p : j["phases"]) {
      s.phases.push_back({Must(ParsePhase(p.value("phase", ""))), p.value("cycle", 0), p.value("started_s", 0.0),
                          p.value("finished_s", -1.0), Must(ParsePhaseStatus(p.value("status", ""))),
                          p.value("note", "")});
    }
    for (const auto& p : j["sweep"]) {
      SweepPointRecord r;
      r.concurrency = p.value("concurrency", 0);
      r.isl = p.value("isl", int64_t{0});
      r.osl = p.value("osl", int64_t{0});
      r.best_config = p.value("best_config", "");
      r.stock_objective = p.value("stock_objective", 0.0);
      r.best_objective = p.value("best_objective", 0.0);
      r.stock_intvty = p.value("stock_intvty", 0.0);
      r.best_intvty = p.value("best_intvty", 0.0);
      r.stock_tps = p.value("stock_tps", 0.0);
      r.best_tps = p.value("best_tps", 0.0);
      r.stock_trials = p.value("stock_trials", std::vector<std::string>{});
      r.best_trials = p.value("best_trials", std::vector<std::string>{});
      r.stock_slo = p.value("stock_slo", "");
      r.best_slo = p.value("best_slo", "");
      r.stock_slo_excess = p.value("stock_slo_excess", -1.0);
      r.best_slo_excess = p.value("best_slo_excess", -1.0);
      r.verdict = OptionalVerdictFrom(p.value("verdict", ""));
      r.retune_config = p.value("retune_config", "");
      r.retune_against = p.value("retune_against", "");
      r.retune_base_trials = p.value("retune_base_trials", std::vector<std::string>{});
      r.retune_trials = p.value("retune_trials", std::vector<std::string>{});
      r.retune_verdict = OptionalVerdictFrom(p.value("retune_verdict", ""));
      r.retune_gain = p.value("retune_gain", 0.0);
      s.sweep.push_back(r);
    }
    s.last_sweep_config = j.value("last_sweep_config", "");
    if (j.contains("slo_loads")) {
      for (const auto& l : j["slo_loads"]) {
        SloLoadSearch r;
        r.isl = l.value("isl", int64_t{0});
        r.osl = l.value("osl", int64_t{0});
        r.arm = l.value("arm", "");
        r.config = l.value("config", "");
        r.grid_lo = l.value("grid_lo", 0);
        r.grid_hi = l.value("grid_hi", 0);
        r.grid_lo_tps = l.value("grid_lo_tps", 0.0);
        r.lo = l.value("lo", 0);
        r.hi = l.value("hi", 0);
        r.note = l.value("note", "");
        for (const auto& p : l.value("probes", json::array())) {
          r.probes.push_back({p.value("concurrency", 0), p.value("trials", std::vector<std::string>{}),
                              p.value("met", false), p.value("excess", -1.0), p.value("tps", 0.0),
                              p.value("slo", "")});
        }
        s.slo_loads.push_back(std::move(r));
      }
    }
    s.validated = j.value("validated", false);
    s.validated_gain = j.value("validated_gain", 0.0);
    s.validated_lo = j.value("validated_lo", 0.0);
    s.validated_hi = j.value("validated_hi", 0.0);
    s.validated_best_objective = j.value("validated_best_objective", 0.0);
    s.validated_stock_objective = j.value("validated_stock_objective", 0.0);
    s.validation_trials = j.value("validation_trials", std::vector<std::string>{});
    if (j.contains("close_pairs") && j["close_pairs"].is_object()) {
      const auto& c = j["close_pairs"];
      s.close_pairs.a_trials = c.value("a_trials", std::vector<std::string>{});
      s.close_pairs.a_values = c.value("a_values", std::vector<double>{});
      s.close_pairs.b_trials = c.value("b_trials", std::vector<std::string>{});
      s.close_pairs.b_values = c.value("b_values", std::vector<double>{});
      s.close_pairs.best_total_sum = c.value("best_total_sum", 0.0);
      s.close_pairs.best_output_sum = c.value("best_output_sum", 0.0);
      if (s.close_pairs.a_trials.size() != s.close_pairs.a_values.size() ||
          s.close_pairs.b_trials.size() != s.close_pairs.b_values.size()) {
        s.close_pairs = {};  // inconsistent: the close measures again rather than judge a torn log
      }
    }
    s.validation_verdict = OptionalVerdictFrom(j.value("validation_verdict", ""));
    s.close_accuracy = j.value("close_accuracy", "");
    if (j.contains("accuracy_gate")) s.accuracy_gate = GateFromJson(j["accuracy_gate"]);
    s.stock_slo = j.value("stock_slo", "");
    s.stock_slo_excess = j.value("stock_slo_excess", -1.0);
    s.best_slo = j.value("best_slo", "");
    s.best_slo_excess = j.value("best_slo_excess", -1.0);
    s.slo_infeasible = j.value("slo_infeasible", "");
    s.warm_replay = j.value("warm_replay", "");
    s.kb_result = j.value("kb_result", "");
    s.kernel = j.value("kernel", "");
    s.agents = j.value("agents", "");
    s.roofline = j.value("roofline", "");
    s.roofline_saturated = j.value("roofline_saturated", false);
    s.roofline_ratio = j.value("roofline_ratio", 0.0);
    s.roofline_bound = j.value("roofline_bound", "");
    if (j.contains("baseline_metrics")) s.baseline_metrics = j.at("baseline_metrics").get<std::map<std::string, double>>();
    if (j.contains("baseline_metric_trials")) {
      s.baseline_metric_trials = j.at("baseline_metric_trials").get<std::map<std::string, int>>();
    }
    s.baseline_total_tps = j.value("baseline_total_tps", 0.0);
    s.baseline_output_tps = j.value("baseline_output_tps", 0.0);
    s.search_state = j.value("search_state", "");
    if (j.contains("learned_conflicts") && j.at("learned_conflicts").is_array()) {
      for (const json& c : j.at("learned_conflicts")) s.learned_conflicts.push_back(ConfigFrom(c));
    }
    s.next_trial = j.value("next_trial", 1);
    s.next_candidate = j.value("next_candidate", 1);
    s.trials_run = j.value("trials_run", 0);
    s.trial_seconds_total = j.value("trial_seconds_total", 0.0);
    s.longest_trial_s = j.value("longest_trial_s", 0.0);
    s.builds_run = j.value("builds_run", 0);
    s.build_seconds_total = j.value("build_seconds_total", 0.0);
    s.accuracy_checks_run = j.value("accuracy_checks_run", 0);
    s.accuracy_seconds_total = j.value("accuracy_seconds_total", 0.0);
    return s;
  });
}

Status SaveState(const std::string& run_dir, const SessionState& s) {
  const std::filesystem::path dir(run_dir);
  // The state one save back, for a state.json damaged outside hone: a hard link
  // (no copy), renamed into place so that state.json.prev is always whole.
  const std::string prev_tmp = (dir / ".state.json.prev.tmp").string();
  unlink(prev_tmp.c_str());
  if (link((dir / "state.json").c_str(), prev_tmp.c_str()) == 0) {
    rename(prev_tmp.c_str(), (dir / "state.json.prev").c_str());
  }
  return sys::WriteFileAtomic(dir / "state.json", StateToJson(s));
}

Result<SessionState> LoadState(const std::string& run_dir) {
  const std::filesystem::path dir(run_dir);
  auto text = sys::ReadFile(dir / "state.json");
  if (!text) {
    return Fail(Error{ErrorCode::kNotFound, "no session in " + run_dir + " (state.json missing)", {{"dir", run_dir}}});
  }
  auto state = StateFromJson(*text);
  if (state) return state;
  const std::string damage = "state.json is damaged (" + state.error().message + ")";
  auto prev_text = sys::ReadFile(dir / "state.json.prev");
  auto prev = prev_text ? StateFromJson(*prev_text) : Result<SessionState>(Fail(prev_text.error()));
  if (!prev) {
    return Fail(Error{ErrorCode::kDataLoss,
                      damage + " and no whole state.json.prev can replace it; the session cannot be resumed",
                      {{"dir", run_dir}}});
  }
  // Trial ids on disk are never reused: the lost save may have started trials.
  int last = prev->next_trial - 1;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir / "trials", ec)) {
    std::string name = e.path().filename().string();
    if (name.size() > 1 && name[0] == 't') last = std::max(last, static_cast<int>(ParseInt(name.substr(1)).value_or(0)));
  }
  prev->next_trial = last + 1;
  prev->recovered = damage + "; resumed from state.json.prev, the state one save earlier: what happened after it "
                    "is measured again (trial ids continue after t" + std::to_string(last) + ")";
  return prev;
}

Status EventLog::Append(const std::string& type, double session_s,
                        const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string prefix;
  if (seq_ < 0) {
    auto existing = ReadEvents(path_);
    seq_ = existing && !existing->empty() ? existing->back().seq + 1 : 0;
    // A crash mid-append can leave a torn last line: start ours on a fresh line.
    auto text = sys::ReadFile(path_);
    if (text && !text->empty() && text->back() != '\n') prefix = "\n";
  }
  json j = {{"seq", seq_}, {"t", std::round(session_s * 1000) / 1000}, {"type", type}};
  for (const auto& [k, v] : fields) {
    auto integer = ParseInt(v);
    auto num = ParseDouble(v);
    bool numeric = !v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-');
    if (numeric && integer) {
      j[k] = *integer;
    } else if (numeric && num) {
      j[k] = *num;
    } else {
      j[k] = v;
    }
  }
  ++seq_;
  return sys::AppendLineSync(path_, prefix + j.dump());
}

std::string Event::Get(const std::string& key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return "";
}

Result<std::vector<Event>> ReadEvents(const std::string& path, std::vector<int>* damaged) {
  std::vector<Event> out;
  auto text = sys::ReadFile(path);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) return out;
    return Fail(text.error());
  }
  int number = 0;
  for (const std::string& line : Split(*text, '\n')) {
    ++number;
    if (Trim(line).empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type")) {
      if (damaged) damaged->push_back(number);
      continue;
    }
    Event e;
    e.seq = j.value("seq", int64_t{0});
    e.type = j.value("type", "");
    e.t = j.value("t", 0.0);
    for (auto& [k, v] : j.items()) {
      if (k == "seq" || k == "type" || k == "t") continue;
      e.fields.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::string AccuracyGateJson(const measure::AccuracyGateInfo& gate) { return GateJson(gate).dump(); }

}  // namespace hone::session
