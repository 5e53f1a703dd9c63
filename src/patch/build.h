// Building a patched tree: the recipe (commands with {src}/{build}/{slot}/{jobs}
// placeholders, run with a deadline), and the bookkeeping that keeps rebuilds
// incremental across fresh per-proposal worktrees.
//
// Every proposal gets a fresh checkout at the same slot path, so all of its files are
// newer than the persistent build directory's outputs and a build tool would rebuild
// everything. BuildState records which tree the build directory was last built from
// (a base commit plus the files that may differ from it); PrepareIncremental then
// gives every file that provably has the same content an old timestamp, so ninja or
// make recompile only what changed. When the state is missing or was written for a
// different recipe, nothing is touched and the build is a full (ccache-backed) one.
// Functions only; not thread-safe with respect to the same build directory.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "sys/clock.h"
#include "sys/process.h"

namespace hone::patch {

struct BuildRecipe {
  std::string name;                                 // "llama.cpp llama-server (cmake/ninja)"
  std::vector<std::vector<std::string>> configure;  // once per build directory (until it succeeds)
  std::vector<std::vector<std::string>> build;      // every build
  std::map<std::string, std::string> env;           // e.g. CCACHE_BASEDIR={slot}
  std::vector<std::string> artifacts;               // relative to {build}; must exist afterwards
  std::chrono::seconds timeout{1800};               // configure + build, in total
  // A stable digest of the commands (BuildState is only trusted for the same recipe).
  std::string Digest() const;
};

// A CMake + Ninja recipe: configure with ccache as the compiler launcher and
// CCACHE_BASEDIR at the slot (so cache entries are reused across worktree paths), then
// build `targets`.
BuildRecipe CMakeRecipe(std::string name, const std::vector<std::string>& cmake_args,
                        const std::vector<std::string>& targets, const std::vector<std::string>& artifacts);

struct BuildResult {
  bool ok = false;
  bool timed_out = false;
  bool configured = false;  // the configure step ran this time
  double seconds = 0;
  std::string message;   // one line on failure
  std::string log_tail;  // the last lines of the failing command's output
};

struct BuildPaths {
  std::filesystem::path src;    // the worktree
  std::filesystem::path build;  // persistent build directory
  std::filesystem::path slot;   // parent of both (CCACHE_BASEDIR)
  std::filesystem::path log;    // the build log (appended)
  int jobs = 0;                 // 0 = number of CPUs
};

// Runs the recipe (configure when {build}/.hone-configured is missing) within
// min(recipe.timeout, timeout). Every command runs in its own process group and is
// killed with it on the deadline; `runner` runs them and `clock` times them.
BuildResult RunBuild(const BuildRecipe& recipe, const BuildPaths& paths, std::chrono::milliseconds timeout,
                     sys::ProcessRunner& runner, sys::Clock& clock);

// Which tree the build directory's outputs correspond to: `base` except for `dirty`.
struct BuildState {
  std::string recipe_digest;
  std::string base;
  std::set<std::string> dirty;
};
Result<BuildState> ReadBuildState(const std::filesystem::path& build_dir);
Status WriteBuildState(const std::filesystem::path& build_dir, const BuildState& state);

// Before a build of `new_base` plus `touched` in the fresh worktree `src`: gives an old
// timestamp to every tracked file whose content equals what the build directory was
// built from. Returns how many files were left new (changed) or -1 when no usable
// state exists. Also writes the pessimistic state for the coming build (so a build
// that dies half-way is still accounted for); call FinishBuildState after success.
Result<int> PrepareIncremental(const std::filesystem::path& src, const std::filesystem::path& build_dir,
                               const std::string& recipe_digest, const std::string& new_base,
                               const std::vector<std::string>& touched);
Status FinishBuildState(const std::filesystem::path& build_dir, const std::string& recipe_digest,
                        const std::string& base, const std::vector<std::string>& touched);

}  // namespace hone::patch
