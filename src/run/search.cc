#include "run/search.h"

#include <algorithm>

#include "run/knowledge.h"
#include "search/heuristics.h"

namespace hone::run {

search::PlannerOptions PlannerOptionsFor(const spec::SessionSpec& spec, const std::string& base_precision) {
  search::PlannerOptions o;
  o.domain = {spec.search.knobs, spec.search.exclude, spec.target.num_gpus > 0, {}};
  // Weight precision is only searchable from an unquantized base.
  if (base_precision != "f16" && base_precision != "f32" && base_precision != "bf16") {
    o.domain.exclude.push_back("weights");
  }
  // The planner ranks ideas by expected gain per server run under the session's protocol.
  o.protocol = search::MeasurementProtocol::Of(spec.measurement);
  return o;
}

std::vector<Config> PointVariants(const spec::SessionSpec& spec, const target::KnobCatalog& catalog,
                                  const search::Heuristics& heuristics, const Config& config,
                                  const measure::OperatingPoint& point) {
  std::vector<Config> out;
  const search::FrameworkHeuristics* fw = heuristics.Framework(spec.target.adapter);
  if (!fw || point.concurrency <= 0) return out;
  const auto listed = [](const std::vector<std::string>& v, const std::string& k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  const std::string value = std::to_string(point.concurrency);
  for (const auto& [name, hints] : fw->value_hints) {
    if (!listed(hints, "concurrency")) continue;
    const target::Knob* knob = catalog.Find(name);
    if (!knob || !knob->searchable || listed(spec.search.exclude, name)) continue;
    if (!spec.search.knobs.empty() && !listed(spec.search.knobs, name)) continue;
    if (!knob->ValidateValue(value)) continue;
    auto current = config.Get(name);
    if (current && *current == value) continue;
    if (!current && knob->default_value == value) continue;
    Config v = config;
    v.Set(name, value);
    if (!catalog.Validate(v)) continue;
    out.push_back(std::move(v));
  }
  return out;
}

Result<std::unique_ptr<search::Proposer>> BuildProposer(const spec::SessionSpec& spec, const Engine& engine,
                                                        kb::RecipeStore* kb, const kb::MatchQuery& query,
                                                        const RunContext& ctx) {
  HONE_ASSIGN_OR_RETURN(search::Heuristics heuristics,
                        search::Heuristics::Load(ctx.data_dir + "/data/search/heuristics.yaml"));
  search::PlannerOptions options = PlannerOptionsFor(spec, engine.base_precision);
  if (kb) {
    options.priors = KbPriors(*kb, query);
    options.conflicts = KbConflicts(*kb, query);
  }
  return search::MakeProposer(spec.search.strategy, engine.adapter->catalog(), heuristics, std::move(options),
                              spec.search.seed);
}

}  // namespace hone::run
