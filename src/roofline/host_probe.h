// Host probes: the CPU machine's own memory-bandwidth and compute ceilings, measured
// in about a second. A CPU entry in data/hardware.yaml names a family ("AMD EPYC, 2 vCPU"), but a
// virtual machine's CPU string hides which host it runs on, and two hosts behind the
// same string were measured here at 20 and 40 GB/s. A roofline bound that a real
// run beats is no bound, so on a CPU host the session measures the bandwidth itself
// and that figure overrides the table's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "roofline/hardware.h"

namespace hone::roofline {

struct BandwidthProbe {
  int threads = 2;                   // readers, one per core the server will use
  size_t bytes = size_t{512} << 20;  // far larger than any last-level cache
  int passes = 5;                    // the best pass is the ceiling
};

// Sustained read bandwidth in bytes/s: `threads` threads each sum their slice of one
// array with the widest vector loads the CPU has (ggml streams weights that way); the best of `passes` timed passes (after one untimed pass that faults the
// pages in). kInvalidArgument for bad parameters, kResourceExhausted when the array
// cannot be allocated.
Result<double> MeasureReadBandwidth(const BandwidthProbe& probe = {});

// The probe's summing kernel (AVX-512, AVX2 or scalar, as this CPU allows): the sum of
// p[0..n) modulo 2^64. Exposed so a test can check that it reads every word: a kernel
// that skipped some would report a bandwidth no real kernel reaches.
uint64_t ProbeSum(const uint64_t* p, size_t n);

// `hw` with its measured bandwidth replaced by `bytes_per_s` (and the source noted).
Hardware WithMeasuredBandwidth(Hardware hw, double bytes_per_s, const std::string& source);

// The last-level cache of CPU 0 in bytes (sysfs: the highest-level data or unified
// cache), or 0 when the host does not say.
double LastLevelCacheBytes(const std::string& sysfs_cpu = "/sys/devices/system/cpu/cpu0/cache");

// The read bandwidth from the last-level cache: the bandwidth probe on an array of a
// quarter of the cache (resident after the untimed pass, with room for whatever else
// shares the cache). kFailedPrecondition when the cache is too small to probe (< 4 MiB).
Result<double> MeasureCacheBandwidth(double llc_bytes, int threads);

// `hw` with its last-level cache and that cache's bandwidth (and the source noted).
Hardware WithMeasuredCache(Hardware hw, double llc_bytes, double bytes_per_s, const std::string& source);

// The compute ceilings the way ggml uses a CPU: fp32 fused multiply-adds (f16 weights
// are converted and multiplied in fp32) and int8 dot products (q8_0/q4_0 weights),
// each with the widest instructions this CPU has (AVX-512 / AVX2+FMA, AVX-512 VNNI /
// AVX-VNNI / AVX2 vpmaddubsw on x86-64; elsewhere nothing is measured and the table's
// figures stand: a rate of 0 and an ISA of "none"). Every thread runs
// 12 independent accumulator chains, enough to fill two pipelines of 4-cycle latency.
struct ComputeProbe {
  int threads = 2;
  double seconds = 0.04;  // per timed pass
  int passes = 5;         // the best pass is the ceiling (a short pass is rarely disturbed)
};

struct ComputePeaks {
  double fp32 = 0;        // FLOP/s (an FMA is 2)
  double int8 = 0;        // OP/s (a multiply-accumulate is 2)
  std::string fp32_isa;   // "avx512f", "avx2+fma", "none"
  std::string int8_isa;   // "avx512vnni", "avxvnni", "avx2", "none"
};

Result<ComputePeaks> MeasureComputePeaks(const ComputeProbe& probe = {});

// `hw` with measured compute ceilings: fp32 and fp16 from the fp32 figure, int8 from
// the int8 figure (bf16 keeps the table's: ggml may have a faster bf16 path).
Hardware WithMeasuredCompute(Hardware hw, const ComputePeaks& peaks, const std::string& source);

}  // namespace hone::roofline
