// `hone patch`: the policy gate and the worktree patch executor, for people.
//
//   hone patch rules                      every policy rule id with its hint
//   hone patch check DIFF                 parse + validate a diff against the rules (nothing applied)
//   hone patch apply DIFF [--keep ...]    worktree, apply, rebuild llama-server, then keep or revert
//
// `apply` works on the provisioned llama.cpp checkout (or --repo) without touching its
// working tree: the kept line is the branch hone/accepted. A person stands in for the
// critic (--signed-off-by NAME, role "user") and for the measurement (--keep: keep it
// when it builds; without --keep the run proves the diff builds, then reverts).
#include <cstdio>

#include "cli/commands.h"
#include "core/strings.h"
#include "patch/executor.h"
#include "patch/validate.h"
#include "policy/gate.h"
#include "sys/files.h"
#include "target/llamacpp.h"

namespace hone::cli {
namespace {

struct PatchOpts {
  std::string diff;
  std::string target = "llama.cpp";
  std::string rules;
  std::string repo;
  std::string work_root;
  std::string id;
  std::string signed_off_by;
  bool keep = false;
  bool no_build = false;
  int jobs = 0;
  int build_timeout_s = 0;
};

std::string RulesPath(const PatchOpts& o, const Context& ctx) {
  return o.rules.empty() ? ctx.data_dir + "/data/policy/rules.yaml" : o.rules;
}

void PrintRecord(const patch::PatchRecord& r) {
  std::printf("proposal %s (%s): %s\n", r.proposal_id.c_str(), r.origin.c_str(),
              std::string(patch::PatchVerdictName(r.verdict)).c_str());
  std::printf("  diff     %s  [sha256 %s]\n", r.diffstat.c_str(), r.diff_sha256.substr(0, 12).c_str());
  if (!r.files.empty()) std::printf("  files    %s\n", Join(r.files, ", ").c_str());
  if (r.strip >= 0)
    std::printf("  applied  -p%d%s on %s\n", r.strip, r.three_way ? " (3-way)" : "",
                r.base_commit.substr(0, 12).c_str());
  if (r.build_seconds >= 0) {
    std::printf("  build    %s%s\n", HumanSeconds(r.build_seconds).c_str(), r.incremental ? " (incremental)" : "");
  }
  if (!r.stopped_by.empty()) std::printf("  rule     %s\n", r.stopped_by.c_str());
  std::printf("  reason   %s\n", r.reason.c_str());
  if (!r.commit.empty()) std::printf("  commit   %s (branch hone/accepted)\n", r.commit.c_str());
  if (!r.build_log_tail.empty()) {
    for (const std::string& line : Split(LastLines(r.build_log_tail, 8), '\n')) std::printf("  | %s\n", line.c_str());
  }
}

int RunRules(const PatchOpts& o, const Context& ctx) {
  auto rules = policy::Rules::Load(RulesPath(o, ctx));
  if (!rules) return ReportError(rules.error());
  for (const policy::RuleInfo& r : rules->all)
    std::printf("%-34s %-18s %s\n", r.id.c_str(), r.type.c_str(), r.hint.c_str());
  return 0;
}

int RunCheck(const PatchOpts& o, const Context& ctx) {
  auto rules = policy::Rules::Load(RulesPath(o, ctx));
  if (!rules) return ReportError(rules.error());
  auto text = sys::ReadFile(o.diff);
  if (!text) return ReportError(text.error());
  auto reject = [&](const patch::Violation& v) {
    const policy::RuleInfo* info = rules->Find(v.rule_id);
    std::printf("rejected: %s\n  rule  %s\n  hint  %s\n", v.message.c_str(), v.rule_id.c_str(),
                info ? info->hint.c_str() : "");
    return 1;
  };
  if (auto v = patch::CheckDiffSize(text->size(), *rules)) return reject(*v);
  auto diff = patch::ParseDiff(*text);
  if (!diff) return reject(patch::ParseViolation(diff.error(), *rules));
  std::printf("%s\n", patch::DiffStat(*diff).c_str());
  if (auto v = patch::CheckDiff(*diff, *rules)) return reject(*v);
  auto facts = patch::Summarize(*text, o.target, &*rules);
  if (!facts) return ReportError(facts.error());
  if (auto v = patch::CheckFiles(facts->files, *rules, o.target)) return reject(*v);
  std::printf("ok for %s: %s\n", o.target.c_str(), Join(facts->files, ", ").c_str());
  std::printf("(applying is still checked against the tree: strip level, symlinks, git apply)\n");
  return 0;
}

int RunApply(const PatchOpts& o, const Context& ctx) {
  auto gate = policy::Gate::Load(RulesPath(o, ctx));
  if (!gate) return ReportError(gate.error());
  patch::ExecutorOptions eo;
  eo.target = o.target;
  eo.jobs = o.jobs;
  eo.build_timeout = std::chrono::seconds(o.build_timeout_s);
  if (o.repo.empty()) {
    auto prov = target::FindProvisioned(ctx.cache_dir, ctx.data_dir);
    if (!prov) return ReportError(std::move(prov).error().Wrap("no --repo and no provisioned llama.cpp"));
    eo.repo = prov->src_dir;
    eo.work_root = o.work_root.empty() ? prov->root / "patch" : std::filesystem::path(o.work_root);
  } else {
    eo.repo = o.repo;
    if (o.work_root.empty()) return ReportError(Error{ErrorCode::kInvalidArgument, "--repo needs --work-root", {}});
    eo.work_root = o.work_root;
  }
  if (!o.no_build && o.target == "llama.cpp") {
    auto source = target::LoadLlamaCppSource(ctx.data_dir + "/data/llama.cpp.yaml");
    if (!source) return ReportError(source.error());
    std::vector<std::string> args = source->cmake_args;
    args.insert(args.end(), source->cpu_cmake_args.begin(), source->cpu_cmake_args.end());
    eo.recipe = patch::CMakeRecipe("llama.cpp llama-server", args, {"llama-server"}, {"bin/llama-server"});
  }
  auto loaded = patch::LoadBackport(o.diff, o.id.empty() ? "cli-" + sys::Sha256Hex(o.diff).substr(0, 8) : o.id, "user");
  if (!loaded) return ReportError(loaded.error());
  patch::Proposal p = std::move(*loaded);
  const std::string file_name = std::filesystem::path(o.diff).filename().string();
  p.origin = "cli:" + file_name;
  if (p.title == "backport " + file_name) p.title = "hone patch apply " + file_name;  // no mail Subject
  auto facts = patch::Summarize(p.diff, o.target, &(*gate)->rules());
  policy::Action a{.kind = policy::ActionKind::kApplyPatch, .role = "user", .actor = "user", .subject = p.id};
  if (facts) {
    a.patch = *facts;
  } else {
    a.patch.target = o.target;
    a.patch.diff_sha256 = sys::Sha256Hex(p.diff);
    a.patch.files = {"?"};
  }
  policy::PolicyDecision d = (*gate)->Decide(a);
  if (!o.signed_off_by.empty()) {
    policy::PolicyDecision r = (*gate)->RecordReview(
        "user", policy::CriticReview{p.id, sys::Sha256Hex(p.diff), o.signed_off_by, policy::CriticVerdict::kApprove,
                                     "signed off on the command line"});
    if (!r.allowed) std::fprintf(stderr, "hone: sign-off refused: %s\n", r.ToString().c_str());
  }
  auto ex = patch::PatchExecutor::Create(eo, **gate);
  if (!ex) return ReportError(ex.error());
  bool keep = o.keep;
  patch::MeasureFn measure = [keep](const patch::BuiltTree& t) -> Result<patch::Measurement> {
    if (keep) return patch::Measurement{Verdict::kKeep, "kept on request (--keep) after a successful build"};
    return patch::Measurement{Verdict::kInconclusive,
                              "dry run: " + std::string(t.build_seconds >= 0 ? "it builds" : "it applies") +
                                  "; pass --keep --signed-off-by NAME to keep it"};
  };
  std::fprintf(stderr, "hone: applying %s to %s (work root %s)\n", o.diff.c_str(), eo.repo.string().c_str(),
               eo.work_root.string().c_str());
  auto rec = (*ex)->Run(p, d, measure);
  if (!rec) return ReportError(rec.error());
  PrintRecord(*rec);
  return rec->verdict == patch::PatchVerdict::kKept ||
                 (!keep && rec->verdict == patch::PatchVerdict::kReverted && rec->stopped_by.empty())
             ? 0
             : 1;
}

}  // namespace

Action RegisterPatch(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("patch", "Check or apply a source patch through the policy gate");
  cmd->require_subcommand(1);
  auto o = std::make_shared<PatchOpts>();
  auto* rules = cmd->add_subcommand("rules", "List the policy rules (id, type, hint)");
  auto* check = cmd->add_subcommand("check", "Validate a diff against the policy rules without applying it");
  auto* apply = cmd->add_subcommand("apply", "Apply a diff in a worktree, rebuild, then keep (--keep) or revert");
  for (CLI::App* sub : {rules, check, apply}) {
    sub->add_option("--rules", o->rules, "Policy rules file (default: data/policy/rules.yaml)");
  }
  for (CLI::App* sub : {check, apply}) {
    sub->add_option("diff", o->diff, "Unified diff or git format-patch file")->required();
    sub->add_option("--target", o->target, "Which allowed-file rule applies (default: llama.cpp)");
  }
  apply->add_option("--repo", o->repo, "Git work tree to patch (default: the provisioned llama.cpp source)");
  apply->add_option("--work-root", o->work_root, "Where the worktree and build dir live (outside the repo)");
  apply->add_option("--id", o->id, "Proposal id (branch hone/p/<id>)");
  apply->add_option("--signed-off-by", o->signed_off_by, "Review the diff yourself (needed to keep it)");
  apply->add_flag("--keep", o->keep, "Keep the patch when it builds (commit onto hone/accepted)");
  apply->add_flag("--no-build", o->no_build, "Apply and validate only");
  apply->add_option("-j,--jobs", o->jobs, "Parallel build jobs (default: all CPUs)");
  apply->add_option("--build-timeout", o->build_timeout_s, "Build time limit in seconds (default: the rules')");
  return [o, &ctx, rules, check, apply]() -> int {
    if (rules->parsed()) return RunRules(*o, ctx);
    if (check->parsed()) return RunCheck(*o, ctx);
    if (apply->parsed()) return RunApply(*o, ctx);
    return 2;
  };
}

}  // namespace hone::cli
