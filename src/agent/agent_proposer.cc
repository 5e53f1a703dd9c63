#include "agent/agent_proposer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "agent/text.h"
#include "core/strings.h"

namespace hone::agent {

using json = nlohmann::json;

namespace {

// A verdict in the saved state (a throw here becomes Load's kDataLoss error).
Verdict VerdictFrom(const json& j) {
  auto v = ParseVerdict(j.get<std::string>());
  if (!v) throw std::runtime_error(v.error().message);
  return *v;
}

std::string DeltaText(const std::vector<std::pair<std::string, std::string>>& delta) {
  std::string out;
  for (const auto& [k, v] : delta) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out.empty() ? "(empty)" : out;
}

bool In(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::string Pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", f * 100);
  return buf;
}

json CandidateJson(const search::Candidate& c, bool has_claim) {
  return {{"idea", c.idea}, {"title", c.title}, {"delta", c.delta.values()}, {"rationale", c.rationale},
          {"claim", c.expected_gain}, {"has_claim", has_claim}};
}

search::Candidate CandidateFrom(const json& j, bool* has_claim) {
  search::Candidate c;
  c.idea = j.at("idea").get<std::string>();
  c.title = j.at("title").get<std::string>();
  for (const auto& [k, v] : j.at("delta").items()) c.delta.Set(k, v.get<std::string>());
  c.rationale = j.at("rationale").get<std::string>();
  c.expected_gain = j.at("claim").get<double>();
  *has_claim = j.at("has_claim").get<bool>();
  return c;
}

}  // namespace

std::string CatalogBriefing(const target::KnobCatalog& catalog, bool gpu, bool full,
                            const std::function<bool(const std::string&)>& skip) {
  std::ostringstream out;
  for (const target::Knob& k : catalog.knobs()) {
    if (!k.searchable || (k.applies_to == "gpu" && !gpu) || (k.applies_to == "cpu" && gpu)) continue;
    if (skip && skip(k.name)) continue;
    std::string values;
    if (!k.choices.empty()) {
      values = Join(k.choices, "|");
    } else if (k.type == target::KnobType::kBool) {
      values = "on|off";
    } else if (k.min || k.max) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s %g..%g", std::string(target::KnobTypeName(k.type)).c_str(),
                    k.min.value_or(0), k.max.value_or(0));
      values = buf;
    } else {
      values = std::string(target::KnobTypeName(k.type));
    }
    out << "- " << k.name << ": " << values;
    if (full) {
      out << " (default " << (k.default_value.empty() ? "unset" : k.default_value) << "; " << k.category
          << "; accuracy risk " << target::AccuracyRiskName(k.accuracy_risk) << ")";
      if (!k.search_values.empty()) out << " suggested: " << Join(k.search_values, "|");
      if (!k.why.empty()) out << " — " << k.why;
    }
    out << "\n";
  }
  return out.str();
}

AgentProposer::AgentProposer(Orchestrator& orchestrator, const target::KnobCatalog& catalog,
                             AgentProposerOptions options, search::Proposer* fallback, Robustness* robustness)
    : orchestrator_(orchestrator), catalog_(catalog), options_(std::move(options)), fallback_(fallback),
      robustness_(robustness) {
  if (options_.clock) started_s_ = options_.clock->MonoSeconds();
}

bool AgentProposer::Excluded(const std::string& knob) const {
  return excluded_.contains(knob) || In(options_.exclude, knob) || In(options_.protected_knobs, knob) ||
         (!options_.only.empty() && !In(options_.only, knob));
}

