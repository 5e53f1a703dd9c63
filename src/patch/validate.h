// Validation of a parsed diff against the policy rules, before anything is applied:
// size limits, every path the diff names (absolute, `..`, .git, control characters),
// binary content, mode changes (executables, symlinks, submodules), the target's
// allowed-file set, and, against a checked-out tree, symlinks on the way to a file.
//
// Each check returns a Violation naming the rule id from data/policy/rules.yaml, or
// nullopt. The path invariants are policy::CheckRepoPath, the same function the gate
// uses on declared facts. Pure functions over their inputs (CheckTree reads the file
// system); thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "patch/diff.h"
#include "policy/action.h"
#include "policy/rules.h"

namespace hone::patch {

struct Violation {
  std::string rule_id;
  std::string message;  // one line
};

// The byte limit alone, before parsing (so a huge diff is never parsed).
std::optional<Violation> CheckDiffSize(uint64_t bytes, const policy::Rules& rules);

// Everything that does not depend on the strip level or the tree: sizes, every path as
// written (raw, so a strip level can never hide a `..` or a .git), symlinks,
// submodules, binary content and mode changes.
std::optional<Violation> CheckDiff(const Diff& diff, const policy::Rules& rules);

// The repository-relative paths the diff touches at strip level `strip` (every header
// name stripped, rename/copy names as they are), sorted and unique. kInvalidArgument
// when a name has too few components for that level.
Result<std::vector<std::string>> TouchedPaths(const Diff& diff, int strip);

// The allowed-file rule for `target`, plus CheckRepoPath again on stripped paths.
std::optional<Violation> CheckFiles(const std::vector<std::string>& paths, const policy::Rules& rules,
                                    std::string_view target);

// Against a checked-out tree at `root`: no touched path may be a symlink or pass
// through one (a symlink committed in the tree could point anywhere).
std::optional<Violation> CheckTree(const std::filesystem::path& root, const std::vector<std::string>& paths);

// The strip level a diff most likely uses: 1 when every header name has an "a/" or
// "b/"-style one-letter prefix, else 0. Only for declaring facts; the executor detects
// the level against the tree.
int GuessStrip(const Diff& diff);

// Facts the gate judges a patch by (policy::PatchFacts), from the diff text. The
// files are listed at the guessed strip level or, with `rules`, at the first level
// (guess, 1, 0, 2, 3, 4) whose paths the target's allowed-file rule accepts, which is
// the level the executor will try first too. kInvalidArgument when not a diff.
Result<policy::PatchFacts> Summarize(std::string_view diff_text, const std::string& target,
                                     const policy::Rules* rules = nullptr);

// Maps a ParseDiff error onto its rule (patch.binary for NUL bytes, else
// patch.not_a_diff).
Violation ParseViolation(const Error& parse_error, const policy::Rules& rules);

}  // namespace hone::patch
