#include "run/roofline.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "roofline/roofline.h"
#include "run/knowledge.h"
#include "sys/term.h"

namespace hone::run {

CeilingProbes RealCeilingProbes(const RunContext& ctx) {
  CeilingProbes p;
  p.read_bandwidth = [](int threads) { return roofline::MeasureReadBandwidth({.threads = threads}); };
  p.cpu_compute = [](int threads) { return roofline::MeasureComputePeaks({.threads = threads}); };
  p.cpu_cache = [](int threads) -> Result<std::pair<double, double>> {
    const double llc = roofline::LastLevelCacheBytes();
    if (llc <= 0) return NotFound("the host names no last-level cache");
    HONE_ASSIGN_OR_RETURN(double bw, roofline::MeasureCacheBandwidth(llc, threads));
    return std::make_pair(llc, bw);
  };
  p.gpu = [source = ctx.data_dir + "/kernels/probe/gpu_ceilings.cu", cache = ctx.cache_dir] {
    return roofline::ProbeGpuCeilings({.source = source, .cache_dir = cache});
  };
  return p;
}

namespace {

bool OnGpu(const spec::SessionSpec& spec, const sys::MachineInfo& machine) {
  return spec.target.num_gpus > 0 && !machine.gpus.empty();
}

}  // namespace

std::optional<roofline::Hardware> SessionHardware(const roofline::HardwareTable& table, const spec::SessionSpec& spec,
                                                  const sys::MachineInfo& machine) {
  // The device the engine runs on: the GPU's entry for a GPU session, the CPU's
  // otherwise (a CPU session on a GPU host is bounded by the CPU).
  const bool on_gpu = OnGpu(spec, machine);
  std::vector<std::string> names = {spec.target.hardware, on_gpu ? machine.gpus[0] : machine.cpu_model,
                                    HardwareName(spec, machine)};
  if (!on_gpu) {
    if (auto family = table.CpuFamilyDevice(machine.cpu_model, machine.cpus)) names.push_back(*family);
  }
  for (const std::string& n : names) {
    if (n.empty()) continue;
    if (auto hw = table.Find(n)) return *hw;
  }
  return std::nullopt;
}

roofline::Hardware WithProbedCeilings(roofline::Hardware hw, const sys::MachineInfo& machine,
                                      const CeilingProbes& probes, const char* when) {
  if (hw.kind == roofline::DeviceKind::kCpu) {
    // A CPU entry names a family; the host behind it may stream twice the table's
    // bandwidth and have wider vector units. Measure both (about a second) so the
    // bounds hold on this machine.
    const int threads = std::max(1, machine.cpus);
    auto bw = probes.read_bandwidth ? probes.read_bandwidth(threads) : Result<double>(0.0);
    if (bw && *bw > 0) {
      char source[96];
      std::snprintf(source, sizeof source, "read probe %s, %.1f GB/s", when, *bw / 1e9);
      hw = roofline::WithMeasuredBandwidth(std::move(hw), *bw, source);
    }
    if (probes.cpu_cache) {
      // A model that fits in the last-level cache is read from it, not from memory: a
      // bound on memory's bandwidth alone is no bound for it (llama-bench decoded a
      // 312 MB model 26% above it on a host with a 300 MiB L3).
      auto cache = probes.cpu_cache(threads);
      if (cache && cache->first > 0 && cache->second > 0) {
        char source[128];
        std::snprintf(source, sizeof source, "cache probe %s, %.0f MiB last-level cache at %.1f GB/s", when,
                      cache->first / (1 << 20), cache->second / 1e9);
        hw = roofline::WithMeasuredCache(std::move(hw), cache->first, cache->second, source);
      }
    }
    if (probes.cpu_compute) {
      auto peaks = probes.cpu_compute(threads);
      if (peaks && (peaks->fp32 > 0 || peaks->int8 > 0)) {
        char source[160];
        std::snprintf(source, sizeof source,
                      "compute probe %s, %.0f GFLOP/s fp32 (%s), %.0f GOP/s int8 (%s)", when,
                      peaks->fp32 / 1e9, peaks->fp32_isa.c_str(), peaks->int8 / 1e9, peaks->int8_isa.c_str());
        hw = roofline::WithMeasuredCompute(std::move(hw), *peaks, source);
      }
    }
  } else if (probes.gpu) {
    // The GPU's ceilings, measured on it (compiled once with nvcc; a few seconds).
    auto c = probes.gpu();
    if (c) {
      char source[192];
      std::snprintf(source, sizeof source, "GPU probe %s on %s: read %.0f GB/s, bf16 %.0f TFLOP/s", when,
                    c->device.c_str(), c->read_bytes_per_s / 1e9,
                    c->flops.contains("bf16") ? c->flops.at("bf16") / 1e12 : 0.0);
      hw = roofline::WithGpuCeilings(std::move(hw), *c, source);
    } else {
      sys::LogWarn("GPU probe: " + c.error().message + " (the roofline uses the table's figures)");
    }
  }
  return hw;
}

namespace {

// "h200 (measured 4300 GB/s, 650 TFLOP/s bf16)": the device and the ceilings probed on it.
std::string Where(const roofline::Hardware& hw) {
  std::string where = hw.id;
  if (!hw.measured_memory_bw_bytes_per_s) return where;
  char buf[96];
  if (hw.kind == roofline::DeviceKind::kGpu) {
    std::snprintf(buf, sizeof buf, " (measured %.0f GB/s", *hw.measured_memory_bw_bytes_per_s / 1e9);
    where += buf;
    if (auto f = hw.measured_peak_flops.find("bf16"); f != hw.measured_peak_flops.end()) {
      std::snprintf(buf, sizeof buf, ", %.0f TFLOP/s bf16", f->second / 1e12);
      where += buf;
    }
  } else {
    std::snprintf(buf, sizeof buf, " (probed %.1f GB/s", *hw.measured_memory_bw_bytes_per_s / 1e9);
    where += buf;
    if (auto f = hw.measured_peak_flops.find("fp32"); f != hw.measured_peak_flops.end()) {
      std::snprintf(buf, sizeof buf, ", %.0f GFLOP/s fp32", f->second / 1e9);
      where += buf;
    }
    if (auto f = hw.measured_peak_flops.find("int8"); f != hw.measured_peak_flops.end()) {
      std::snprintf(buf, sizeof buf, ", %.0f GOP/s int8", f->second / 1e9);
      where += buf;
    }
    if (hw.llc_bytes > 0 && hw.llc_bw_bytes_per_s > 0) {
      std::snprintf(buf, sizeof buf, ", %.0f MiB LLC at %.1f GB/s", hw.llc_bytes / (1 << 20),
                    hw.llc_bw_bytes_per_s / 1e9);
      where += buf;
    }
  }
  return where + ")";
}

}  // namespace

RooflineHook MakeRooflineHook(const roofline::Hardware& hw, const roofline::ModelSpec& model,
                              const spec::SessionSpec& spec) {
  const spec::WorkloadSpec& wl = spec.workload;
  const int gpus = std::max(1, spec.target.num_gpus);
  return [hw, model, wl, gpus](const Config& config, double total_tps,
                               double output_tps) -> Result<session::RooflineNote> {
    roofline::OperatingPoint p;
    p.concurrency = wl.concurrency;
    p.isl = wl.isl;
    p.osl = wl.osl;
    p.num_devices = gpus;
    if (auto wt = config.Get("weights")) p.weight_dtype = *wt;
    if (auto kv = config.Get("cache_type_k")) p.kv_dtype = *kv;
    HONE_ASSIGN_OR_RETURN(roofline::Bounds b, roofline::Analyze(hw, model, p));
    roofline::Measured m;
    m.total_tok_s = total_tps;
    m.output_tok_s = output_tps;
    HONE_ASSIGN_OR_RETURN(roofline::Headroom h, roofline::Classify(b, m));
    return session::RooflineNote{Where(hw) + ": " + h.summary, h.ratio, h.saturated,
                                 std::string(roofline::BoundClassName(h.bound_class))};
  };
}

Result<RooflineHook> BuildRoofline(const spec::SessionSpec& spec, const std::string& model_path,
                                   const sys::MachineInfo& machine, const RunContext& ctx,
                                   const CeilingProbes& probes) {
  HONE_ASSIGN_OR_RETURN(roofline::HardwareTable table,
                        roofline::HardwareTable::Load(ctx.data_dir + "/data/hardware.yaml"));
  auto model = roofline::ModelSpecFromGguf(model_path);
  if (!model) {
    sys::LogWarn("roofline unavailable: " + model.error().message);
    return RooflineHook();
  }
  std::optional<roofline::Hardware> hw = SessionHardware(table, spec, machine);
  if (!hw) return RooflineHook();  // a device the table does not describe
  return MakeRooflineHook(WithProbedCeilings(std::move(*hw), machine, probes), *model, spec);
}

}  // namespace hone::run