std::optional<IdeaRejection> AgentProposer::Check(const IdeaProposal& idea, const target::KnobCatalog& catalog,
                                                  const search::ProposalContext& ctx,
                                                  const AgentProposerOptions& options,
                                                  const std::set<std::string>& excluded, Config* delta_out) {
  IdeaRejection r;
  r.title = OneLine(idea.title, 100);
  r.delta = OneLine(DeltaText(idea.delta), 200);
  auto reject = [&](std::string rule, std::string message) {
    r.rule = std::move(rule);
    r.message = OneLine(message, 200);
    return r;
  };
  if (idea.delta.empty()) return reject("agent.empty_delta", "the idea changes no knob");
  Config delta;
  for (const auto& [knob, value] : idea.delta) {
    if (delta.Has(knob)) return reject("agent.duplicate_knob", "knob '" + knob + "' is set twice");
    if (In(options.protected_knobs, knob)) {
      return reject("agent.protected_knob", "'" + knob + "' is part of the workload contract and is never searched");
    }
    const target::Knob* k = catalog.Find(knob);
    if (!k) return reject("agent.unknown_knob", "'" + knob + "' is not a knob of the " + catalog.framework() + " catalog");
    if (excluded.contains(knob) || In(options.exclude, knob) || (!options.only.empty() && !In(options.only, knob))) {
      return reject("agent.excluded_knob", "'" + knob + "' is excluded from this search");
    }
    if (!k->searchable) return reject("agent.not_searchable", "'" + knob + "' is not searchable (catalog)");
    if ((k->applies_to == "gpu" && !ctx.gpu) || (k->applies_to == "cpu" && ctx.gpu)) {
      return reject("agent.wrong_device", "'" + knob + "' applies to " + k->applies_to + " serving only");
    }
    if (auto ok = k->ValidateValue(value); !ok) return reject("agent.bad_value", ok.error().message);
    delta.Set(knob, value);
  }
  Config full = ctx.best.Merged(delta);
  if (full == ctx.best) return reject("agent.no_change", "the current best already has these values");
  if (auto ok = catalog.Validate(full); !ok) return reject("agent.invalid_config", ok.error().message);
  if (ctx.tried.contains(full.Hash())) return reject("agent.already_tried", "this configuration was already measured");
  if (delta_out) *delta_out = delta.DeltaFrom(ctx.best);
  return std::nullopt;
}

OrchestratorSnapshot AgentProposer::Snapshot(const search::ProposalContext& ctx) const {
  OrchestratorSnapshot s;
  s.phase = "framework";
  s.objective = options_.objective;
  s.stock = ctx.stock.ToString();
  s.best = ctx.best.ToString();
  s.time_left_s = ctx.time_left_s;
  s.cycle = ctx.cycle;
  s.cpus = ctx.cpus;
  s.gpu = ctx.gpu;
  s.concurrency = ctx.concurrency;
  s.history = outcomes_;
  auto skip = [this](const std::string& knob) { return Excluded(knob); };
  s.knobs_full = CatalogBriefing(catalog_, ctx.gpu, true, skip);
  s.knobs_compact = CatalogBriefing(catalog_, ctx.gpu, false, skip);
  for (const target::Knob& k : catalog_.knobs()) {
    if (!k.searchable || (k.applies_to == "gpu" && !ctx.gpu) || (k.applies_to == "cpu" && ctx.gpu)) continue;
    if (!Excluded(k.name)) s.knob_names.push_back(k.name);
  }
  if (fill_) fill_(s);
  return s;
}

void AgentProposer::Note(std::string line) { notes_.push_back(OneLine(line, 300)); }

void AgentProposer::Turn(const search::ProposalContext& ctx) {
  ++turns_;
  auto ideas = orchestrator_.Propose(Snapshot(ctx), options_.ideas_per_turn);
  if (!ideas) {
    ++failed_turns_;
    Note("orchestrator turn " + std::to_string(turns_) + " failed: " + ideas.error().message);
    ErrorCode code = ideas.error().code;
    if (code == ErrorCode::kPermissionDenied || code == ErrorCode::kResourceExhausted) {
      agent_off_ = true;
      Note("agent ideas stopped for this session; the deterministic planner continues");
    }
    return;
  }
  int valid = 0;
  for (const IdeaProposal& idea : *ideas) {
    Config delta;
    std::optional<IdeaRejection> rej = Check(idea, catalog_, ctx, options_, excluded_, &delta);
    std::string id = "agent:" + delta.ToString();
    if (!rej) {
      bool dup = handed_.contains(id);
      for (const Queued& q : queue_) dup = dup || q.candidate.idea == id;
      if (dup) {
        rej = IdeaRejection{0, OneLine(idea.title, 100), delta.ToString(), "agent.duplicate",
                            "this idea was already proposed"};
      }
    }
    if (rej) {
      rej->turn = turns_;
      orchestrator_.Remember("rejected '" + rej->title + "' (" + rej->delta + "): " + rej->rule + ": " + rej->message);
      rejections_.push_back(std::move(*rej));
      continue;
    }
    Queued q;
    q.candidate.idea = id;
    q.candidate.title = OneLine(idea.title, 100);
    q.candidate.delta = delta;
    q.candidate.rationale = OneLine(idea.rationale, 300);
    // A claim, carried for calibration only: the coordinator never decides on it.
    q.candidate.expected_gain = idea.has_claim ? idea.claimed_gain : 0;
    q.has_claim = idea.has_claim;
    queue_.push_back(std::move(q));
    ++valid;
  }
  failed_turns_ = valid ? 0 : failed_turns_ + 1;
}

