// The session's search: the strategy the spec names (planner, random, grid) over the
// engine's knob catalog, with the heuristics in data/search/heuristics.yaml and the
// knowledge base's learnings and failures as the planner's priors.
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "kb/match.h"
#include "kb/store.h"
#include "run/context.h"
#include "run/engine.h"
#include "search/planner.h"
#include "search/proposer.h"
#include "spec/session_spec.h"

namespace hone::run {

// The planner's domain for this session: the spec's knob restrictions, GPU knobs only
// with GPUs, and weight precision only from an unquantized base model.
search::PlannerOptions PlannerOptionsFor(const spec::SessionSpec& spec, const std::string& base_precision);

// `kb` may be null (no priors).
Result<std::unique_ptr<search::Proposer>> BuildProposer(const spec::SessionSpec& spec, const Engine& engine,
                                                        kb::RecipeStore* kb, const kb::MatchQuery& query,
                                                        const RunContext& ctx);

}  // namespace hone::run
