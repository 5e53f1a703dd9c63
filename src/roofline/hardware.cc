#include "roofline/hardware.h"

#include <algorithm>

#include "core/strings.h"
#include "spec/yaml.h"

namespace hone::roofline {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;

// Reads {dtype: tflops, ...} into FLOP/s keyed by normalized dtype.
Result<std::map<std::string, double>> ParsePeaks(const spec::Field& f) {
  std::map<std::string, double> out;
  if (!f.defined()) return out;
  if (!f.is_map()) return Fail(f.Err("expected a mapping of dtype: TFLOP/s"));
  for (const auto& [dtype, value] : f.Entries()) {
    HONE_ASSIGN_OR_RETURN(double tflops, value.Double(0, 1e6));
    out[NormalizeDtype(dtype)] = tflops * kTera;
  }
  return out;
}

Result<Hardware> ParseDevice(const spec::Field& d) {
  HONE_TRY(d.RequireMap());
  HONE_TRY(d.CheckKeys({"id", "aliases", "name", "kind", "peak_tflops", "memory_bw_gbs", "memory_gb",
                        "interconnect_gbs", "measured"}));
  Hardware hw;
  HONE_ASSIGN_OR_RETURN(hw.id, d["id"].Str());
  hw.id = ToLower(hw.id);
  HONE_ASSIGN_OR_RETURN(hw.aliases, d["aliases"].StrList());
  HONE_ASSIGN_OR_RETURN(hw.name, d["name"].StrOr(hw.id));
  HONE_ASSIGN_OR_RETURN(std::string kind, d["kind"].Str());
  if (kind == "gpu") {
    hw.kind = DeviceKind::kGpu;
  } else if (kind == "cpu") {
    hw.kind = DeviceKind::kCpu;
  } else {
    return Fail(d["kind"].Err("must be gpu or cpu (got '" + kind + "')"));
  }
  HONE_ASSIGN_OR_RETURN(hw.peak_flops, ParsePeaks(d["peak_tflops"]));
  if (hw.peak_flops.empty()) return Fail(d["peak_tflops"].Err("a device needs at least one peak rate"));
  HONE_ASSIGN_OR_RETURN(double bw, d["memory_bw_gbs"].Double(1e-3, 1e6));
  hw.memory_bw_bytes_per_s = bw * kGiga;
  HONE_ASSIGN_OR_RETURN(double mem, d["memory_gb"].Double(1e-3, 1e6));
  hw.memory_bytes = mem * kGiga;
  HONE_ASSIGN_OR_RETURN(double link, d["interconnect_gbs"].DoubleOr(0, 0, 1e6));
  hw.interconnect_bytes_per_s = link * kGiga;
  spec::Field m = d["measured"];
  if (m.defined()) {
    HONE_TRY(m.RequireMap());
    HONE_TRY(m.CheckKeys({"memory_bw_gbs", "peak_tflops", "source"}));
    if (m["memory_bw_gbs"].defined()) {
      HONE_ASSIGN_OR_RETURN(double mbw, m["memory_bw_gbs"].Double(1e-3, 1e6));
      hw.measured_memory_bw_bytes_per_s = mbw * kGiga;
    }
    HONE_ASSIGN_OR_RETURN(hw.measured_peak_flops, ParsePeaks(m["peak_tflops"]));
    HONE_ASSIGN_OR_RETURN(hw.measured_source, m["source"].Str());
  }
  return hw;
}

}  // namespace

std::string NormalizeDtype(std::string_view dtype) {
  std::string d = ToLower(Trim(dtype));
  if (d == "bfloat16") return "bf16";
  if (d == "float16" || d == "half") return "fp16";
  if (d == "float32" || d == "float" || d == "f32") return "fp32";
  if (d == "f16") return "fp16";
  if (d == "float8" || d == "fp8_e4m3" || d == "fp8_e5m2" || d == "f8e4m3") return "fp8";
  if (d == "nvfp4" || d == "mxfp4" || d == "fp4_e2m1") return "fp4";
  return d;
}

