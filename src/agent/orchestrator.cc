#include "agent/orchestrator.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/strings.h"

namespace hone::agent {

using json = nlohmann::json;

namespace {

std::string Pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", fraction * 100);
  return buf;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

Result<JsonSchema> NarrowKnobs(const JsonSchema& schema, const std::vector<std::string>& knob_names) {
  if (knob_names.empty()) return schema;
  json j = schema.json();
  json* knob = nullptr;
  auto step = [](json* node, const char* key) -> json* {
    return node && node->is_object() && node->contains(key) ? &(*node)[key] : nullptr;
  };
  knob = step(step(step(step(step(step(step(&j, "properties"), "ideas"), "items"), "properties"), "delta"), "items"),
              "properties");
  knob = step(knob, "knob");
  if (!knob) return InvalidArgument("orchestrator schema has no /ideas/items/delta/items/knob property");
  (*knob)["enum"] = knob_names;
  return JsonSchema::FromJson(std::move(j), "orchestrator schema (narrowed)");
}

void Orchestrator::Remember(const std::string& line) {
  memory_.push_back(line);
  size_t cap = static_cast<size_t>(std::max(0, data_.orchestrator.memory_lines));
  while (memory_.size() > cap) memory_.erase(memory_.begin());
}

ChatRequest Orchestrator::BuildRequest(const OrchestratorSnapshot& s, int max_ideas, bool refresh) const {
  const RoleText& role = data_.orchestrator;
  ChatRequest req;
  req.system = role.system + "\n" + role.Phase(s.phase);
  std::ostringstream u;
  u << (refresh ? "FULL BRIEFING (context refreshed; earlier notes dropped)\n" : "UPDATE\n");
  u << "Session facts (measured by hone; the only ground truth):\n";
  u << "- phase: " << s.phase << ", cycle " << s.cycle << ", time left " << HumanSeconds(s.time_left_s) << "\n";
  u << "- objective: " << s.objective << "; baseline " << Num(s.baseline_objective) << "\n";
  u << "- machine: " << s.cpus << " CPUs, " << (s.gpu ? "GPU" : "no GPU") << "; concurrency " << s.concurrency << "\n";
  u << "- stock configuration: " << (s.stock.empty() ? "(stock)" : s.stock) << "\n";
  u << "- current best: " << (s.best.empty() ? "(stock)" : s.best) << " = " << Num(s.best_objective) << "\n";
  u << "- validated gain over stock: " << (s.validated ? Pct(s.validated_gain) : "not validated yet") << "\n";
  size_t shown = refresh ? s.history.size()
                         : std::min(s.history.size(), static_cast<size_t>(std::max(1, role.history_compact)));
  u << "\nMeasured outcomes (" << s.history.size() << " in total, last " << shown << " shown):\n";
  if (s.history.empty()) u << "- none yet\n";
  for (size_t i = s.history.size() - shown; i < s.history.size(); ++i) {
    const IdeaOutcome& h = s.history[i];
    u << "- " << h.delta << ": " << VerdictName(h.verdict);
    if (IsMeasured(h.verdict)) {
      u << " (measured " << Pct(h.measured_gain) << ")";
    }
    if (!h.failure_kind.empty()) u << " [" << h.failure_kind << "]";
    u << "\n";
  }
  if (!s.idea_tree.empty()) {
    std::string tree = s.idea_tree;
    if (!refresh && tree.size() > 3000) {
      size_t from = tree.size() - 3000;
      while (from < tree.size() && (static_cast<unsigned char>(tree[from]) & 0xC0) == 0x80) ++from;
      tree = tree.substr(from);
    }
    u << "\nIdea tree:\n" << tree << "\n";
  }
  u << "\nKnob catalog:\n" << (refresh || s.knobs_compact.empty() ? s.knobs_full : s.knobs_compact) << "\n";
  if (!refresh && !memory_.empty()) {
    u << "\nYour notes from earlier turns (what happened to your proposals):\n";
    for (const auto& m : memory_) u << "- " << m << "\n";
  }
  u << "\nPropose at most " << max_ideas << " new ideas, best first, as deltas on top of the current best.";
  req.messages.push_back({"user", u.str()});
  req.max_output_tokens = 400 * std::max(1, max_ideas) + 200;
  req.temperature = 0.4;
  return req;
}

Result<std::vector<IdeaProposal>> Orchestrator::Propose(const OrchestratorSnapshot& snapshot, int max_ideas) {
  bool refresh = turn_ % std::max(1, data_.orchestrator.refresh_every) == 0;
  ++turn_;
  last_refresh_ = refresh;
  if (refresh) memory_.clear();
  HONE_ASSIGN_OR_RETURN(JsonSchema schema, NarrowKnobs(data_.orchestrator_schema, snapshot.knob_names));
  ChatRequest req = BuildRequest(snapshot, max_ideas, refresh);
  HONE_ASSIGN_OR_RETURN(StructuredReply reply, client_.Structured("orchestrator", std::move(req), schema));
  std::vector<IdeaProposal> out;
  for (const json& idea : reply.value["ideas"]) {
    if (static_cast<int>(out.size()) >= max_ideas) break;
    IdeaProposal p;
    p.title = idea["title"].get<std::string>();
    p.rationale = idea["rationale"].get<std::string>();
    for (const json& d : idea["delta"]) p.delta.emplace_back(d["knob"].get<std::string>(), d["value"].get<std::string>());
    if (idea.contains("expected_gain_pct") && idea["expected_gain_pct"].is_number()) {
      double pct = idea["expected_gain_pct"].get<double>();
      if (std::isfinite(pct)) {
        p.claimed_gain = pct / 100.0;
        p.has_claim = true;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace hone::agent
