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
