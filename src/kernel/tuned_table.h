// Tuned-config tables, keyed like vLLM's tuned-config files.
//
// One JSON file per (op, shape key, device, dtype) under a directory per compiler
// version, like vLLM's "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8.json"
// and SGLang's per-Triton-version subdirectories:
//   <dir>/nvcc_13.0/op=rmsnorm_fp8_quant,hidden=4096,quant=per_token,device_name=NVIDIA_H200,dtype=bf16-fp8e4m3.json
// Inside, configs are keyed by the op's batch dims ("64", or "16,2048" for two), each
// with the config, the verified speedup and whether to use it (verdict KEEP), plus a
// "_meta" entry (spec SHA-256, compiler, the measurement it came from). At run time the
// nearest batch key is used (log distance), as vLLM does. Only verified measurements are
// written (BuildTunedTables takes a summarized BenchResult). Pure functions plus one
// atomic write per file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernel/protocol.h"
#include "kernel/summary.h"
#include "kernel/task_spec.h"

namespace hone::kernel {

struct TunedTableFile {
  std::string subdir;     // compiler tag, e.g. "nvcc_13.0"
  std::string file_name;  // "op=...,device_name=...,dtype=....json"
  std::string json;
};

// "Cuda compilation tools, release 13.0, V13.0.88" -> "nvcc_13.0" ("unknown" if unparsable).
std::string CompilerTag(const std::string& compiler);
// "NVIDIA H200" -> "NVIDIA_H200" (vLLM's device_name convention).
std::string DeviceTag(const std::string& device_name);

Result<std::vector<TunedTableFile>> BuildTunedTables(const BenchResult& bench, const std::vector<TaskSummary>& tasks,
                                                     const OpCatalog& catalog, const std::string& measurement_ref);
Status WriteTunedTables(const std::string& dir, const std::vector<TunedTableFile>& files);

struct TunedChoice {
  std::string batch_key;
  KernelConfigRef config;
  double speedup = 0;
  bool use = false;
};

// Nearest entry of a table for the given batch-dim values (in the op's batch_dims order).
Result<TunedChoice> LookupTuned(const std::string& table_json, const std::vector<int64_t>& batch_values);

}  // namespace hone::kernel