std::optional<search::Candidate> AgentProposer::Next(const search::ProposalContext& ctx) {
  if (ctx.cycle != cycle_) {
    cycle_ = ctx.cycle;
    failed_turns_ = 0;  // a new cycle gives the agent another chance
  }
  if (stopped_cycle_ == ctx.cycle) return std::nullopt;
  while (true) {
    while (!queue_.empty()) {
      Queued q = std::move(queue_.front());
      queue_.erase(queue_.begin());
      // The context may have moved on since the idea was queued: check it again.
      IdeaProposal again;
      for (const auto& [k, v] : q.candidate.delta.values()) again.delta.emplace_back(k, v);
      Config delta;
      if (auto rej = Check(again, catalog_, ctx, options_, excluded_, &delta)) {
        rej->turn = turns_;
        rej->title = q.candidate.title;
        rejections_.push_back(std::move(*rej));
        continue;
      }
      q.candidate.delta = delta;
      agent_ideas_.insert(q.candidate.idea);
      handed_[q.candidate.idea] = q;
      return q.candidate;
    }
    bool agent_usable = !agent_off_ && fallback_cycle_ != ctx.cycle && turns_ < options_.max_turns &&
                        failed_turns_ < options_.max_failed_turns;
    if (!agent_usable) {
      if (!fallback_) return std::nullopt;
      return fallback_->Next(ctx);
    }
    Turn(ctx);
    if (queue_.empty() && failed_turns_ >= options_.max_failed_turns) {
      Note(std::to_string(failed_turns_) + " orchestrator turns in a row without a valid idea; " +
           (fallback_ ? "using the deterministic planner" : "no more ideas"));
    }
  }
}

void AgentProposer::Recover(const std::vector<Signal>& signals) {
  for (const Signal& s : signals) Note("detector " + std::string(SignalKindName(s.kind)) + ": " + s.detail);
  RecoveryAction a = robustness_ ? robustness_->Recover(signals, history_) : DefaultRecovery(signals);
  Note("recovery (" + a.source + "): " + std::string(RecoveryKindName(a.kind)) +
       (a.knobs.empty() ? "" : " " + Join(a.knobs, ",")) + ": " + a.reason);
  orchestrator_.Remember("robustness: " + std::string(RecoveryKindName(a.kind)) + " " + Join(a.knobs, ",") + " (" +
                         a.reason + ")");
  switch (a.kind) {
    case RecoveryKind::kExcludeKnobs:
      for (const std::string& k : a.knobs) {
        if (catalog_.Find(k)) {
          excluded_.insert(k);
        } else {
          Note("recovery named unknown knob '" + OneLine(k, 64) + "'; ignored");
        }
      }
      std::erase_if(queue_, [&](const Queued& q) {
        for (const auto& [k, v] : q.candidate.delta.values()) {
          if (excluded_.contains(k)) return true;
        }
        return false;
      });
      break;
    case RecoveryKind::kResetIdeas:
      queue_.clear();
      break;
    case RecoveryKind::kUseFallback:
      queue_.clear();
      fallback_cycle_ = cycle_;
      break;
    case RecoveryKind::kStopSearch:
      queue_.clear();
      stopped_cycle_ = cycle_;
      break;
  }
}