std::optional<double> Hardware::FlopsPerSecond(std::string_view dtype) const {
  // A dtype the device lacks runs at the next wider rate the device has (fp4 weights
  // are upcast to fp8 or bf16 on a device without fp4 units).
  static const std::map<std::string, std::vector<std::string>> kFallbacks = {
      {"fp4", {"fp4", "fp6", "fp8", "int8", "bf16", "fp16", "fp32"}},
      {"fp6", {"fp6", "fp8", "int8", "bf16", "fp16", "fp32"}},
      {"fp8", {"fp8", "bf16", "fp16", "fp32"}},  // W8A16 on pre-Hopper parts
      {"int8", {"int8", "fp8", "bf16", "fp16", "fp32"}},
      {"int4", {"int8", "fp8", "bf16", "fp16", "fp32"}},
      {"bf16", {"bf16", "fp16", "fp32"}},
      {"fp16", {"fp16", "bf16", "fp32"}},
      {"tf32", {"tf32", "fp32"}},
      {"fp32", {"fp32", "tf32"}},
  };
  std::string d = NormalizeDtype(dtype);
  auto it = kFallbacks.find(d);
  std::vector<std::string> order = it == kFallbacks.end() ? std::vector<std::string>{d, "bf16", "fp16", "fp32"}
                                                          : it->second;
  for (const std::string& candidate : order) {
    if (auto m = measured_peak_flops.find(candidate); m != measured_peak_flops.end()) return m->second;
    if (auto p = peak_flops.find(candidate); p != peak_flops.end()) return p->second;
  }
  return std::nullopt;
}

Result<HardwareTable> HardwareTable::Load(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  return FromRoot(root);
}

Result<HardwareTable> HardwareTable::Parse(const std::string& text, const std::string& source_name) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::Parse(text, source_name));
  return FromRoot(root);
}

Result<HardwareTable> HardwareTable::FromRoot(const spec::Field& root) {
  HardwareTable table;
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"devices", "cpu_families"}));
  spec::Field list = root["devices"];
  if (!list.is_seq()) return Fail(list.Err("expected a list of devices"));
  for (const spec::Field& d : list.Items()) {
    HONE_ASSIGN_OR_RETURN(Hardware hw, ParseDevice(d));
    if (table.Find(hw.id)) return Fail(d["id"].Err("duplicate device id '" + hw.id + "'"));
    table.devices_.push_back(std::move(hw));
  }
  for (const spec::Field& f : root["cpu_families"].Items()) {
    HONE_TRY(f.RequireMap());
    HONE_TRY(f.CheckKeys({"cpu_contains", "max_cpus", "device"}));
    CpuFamily family;
    HONE_ASSIGN_OR_RETURN(family.cpu_contains, f["cpu_contains"].Str());
    family.cpu_contains = ToLower(family.cpu_contains);
    HONE_ASSIGN_OR_RETURN(int64_t max_cpus, f["max_cpus"].IntOr(0, 0, 1 << 20));
    family.max_cpus = static_cast<int>(max_cpus);
    HONE_ASSIGN_OR_RETURN(family.device, f["device"].Str());
    if (!table.Find(family.device)) return Fail(f["device"].Err("unknown device '" + family.device + "'"));
    table.cpu_families_.push_back(std::move(family));
  }
  return table;
}

std::optional<std::string> HardwareTable::CpuFamilyDevice(std::string_view cpu_model, int cpus) const {
  const std::string model = ToLower(cpu_model);
  for (const CpuFamily& f : cpu_families_) {
    if (Contains(model, f.cpu_contains) && (f.max_cpus == 0 || cpus <= f.max_cpus)) return f.device;
  }
  return std::nullopt;
}

Result<Hardware> HardwareTable::Find(std::string_view id_or_alias) const {
  std::string want = ToLower(Trim(id_or_alias));
  for (const Hardware& hw : devices_) {
    if (hw.id == want) return hw;
    for (const std::string& a : hw.aliases) {
      if (ToLower(a) == want) return hw;
    }
  }
  std::vector<std::string> ids;
  for (const Hardware& hw : devices_) ids.push_back(hw.id);
  return NotFound("unknown hardware '" + std::string(id_or_alias) + "' (known: " + Join(ids, ", ") + ")");
}

}  // namespace hone::roofline
