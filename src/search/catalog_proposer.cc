#include "search/catalog_proposer.h"

#include <algorithm>

#include "core/strings.h"

namespace hone::search {

int CategoryPriority(const std::string& category) {
  static const char* kOrder[] = {"precision", "attention", "threads", "batching", "scheduling",
                                 "cache",     "speculative", "memory", "parallelism"};
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (category == kOrder[i]) return static_cast<int>(i);
  }
  return 100;
}

CatalogProposer::CatalogProposer(const target::KnobCatalog& catalog, CatalogProposerOptions options)
    : catalog_(catalog), options_(std::move(options)) {}

std::vector<std::string> CatalogProposer::ValuesFor(const target::Knob& knob, const ProposalContext& ctx) {
  if (!knob.search_values.empty()) return knob.search_values;
  switch (knob.type) {
    case target::KnobType::kBool:
      return {"on", "off"};
    case target::KnobType::kEnum:
      return knob.choices;
    case target::KnobType::kInt: {
      std::vector<std::string> out;
      if (knob.name == "threads" || knob.name == "threads_batch") {
        // Up to the CPUs the session may use, never beyond: ggml's workers spin at
        // barriers, and 3 threads on 2 cores cost 15-30% (docs/search.md); 4 on the
        // demo's 2 cores was its third candidate, measured at -6% when this said cpus*2.
        for (int t : {1, ctx.cpus / 2, ctx.cores, ctx.cpus}) {
          if (t >= 1 && t <= ctx.cpus) out.push_back(std::to_string(t));
        }
      } else if (knob.name == "parallel") {
        for (int p : {1, ctx.concurrency, ctx.concurrency * 2}) {
          if (p >= 1) out.push_back(std::to_string(p));
        }
      }
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    }
    default:
      return {};
  }
}

std::optional<Candidate> CatalogProposer::Next(const ProposalContext& ctx) {
  std::vector<const target::Knob*> knobs;
  for (const target::Knob& k : catalog_.knobs()) {
    if (!k.searchable) continue;
    if (k.applies_to == "gpu" && !options_.gpu) continue;
    if (k.applies_to == "cpu" && options_.gpu) continue;
    if (!options_.only.empty() && std::find(options_.only.begin(), options_.only.end(), k.name) == options_.only.end()) {
      continue;
    }
    if (std::find(options_.exclude.begin(), options_.exclude.end(), k.name) != options_.exclude.end()) continue;
    knobs.push_back(&k);
  }
  std::stable_sort(knobs.begin(), knobs.end(), [](const target::Knob* a, const target::Knob* b) {
    return CategoryPriority(a->category) < CategoryPriority(b->category);
  });
  for (const target::Knob* k : knobs) {
    std::string current = catalog_.ValueOf(ctx.best, *k);
    for (const std::string& v : ValuesFor(*k, ctx)) {
      std::string idea = k->name + "=" + v;
      if (v == current || proposed_.contains(idea) || failed_.contains(idea)) continue;
      Config delta{{k->name, v}};
      Config full = ctx.best.Merged(delta);
      if (ctx.tried.contains(full.Hash())) continue;
      if (!catalog_.Validate(full)) continue;
      proposed_.insert(idea);
      Candidate c;
      c.idea = idea;
      c.title = "set " + k->name + " to " + v;
      c.delta = delta;
      c.rationale = k->why;
      return c;
    }
  }
  return std::nullopt;
}

void CatalogProposer::Observe(const Observation& obs) {
  outcomes_[obs.candidate.idea] = obs.verdict;
  if (obs.verdict == Verdict::kLaunchFailed) failed_.insert(obs.candidate.idea);
}

std::string CatalogProposer::Save() const {
  std::string out;
  for (const auto& p : proposed_) out += "p " + p + "\n";
  for (const auto& f : failed_) out += "f " + f + "\n";
  for (const auto& [idea, v] : outcomes_) out += "o " + idea + " " + std::string(VerdictName(v)) + "\n";
  return out;
}

Status CatalogProposer::Load(const std::string& saved) {
  for (const std::string& line : Split(saved, '\n')) {
    if (line.size() < 3) continue;
    std::string rest = line.substr(2);
    if (line[0] == 'p') proposed_.insert(rest);
    if (line[0] == 'f') failed_.insert(rest);
    if (line[0] == 'o') {
      size_t sp = rest.rfind(' ');
      if (sp == std::string::npos) continue;
      HONE_ASSIGN_OR_RETURN(outcomes_[rest.substr(0, sp)], ParseVerdict(rest.substr(sp + 1)));
    }
  }
  return Ok();
}

std::string CatalogProposer::Describe() const {
  std::string out = "catalog proposer: " + std::to_string(proposed_.size()) + " single-knob ideas proposed\n";
  for (const auto& [idea, v] : outcomes_) out += "  " + idea + " -> " + std::string(VerdictName(v)) + "\n";
  return out;
}

}  // namespace hone::search
