#include "policy/rules.h"

#include <algorithm>

#include "core/check.h"
#include "core/strings.h"
#include "spec/yaml.h"
#include "sys/files.h"

namespace hone::policy {
namespace {

using spec::Field;

// Ids of the invariant entries rules.yaml must carry (see paths.h).
constexpr const char* kRequiredInvariants[] = {kRuleRoleUnknown,   kRuleActionMalformed,  kRuleTokenInvalid,
                                               kRuleUnknownTarget, kRuleNotADiff,         kRuleAbsolutePath,
                                               kRulePathEscape,    kRuleGitDir,           kRuleSymlink,
                                               kRuleDoesNotApply,  kRuleUndeclaredChange, kRuleBuildFailed};

Result<std::set<ActionKind>> ParseActions(const Field& f) {
  HONE_ASSIGN_OR_RETURN(std::vector<std::string> names, f.StrList());
  std::set<ActionKind> out;
  for (const std::string& n : names) {
    auto k = ParseActionKind(n);
    if (!k) {
      std::vector<std::string> known;
      for (ActionKind a : kAllActionKinds) known.emplace_back(ActionKindName(a));
      return Fail(f.Err("unknown action '" + n + "' (expected one of: " + Join(known, ", ") + ")"));
    }
    out.insert(*k);
  }
  if (out.empty()) return Fail(f.Err("needs at least one action"));
  return out;
}

Status CheckRoles(const Field& f, const std::vector<std::string>& roles, const std::vector<std::string>& declared) {
  for (const std::string& r : roles) {
    if (std::find(declared.begin(), declared.end(), r) == declared.end()) {
      return Fail(f.Err("unknown role '" + r + "' (declared roles: " + Join(declared, ", ") + ")"));
    }
  }
  return Ok();
}

Result<std::vector<std::string>> NonEmptyList(const Field& f) {
  HONE_ASSIGN_OR_RETURN(std::vector<std::string> v, f.StrList());
  if (v.empty()) return Fail(f.Err("needs at least one entry"));
  return v;
}

// Parses one entry of `rules:` into `out`.
Status ParseRule(const Field& f, Rules& out, std::set<std::string>& singletons) {
  HONE_TRY(f.RequireMap());
  HONE_ASSIGN_OR_RETURN(std::string id, f["id"].Str());
  HONE_ASSIGN_OR_RETURN(std::string type, f["type"].Str());
  HONE_ASSIGN_OR_RETURN(std::string hint, f["hint"].Str());
  if (id.empty() || Contains(id, " ")) return Fail(f["id"].Err("rule ids are non-empty and have no spaces"));
  if (hint.empty() || Contains(hint, "\n")) return Fail(f["hint"].Err("a hint is one non-empty line"));
  if (out.Find(id)) return Fail(f["id"].Err("duplicate rule id '" + id + "'"));
  RuleInfo info{id, type, hint};
  auto once = [&]() -> Status {
    if (!singletons.insert(type).second) return Fail(f["type"].Err("only one rule of type '" + type + "' is allowed"));
    return Ok();
  };

  if (type == "role_actions") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", "roles"}));
    HONE_TRY(once());
    HONE_TRY(f["roles"].RequireMap());
    out.role_actions = info;
    for (const auto& [role, actions] : f["roles"].Entries()) {
      HONE_TRY(CheckRoles(actions, {role}, out.roles));
      HONE_ASSIGN_OR_RETURN(out.role_allow[role], ParseActions(actions));
    }
  } else if (type == "state_writers") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", "fields", "roles"}));
    Rules::StateWriters w{info, {}, {}};
    HONE_ASSIGN_OR_RETURN(w.fields, NonEmptyList(f["fields"]));
    HONE_ASSIGN_OR_RETURN(w.roles, NonEmptyList(f["roles"]));
    HONE_TRY(CheckRoles(f["roles"], w.roles, out.roles));
    out.state_writers.push_back(std::move(w));
  } else if (type == "state_default") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint"}));
    HONE_TRY(once());
    out.state_default = info;
  } else if (type == "max_gpus" || type == "max_seconds") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", "actions", "max"}));
    Rules::Limit l{info, {}, 0};
    HONE_ASSIGN_OR_RETURN(l.actions, ParseActions(f["actions"]));
    HONE_ASSIGN_OR_RETURN(l.max, f["max"].Double(0, 1e9));
    (type == "max_gpus" ? out.max_gpus : out.max_seconds).push_back(std::move(l));
  } else if (type == "protected_knobs" || type == "kernel_backends") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", type == "protected_knobs" ? "knobs" : "allow"}));
    HONE_TRY(once());
    Rules::Names n{info, {}};
    HONE_ASSIGN_OR_RETURN(n.names, NonEmptyList(f[type == "protected_knobs" ? "knobs" : "allow"]));
    (type == "protected_knobs" ? out.protected_knobs : out.kernel_backends) = std::move(n);
  } else if (type == "requires_evidence") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", "actions"}));
    Rules::ActionSet a{info, {}};
    HONE_ASSIGN_OR_RETURN(a.actions, ParseActions(f["actions"]));
    out.requires_evidence.push_back(std::move(a));
  } else if (type == "critic_signoff") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", "actions", "verdicts"}));
    HONE_TRY(once());
    out.signoff.info = info;
    HONE_ASSIGN_OR_RETURN(out.signoff.actions, ParseActions(f["actions"]));
    if (!out.signoff.actions.contains(ActionKind::kMergePatch)) {
      return Fail(f["actions"].Err("must include merge_patch: no patch is merged without a critic's sign-off"));
    }
    HONE_ASSIGN_OR_RETURN(std::vector<std::string> verdicts, NonEmptyList(f["verdicts"]));
    for (const std::string& v : verdicts) {
      auto parsed = ParseCriticVerdict(v);
      if (!parsed)
        return Fail(f["verdicts"].Err("unknown verdict '" + v + "' (approve, advise, reject, needs_review)"));
      if (*parsed == CriticVerdict::kReject) return Fail(f["verdicts"].Err("a reject verdict cannot sign a patch off"));
      out.signoff.verdicts.insert(*parsed);
    }
  } else if (type == "no_self_review") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint"}));
    HONE_TRY(once());
    out.no_self_review = info;
  } else if (type == "patch_files") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", "target", "allow", "deny"}));
    Rules::PatchFiles p{info, "", {}, {}};
    HONE_ASSIGN_OR_RETURN(p.target, f["target"].Str());
    if (out.FilesFor(p.target)) return Fail(f["target"].Err("a second patch_files rule for target '" + p.target + "'"));
    HONE_ASSIGN_OR_RETURN(p.allow, NonEmptyList(f["allow"]));
    HONE_ASSIGN_OR_RETURN(p.deny, f["deny"].StrList());
    out.patch_files.push_back(std::move(p));
  } else if (type == "patch_size") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", "max_bytes", "max_files", "max_changed_lines"}));
    HONE_TRY(once());
    out.patch_size.info = info;
    HONE_ASSIGN_OR_RETURN(int64_t bytes, f["max_bytes"].Int(1, int64_t{1} << 32));
    HONE_ASSIGN_OR_RETURN(int64_t files, f["max_files"].Int(1, 100000));
    HONE_ASSIGN_OR_RETURN(int64_t lines, f["max_changed_lines"].Int(1, 10000000));
    out.patch_size.max_bytes = static_cast<uint64_t>(bytes);
    out.patch_size.max_files = static_cast<int>(files);
    out.patch_size.max_changed_lines = static_cast<int>(lines);
  } else if (type == "patch_binary" || type == "patch_mode") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", "allow"}));
    HONE_TRY(once());
    Rules::Toggle& t = type == "patch_binary" ? out.patch_binary : out.patch_mode;
    t.info = info;
    HONE_ASSIGN_OR_RETURN(t.allow, f["allow"].Bool());
  } else if (type == "build_timeout") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint", "seconds"}));
    HONE_TRY(once());
    out.build_timeout.info = info;
    HONE_ASSIGN_OR_RETURN(out.build_timeout.seconds, f["seconds"].Double(1, 86400 * 7));
  } else if (type == "invariant") {
    HONE_TRY(f.CheckKeys({"id", "type", "hint"}));
    bool known = false;
    for (const char* k : kRequiredInvariants) known = known || id == k;
    if (!known) return Fail(f["id"].Err("'" + id + "' is not an invariant the code enforces"));
    out.invariants[id] = info;
  } else {
    return Fail(f["type"].Err("unknown rule type '" + type + "'"));
  }
  out.all.push_back(std::move(info));
  return Ok();
}

}  // namespace

