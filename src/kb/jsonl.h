// The recipe exchange format: one recipe per line of JSON ("JSON lines"), for sharing
// a knowledge base between machines (`hone kb export` / `hone kb import`).
//
// Each line is a self-contained object tagged "format": "hone-kb-recipe/1" holding the
// identity, workload, config, objective, baseline, learnings, failures, provenance,
// status, reproduce count and history. The store's row id is not exported (it is
// local); the dedup key is recomputed on import. nlohmann::json is used only inside
// jsonl.cc: callers see Recipe values and one-line errors. Thread-safe (pure).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "kb/recipe.h"

namespace hone::kb {

inline constexpr std::string_view kRecipeFormat = "hone-kb-recipe/1";

// One line (no trailing newline).
std::string RecipeToJsonLine(const Recipe& r);
// Parses one line; errors name the missing or malformed field.
Result<Recipe> RecipeFromJsonLine(std::string_view line);
// Parses a whole file; blank lines are skipped; errors name the 1-based line.
Result<std::vector<Recipe>> ParseJsonLines(std::string_view text, std::string_view source_name);

}  // namespace hone::kb
