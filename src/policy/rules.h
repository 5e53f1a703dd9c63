// Rules: the policy as data, loaded from data/policy/rules.yaml.
//
// Each rule has a stable id, a type (which check the code runs) and a one-line hint.
// The loader validates everything up front (unknown types, roles, actions, verdicts,
// missing parameters and missing invariant ids are errors naming file:line:col), so
// the gate never meets a malformed rule at decision time. Rules is a plain immutable
// value after loading; share it by const reference across threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "policy/action.h"
#include "policy/paths.h"

namespace hone::policy {

struct RuleInfo {
  std::string id;
  std::string type;
  std::string hint;
};

struct Rules {
  struct StateWriters {
    RuleInfo info;
    std::vector<std::string> fields;  // globs over state field names ("baseline.*")
    std::vector<std::string> roles;
  };
  struct Limit {
    RuleInfo info;
    std::set<ActionKind> actions;
    double max = 0;
  };
  struct Names {
    RuleInfo info;
    std::vector<std::string> names;
  };
  struct ActionSet {
    RuleInfo info;
    std::set<ActionKind> actions;
  };
  struct Signoff {
    RuleInfo info;
    std::set<ActionKind> actions;
    std::set<CriticVerdict> verdicts;
  };
  struct PatchFiles {
    RuleInfo info;
    std::string target;
    std::vector<std::string> allow;  // globs; a file must match one
    std::vector<std::string> deny;   // globs; a file matching one is refused
  };
  struct PatchSize {
    RuleInfo info;
    uint64_t max_bytes = 0;
    int max_files = 0;
    int max_changed_lines = 0;
  };
  struct Toggle {
    RuleInfo info;
    bool allow = false;
  };
  struct Timeout {
    RuleInfo info;
    double seconds = 0;
  };

  // Parses rules.yaml text / a file. Every error names file:line:col and the field.
  static Result<Rules> Parse(const std::string& text, const std::string& source_name);
  static Result<Rules> Load(const std::string& path);

  std::vector<std::string> roles;
  std::vector<RuleInfo> all;  // every rule in file order (for reports and `hone patch rules`)

  RuleInfo role_actions;
  std::map<std::string, std::set<ActionKind>> role_allow;
  std::vector<StateWriters> state_writers;
  RuleInfo state_default;
  std::vector<Limit> max_gpus;
  std::vector<Limit> max_seconds;
  std::optional<Names> protected_knobs;
  std::optional<Names> kernel_backends;
  std::vector<ActionSet> requires_evidence;
  Signoff signoff;
  std::optional<RuleInfo> no_self_review;
  std::vector<PatchFiles> patch_files;
  PatchSize patch_size;
  Toggle patch_binary;
  Toggle patch_mode;
  Timeout build_timeout;
  std::map<std::string, RuleInfo, std::less<>> invariants;

  bool HasRole(std::string_view role) const;
  // The rule with this id (any type), or nullptr.
  const RuleInfo* Find(std::string_view id) const;
  // An invariant's entry; always present after a successful load.
  const RuleInfo& Invariant(std::string_view id) const;
  // The allowed-file rule for `target`, or nullptr.
  const PatchFiles* FilesFor(std::string_view target) const;
  // Whether a patch for `target` may touch `path` (repository-relative, already checked
  // with CheckRepoPath): nullopt, or the rule id and a one-line message.
  std::optional<PathProblem> CheckPatchFile(std::string_view target, std::string_view path) const;
};

}  // namespace hone::policy
