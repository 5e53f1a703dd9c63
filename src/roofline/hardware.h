// Hardware: the ceilings of one device (a GPU, or a whole CPU machine) that the
// roofline analysis divides by: peak arithmetic rate per dtype, memory bandwidth and
// memory capacity.
//
// Devices come from a data file (data/hardware.yaml), never from code. Each has
// datasheet peaks and optionally measured ones; the effective ceiling is the measured
// value where there is one (a sustained copy never reaches the datasheet bandwidth),
// else the datasheet value. Values are immutable after loading; a HardwareTable and
// its Hardware entries are plain values, safe to share between threads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace hone::spec {
class Field;
}  // namespace hone::spec

namespace hone::roofline {

enum class DeviceKind { kGpu, kCpu };

// Arithmetic dtypes a device has a peak rate for ("bf16", "fp8", "int8", ...).
// Lookups normalize common spellings ("bfloat16" -> "bf16", "float16" -> "fp16").
std::string NormalizeDtype(std::string_view dtype);

struct Hardware {
  std::string id;    // "h200"
  std::string name;  // "NVIDIA H200 SXM 141GB"
  std::vector<std::string> aliases;
  DeviceKind kind = DeviceKind::kGpu;
  std::map<std::string, double> peak_flops;           // datasheet, FLOP/s per dtype
  double memory_bw_bytes_per_s = 0;                   // datasheet
  double memory_bytes = 0;
  double interconnect_bytes_per_s = 0;                // 0 when unknown
  std::map<std::string, double> measured_peak_flops;  // measured, FLOP/s per dtype
  std::optional<double> measured_memory_bw_bytes_per_s;
  std::string measured_source;                        // how the measured values were taken
  // A CPU host's last-level cache and its read bandwidth, both probed (never from the
  // table): a step's bytes up to the cache's size may be served from it (roofline.h).
  // 0: unknown (the memory ceiling is the DRAM bandwidth alone).
  double llc_bytes = 0;
  double llc_bw_bytes_per_s = 0;

  // Effective ceilings: measured where known, else datasheet. The dtype falls back
  // to the nearest one the device lists (fp8 -> fp16 on a device without fp8, since
  // such weights are upcast); nullopt when the device lists no usable rate.
  std::optional<double> FlopsPerSecond(std::string_view dtype) const;
  double MemoryBandwidth() const {
    return measured_memory_bw_bytes_per_s.value_or(memory_bw_bytes_per_s);
  }
  bool HasMeasured() const { return measured_memory_bw_bytes_per_s || !measured_peak_flops.empty(); }
};

// A rule naming the entry of a CPU host whose model names none itself.
struct CpuFamily {
  std::string cpu_contains;  // a case-insensitive substring of the CPU model
  int max_cpus = 0;          // the most vCPUs it describes (0: any count)
  std::string device;        // the entry's id
};

class HardwareTable {
 public:
  // Parses data/hardware.yaml; every error names file:line:col.
  static Result<HardwareTable> Load(const std::string& path);
  static Result<HardwareTable> Parse(const std::string& text, const std::string& source_name);

  // By id or alias, case-insensitively; kNotFound lists the known ids.
  Result<Hardware> Find(std::string_view id_or_alias) const;
  const std::vector<Hardware>& devices() const { return devices_; }
  // The entry id of a CPU host by the table's cpu_families rules (the first match).
  std::optional<std::string> CpuFamilyDevice(std::string_view cpu_model, int cpus) const;
  const std::vector<CpuFamily>& cpu_families() const { return cpu_families_; }

 private:
  static Result<HardwareTable> FromRoot(const spec::Field& root);
  std::vector<Hardware> devices_;
  std::vector<CpuFamily> cpu_families_;
};

}  // namespace hone::roofline
