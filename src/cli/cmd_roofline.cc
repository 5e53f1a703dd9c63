// `hone roofline`: the roofline bounds of a model on a device at an operating point,
// the headroom of a measured result, or the kernel ranking of a profiler trace.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/strings.h"
#include "roofline/profile.h"
#include "roofline/roofline.h"
#include "run/roofline.h"
#include "sys/machine.h"

namespace hone::cli {

namespace {

struct RooflineOpts {
  std::string hardware;
  std::string hardware_file;
  std::string model;
  roofline::OperatingPoint point;
  double measured_output_tok_s = 0;
  double measured_tpot_ms = 0;
  std::string trace;
  std::string op_classes_file;
  int top = 15;
  bool list = false;
  bool probe = false;
};

std::string Si(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, prefixes[i], unit);
  return std::string(Trim(buf));
}

void PrintPhase(const char* label, const roofline::PhaseBound& p) {
  std::printf("%-10s %s, %s -> compute %.3f ms, memory %.3f ms: %s-bound (%.0f FLOP/B)\n", label,
              Si(p.flops, "FLOP").c_str(), Si(p.bytes, "B").c_str(), p.compute_s * 1e3, p.memory_s * 1e3,
              std::string(roofline::BoundClassName(p.limiter)).c_str(), p.intensity());
}

int RunTrace(const RooflineOpts& o, const Context& ctx) {
  std::string rules = o.op_classes_file.empty() ? ctx.data_dir + "/data/op_classes.yaml" : o.op_classes_file;
  auto classifier = roofline::OpClassifier::Load(rules);
  if (!classifier) return ReportError(classifier.error());
  auto s = roofline::SummarizeTraceFile(o.trace, *classifier);
  if (!s) return ReportError(s.error());
  std::printf("trace      %s: %lld device events on %d device(s), %.3f ms GPU time over %.3f ms (busy %.0f%%)\n",
              o.trace.c_str(), static_cast<long long>(s->events), s->devices, s->gpu_time_us / 1e3,
              s->span_us / 1e3, s->busy_fraction * 100);
  std::printf("classes   ");
  for (const auto& c : s->classes) {
    if (c.total_us > 0) std::printf(" %s %.1f%%", c.op_class.c_str(), c.share * 100);
  }
  std::printf("\n%6s %9s %7s  %-11s %s\n", "share", "total_ms", "calls", "class", "kernel");
  int shown = 0;
  for (const auto& k : s->kernels) {
    if (shown++ >= o.top) break;
    std::printf("%5.1f%% %9.3f %7lld  %-11s %s%s\n", k.share * 100, k.total_us / 1e3, static_cast<long long>(k.count),
                k.op_class.c_str(), roofline::ShortKernelName(k.name).c_str(), k.vendor ? " [vendor]" : "");
  }
  auto targets = roofline::KernelTargets(*s);
  std::printf("targets   ");
  if (targets.empty()) std::printf(" none at or above 10%% of GPU time");
  for (const auto& k : targets) {
    std::printf(" %s (%s, %.1f%%);", roofline::ShortKernelName(k.name).c_str(), k.op_class.c_str(), k.share * 100);
  }
  std::printf("\n");
  return 0;
}

int RunBounds(const RooflineOpts& o, const Context& ctx) {
  std::string table_path = o.hardware_file.empty() ? ctx.data_dir + "/data/hardware.yaml" : o.hardware_file;
  auto table = roofline::HardwareTable::Load(table_path);
  if (!table) return ReportError(table.error());
  if (o.list) {
    for (const auto& hw : table->devices()) {
      std::printf("%-16s %-70s %s, %s\n", hw.id.c_str(), hw.name.c_str(), Si(hw.MemoryBandwidth(), "B/s").c_str(),
                  Si(hw.memory_bytes, "B").c_str());
    }
    return 0;
  }
  if ((o.hardware.empty() && !o.probe) || o.model.empty()) {
    return ReportError(Error{ErrorCode::kInvalidArgument,
                             "give --model and --hardware, or --probe for this host (or --trace, or --list)", {}});
  }
  // --probe: this host's device, its ceilings measured as a session measures them at its
  // start (bandwidth, compute, the last-level cache; a GPU's with the CUDA probe).
  const sys::MachineInfo machine = o.probe ? sys::DescribeMachine() : sys::MachineInfo{};
  Result<roofline::Hardware> hw = NotFound("");
  if (!o.hardware.empty()) {
    hw = table->Find(o.hardware);
  } else if (auto entry = run::SessionHardware(*table, spec::SessionSpec{}, machine)) {
    hw = *entry;  // a CPU session's: this host's CPU entry, by model or family
  } else {
    return ReportError(Error{ErrorCode::kNotFound,
                             "no entry of " + table_path + " matches this host's CPU (" + machine.cpu_model +
                                 "): give --hardware",
                             {}});
  }
  if (!hw) return ReportError(hw.error());
  if (o.probe) {
    run::RunContext rc{ctx.data_dir, ctx.cache_dir, ctx.clock, ctx.runner, nullptr};
    hw = run::WithProbedCeilings(std::move(*hw), machine, run::RealCeilingProbes(rc), "by hone roofline --probe");
  }
  auto model = roofline::LoadModelSpec(o.model);
  if (!model) return ReportError(model.error());
  auto b = roofline::Analyze(*hw, *model, o.point);
  if (!b) return ReportError(b.error());
  const roofline::ModelSpec& m = *model;
  std::printf("hardware   %s (%s): %s %s, %s%s, %s\n", hw->id.c_str(), hw->name.c_str(),
              Si(b->peak_flops, "FLOP/s").c_str(), b->weight_dtype.c_str(), Si(b->memory_bw, "B/s").c_str(),
              hw->HasMeasured() ? " (measured)" : "", Si(hw->memory_bytes, "B").c_str());
  std::printf("model      %s (%s): %s params, %s active, %s weights, KV %s/token (%s)%s\n", m.name.c_str(),
              std::string(roofline::AttentionKindName(m.attention)).c_str(), Si(m.ParamCount(), "").c_str(),
              Si(m.ActiveParamCount(), "").c_str(), Si(b->weight_bytes, "B").c_str(),
              Si(b->kv_bytes_per_token, "B").c_str(), b->kv_dtype.c_str(),
              m.is_moe() ? (" MoE " + std::to_string(m.experts_per_token) + "/" + std::to_string(m.num_experts)).c_str()
                         : "");
  std::printf("point      concurrency %lld, isl %lld, osl %lld, %lld device(s)\n",
              static_cast<long long>(o.point.concurrency), static_cast<long long>(o.point.isl),
              static_cast<long long>(o.point.osl), static_cast<long long>(o.point.num_devices));
  PrintPhase("prefill", b->prefill);
  std::printf("           TTFT >= %.2f ms; prefill <= %s tok/s at full batching\n", b->ttft_min_ms,
              Si(b->prefill_tok_s_max, "").c_str());
  PrintPhase("decode", b->decode);
  std::printf("           batch %lld: TPOT >= %.3f ms, %s tok/s\n", static_cast<long long>(b->effective_concurrency),
              b->tpot_min_ms, Si(b->decode_tok_s, "").c_str());
  std::printf("kv         %s tokens -> at most %lld requests of %lld tokens\n", Si(b->kv_capacity_tokens, "").c_str(),
              static_cast<long long>(b->max_concurrency_by_kv), static_cast<long long>(o.point.isl + o.point.osl));
  std::printf("workload   <= %s output tok/s, %s total tok/s, %.3g req/s (%s-bound); serial prefill+decode %s "
              "output tok/s\n",
              Si(b->output_tok_s, "").c_str(), Si(b->total_tok_s, "").c_str(), b->requests_per_s,
              std::string(roofline::BoundClassName(b->limiter)).c_str(), Si(b->output_tok_s_serial, "").c_str());
  for (const std::string& n : b->notes) std::printf("note       %s\n", n.c_str());
  roofline::Measured measured;
  if (o.measured_output_tok_s > 0) measured.output_tok_s = o.measured_output_tok_s;
  if (o.measured_tpot_ms > 0) measured.tpot_ms = o.measured_tpot_ms;
  if (measured.output_tok_s || measured.tpot_ms) {
    auto h = roofline::Classify(*b, measured);
    if (!h) return ReportError(h.error());
    std::printf("headroom   %s\n", h->summary.c_str());
  }
  return 0;
}

}  // namespace