void AgentProposer::Observe(const search::Observation& obs) {
  if (fallback_) fallback_->Observe(obs);
  double now = options_.clock ? options_.clock->MonoSeconds() - started_s_ : static_cast<double>(history_.entries.size());
  history_.now_s = now;
  history_.entries.push_back(HistoryEntry{"", obs.candidate.idea, obs.candidate.delta.ToString(), obs.config.Hash(),
                                          obs.config.ToString(), obs.verdict, obs.failure_kind, now});
  IdeaOutcome o{obs.candidate.idea, obs.candidate.delta.ToString(), obs.verdict, obs.gain, 0, obs.failure_kind};
  auto it = handed_.find(obs.candidate.idea);
  if (it != handed_.end()) {
    o.claimed_gain = it->second.candidate.expected_gain;
    calibration_.push_back(CalibrationRow{obs.candidate.idea, obs.candidate.delta.ToString(), it->second.has_claim,
                                          it->second.candidate.expected_gain, obs.verdict, obs.gain});
    orchestrator_.Remember(o.delta + ": " + std::string(VerdictName(obs.verdict)) + " (measured " + Pct(obs.gain) +
                           ")");
  }
  outcomes_.push_back(o);
  std::vector<Signal> signals = DetectAll(history_, robustness_ ? robustness_->thresholds() : DetectorThresholds{}, fired_);
  if (!signals.empty()) {
    fired_.insert(fired_.end(), signals.begin(), signals.end());
    Recover(signals);
  }
}

