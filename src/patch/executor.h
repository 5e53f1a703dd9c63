// PatchExecutor: takes a proposed diff from "approved to try" to "kept" or "undone",
// on an isolated worktree of a target's source tree, never touching the live tree.
//
// Run() does, in order: check the gate's apply decision and verify its token against
// the exact diff text; validate the diff (size, paths, binary, modes: validate.h);
// check out the last accepted commit in a fresh worktree on its own branch; detect
// the strip level (-p1, 0, 2, 3, 4) with `git apply --check`, checking the allowed
// files and symlinks at each level, falling back to `git apply --3way`; confirm that
// applying changed only the files the diff names; rebuild incrementally (build.h);
// call the measurement callback; on KEEP ask the gate for merge_patch, which needs a
// critic's sign-off of this exact diff, verify that token again here, commit only the
// touched files and advance the accepted branch; otherwise reset the worktree to the
// accepted commit and prove it identical. Every path ends in one PatchRecord.
//
// The accepted line is the branch <prefix>/accepted in the live repository. It starts
// at the live HEAD; when the live tree has uncommitted changes to tracked files they
// are captured the way `git stash` does (`git stash create`, which writes objects but
// leaves the working tree, the index and the stash list alone) and the accepted line
// starts from a commit of that snapshot, so proposals build on what the user has.
// The live working tree is fingerprinted before and after every run (git.h); a change
// is reported as an internal error.
//
// Owns its worktree slot and build directory under work_root (held with a file lock:
// one executor per work root). Not thread-safe: proposals run one at a time.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/verdict.h"
#include "patch/build.h"
#include "patch/record.h"
#include "policy/gate.h"
#include "sys/files.h"

namespace hone::patch {

// What the session's measurement protocol concluded about a built proposal (only a
// KEEP is merged).
struct Measurement {
  Verdict verdict = Verdict::kInconclusive;
  std::string reason;  // one line ("+4.1% tok/s, CI [2.0, 6.3]", "/props shows total_slots=2")
};

// What the measurement callback gets: the patched tree and its build.
struct BuiltTree {
  std::string proposal_id;
  std::filesystem::path src_dir;    // the worktree (read-only by contract)
  std::filesystem::path build_dir;  // artifacts, e.g. bin/llama-server
  double build_seconds = -1;
};

// The session's measurement. An error counts as REVERT (recorded with its message).
using MeasureFn = std::function<Result<Measurement>(const BuiltTree&)>;

struct Proposal {
  std::string id;      // [A-Za-z0-9._-]{1,64}; names the branch and files
  std::string title;   // one line, the commit subject when kept
  std::string author;  // the actor that wrote the diff
  std::string origin = "proposal";
  std::string diff;  // a unified diff; the bytes the gate's token is bound to
};

// A backport of an upstream change given as a diff file (git format-patch or diff -u):
// the same path as any proposal, with origin "backport:<file name>" and the mail's
// Subject as title when there is one.
Result<Proposal> LoadBackport(const std::filesystem::path& diff_file, std::string id, std::string author);

struct ExecutorOptions {
  std::filesystem::path repo;              // the live tree: read, never written
  std::filesystem::path work_root;         // worktree slot, build dir, logs; must be outside repo
  std::string target;                      // selects the allowed-file rule ("llama.cpp")
  BuildRecipe recipe;                      // no build steps: nothing is built
  int jobs = 0;                            // build parallelism; 0 = number of CPUs
  std::chrono::seconds build_timeout{0};   // 0: the rules' build.timeout (and the recipe's)
  std::string branch_prefix = "hone";      // branches <prefix>/accepted and <prefix>/p/<id>
  std::string merge_role = "coordinator";  // the role merges are requested as
  std::string actor = "patch-executor";
  // Times the run and its build; runs the build steps. The real ones when null.
  sys::Clock* clock = nullptr;
  sys::ProcessRunner* runner = nullptr;
};

class PatchExecutor {
 public:
  // Opens the executor over a git work tree. kInvalidArgument when repo is not a git
  // work tree or work_root lies inside it; kUnavailable when another executor holds
  // work_root.
  static Result<std::unique_ptr<PatchExecutor>> Create(ExecutorOptions options, policy::Gate& gate);
  PatchExecutor(const PatchExecutor&) = delete;
  PatchExecutor& operator=(const PatchExecutor&) = delete;

  // Runs one proposal end to end (see the file comment). Outcomes (rejected, reverted,
  // kept) are records, not errors; an error means the machinery itself failed (git
  // missing, disk full, or the live tree changed), and a record is still kept.
  Result<PatchRecord> Run(const Proposal& proposal, const policy::PolicyDecision& apply_decision,
                          const MeasureFn& measure);

  const std::vector<PatchRecord>& records() const { return records_; }
  const std::string& accepted_commit() const { return accepted_; }
  std::string accepted_branch() const { return options_.branch_prefix + "/accepted"; }
  // Where proposal `id`'s build output goes (appended per build).
  std::filesystem::path BuildLogPath(const std::string& id) const {
    return options_.work_root / "logs" / (id + ".build.log");
  }
  // The longest the next builds may take (0: the rules' limit alone); a session sets it
  // to what its budget has left for a build.
  void SetBuildTimeout(std::chrono::seconds s) { options_.build_timeout = s; }
  // The commit holding the live tree's uncommitted changes ("" when it was clean).
  const std::string& live_snapshot() const { return live_snapshot_; }
  const std::filesystem::path& build_dir() const { return build_dir_; }

 private:
  PatchExecutor(ExecutorOptions options, policy::Gate& gate) : options_(std::move(options)), gate_(gate) {}

  ExecutorOptions options_;
  policy::Gate& gate_;
  std::unique_ptr<sys::FileLock> lock_;
  std::filesystem::path slot_;
  std::filesystem::path build_dir_;
  std::string accepted_;
  std::string live_snapshot_;
  std::vector<PatchRecord> records_;
};

}  // namespace hone::patch