Result<Rules> Rules::Parse(const std::string& text, const std::string& source_name) {
  HONE_ASSIGN_OR_RETURN(Field root, Field::Parse(text, source_name));
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"version", "roles", "rules"}));
  HONE_ASSIGN_OR_RETURN(int64_t version, root["version"].Int(1, 1));
  (void)version;
  Rules out;
  HONE_ASSIGN_OR_RETURN(out.roles, NonEmptyList(root["roles"]));
  if (!root["rules"].is_seq()) return Fail(root["rules"].Err("expected a list of rules"));
  std::set<std::string> singletons;
  for (const Field& rule : root["rules"].Items()) HONE_TRY(ParseRule(rule, out, singletons));
  for (const char* required : {"role_actions", "state_default", "critic_signoff", "patch_size", "patch_binary",
                               "patch_mode", "build_timeout"}) {
    if (!singletons.contains(required))
      return Fail(root["rules"].Err("needs a rule of type '" + std::string(required) + "'"));
  }
  for (const char* id : kRequiredInvariants) {
    if (!out.invariants.contains(id)) {
      return Fail(
          root["rules"].Err("needs the invariant entry '" + std::string(id) + "' (type: invariant, with a hint)"));
    }
  }
  return out;
}

Result<Rules> Rules::Load(const std::string& path) {
  auto text = sys::ReadFile(path);
  if (!text) return Fail(std::move(text).error().Wrap("loading policy rules"));
  return Parse(*text, path);
}

bool Rules::HasRole(std::string_view role) const { return std::find(roles.begin(), roles.end(), role) != roles.end(); }

const RuleInfo* Rules::Find(std::string_view id) const {
  for (const RuleInfo& r : all) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

const RuleInfo& Rules::Invariant(std::string_view id) const {
  auto it = invariants.find(id);
  HONE_CHECK(it != invariants.end());  // Rules::Parse guarantees every invariant entry
  return it->second;
}

const Rules::PatchFiles* Rules::FilesFor(std::string_view target) const {
  for (const PatchFiles& p : patch_files) {
    if (p.target == target) return &p;
  }
  return nullptr;
}

std::optional<PathProblem> Rules::CheckPatchFile(std::string_view target, std::string_view path) const {
  const PatchFiles* p = FilesFor(target);
  if (!p) return PathProblem{kRuleUnknownTarget, "no patch_files rule for target '" + std::string(target) + "'"};
  for (const std::string& g : p->deny) {
    if (GlobMatch(g, path)) {
      return PathProblem{p->info.id, "'" + std::string(path) + "' matches the denied pattern '" + g + "'"};
    }
  }
  for (const std::string& g : p->allow) {
    if (GlobMatch(g, path)) return std::nullopt;
  }
  return PathProblem{p->info.id,
                     "'" + std::string(path) + "' is outside the files " + p->target + " patches may touch"};
}

}  // namespace hone::policy
