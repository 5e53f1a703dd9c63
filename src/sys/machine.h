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
  // The device an engine with `num_gpus` GPUs runs on: the GPU ("nvidia-h200",
  // "nvidia-h200-x2") when num_gpus > 0 and a GPU is present, else the CPU
  // ("cpu-amd-epyc-7b13-2c"), also on a GPU host.
  std::string SlugFor(int num_gpus) const;
};

MachineInfo DescribeMachine();

}  // namespace hone::sys
