// The session's roofline: the table entry of the device its engine runs on (the
// spec's override, the GPU for a GPU session, else the CPU by model or by its family
// rule in data/hardware.yaml), that device's ceilings measured at session start (the
// table's figures are leads), and the hook the coordinator asks for a measured
// configuration's headroom.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "core/config.h"
#include "core/error.h"
#include "roofline/gpu_probe.h"
#include "roofline/hardware.h"
#include "roofline/host_probe.h"
#include "roofline/model_spec.h"
#include "run/context.h"
#include "session/services.h"
#include "spec/session_spec.h"
#include "sys/machine.h"

namespace hone::run {

using RooflineHook =
    std::function<Result<session::RooflineNote>(const Config& config, double total_tps, double output_tps)>;

// The probes that measure a device's ceilings (the real ones by default; tests fake them).
struct CeilingProbes {
  std::function<Result<double>(int threads)> read_bandwidth;
  std::function<Result<roofline::ComputePeaks>(int threads)> cpu_compute;
  // The last-level cache: its size in bytes and its read bandwidth (bytes/s).
  std::function<Result<std::pair<double, double>>(int threads)> cpu_cache;
  std::function<Result<roofline::GpuCeilings>()> gpu;
};
CeilingProbes RealCeilingProbes(const RunContext& ctx);

// The table entry for the device the session's engine runs on; nullopt when the
// table has none for it (the session runs without a roofline).
std::optional<roofline::Hardware> SessionHardware(const roofline::HardwareTable& table, const spec::SessionSpec& spec,
                                                  const sys::MachineInfo& machine);

// `hw` with the ceilings the probes measured on this host (a probe that fails leaves
// the table's figures, with a warning for the GPU's).
// `when` words the probes' source ("at session start").
roofline::Hardware WithProbedCeilings(roofline::Hardware hw, const sys::MachineInfo& machine,
                                      const CeilingProbes& probes, const char* when = "at session start");

// The hook: bounds for the spec's workload on `hw` and `model`, and the measured
// throughput's place under them.
RooflineHook MakeRooflineHook(const roofline::Hardware& hw, const roofline::ModelSpec& model,
                              const spec::SessionSpec& spec);

// All of the above for a session: null when the device or the model's shape is
// unknown; a broken data/hardware.yaml is an error naming it.
Result<RooflineHook> BuildRoofline(const spec::SessionSpec& spec, const std::string& model_path,
                                   const sys::MachineInfo& machine, const RunContext& ctx,
                                   const CeilingProbes& probes);

}  // namespace hone::run
