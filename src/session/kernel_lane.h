// BackendKernelLane: the coordinator's KernelLane over the kernel backend protocol
// (kernel/protocol.h).
//
// It writes a package (workload, device, best configuration, kernel task specs) to
// run_dir/kernel/, runs the configured backend as a child process, and reads back the
// accepted kernels and their claimed speedups. A claim is never a result: the only
// way a kernel counts is as a serving configuration measured end to end by the
// session, so each accepted kernel is turned into a candidate through
// data/kernel/integration.yaml (framework -> op -> the knob changes that switch that
// kernel on). Kernels with no such mapping stay claims and the phase says so.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "session/coordinator.h"
#include "sys/process.h"

namespace hone::session {

struct KernelLaneOptions {
  std::vector<std::string> backend;     // argv; --package/--result are appended
  std::vector<std::string> task_files;  // kernel task specs (data/kernel/*.yaml)
  std::string ops_path;                 // data/kernel/ops.yaml
  std::string integration_path;         // data/kernel/integration.yaml
  std::string framework;
  std::string run_dir;
  std::string workload;
  std::string device;
  std::string arch;
  std::chrono::milliseconds timeout{std::chrono::hours(1)};
  sys::ProcessRunner* runner = nullptr;  // runs the backend; the real runner when null
};

class BackendKernelLane final : public KernelLane {
 public:
  explicit BackendKernelLane(KernelLaneOptions o) : o_(std::move(o)) {}
  Result<std::vector<search::Candidate>> Propose(const SessionState& state, std::string* note) override;

 private:
  KernelLaneOptions o_;
};

}  // namespace hone::session
