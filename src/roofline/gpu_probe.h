// GPU probe: the GPU's own memory-bandwidth and matrix-unit ceilings, measured at
// session start on a GPU host, as the host probes measure a CPU's. The table's
// datasheet figures are leads; a bound that a real run beats is no bound.
//
// The probe is a CUDA program shipped as source (kernels/probe/gpu_ceilings.cu). It is
// compiled once per GPU architecture with the host's nvcc into the cache directory
// (about 20 s) and run (a few seconds); it prints one JSON object, parsed here. Without
// nvcc or a GPU the probe fails with a reason and the table's figures stand.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "core/error.h"
#include "roofline/hardware.h"

namespace hone::roofline {

struct GpuCeilings {
  std::string device;        // "NVIDIA H200"
  std::string cc;            // "9.0"
  int sms = 0;
  double memory_gb = 0;
  double read_bytes_per_s = 0;  // streaming read
  double copy_bytes_per_s = 0;  // device-to-device copy, bytes read + written
  std::map<std::string, double> flops;  // "bf16" -> FLOP/s (cuBLAS GEMM, 8192^3)
};

// Parses the probe's JSON line.
Result<GpuCeilings> ParseGpuCeilings(const std::string& json);

struct GpuProbeOptions {
  std::string source;                // kernels/probe/gpu_ceilings.cu
  std::filesystem::path cache_dir;   // the compiled probe lives in <cache>/probes/
  std::string nvcc;                  // empty: nvcc on PATH, else /usr/local/cuda/bin/nvcc
  std::string arch;                  // "90"; empty: nvidia-smi's compute capability
};

// Compiles (once) and runs the probe on GPU 0.
Result<GpuCeilings> ProbeGpuCeilings(const GpuProbeOptions& options);

// `hw` with the probed ceilings as its measured figures: the streaming read as the
// memory bandwidth, and each GEMM dtype's rate as that dtype's compute peak.
Hardware WithGpuCeilings(Hardware hw, const GpuCeilings& c, const std::string& source);

}  // namespace hone::roofline
