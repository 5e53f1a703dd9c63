// Roofline bounds for serving one model on one kind of device at one operating point,
// and the headroom of a measured result against them.
//
// Analyze() answers "how fast could this possibly go": per phase, time is the larger
// of FLOPs / peak rate and bytes / memory bandwidth.
//   - prefill: one request's input tokens (linear layers + causal attention), weights
//     read once; compute-bound except for short prompts;
//   - decode: one step at batch = concurrency (capped by KV capacity), every weight the
//     batch touches plus the KV of every sequence at mean context isl + osl/2; memory-
//     bound until the batch is large;
//   - KV capacity: (memory x utilization - weights) / KV bytes per token;
//   - workload: a closed loop of `concurrency` requests, each isl in + osl out. The
//     ideal (`output_tok_s`) lets prefill overlap decode steps (chunked prefill), so it
//     is a true upper bound: max(total FLOPs / peak, total bytes / bandwidth). The
//     serial figure runs a batch's prefill, then its decode, as engines without mixed
//     batching do.
// Tensor parallelism splits weights, KV heads, FLOPs and bandwidth evenly over
// num_devices and ignores communication (an upper bound). Classify() divides a
// measurement by the bound: headroom, and which ceiling (compute, memory bandwidth, KV
// capacity) binds, or "overhead" when the measurement is far below every ceiling.
// Everything here is a pure function of its inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "roofline/hardware.h"
#include "roofline/model_spec.h"

namespace hone::roofline {

struct OperatingPoint {
  int64_t concurrency = 1;             // requests in flight (closed loop)
  int64_t isl = 1024;                  // input tokens per request
  int64_t osl = 1024;                  // output tokens per request
  double cached_prefix_fraction = 0;   // share of input tokens served by the prefix cache
  int64_t num_devices = 1;             // tensor-parallel degree
  std::string weight_dtype;            // overrides the model's ("fp8"); empty = the model's
  std::string kv_dtype;                // overrides the model's KV dtype ("fp8", "q8_0")
  double memory_utilization = 0.9;     // share of device memory the engine may hold
};

enum class BoundClass { kCompute, kMemoryBandwidth, kKvCapacity, kOverhead };
std::string_view BoundClassName(BoundClass c);

struct PhaseBound {
  double flops = 0;
  double bytes = 0;
  double compute_s = 0;  // flops / peak
  double memory_s = 0;   // bytes / bandwidth
  double time_s = 0;     // max of the two
  BoundClass limiter = BoundClass::kMemoryBandwidth;
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOP per byte
};

struct Bounds {
  std::string hardware_id;
  std::string model_name;
  OperatingPoint point;
  std::string weight_dtype;
  std::string kv_dtype;
  double peak_flops = 0;         // FLOP/s over all devices, for weight_dtype
  double memory_bw = 0;          // B/s over all devices
  double ridge_intensity = 0;    // FLOP/byte where the two ceilings meet
  double weight_bytes = 0;       // all devices
  double kv_bytes_per_token = 0;

  PhaseBound prefill;            // one request's isl tokens, alone
  double ttft_min_ms = 0;
  double prefill_tok_s_max = 0;  // prefill throughput with unlimited batching (compute roof)

  PhaseBound decode;             // one step at the effective batch
  double tpot_min_ms = 0;
  double decode_tok_s = 0;       // tokens per second of that step

  double kv_capacity_tokens = 0;
  int64_t max_concurrency_by_kv = 0;
  int64_t effective_concurrency = 0;

  double output_tok_s = 0;        // workload upper bound (prefill overlapped)
  double total_tok_s = 0;         // (isl + osl) tokens per request
  double requests_per_s = 0;
  double output_tok_s_serial = 0; // prefill, then decode
  BoundClass limiter = BoundClass::kMemoryBandwidth;
  std::vector<std::string> notes;  // assumptions that shaped the numbers
};

// Fails (kInvalidArgument) on a meaningless operating point, (kResourceExhausted) when
// the weights do not fit, or (kFailedPrecondition) when the device has no rate for the
// weight dtype.
Result<Bounds> Analyze(const Hardware& hw, const ModelSpec& model, const OperatingPoint& point);

// The two single-phase bounds on their own, as llama-bench measures them: prefill of
// `tokens` prompt tokens as one sequence (pp), and one decode step at `batch` sequences
// of `context` tokens each (tg). Same failure modes as Analyze().
Result<PhaseBound> PrefillBound(const Hardware& hw, const ModelSpec& model, int64_t tokens,
                                const OperatingPoint& point = {});
Result<PhaseBound> DecodeBound(const Hardware& hw, const ModelSpec& model, int64_t batch, double context,
                               const OperatingPoint& point = {});

struct Measured {
  std::optional<double> output_tok_s;
  std::optional<double> total_tok_s;
  std::optional<double> tpot_ms;
  std::optional<double> ttft_ms;
};

struct ClassifyOptions {
  double saturated_at = 0.95;   // measured/bound at or above: the direction is exhausted
  double overhead_below = 0.5;  // below: neither ceiling explains the result
};

struct Headroom {
  std::string metric;            // which measurement was compared ("output_tok_s", ...)
  double ratio = 0;              // measured / bound (1 = at the ceiling)
  double headroom_x = 0;         // bound / measured (how much faster it could go)
  BoundClass bound_class = BoundClass::kOverhead;
  bool saturated = false;
  bool exceeds_bound = false;    // measured > 1.05 x bound: the inputs are wrong
  std::string summary;           // one line for reports
};

// Compares the first available of output_tok_s, total_tok_s, tpot_ms, ttft_ms.
// kInvalidArgument when `measured` holds none of them (or a non-positive value).
Result<Headroom> Classify(const Bounds& bounds, const Measured& measured, const ClassifyOptions& options = {});

}  // namespace hone::roofline
