#include "roofline/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/strings.h"

namespace hone::roofline {

std::string_view BoundClassName(BoundClass c) {
  switch (c) {
    case BoundClass::kCompute: return "compute";
    case BoundClass::kMemoryBandwidth: return "memory_bandwidth";
    case BoundClass::kKvCapacity: return "kv_capacity";
    case BoundClass::kOverhead: return "overhead";
  }
  return "?";
}

namespace {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The model and device after the operating point's overrides, with per-system rates.
struct Setup {
  ModelSpec model;
  double peak = 0;  // FLOP/s, all devices
  double bw = 0;    // B/s, all devices
  double llc_bytes = 0;  // a CPU's last-level cache (0: none known)
  double llc_bw = 0;     // its read bandwidth, B/s
  double devices = 1;
  std::vector<std::string> notes;
};

Result<Setup> Prepare(const Hardware& hw, const ModelSpec& model, const OperatingPoint& p) {
  if (p.num_devices < 1) return InvalidArgument("num_devices must be >= 1");
  if (p.memory_utilization <= 0 || p.memory_utilization > 1) {
    return InvalidArgument("memory_utilization must be in (0, 1]");
  }
  if (p.cached_prefix_fraction < 0 || p.cached_prefix_fraction >= 1) {
    return InvalidArgument("cached_prefix_fraction must be in [0, 1)");
  }
  Setup s;
  s.model = model;
  if (!p.weight_dtype.empty()) {
    auto bytes = DtypeBytes(p.weight_dtype);
    if (!bytes) return InvalidArgument("unknown weight dtype '" + p.weight_dtype + "'");
    std::string d = NormalizeDtype(p.weight_dtype);
    // ggml block types compute as int8 dot products; plain types at their own rate.
    s.model.weight_dtype = d.starts_with("q") || d.starts_with("iq") ? "int8" : d;
    s.model.weight_bytes_per_param = *bytes;
    s.notes.push_back("weights as " + d);
  }
  if (!p.kv_dtype.empty()) {
    auto bytes = DtypeBytes(p.kv_dtype);
    if (!bytes) return InvalidArgument("unknown KV dtype '" + p.kv_dtype + "'");
    s.model.kv_dtype = NormalizeDtype(p.kv_dtype);
    s.model.kv_bytes_per_element = *bytes;
  }
  auto peak = hw.FlopsPerSecond(s.model.weight_dtype);
  if (!peak) {
    return FailedPrecondition(hw.id + " has no arithmetic rate for " + s.model.weight_dtype + " (data/hardware.yaml)");
  }
  s.devices = static_cast<double>(p.num_devices);
  s.peak = *peak * s.devices;
  s.bw = hw.MemoryBandwidth() * s.devices;
  if (hw.llc_bytes > 0 && hw.llc_bw_bytes_per_s > s.bw / s.devices) {
    s.llc_bytes = hw.llc_bytes * s.devices;
    s.llc_bw = hw.llc_bw_bytes_per_s * s.devices;
    char note[192];
    std::snprintf(note, sizeof note,
                  "last-level cache %.0f MiB at %.1f GB/s: a step's bytes up to its size are bounded by the cache's "
                  "bandwidth, the rest by memory's",
                  hw.llc_bytes / (1 << 20), hw.llc_bw_bytes_per_s / 1e9);
    s.notes.push_back(note);
  }
  if (hw.HasMeasured()) s.notes.push_back("measured ceilings: " + hw.measured_source);
  if (p.num_devices > 1) s.notes.push_back("tensor parallel over " + std::to_string(p.num_devices) +
                                           " devices, communication ignored");
  double weights = s.model.WeightBytes();
  double usable = hw.memory_bytes * p.memory_utilization * s.devices;
  if (weights > usable) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "the weights (%.1f GB) do not fit in %.1f GB (%lld x %s at %.0f%%)", weights / 1e9,
                  usable / 1e9, static_cast<long long>(p.num_devices), hw.id.c_str(), p.memory_utilization * 100);
    return ResourceExhausted(buf);
  }
  return s;
}

// The least time a step that reads `bytes` spends on memory traffic: at best its first
// llc_bytes come from the last-level cache (a working set that fits stays resident from
// step to step), the rest from memory. Without a known cache: bytes / bandwidth.
double MemorySeconds(const Setup& s, double bytes) {
  if (s.llc_bytes <= 0) return bytes / s.bw;
  const double cached = std::min(bytes, s.llc_bytes);
  return cached / s.llc_bw + (bytes - cached) / s.bw;
}

