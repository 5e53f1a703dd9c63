// ExecutorPatchLane: the coordinator's PatchLane over the worktree patch executor
// (patch/executor.h) and the policy gate (policy/gate.h).
//
// Patches come from the spec (diff files: the user's own changes or upstream
// backports), so the user is the author and signs them off; the gate still checks
// every rule (allowed files, size, binary, mode) and the executor re-verifies the
// gate's token before it applies and again before it merges. A kept patch's server
// binary is copied out of the shared build directory (run_dir/bin/), because the
// next proposal rebuilds that directory. Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "patch/executor.h"
#include "policy/gate.h"
#include "session/coordinator.h"

namespace hone::session {

struct PatchLaneOptions {
  std::vector<std::string> diff_files;
  std::string repo;       // the target's live source tree (read, never written)
  std::string run_dir;    // work root and kept binaries live under it
  std::string rules_path; // data/policy/rules.yaml
  std::string target = "llama.cpp";
  patch::BuildRecipe recipe;
  std::string binary_in_build = "bin/llama-server";
  int jobs = 0;
  sys::Clock* clock = nullptr;            // the real one when null
  sys::ProcessRunner* runner = nullptr;   // runs the build steps; the real one when null
};

class ExecutorPatchLane final : public PatchLane {
 public:
  static Result<std::unique_ptr<ExecutorPatchLane>> Create(PatchLaneOptions options);
  std::vector<PatchIdea> Pending(const SessionState& state) override;
  Result<PatchResult> Try(const PatchIdea& idea,
                          const std::function<Result<bool>(const std::string& binary)>& measure) override;
  const patch::PatchExecutor& executor() const { return *executor_; }
  const policy::Gate& gate() const { return *gate_; }

 private:
  ExecutorPatchLane(PatchLaneOptions o, std::unique_ptr<policy::Gate> g)
      : options_(std::move(o)), gate_(std::move(g)) {}
  std::string IdFor(size_t index) const;

  PatchLaneOptions options_;
  std::unique_ptr<policy::Gate> gate_;
  std::unique_ptr<patch::PatchExecutor> executor_;
};

}  // namespace hone::session