std::string AgentProposer::Save() const {
  json j;
  j["turns"] = turns_;
  j["failed_turns"] = failed_turns_;
  j["agent_off"] = agent_off_;
  j["fallback_cycle"] = fallback_cycle_;
  j["stopped_cycle"] = stopped_cycle_;
  j["cycle"] = cycle_;
  j["queue"] = json::array();
  for (const Queued& q : queue_) j["queue"].push_back(CandidateJson(q.candidate, q.has_claim));
  j["handed"] = json::array();
  for (const auto& [id, q] : handed_) j["handed"].push_back(CandidateJson(q.candidate, q.has_claim));
  j["rejections"] = json::array();
  for (const auto& r : rejections_) {
    j["rejections"].push_back({{"turn", r.turn}, {"title", r.title}, {"delta", r.delta}, {"rule", r.rule},
                               {"message", r.message}});
  }
  j["calibration"] = json::array();
  for (const auto& c : calibration_) {
    j["calibration"].push_back({{"idea", c.idea}, {"delta", c.delta}, {"has_claim", c.has_claim},
                                {"claimed", c.claimed_gain}, {"verdict", VerdictName(c.verdict)},
                                {"measured", c.measured_gain}});
  }
  j["history"] = json::array();
  for (const auto& e : history_.entries) {
    j["history"].push_back({{"idea", e.idea}, {"delta", e.delta}, {"hash", e.config_hash}, {"config", e.config},
                            {"verdict", VerdictName(e.verdict)}, {"failure", e.failure_kind}, {"t", e.t_s}});
  }
  j["outcomes"] = json::array();
  for (const auto& o : outcomes_) {
    j["outcomes"].push_back({{"idea", o.idea}, {"delta", o.delta}, {"verdict", VerdictName(o.verdict)},
                             {"measured", o.measured_gain}, {"claimed", o.claimed_gain}, {"failure", o.failure_kind}});
  }
  j["fired"] = json::array();
  for (const auto& s : fired_) j["fired"].push_back({{"kind", std::string(SignalKindName(s.kind))}, {"at", s.at_entry}});
  j["excluded"] = excluded_;
  j["notes"] = notes_;
  j["fallback"] = fallback_ ? fallback_->Save() : "";
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status AgentProposer::Load(const std::string& saved) {
  if (saved.empty()) return Ok();
  return TryCatch(ErrorCode::kDataLoss, "agent proposer state", [&] {
    json j = json::parse(saved);
    turns_ = j.at("turns").get<int>();
    failed_turns_ = j.at("failed_turns").get<int>();
    agent_off_ = j.at("agent_off").get<bool>();
    fallback_cycle_ = j.at("fallback_cycle").get<int>();
    stopped_cycle_ = j.at("stopped_cycle").get<int>();
    cycle_ = j.at("cycle").get<int>();
    queue_.clear();
    for (const json& q : j.at("queue")) {
      Queued x;
      x.candidate = CandidateFrom(q, &x.has_claim);
      queue_.push_back(std::move(x));
    }
    handed_.clear();
    agent_ideas_.clear();
    for (const json& q : j.at("handed")) {
      Queued x;
      x.candidate = CandidateFrom(q, &x.has_claim);
      agent_ideas_.insert(x.candidate.idea);
      handed_[x.candidate.idea] = std::move(x);
    }
    rejections_.clear();
    for (const json& r : j.at("rejections")) {
      rejections_.push_back({r.at("turn").get<int>(), r.at("title").get<std::string>(), r.at("delta").get<std::string>(),
                             r.at("rule").get<std::string>(), r.at("message").get<std::string>()});
    }
    calibration_.clear();
    for (const json& c : j.at("calibration")) {
      calibration_.push_back({c.at("idea").get<std::string>(), c.at("delta").get<std::string>(),
                              c.at("has_claim").get<bool>(), c.at("claimed").get<double>(),
                              VerdictFrom(c.at("verdict")), c.at("measured").get<double>()});
    }
    history_.entries.clear();
    for (const json& e : j.at("history")) {
      history_.entries.push_back({"", e.at("idea").get<std::string>(), e.at("delta").get<std::string>(),
                                  e.at("hash").get<std::string>(), e.at("config").get<std::string>(),
                                  VerdictFrom(e.at("verdict")), e.at("failure").get<std::string>(),
                                  e.at("t").get<double>()});
    }
    outcomes_.clear();
    for (const json& o : j.at("outcomes")) {
      outcomes_.push_back({o.at("idea").get<std::string>(), o.at("delta").get<std::string>(),
                           VerdictFrom(o.at("verdict")), o.at("measured").get<double>(),
                           o.at("claimed").get<double>(), o.at("failure").get<std::string>()});
    }
    fired_.clear();
    for (const json& s : j.at("fired")) {
      std::string kind = s.at("kind").get<std::string>();
      SignalKind k = kind == "crash_loop" ? SignalKind::kCrashLoop
                     : kind == "circling" ? SignalKind::kCircling
                                          : SignalKind::kStall;
      fired_.push_back(Signal{k, "", {}, s.at("at").get<size_t>()});
    }
    excluded_ = j.at("excluded").get<std::set<std::string>>();
    notes_ = j.at("notes").get<std::vector<std::string>>();
    std::string fb = j.at("fallback").get<std::string>();
    if (fallback_ && !fb.empty()) {
      auto st = fallback_->Load(fb);
      if (!st) throw std::runtime_error(st.error().message);
    }
  });
}

std::string AgentProposer::Describe() const {
  std::ostringstream out;
  out << "agent proposer: " << turns_ << " orchestrator turns, " << handed_.size() << " ideas measured, "
      << rejections_.size() << " ideas rejected";
  std::map<std::string, int> by_rule;
  for (const auto& r : rejections_) ++by_rule[r.rule];
  if (!by_rule.empty()) {
    out << " (";
    bool first = true;
    for (const auto& [rule, n] : by_rule) {
      out << (first ? "" : ", ") << rule << " " << n;
      first = false;
    }
    out << ")";
  }
  if (!excluded_.empty()) out << "; excluded by recovery: " << Join({excluded_.begin(), excluded_.end()}, ", ");
  if (agent_off_) out << "; agent stopped";
  out << "\n";
  for (const auto& n : notes_) out << "- " << n << "\n";
  if (!calibration_.empty()) out << FormatCalibrationTable(calibration_);
  if (fallback_) out << "fallback: " << fallback_->Describe() << "\n";
  return out.str();
}

std::string FormatCalibrationTable(const std::vector<CalibrationRow>& rows) {
  std::ostringstream out;
  out << "| idea | predicted (claim) | measured | verdict |\n|---|---|---|---|\n";
  double err = 0;
  int n = 0;
  for (const auto& r : rows) {
    out << "| " << r.delta << " | " << (r.has_claim ? Pct(r.claimed_gain) : "—") << " | ";
    const bool measured = IsMeasured(r.verdict);
    out << (measured ? Pct(r.measured_gain) : "—") << " | " << VerdictName(r.verdict) << " |\n";
    if (r.has_claim && measured) {
      err += std::fabs(r.claimed_gain - r.measured_gain);
      ++n;
    }
  }
  if (n) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "mean absolute error of the claims: %.1f points over %d ideas\n", err / n * 100, n);
    out << buf;
  }
  return out.str();
}

}  // namespace hone::agent
