#include "roofline/gpu_probe.h"

#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "sys/files.h"
#include "sys/process.h"

namespace hone::roofline {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

Result<GpuCeilings> ParseGpuCeilings(const std::string& text) {
  return TryCatch(ErrorCode::kDataLoss, "reading the GPU probe's output", [&] {
    auto j = nlohmann::json::parse(text);
    GpuCeilings c;
    c.device = j.at("device").get<std::string>();
    c.cc = j.value("cc", "");
    c.sms = j.value("sms", 0);
    c.memory_gb = j.value("memory_gb", 0.0);
    c.read_bytes_per_s = j.at("read_gbs").get<double>() * 1e9;
    c.copy_bytes_per_s = j.value("copy_gbs", 0.0) * 1e9;
    for (const auto& [dtype, tflops] : j.at("tflops").items()) {
      if (tflops.get<double>() > 0) c.flops[dtype] = tflops.get<double>() * 1e12;
    }
    return c;
  });
}

namespace {

std::string FindNvcc(const std::string& given) {
  if (!given.empty()) return given;
  std::string on_path = sys::FindOnPath("nvcc");
  if (!on_path.empty()) return on_path;
  if (sys::FileExists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return "";
}

std::string GpuArch() {
  auto out = sys::RunCommand({.argv = {"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}}, 30s);
  if (!out || !out->status.success()) return "";
  return ReplaceAll(std::string(Trim(Split(out->output, '\n')[0])), ".", "");
}

}  // namespace

Result<GpuCeilings> ProbeGpuCeilings(const GpuProbeOptions& o) {
  if (!sys::FileExists(o.source)) return NotFound("GPU probe source not found: " + o.source);
  std::string arch = o.arch.empty() ? GpuArch() : o.arch;
  if (arch.empty()) return FailedPrecondition("no GPU found (nvidia-smi reported no compute capability)");
  fs::path dir = o.cache_dir / "probes";
  HONE_TRY(sys::EnsureDir(dir));
  HONE_ASSIGN_OR_RETURN(std::string digest, sys::Sha256File(o.source));
  fs::path binary = dir / ("gpu_ceilings-sm" + arch + "-" + digest.substr(0, 12));
  if (!sys::FileExists(binary)) {
    std::string nvcc = FindNvcc(o.nvcc);
    if (nvcc.empty()) return FailedPrecondition("nvcc not found: the GPU probe is compiled on the GPU host");
    std::string tmp = binary.string() + ".partial";
    HONE_ASSIGN_OR_RETURN(auto built,
                          sys::RunCommand({.argv = {nvcc, "-O3", "-std=c++17", "-gencode",
                                                    "arch=compute_" + arch + ",code=sm_" + arch, o.source, "-lcublas",
                                                    "-o", tmp}},
                                          5min));
    if (!built.status.success()) {
      return Fail(Error{ErrorCode::kFailedPrecondition, "compiling the GPU probe failed (" + built.status.ToString() + ")",
                        {{"output_tail", LastLines(built.output, 6)}}});
    }
    std::error_code ec;
    fs::rename(tmp, binary, ec);
    if (ec) return Internal("cannot move " + tmp + ": " + ec.message());
  }
  HONE_ASSIGN_OR_RETURN(auto run, sys::RunCommand({.argv = {binary.string()}}, 2min));
  if (!run.status.success()) {
    return Fail(Error{ErrorCode::kFailedPrecondition, "the GPU probe failed (" + run.status.ToString() + ")",
                      {{"output_tail", LastLines(run.output, 6)}}});
  }
  // The JSON object is the last line that starts with '{' (the runtime may log before it).
  std::string line;
  for (const std::string& l : Split(run.output, '\n')) {
    if (Trim(l).starts_with("{")) line = std::string(Trim(l));
  }
  if (line.empty()) return DataLoss("the GPU probe printed no result: " + LastLines(run.output, 3));
  return ParseGpuCeilings(line);
}

Hardware WithGpuCeilings(Hardware hw, const GpuCeilings& c, const std::string& source) {
  if (c.read_bytes_per_s > 0) hw.measured_memory_bw_bytes_per_s = c.read_bytes_per_s;
  for (const auto& [dtype, flops] : c.flops) hw.measured_peak_flops[dtype] = flops;
  // fp8 is not probed (cuBLAS needs scaled-matmul set-up): the table's measured figure stays.
  hw.measured_source = hw.measured_source.empty() ? source : source + "; " + hw.measured_source;
  return hw;
}

}  // namespace hone::roofline
