// The kernel backend protocol: how hone hands kernel work to a backend and what it reads
// back.
//
// hone writes a *package* (JSON, schema hone.kernel.package/v1): the workload, the
// hardware, the serving config that is best so far, and the kernel tasks (each task's
// spec, fully resolved, with its SHA-256 and the op's table keys). It then runs the
// backend as a child process in its own process group:
//     <backend argv...> --package PACKAGE.json --result RESULT.json
// and reads RESULT.json (schema hone.kernel.result/v1): the accepted kernels with their
// claimed speedups, the rejected ones with a reason, and artifact paths. Exit code 0
// means ok or no_gain; anything else is a failed backend. The built-in lane
// (kernels/bench/kbench.py lane) is one backend; any external one (a GEAK-like agent)
// plugs in the same way. Claims are never results: VerifyClaims (verify.h) re-measures
// them with hone's harness before anything is kept.
//
// JSON stays at this edge: callers see typed structs. Functions are thread-compatible;
// RunBackend blocks until the child exits or the timeout kills its group.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "sys/process.h"
#include "kernel/task_spec.h"

namespace hone::kernel {

struct PackageInput {
  std::string workload;                           // free text or a workload id
  std::string device;                             // e.g. "NVIDIA H200"
  std::string arch;                               // e.g. "sm_90a"
  std::map<std::string, std::string> best_config;  // the serving knobs that are best so far
  std::vector<KernelTaskSpec> tasks;
};

// Serializes the package. Each task carries its op's dtype/key dims from the catalogue.
Result<std::string> WritePackageJson(const PackageInput& in, const OpCatalog& catalog);

struct KernelConfigRef {
  int index = -1;        // index in the family's parameter space (the built-in lane's library)
  std::string name;      // "threads=256,vpt=2"
  int num_splits = 1;    // runtime split factor (decode attention)
};

struct KernelClaim {
  std::string task_id;
  std::string op;
  std::string case_id;
  KernelConfigRef config;
  std::string baseline;       // the baseline impl the claim is against
  double claimed_speedup = 0;  // baseline_ms / candidate_ms as the backend measured it
  std::string reason;         // for rejected claims
};

struct BackendResult {
  std::string backend;
  std::string status;  // ok | no_gain
  std::vector<KernelClaim> accepted;
  std::vector<KernelClaim> rejected;
  std::map<std::string, std::string> artifacts;  // name -> path (flattened: "tuning.<task>")
  std::string compiler;
};

Result<BackendResult> ParseBackendResult(const std::string& text, const std::string& source_name);

struct BackendCommand {
  std::vector<std::string> argv;  // the backend; --package/--result are appended
  std::chrono::milliseconds timeout{std::chrono::hours(2)};
  std::string log_path;  // the backend's stdout+stderr (empty: ring buffer only)
  sys::ProcessRunner* runner = nullptr;  // runs it; the real runner when null
};

// Runs the backend on a package file and parses its result file. kDeadlineExceeded when
// it runs past the timeout (its group is killed), kUnavailable when it exits non-zero or
// writes no result (the error carries the output tail).
Result<BackendResult> RunBackend(const BackendCommand& cmd, const std::string& package_path,
                                 const std::string& result_path);

}  // namespace hone::kernel
