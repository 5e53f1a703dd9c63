// Test fixture for the patch layer: a small git repository laid out like llama.cpp
// (tools/server, common, src, CMakeLists.txt, scripts) whose "server" is a one-file
// C++ program printing its default slot count, so a real compiler build takes a
// fraction of a second. It also commits two symlinks that point out of the tree
// (into a sibling "outside" directory holding a sentinel file), for the hostile
// corpus. Used by the fast tests; the slow test uses a clone of the real llama.cpp.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "core/error.h"
#include "patch/executor.h"
#include "policy/gate.h"
#include "sys/files.h"

namespace hone::patch::testing {

namespace fs = std::filesystem;

struct Fixture {
  std::unique_ptr<sys::TempDir> dir;
  fs::path live;       // the "live tree" (a git repo with one commit on main)
  fs::path work_root;  // for the executor
  fs::path outside;    // outside/secret.txt: what the committed symlinks point at

  static Result<Fixture> Create();
  // g++ of tools/server/server.cpp into {build}/bin/llama-server.
  BuildRecipe Recipe() const;
  ExecutorOptions Options() const;
};

// Runs `sh -c script` in `dir`; fails the calling test on a non-zero exit.
std::string Sh(const fs::path& dir, const std::string& script);

// A hash of every file under `root` (except .git) by path, type and content: an
// independent check that the live tree is byte-identical.
std::string WalkHash(const fs::path& root);

// Runs {build}/bin/llama-server and keeps when it prints "n_parallel=<want>".
MeasureFn ExpectParallel(int want);

// The gate's apply decision for `p` (as a specialist) and, when `sign_off`, a
// critic's approval of the same diff.
policy::PolicyDecision Approve(policy::Gate& gate, const Proposal& p, const std::string& target, bool sign_off = true);

// The shipped rules (data/policy/rules.yaml) in a fresh gate.
std::unique_ptr<policy::Gate> ShippedGate();

// The fixture's good change: the default slot count 4 -> `to`.
std::string ParallelDiff(int to);

}  // namespace hone::patch::testing
