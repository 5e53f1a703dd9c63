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
#include "measure/trial.h"
#include "search/heuristics.h"
#include "search/planner.h"
#include "target/catalog.h"
#include "search/proposer.h"
#include "spec/session_spec.h"

namespace hone::run {

// The planner's domain for this session: the spec's knob restrictions, GPU knobs only
// with GPUs, and weight precision only from an unquantized base model.
search::PlannerOptions PlannerOptionsFor(const spec::SessionSpec& spec, const std::string& base_precision);

// Re-tuning at a sweep point: the knobs the framework's heuristics tie to the load
// (value hint "concurrency": llama.cpp's parallel, vLLM's max_num_seqs, SGLang's
// max_running_requests) set to the point's concurrency in a copy of the configuration,
// one variant per knob, when the catalog accepts the value and the spec's search
// domain allows the knob; none when the configuration already has it.
std::vector<Config> PointVariants(const spec::SessionSpec& spec, const target::KnobCatalog& catalog,
                                  const search::Heuristics& heuristics, const Config& config,
                                  const measure::OperatingPoint& point);

// `kb` may be null (no priors).
Result<std::unique_ptr<search::Proposer>> BuildProposer(const spec::SessionSpec& spec, const Engine& engine,
                                                        kb::RecipeStore* kb, const kb::MatchQuery& query,
                                                        const RunContext& ctx);

}  // namespace hone::run
