#include "run/search.h"

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
  const spec::MeasurementSpec& m = spec.measurement;
  o.protocol = search::MeasurementProtocol{.screen = m.screen, .screen_drop = m.screen_drop,
                                           .min_pairs = m.min_pairs, .max_pairs = m.max_pairs,
                                           .pair_step = m.pair_step, .min_gain = m.min_gain,
                                           .confidence = m.confidence};
  return o;
}

Result<std::unique_ptr<search::Proposer>> BuildProposer(const spec::SessionSpec& spec, const Engine& engine,
                                                        kb::RecipeStore* kb, const kb::MatchQuery& query,
                                                        const RunContext& ctx) {
  HONE_ASSIGN_OR_RETURN(search::Heuristics heuristics,
                        search::Heuristics::Load(ctx.data_dir + "/data/search/heuristics.yaml"));
  search::PlannerOptions options = PlannerOptionsFor(spec, engine.base_precision);
  if (kb) options.priors = KbPriors(*kb, query);
  return search::MakeProposer(spec.search.strategy, engine.adapter->catalog(), heuristics, std::move(options),
                              spec.search.seed);
}

}  // namespace hone::run
