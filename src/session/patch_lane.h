// ExecutorPatchLane: the coordinator's PatchLane over the worktree patch executor
// (patch/executor.h) and the policy gate (policy/gate.h).
//
// Patches come from two places. The spec's diff files (the user's own changes or
// upstream backports): the user is the author and signs them off. And goals a
// PatchWriter (the specialist agent, wired in run/agents.h) turns into diffs during
// the session, written against the accepted line and signed off (or refused) by the
// writer's reviewer (the critic), never by their author. Either way the gate checks
// every rule (allowed files, size, binary, mode) and the executor re-verifies the
// gate's token before it applies and again before it merges. A writer that produces
// no usable diff, and a reviewer that refuses one, is a recorded rejection (nothing
// is built). Spec diffs are tried first, then the goals, in order. A kept patch's
// server binary is copied out of the shared build directory (run_dir/bin/), because
// the next proposal rebuilds that directory. Not thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "patch/executor.h"
#include "policy/gate.h"
#include "session/coordinator.h"

namespace hone::session {

// A source change to write during the session.
struct PatchGoal {
  std::string id;  // [A-Za-z0-9._-]{1,64}: the candidate's patch id, the proposal id
  std::string title;
  std::string goal;
  std::vector<std::string> files;  // repository-relative files the writer should read
};

// A diff written for a goal. Numbers in `summary` are claims, never measurements.
struct WrittenPatch {
  std::string diff;    // unified diff against the base commit it was asked for
  std::string author;  // the actor that wrote it ("specialist#1")
  std::string title;
  std::string summary;
};

// Writes diffs for goals and has them reviewed (the seam to the agent layer).
class PatchWriter {
 public:
  virtual ~PatchWriter() = default;
  // A diff for `goal` against `base_commit` of `repo` (read only). An error is the
  // writer's failure (no diff, one that does not apply, a backend error); kCancelled
  // means the session is being interrupted.
  virtual Result<WrittenPatch> Write(const PatchGoal& goal, const std::string& repo,
                                     const std::string& base_commit) = 0;
  // A reviewer's verdict on exactly `patch.diff` for the gate (Gate::RecordReview as
  // role "critic"). An error means no sign-off.
  virtual Result<policy::CriticReview> Review(const PatchGoal& goal, const WrittenPatch& patch) = 0;
};

// The branches a session's patch lane keeps in the target's checkout:
// "<prefix>/accepted" and "<prefix>/p/<id>", with a prefix of its own per run directory
// ("hone-<run dir name>-<8 hex>"). The checkout is shared by every session on the
// machine; one accepted line for all of them made a later session build its diffs on
// an earlier session's kept patch and credit that patch's gain to its own. A resumed
// session (the same run directory) continues its line.
std::string BranchPrefix(const std::string& run_dir);

struct PatchLaneOptions {
  std::vector<std::string> diff_files;
  std::vector<PatchGoal> goals;  // written by `writer` (required when goals are given)
  PatchWriter* writer = nullptr;
  std::string repo;       // the target's live source tree (read, never written)
  std::string run_dir;    // work root and kept binaries live under it
  std::string rules_path; // data/policy/rules.yaml
  std::string target = "llama.cpp";
  patch::BuildRecipe recipe;
  std::string binary_in_build = "bin/llama-server";
  int jobs = 0;
  sys::Clock* clock = nullptr;            // the real one when null
  sys::ProcessRunner* runner = nullptr;   // runs the build steps; the real one when null
  // One line per stage (writing, review, build, measurement): a rebuild takes minutes.
  std::function<void(const std::string& line)> progress;
};

class ExecutorPatchLane final : public PatchLane {
 public:
  static Result<std::unique_ptr<ExecutorPatchLane>> Create(PatchLaneOptions options);
  std::vector<PatchIdea> Pending(const SessionState& state) override;
  Result<PatchResult> Try(const PatchIdea& idea,
                          const std::function<Result<bool>(const std::string& binary)>& measure) override;
  void LimitBuild(std::chrono::seconds s) override { executor_->SetBuildTimeout(s); }
  const patch::PatchExecutor& executor() const { return *executor_; }
  const policy::Gate& gate() const { return *gate_; }

 private:
  ExecutorPatchLane(PatchLaneOptions o, std::unique_ptr<policy::Gate> g)
      : options_(std::move(o)), gate_(std::move(g)) {}
  std::string IdFor(size_t index) const;
  void Say(const std::string& line) const;
  // The gate, the sign-off, the executor and the measurement for one proposal whose
  // apply request is `action`.
  // `sign_off` runs once the gate allows the apply; false stops with `out` as recorded.
  Result<PatchResult> Run(const patch::Proposal& proposal, policy::Action action,
                          const std::function<Result<bool>(PatchResult& out)>& sign_off, const PatchIdea& idea,
                          const std::function<Result<bool>(const std::string& binary)>& measure);
  Result<PatchResult> TryGoal(const PatchGoal& goal, const PatchIdea& idea,
                              const std::function<Result<bool>(const std::string& binary)>& measure);

  PatchLaneOptions options_;
  std::unique_ptr<policy::Gate> gate_;
  std::unique_ptr<patch::PatchExecutor> executor_;
};

}  // namespace hone::session
