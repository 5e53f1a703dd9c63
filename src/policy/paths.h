// Path rules shared by the policy gate and the patch executor: which repository-relative
// paths a patch may name at all, and glob matching for the allowed-file sets in
// data/policy/rules.yaml.
//
// CheckRepoPath is the one implementation of the path invariants (no absolute paths,
// no `..` escape, nothing inside .git, no control characters); both the gate (on the
// facts a proposer declares) and the executor (on the diff it parses) call it, so the
// two checks cannot drift apart. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hone::policy {

// Ids of the rules the code enforces unconditionally. rules.yaml must declare each
// (with its hint); Rules::Load fails when one is missing.
inline constexpr char kRuleRoleUnknown[] = "role.unknown";
inline constexpr char kRuleActionMalformed[] = "action.malformed";
inline constexpr char kRuleTokenInvalid[] = "gate.token_invalid";
inline constexpr char kRuleUnknownTarget[] = "patch.unknown_target";
inline constexpr char kRuleNotADiff[] = "patch.not_a_diff";
inline constexpr char kRuleAbsolutePath[] = "patch.absolute_path";
inline constexpr char kRulePathEscape[] = "patch.path_escape";
inline constexpr char kRuleGitDir[] = "patch.git_dir";
inline constexpr char kRuleSymlink[] = "patch.symlink_escape";
inline constexpr char kRuleDoesNotApply[] = "patch.does_not_apply";
inline constexpr char kRuleUndeclaredChange[] = "patch.undeclared_change";
inline constexpr char kRuleBuildFailed[] = "build.failed";

struct PathProblem {
  std::string rule_id;  // one of the kRule* ids above
  std::string message;  // one line naming the path
};

// Checks one path a patch names (after the strip level is applied, or raw when
// `raw` is true: then a leading "a/"-style component is still present, which is fine).
// nullopt when the path is acceptable.
std::optional<PathProblem> CheckRepoPath(std::string_view path);

// Glob match over '/'-separated paths: `*` and `?` never cross '/', `**` does
// ("tools/server/**" matches everything below tools/server/, "**/*.h" any header),
// `{a,b}` picks one alternative (no nesting). The whole path must match.
bool GlobMatch(std::string_view glob, std::string_view path);

}  // namespace hone::policy