PhaseBound MakePhase(double flops, double bytes, const Setup& s) {
  PhaseBound b;
  b.flops = flops;
  b.bytes = bytes;
  b.compute_s = flops / s.peak;
  b.memory_s = MemorySeconds(s, bytes);
  b.time_s = std::max(b.compute_s, b.memory_s);
  b.limiter = b.compute_s >= b.memory_s ? BoundClass::kCompute : BoundClass::kMemoryBandwidth;
  return b;
}

// Prefill of `batch` sequences of `tokens` new tokens each, after `cached` prefix
// tokens: weights read once, KV written for the new tokens and read for the prefix.
PhaseBound Prefill(const Setup& s, double batch, double tokens, double cached) {
  const ModelSpec& m = s.model;
  double end = cached + tokens;
  // Causal attention: token i attends over i positions; sum over the new tokens.
  double context_sum = (end * (end + 1) - cached * (cached + 1)) / 2;
  // Only the last prompt token's logits are computed.
  double flops = batch * (tokens * (m.LinearFlopsPerToken() - m.LmHeadFlopsPerToken()) + m.LmHeadFlopsPerToken() +
                          m.AttentionFlopsPerContextToken() * context_sum);
  double bytes = m.WeightBytesPerStep(batch * tokens) + batch * (tokens + cached) * m.KvBytesPerToken();
  return MakePhase(flops, bytes, s);
}

// One decode step: `batch` sequences, each attending over `context` tokens.
PhaseBound Decode(const Setup& s, double batch, double context) {
  const ModelSpec& m = s.model;
  double flops = batch * m.FlopsPerToken(context);
  double bytes = m.WeightBytesPerStep(batch) + batch * (context + 1) * m.KvBytesPerToken();
  return MakePhase(flops, bytes, s);
}

// KV bytes per token held on each device: heads split over TP; MLA's latent and
// too-few KV heads are replicated.
double KvBytesPerTokenPerDevice(const ModelSpec& m, int64_t devices) {
  if (m.attention == AttentionKind::kMla || devices <= 1) return m.KvBytesPerToken();
  double shards = static_cast<double>(std::min<int64_t>(devices, m.num_kv_heads));
  return m.KvBytesPerToken() / shards;
}

}  // namespace

Result<PhaseBound> PrefillBound(const Hardware& hw, const ModelSpec& model, int64_t tokens,
                                const OperatingPoint& point) {
  if (tokens < 1) return InvalidArgument("prefill needs at least one token");
  HONE_ASSIGN_OR_RETURN(Setup s, Prepare(hw, model, point));
  return Prefill(s, 1, static_cast<double>(tokens), 0);
}

Result<PhaseBound> DecodeBound(const Hardware& hw, const ModelSpec& model, int64_t batch, double context,
                               const OperatingPoint& point) {
  if (batch < 1) return InvalidArgument("decode needs a batch of at least one sequence");
  if (context < 0) return InvalidArgument("context must be >= 0");
  HONE_ASSIGN_OR_RETURN(Setup s, Prepare(hw, model, point));
  return Decode(s, static_cast<double>(batch), context);
}

