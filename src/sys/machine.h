// What machine hone runs on: CPU model and count, memory, GPUs (via nvidia-smi when
// present). Used to name the hardware in recipes and reports.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hone::sys {

struct MachineInfo {
  std::string cpu_model;  // "AMD EPYC 7B13"
  int cpus = 1;
  // The host's physical cores as llama.cpp counts them for its `auto` thread count:
  // distinct thread-sibling sets among the online CPUs, affinity ignored (0: unknown).
  int physical_cores = 0;
  uint64_t memory_bytes = 0;
  std::vector<std::string> gpus;  // "NVIDIA H200"
  // A stable slug: "nvidia-h200" (first GPU) or "cpu-amd-epyc-7b13-2c".
  std::string Slug() const;
  // The device an engine with `num_gpus` GPUs runs on: the GPU ("nvidia-h200",
  // "nvidia-h200-x2") when num_gpus > 0 and a GPU is present, else the CPU
  // ("cpu-amd-epyc-7b13-2c"), also on a GPU host.
  std::string SlugFor(int num_gpus) const;
};

MachineInfo DescribeMachine();
// The physical cores under `sysfs_cpu` ("/sys/devices/system/cpu"): the distinct
// cpuN/topology/thread_siblings lists, N = 0, 1, ... until one is missing; 0 when none.
int CountPhysicalCores(const std::string& sysfs_cpu = "/sys/devices/system/cpu");
// The ids of the CPUs this process may run on (its affinity mask), ascending.
std::vector<int> AvailableCpus();

// How busy the host is right now (Linux /proc/loadavg; nullopt elsewhere): the 1-minute
// load average, and the tasks runnable at this instant other than the caller. A
// recording on a shared machine waits for a quiet moment with these and states the load
// its measurements were taken under.
struct HostLoad {
  double load_1min = 0;
  int runnable = 0;
};
std::optional<HostLoad> ReadHostLoad();

}  // namespace hone::sys
