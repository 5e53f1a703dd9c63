// What machine hone runs on: CPU model and count, memory, GPUs (via nvidia-smi when
// present). Used to name the hardware in recipes and reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hone::sys {

struct MachineInfo {
  std::string cpu_model;  // "AMD EPYC 7B13"
  int cpus = 1;
  uint64_t memory_bytes = 0;
  std::vector<std::string> gpus;  // "NVIDIA H200"
  // A stable slug: "nvidia-h200" (first GPU) or "cpu-amd-epyc-7b13-2c".
  std::string Slug() const;
};

MachineInfo DescribeMachine();

}  // namespace hone::sys
