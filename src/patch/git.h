// Git plumbing for the patch executor: running real git safely, the Worktree that owns
// one isolated checkout, and a fingerprint of a working tree.
//
// RunGit runs git with a fixed environment: no system/global config (the repository's
// own config still applies), hooks disabled (core.hooksPath=/dev/null, so a checkout
// or commit runs nothing from the repository), no prompts, the C locale, a fixed
// identity, inherited GIT_DIR/GIT_WORK_TREE/GIT_INDEX_FILE removed, and optional
// locks off, so inspecting the live tree never rewrites its index.
//
// Worktree owns one `git worktree` checkout and its branch: the destructor removes
// both (git worktree remove --force, then branch -D); Release() keeps them for a
// post-mortem. Not copyable; not thread-safe.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "sys/process.h"

namespace hone::patch {

namespace fs = std::filesystem;

// Runs `git <args>` in `dir`. A non-zero exit is not an error here (see GitOut).
Result<sys::CommandOutput> RunGit(const fs::path& dir, const std::vector<std::string>& args,
                                  std::chrono::milliseconds timeout = std::chrono::minutes(5));
// Runs git and returns its output with trailing whitespace trimmed; a non-zero exit is
// kFailedPrecondition naming the command, with context "output_tail".
Result<std::string> GitOut(const fs::path& dir, const std::vector<std::string>& args,
                           std::chrono::milliseconds timeout = std::chrono::minutes(5));

class Worktree {
 public:
  // Checks out `base` (a commit) at `path` on branch `branch` (created, or reset when
  // a stale one is left from a crash). A stale checkout or registration at `path` is
  // removed first. `repo` is any directory of the main repository.
  static Result<std::unique_ptr<Worktree>> Create(const fs::path& repo, const fs::path& path, const std::string& branch,
                                                  const std::string& base);
  ~Worktree();
  Worktree(const Worktree&) = delete;
  Worktree& operator=(const Worktree&) = delete;

  const fs::path& path() const { return path_; }
  const std::string& branch() const { return branch_; }
  // Keeps the checkout and its branch on destruction.
  void Release() { released_ = true; }
  // Removes the checkout and the branch now, reporting failures (the destructor
  // does the same and ignores them). Idempotent.
  Status Remove();

 private:
  Worktree(fs::path repo, fs::path path, std::string branch)
      : repo_(std::move(repo)), path_(std::move(path)), branch_(std::move(branch)) {}
  fs::path repo_;
  fs::path path_;
  std::string branch_;
  bool released_ = false;
  bool removed_ = false;
};

// A SHA-256 over everything a person could see in a working tree: HEAD (commit and
// branch), the index entries (mode, blob, stage, path), every tracked or untracked
// non-ignored file's type, mode and content (a symlink by its target), and the stash
// list. Two calls return the same value if and only if none of that changed.
Result<std::string> TreeFingerprint(const fs::path& repo);

}  // namespace hone::patch
