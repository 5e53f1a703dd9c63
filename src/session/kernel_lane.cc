#include "session/kernel_lane.h"

#include <cstdio>
#include <filesystem>

#include "core/strings.h"
#include "kernel/protocol.h"
#include "kernel/task_spec.h"
#include "spec/yaml.h"
#include "sys/files.h"

namespace hone::session {

namespace fs = std::filesystem;

Result<std::vector<search::Candidate>> BackendKernelLane::Propose(const SessionState& state, std::string* note) {
  HONE_ASSIGN_OR_RETURN(kernel::OpCatalog ops, kernel::OpCatalog::Load(o_.ops_path));
  kernel::PackageInput in;
  in.workload = o_.workload;
  in.device = o_.device;
  in.arch = o_.arch;
  for (const auto& [k, v] : state.best.values()) in.best_config[k] = v;
  for (const std::string& f : o_.task_files) {
    HONE_ASSIGN_OR_RETURN(kernel::KernelTaskSpec t, kernel::LoadTaskSpec(f, ops));
    in.tasks.push_back(std::move(t));
  }
  HONE_ASSIGN_OR_RETURN(std::string package, kernel::WritePackageJson(in, ops));
  fs::path dir = fs::path(o_.run_dir) / "kernel";
  HONE_TRY(sys::EnsureDir(dir));
  std::string package_path = (dir / "package.json").string();
  std::string result_path = (dir / "result.json").string();
  HONE_TRY(sys::WriteFileAtomic(package_path, package));
  HONE_ASSIGN_OR_RETURN(kernel::BackendResult r,
                        kernel::RunBackend({o_.backend, o_.timeout, (dir / "backend.log").string(), o_.runner}, package_path,
                                           result_path));
  // Which ops can be switched on in this framework, and how.
  std::map<std::string, Config> integration;
  if (sys::FileExists(o_.integration_path)) {
    HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(o_.integration_path));
    for (const auto& [op, knobs] : root[o_.framework].Entries()) {
      Config c;
      for (const auto& [k, v] : knobs.Entries()) {
        HONE_ASSIGN_OR_RETURN(std::string value, v.Str());
        c.Set(k, value);
      }
      integration[op] = c;
    }
  }
  std::vector<search::Candidate> out;
  std::vector<std::string> claims_only;
  std::set<std::string> ops_seen;
  for (const kernel::KernelClaim& claim : r.accepted) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %s x%.2f vs %s", claim.op.c_str(), claim.case_id.c_str(), claim.claimed_speedup,
                  claim.baseline.c_str());
    auto it = integration.find(claim.op);
    if (it == integration.end() || it->second.empty()) {
      claims_only.push_back(buf);
      continue;
    }
    if (!ops_seen.insert(claim.op).second) continue;  // one candidate per op
    search::Candidate c;
    c.idea = "kernel:" + claim.op;
    c.title = "switch on the tuned " + claim.op + " kernel";
    c.delta = it->second;
    c.rationale = std::string("backend ") + r.backend + " claims " + buf;
    c.expected_gain = claim.claimed_speedup - 1.0;  // a claim, never a result
    out.push_back(c);
  }
  *note = "backend " + r.backend + ": " + std::to_string(r.accepted.size()) + " kernels accepted, " +
          std::to_string(r.rejected.size()) + " rejected; " + std::to_string(out.size()) +
          " switched on for end-to-end measurement";
  if (!claims_only.empty()) {
    *note += "; claims only (no way to switch them on in " + o_.framework + " by configuration): " +
             Join(claims_only, "; ");
  }
  return out;
}

}  // namespace hone::session
