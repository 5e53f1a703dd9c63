// The session's optional lanes: source patches (the spec's diffs and the specialist's,
// through the policy gate and the worktree executor, rebuilt with the engine's own
// configure arguments)
// and a kernel backend (the spec's command over the kernel task specs in
// data/kernel/). Null when the spec asks for none.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "run/agents.h"
#include "run/context.h"
#include "run/engine.h"
#include "session/kernel_lane.h"
#include "session/patch_lane.h"
#include "spec/session_spec.h"
#include "sys/machine.h"

namespace hone::run {

// The patch lane over the spec's diff files and, when the agents run the specialist,
// its goals and writer (`agents` may be null). Null when there is nothing to try.
Result<std::unique_ptr<session::PatchLane>> BuildPatchLane(const spec::SessionSpec& spec, const Engine& engine,
                                                            const std::string& run_dir, const RunContext& ctx,
                                                            const Agents* agents = nullptr);

// The spec's kernel task files, or every task spec in data/kernel/ (sorted; its
// ops.yaml and integration.yaml are not tasks). An unreadable directory is an error.
Result<std::vector<std::string>> KernelTaskFiles(const spec::SessionSpec& spec, const std::string& data_dir);

Result<std::unique_ptr<session::KernelLane>> BuildKernelLane(const spec::SessionSpec& spec,
                                                              const sys::MachineInfo& machine,
                                                              const std::string& run_dir, const RunContext& ctx);

}  // namespace hone::run
