#include "patch/executor.h"

#include <algorithm>
#include <set>

#include "core/strings.h"
#include "patch/diff.h"
#include "patch/git.h"
#include "patch/validate.h"
#include "sys/clock.h"

namespace hone::patch {
namespace {

namespace fs = std::filesystem;

constexpr int kStripCandidates[] = {1, 0, 2, 3, 4};

bool ValidId(std::string_view id) {
  if (id.empty() || id.size() > 64 || id.front() == '.' || id.front() == '-') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

std::string FirstLine(std::string_view text) {
  std::string_view t = Trim(text);
  size_t nl = t.find('\n');
  return std::string(nl == std::string_view::npos ? t : t.substr(0, nl)).substr(0, 300);
}

bool IsInside(const fs::path& child, const fs::path& parent) {
  auto c = child.lexically_normal().string();
  auto p = parent.lexically_normal().string();
  if (!p.empty() && p.back() != '/') p += '/';
  return c == parent.lexically_normal().string() || c.rfind(p, 0) == 0;
}

// Paths `git status --porcelain -z` reports as changed (both sides of a rename).
Result<std::set<std::string>> ChangedPaths(const fs::path& tree) {
  HONE_ASSIGN_OR_RETURN(std::string out, GitOut(tree, {"status", "--porcelain", "-z", "--untracked-files=all"}));
  std::set<std::string> paths;
  std::vector<std::string> parts = Split(out, '\0');
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& e = parts[i];
    if (e.size() < 4) continue;
    paths.insert(e.substr(3));
    if ((e[0] == 'R' || e[0] == 'C') && i + 1 < parts.size()) paths.insert(parts[++i]);
  }
  return paths;
}

}  // namespace

Result<Proposal> LoadBackport(const fs::path& diff_file, std::string id, std::string author) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(diff_file));
  Proposal p;
  p.id = std::move(id);
  p.author = std::move(author);
  p.origin = "backport:" + diff_file.filename().string();
  p.title = "backport " + diff_file.filename().string();
  for (const std::string& line : Split(text.substr(0, std::min<size_t>(text.size(), 8192)), '\n')) {
    if (line.rfind("diff --git ", 0) == 0 || line.rfind("--- ", 0) == 0) break;
    if (line.rfind("Subject: ", 0) == 0) {
      std::string subject(Trim(line.substr(9)));
      if (subject.rfind("[PATCH", 0) == 0 && subject.find(']') != std::string::npos) {
        subject = std::string(Trim(subject.substr(subject.find(']') + 1)));
      }
      if (!subject.empty()) p.title = "backport: " + subject;
      break;
    }
  }
  p.diff = std::move(text);
  return p;
}

Result<std::unique_ptr<PatchExecutor>> PatchExecutor::Create(ExecutorOptions options, policy::Gate& gate) {
  auto top = GitOut(options.repo, {"rev-parse", "--show-toplevel"});
  if (!top) return InvalidArgument(options.repo.string() + " is not a git work tree: " + top.error().message);
  options.repo = *top;
  if (options.work_root.empty()) return InvalidArgument("the patch executor needs a work root");
  std::error_code ec;
  fs::create_directories(options.work_root, ec);
  if (ec) return FailedPrecondition("cannot create " + options.work_root.string() + ": " + ec.message());
  fs::path work_root = fs::canonical(options.work_root, ec);
  if (ec) return FailedPrecondition("cannot resolve " + options.work_root.string() + ": " + ec.message());
  if (IsInside(work_root, fs::canonical(options.repo, ec))) {
    return InvalidArgument("the work root " + work_root.string() + " lies inside the live tree " +
                           options.repo.string() + "; choose a directory outside it");
  }
  options.work_root = work_root;
  if (!ValidId(options.branch_prefix)) return InvalidArgument("bad branch prefix '" + options.branch_prefix + "'");
  if (gate.rules().FilesFor(options.target) == nullptr) {
    return InvalidArgument("no patch_files rule for target '" + options.target + "' in the policy rules");
  }

  std::unique_ptr<PatchExecutor> ex(new PatchExecutor(std::move(options), gate));
  const ExecutorOptions& o = ex->options_;
  auto lock = sys::FileLock::TryAcquire(o.work_root / ".lock");
  if (!lock) return Unavailable("another patch executor is using " + o.work_root.string());
  ex->lock_ = std::move(*lock);
  ex->slot_ = o.work_root / "slot";
  ex->build_dir_ = ex->slot_ / "build";
  HONE_TRY(sys::EnsureDir(o.work_root / "logs"));
  HONE_TRY(sys::EnsureDir(o.work_root / "diffs"));

  const std::string ref = "refs/heads/" + ex->accepted_branch();
  auto existing = RunGit(o.repo, {"rev-parse", "--verify", "-q", ref + "^{commit}"});
  if (!existing) return Fail(existing.error());
  if (existing->status.success()) {
    ex->accepted_ = std::string(Trim(existing->output));  // resume on the existing accepted line
    return ex;
  }
  HONE_ASSIGN_OR_RETURN(std::string head, GitOut(o.repo, {"rev-parse", "--verify", "HEAD^{commit}"}));
  std::string base = head;
  HONE_ASSIGN_OR_RETURN(std::string dirty, GitOut(o.repo, {"status", "--porcelain", "--untracked-files=no"}));
  if (!dirty.empty()) {
    HONE_ASSIGN_OR_RETURN(std::string stash, GitOut(o.repo, {"stash", "create", "hone: live tree snapshot"}));
    if (!stash.empty()) {
      HONE_ASSIGN_OR_RETURN(base, GitOut(o.repo, {"commit-tree", stash + "^{tree}", "-p", head, "-m",
                                                  "hone: snapshot of uncommitted changes in the live tree"}));
      ex->live_snapshot_ = base;
    }
  }
  HONE_TRY(GitOut(o.repo, {"update-ref", "-m", "hone: accepted line", ref, base, std::string(40, '0')}));
  ex->accepted_ = base;
  return ex;
}