Result<Bounds> Analyze(const Hardware& hw, const ModelSpec& model, const OperatingPoint& point) {
  if (point.concurrency < 1) return InvalidArgument("concurrency must be >= 1");
  if (point.isl < 1 || point.osl < 1) return InvalidArgument("isl and osl must be >= 1");
  HONE_ASSIGN_OR_RETURN(Setup s, Prepare(hw, model, point));
  const ModelSpec& m = s.model;
  Bounds b;
  b.hardware_id = hw.id;
  b.model_name = m.name;
  b.point = point;
  b.weight_dtype = m.weight_dtype;
  b.kv_dtype = m.kv_dtype;
  b.peak_flops = s.peak;
  b.memory_bw = s.bw;
  b.ridge_intensity = s.peak / s.bw;
  b.weight_bytes = m.WeightBytes();
  b.kv_bytes_per_token = m.KvBytesPerToken();
  b.notes = s.notes;

  double isl = static_cast<double>(point.isl);
  double osl = static_cast<double>(point.osl);
  double cached = std::floor(isl * point.cached_prefix_fraction);
  double fresh = isl - cached;

  // KV capacity, per device, then for the system.
  double per_device_kv = KvBytesPerTokenPerDevice(m, point.num_devices);
  double free_per_device = hw.memory_bytes * point.memory_utilization - b.weight_bytes / s.devices;
  b.kv_capacity_tokens = std::max(0.0, free_per_device / per_device_kv);
  b.max_concurrency_by_kv = static_cast<int64_t>(b.kv_capacity_tokens / (isl + osl));
  if (b.max_concurrency_by_kv < 1) {
    return ResourceExhausted("the KV cache holds " + std::to_string(static_cast<int64_t>(b.kv_capacity_tokens)) +
                             " tokens, less than one request of " + std::to_string(point.isl + point.osl));
  }
  b.effective_concurrency = std::min(point.concurrency, b.max_concurrency_by_kv);
  double batch = static_cast<double>(b.effective_concurrency);

  b.prefill = Prefill(s, 1, fresh, cached);
  b.ttft_min_ms = b.prefill.time_s * 1e3;
  b.prefill_tok_s_max = s.peak / m.FlopsPerToken(cached + fresh / 2);

  double mean_context = isl + osl / 2;
  b.decode = Decode(s, batch, mean_context);
  b.tpot_min_ms = b.decode.time_s * 1e3;
  b.decode_tok_s = batch / b.decode.time_s;

  // Workload: per round, `batch` prefills and osl decode steps. Overlapped: the
  // prefills ride inside decode steps (no extra weight reads), so the round takes
  // max(all FLOPs / peak, all bytes / bandwidth).
  PhaseBound batch_prefill = Prefill(s, batch, fresh, cached);
  double decode_flops = osl * b.decode.flops;
  double prefill_kv_bytes = batch * (isl)*m.KvBytesPerToken();
  double total_flops = batch_prefill.flops + decode_flops;
  // Each decode step's bytes as one step (MemorySeconds), the prefills' KV writes at
  // memory's bandwidth.
  double round_memory_s = osl * b.decode.memory_s + prefill_kv_bytes / s.bw;
  double round_s = std::max(total_flops / s.peak, round_memory_s);
  double serial_s = batch_prefill.time_s + osl * b.decode.time_s;
  b.output_tok_s = batch * osl / round_s;
  b.total_tok_s = batch * (isl + osl) / round_s;
  b.requests_per_s = batch / round_s;
  b.output_tok_s_serial = batch * osl / serial_s;
  if (b.effective_concurrency < point.concurrency) {
    b.limiter = BoundClass::kKvCapacity;
    b.notes.push_back("KV cache holds " + std::to_string(b.max_concurrency_by_kv) + " requests of " +
                      std::to_string(point.isl + point.osl) + " tokens; concurrency " +
                      std::to_string(point.concurrency) + " queues");
  } else {
    b.limiter = total_flops / s.peak >= round_memory_s ? BoundClass::kCompute : BoundClass::kMemoryBandwidth;
  }
  if (m.is_moe()) b.notes.push_back("MoE: experts touched per step assume uniform routing");
  if (cached > 0) b.notes.push_back(Fmt("%.0f%% of each prompt served by the prefix cache", point.cached_prefix_fraction * 100));
  return b;
}

Result<Headroom> Classify(const Bounds& bounds, const Measured& measured, const ClassifyOptions& options) {
  Headroom h;
  double value = 0, bound = 0;
  bool higher_is_better = true;
  if (measured.output_tok_s) {
    h.metric = "output_tok_s";
    value = *measured.output_tok_s;
    bound = bounds.output_tok_s;
  } else if (measured.total_tok_s) {
    h.metric = "total_tok_s";
    value = *measured.total_tok_s;
    bound = bounds.total_tok_s;
  } else if (measured.tpot_ms) {
    h.metric = "tpot_ms";
    value = *measured.tpot_ms;
    bound = bounds.tpot_min_ms;
    higher_is_better = false;
  } else if (measured.ttft_ms) {
    h.metric = "ttft_ms";
    value = *measured.ttft_ms;
    bound = bounds.ttft_min_ms;
    higher_is_better = false;
  } else {
    return InvalidArgument("no measurement to compare with the roofline");
  }
  if (!(value > 0) || !(bound > 0)) return InvalidArgument(h.metric + " must be positive to compare");
  h.ratio = higher_is_better ? value / bound : bound / value;
  h.headroom_x = 1 / h.ratio;
  h.saturated = h.ratio >= options.saturated_at;
  h.exceeds_bound = h.ratio > 1.05;
  h.bound_class = h.ratio < options.overhead_below ? BoundClass::kOverhead : bounds.limiter;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %.4g vs bound %.4g: %.0f%% of the roofline (%s-bound ideal; %s)",
                h.metric.c_str(), value, bound, h.ratio * 100, std::string(BoundClassName(bounds.limiter)).c_str(),
                h.exceeds_bound ? "measured above the bound: check the hardware entry and model"
                : h.saturated  ? "saturated"
                : h.bound_class == BoundClass::kOverhead ? "far below every ceiling: overhead"
                                                         : "headroom left");
  h.summary = buf;
  return h;
}

}  // namespace hone::roofline