Action RegisterRoofline(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("roofline", "Roofline bounds and headroom of a model on a device, or a trace's "
                                             "kernel ranking");
  auto o = std::make_shared<RooflineOpts>();
  cmd->add_option("--hardware", o->hardware, "Device id from data/hardware.yaml (h100, h200, mi300x, ...)");
  cmd->add_option("--hardware-file", o->hardware_file, "Another hardware table");
  cmd->add_flag("--list", o->list, "List the devices of the hardware table");
  cmd->add_flag("--probe", o->probe,
                "Measure this host's ceilings first, as a session does (memory and cache bandwidth, compute; "
                "a GPU's with --hardware naming it); without --hardware, this host's CPU entry");
  cmd->add_option("--model", o->model, "HF config.json (or its directory) or a GGUF file");
  cmd->add_option("--concurrency", o->point.concurrency, "Requests in flight")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--isl", o->point.isl, "Input tokens per request")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--osl", o->point.osl, "Output tokens per request")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--tp", o->point.num_devices, "Tensor-parallel devices")->check(CLI::Range(1, 1024));
  cmd->add_option("--weight-dtype", o->point.weight_dtype, "Serve the weights as (fp8, fp4, q4_0, ...)");
  cmd->add_option("--kv-dtype", o->point.kv_dtype, "KV cache dtype (fp8, q8_0, ...)");
  cmd->add_option("--mem-util", o->point.memory_utilization, "Share of device memory the engine holds")
      ->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--cached", o->point.cached_prefix_fraction, "Share of prompt tokens hit in the prefix cache")
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--measured-output-tok-s", o->measured_output_tok_s, "A measured output throughput to compare");
  cmd->add_option("--measured-tpot-ms", o->measured_tpot_ms, "A measured TPOT to compare");
  cmd->add_option("--trace", o->trace, "A PyTorch profiler / Chrome trace (.json or .json.gz) to rank by kernel");
  cmd->add_option("--op-classes", o->op_classes_file, "Kernel-name rules (default data/op_classes.yaml)");
  cmd->add_option("--top", o->top, "Kernels to list from a trace");
  return [o, &ctx]() -> int { return o->trace.empty() ? RunBounds(*o, ctx) : RunTrace(*o, ctx); };
}

}  // namespace hone::cli