Result<PatchRecord> PatchExecutor::Run(const Proposal& proposal, const policy::PolicyDecision& apply_decision,
                                       const MeasureFn& measure) {
  sys::Clock& clock = options_.clock != nullptr ? *options_.clock : sys::DefaultClock();
  const double start = clock.MonoSeconds();
  const policy::Rules& rules = gate_.rules();
  PatchRecord rec;
  rec.proposal_id = proposal.id;
  rec.title = FirstLine(proposal.title);
  rec.author = proposal.author;
  rec.origin = proposal.origin;
  rec.diff_sha256 = sys::Sha256Hex(proposal.diff);
  rec.base_commit = accepted_;

  HONE_ASSIGN_OR_RETURN(const std::string live_before, TreeFingerprint(options_.repo));
  std::unique_ptr<Worktree> wt;
  // Every exit goes through here: the worktree is removed, the live tree re-checked.
  auto finish = [&](PatchVerdict verdict, std::string rule, std::string reason) -> Result<PatchRecord> {
    rec.verdict = verdict;
    rec.stopped_by = std::move(rule);
    rec.reason = FirstLine(reason);
    Status removed = wt ? wt->Remove() : Ok();
    wt.reset();
    rec.total_seconds = clock.MonoSeconds() - start;
    records_.push_back(rec);
    if (!removed) return Fail(std::move(removed).error());
    auto live_after = TreeFingerprint(options_.repo);
    if (!live_after) return Fail(live_after.error());
    if (*live_after != live_before) {
      return Internal("the live tree " + options_.repo.string() + " changed while proposal " + proposal.id +
                      " ran (this is a bug in the patch executor)");
    }
    return rec;
  };
  auto reject = [&](const std::string& rule, const std::string& reason) {
    return finish(PatchVerdict::kRejected, rule, reason);
  };
  // Undo everything in the worktree and prove it equals the accepted commit.
  auto revert = [&](const std::string& rule, const std::string& reason) -> Result<PatchRecord> {
    auto reset = GitOut(wt->path(), {"reset", "-q", "--hard", accepted_});
    auto clean = GitOut(wt->path(), {"clean", "-q", "-ffdx"});
    auto tree = GitOut(wt->path(), {"rev-parse", "HEAD^{tree}"});
    auto want = GitOut(wt->path(), {"rev-parse", accepted_ + "^{tree}"});
    auto changed = ChangedPaths(wt->path());
    rec.reset_verified = reset && clean && tree && want && *tree == *want && changed && changed->empty();
    return finish(PatchVerdict::kReverted, rule, reason);
  };

  // 1. The gate's decision, and its token bound to exactly this diff.
  if (!ValidId(proposal.id)) {
    return reject(policy::kRuleActionMalformed,
                  "proposal id '" + proposal.id.substr(0, 80) + "' is not [A-Za-z0-9._-]{1,64}");
  }
  if (!apply_decision.allowed) {
    return reject(apply_decision.rule_id, "the gate denied apply_patch: " + apply_decision.message);
  }
  if (auto v = gate_.Verify(apply_decision.token, policy::ActionKind::kApplyPatch, proposal.id, rec.diff_sha256); !v) {
    return reject(policy::kRuleTokenInvalid, v.error().message);
  }

  // 2. The diff itself, before anything touches a tree.
  if (auto v = CheckDiffSize(proposal.diff.size(), rules)) return reject(v->rule_id, v->message);
  auto parsed = ParseDiff(proposal.diff);
  if (!parsed) {
    Violation v = ParseViolation(parsed.error(), rules);
    return reject(v.rule_id, v.message);
  }
  const Diff& diff = *parsed;
  rec.diffstat = DiffStat(diff);
  rec.files_changed = static_cast<int>(diff.files.size());
  rec.lines_added = diff.added;
  rec.lines_removed = diff.removed;
  if (auto guess = TouchedPaths(diff, GuessStrip(diff))) rec.files = *guess;
  if (auto v = CheckDiff(diff, rules)) return reject(v->rule_id, v->message);

  // 3. A fresh worktree of the accepted commit.
  fs::path diff_file = options_.work_root / "diffs" / (proposal.id + ".diff");
  HONE_TRY(sys::WriteFileAtomic(diff_file, proposal.diff));
  auto created =
      Worktree::Create(options_.repo, slot_ / "src", options_.branch_prefix + "/p/" + proposal.id, accepted_);
  if (!created) {
    (void)reject("", "could not create the worktree: " + created.error().message);
    return Fail(std::move(created).error());
  }
  wt = std::move(*created);

  // 4. Strip level, allowed files and symlinks at that level, then apply.
  std::optional<Violation> first_violation;
  std::vector<std::pair<int, std::vector<std::string>>> viable;
  std::string apply_error;
  int chosen = -1;
  std::vector<std::string> touched;
  for (int strip : kStripCandidates) {
    auto paths = TouchedPaths(diff, strip);
    if (!paths) continue;
    std::optional<Violation> v = CheckFiles(*paths, rules, options_.target);
    if (!v) v = CheckTree(wt->path(), *paths);
    if (v) {
      if (!first_violation) first_violation = v;
      continue;
    }
    viable.emplace_back(strip, *paths);
    HONE_ASSIGN_OR_RETURN(auto check, RunGit(wt->path(), {"apply", "--check", "--whitespace=nowarn",
                                                          "-p" + std::to_string(strip), diff_file.string()}));
    if (check.status.success()) {
      chosen = strip;
      touched = *paths;
      break;
    }
    if (apply_error.empty()) apply_error = FirstLine(check.output);
  }
  if (chosen < 0 && viable.empty()) {
    if (first_violation) return reject(first_violation->rule_id, first_violation->message);
    return reject(policy::kRuleNotADiff, "no strip level (-p0..4) leaves every path with a name");
  }
  if (chosen < 0) {
    for (const auto& [strip, paths] : viable) {
      HONE_ASSIGN_OR_RETURN(auto three, RunGit(wt->path(), {"apply", "--3way", "--whitespace=nowarn",
                                                            "-p" + std::to_string(strip), diff_file.string()}));
      if (three.status.success()) {
        chosen = strip;
        touched = paths;
        rec.three_way = true;
        break;
      }
      HONE_TRY(GitOut(wt->path(), {"reset", "-q", "--hard", accepted_}));
      HONE_TRY(GitOut(wt->path(), {"clean", "-q", "-ffdx"}));
    }
    if (chosen < 0)
      return reject(policy::kRuleDoesNotApply,
                    "the diff does not apply to " + accepted_.substr(0, 12) + ": " + apply_error);
  } else {
    HONE_ASSIGN_OR_RETURN(auto applied, RunGit(wt->path(), {"apply", "--whitespace=nowarn",
                                                            "-p" + std::to_string(chosen), diff_file.string()}));
    if (!applied.status.success()) {
      return revert(policy::kRuleDoesNotApply, "git apply failed after its check passed: " + FirstLine(applied.output));
    }
  }
  rec.strip = chosen;
  rec.files = touched;

  // 5. Applying may only have changed what the diff names.
  HONE_ASSIGN_OR_RETURN(std::set<std::string> changed, ChangedPaths(wt->path()));
  for (const std::string& p : changed) {
    if (!std::binary_search(touched.begin(), touched.end(), p)) {
      return revert(policy::kRuleUndeclaredChange, "applying changed '" + p + "', which the diff does not name");
    }
  }

  // 6. Rebuild.
  BuiltTree built{proposal.id, wt->path(), build_dir_, -1};
  if (!options_.recipe.build.empty()) {
    const std::string digest = options_.recipe.Digest();
    HONE_ASSIGN_OR_RETURN(int left_new, PrepareIncremental(wt->path(), build_dir_, digest, accepted_, touched));
    rec.incremental = left_new >= 0;
    double limit_s = rules.build_timeout.seconds;
    if (options_.build_timeout.count() > 0)
      limit_s = std::min(limit_s, static_cast<double>(options_.build_timeout.count()));
    BuildPaths paths{wt->path(), build_dir_, slot_, BuildLogPath(proposal.id), options_.jobs};
    BuildResult b = RunBuild(options_.recipe, paths, std::chrono::milliseconds(static_cast<int64_t>(limit_s * 1000)),
                             options_.runner != nullptr ? *options_.runner : sys::DefaultProcessRunner(), clock);
    rec.build_seconds = b.seconds;
    built.build_seconds = b.seconds;
    if (!b.ok) {
      rec.build_log_tail = b.log_tail;
      if (b.timed_out) return revert(rules.build_timeout.info.id, b.message);
      return revert(policy::kRuleBuildFailed, b.message);
    }
    HONE_TRY(FinishBuildState(build_dir_, digest, accepted_, touched));
  }

  // 7. Measure.
  auto m = measure ? measure(built) : Result<Measurement>(Measurement{Verdict::kInconclusive, "no measurement given"});
  if (!m) {
    rec.measure_verdict = "error";
    return revert("", "the measurement failed: " + m.error().message);
  }
  rec.measure_verdict = ToLower(VerdictName(m->verdict));
  if (m->verdict != Verdict::kKeep) return revert("", "measured " + rec.measure_verdict + ": " + m->reason);

  // 8. Merge: the gate needs a critic's sign-off of this diff; the token is checked again here.
  policy::Action merge;
  merge.kind = policy::ActionKind::kMergePatch;
  merge.role = options_.merge_role;
  merge.actor = options_.actor;
  merge.subject = proposal.id;
  merge.patch.target = options_.target;
  merge.patch.diff_sha256 = rec.diff_sha256;
  merge.patch.files = touched;
  merge.patch.diff_bytes = proposal.diff.size();
  merge.patch.lines_added = diff.added;
  merge.patch.lines_removed = diff.removed;
  policy::PolicyDecision merge_decision = gate_.Decide(merge);
  if (!merge_decision.allowed) {
    return revert(merge_decision.rule_id,
                  "measured KEEP (" + m->reason + ") but the gate denied the merge: " + merge_decision.message);
  }
  if (auto v = gate_.Verify(merge_decision.token, policy::ActionKind::kMergePatch, proposal.id, rec.diff_sha256); !v) {
    return revert(policy::kRuleTokenInvalid, v.error().message);
  }

  // 9. Commit only the touched files and advance the accepted line.
  std::vector<std::string> add = {"add", "-A", "--"};
  add.insert(add.end(), touched.begin(), touched.end());
  HONE_TRY(GitOut(wt->path(), add));
  HONE_ASSIGN_OR_RETURN(std::string staged, GitOut(wt->path(), {"diff", "--cached", "--name-only", "-z"}));
  for (const std::string& p : Split(staged, '\0')) {
    if (!p.empty() && !std::binary_search(touched.begin(), touched.end(), p)) {
      return revert(policy::kRuleUndeclaredChange, "'" + p + "' would be committed but the diff does not name it");
    }
  }
  std::string signoff;
  for (const std::string& line : Split(merge_decision.token.claims, '\n')) {
    if (line.rfind("signoff=", 0) == 0) signoff = line.substr(8);
  }
  std::string message = (rec.title.empty() ? "hone patch " + proposal.id : rec.title) + "\n\n" +
                        "hone-proposal: " + proposal.id + "\nhone-origin: " + proposal.origin +
                        "\nhone-author: " + proposal.author + "\nhone-diff-sha256: " + rec.diff_sha256 +
                        "\nhone-critic: " + signoff + "\nhone-measure: " + FirstLine(m->reason) + "\n";
  HONE_TRY(GitOut(wt->path(), {"commit", "-q", "--no-verify", "-m", message}));
  HONE_ASSIGN_OR_RETURN(std::string commit, GitOut(wt->path(), {"rev-parse", "HEAD"}));
  HONE_TRY(GitOut(options_.repo, {"update-ref", "-m", "hone: keep " + proposal.id, "refs/heads/" + accepted_branch(),
                                  commit, accepted_}));
  accepted_ = commit;
  rec.commit = commit;
  return finish(PatchVerdict::kKept, "", "measured keep: " + m->reason);
}

}  // namespace hone::patch
