#include "roofline/host_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "core/strings.h"
#include "sys/files.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hone::roofline {
namespace {

// Accumulator chains per thread. The inner loops over them are fully unrolled
// (#pragma GCC unroll) so the accumulators live in registers, not in memory.
constexpr int kChains = 12;

// The sum of every lane of the accumulators, read as plain memory, so one helper
// serves every vector type (and the results cannot be optimized away).
template <typename Lane, typename Vec>
double SumLanes(const Vec (&acc)[kChains]) {
  constexpr size_t kLanes = sizeof(Vec) / sizeof(Lane);
  double s = 0;
  for (const Vec& v : acc) {
    Lane lanes[kLanes];
    std::memcpy(lanes, &v, sizeof v);
    for (Lane x : lanes) s += static_cast<double>(x);
  }
  return s;
}

// Sums a slice with four independent accumulators so the loop is bound by loads, not
// by one add chain. Integer adds are associative, so the compiler may vectorize.
uint64_t SumSlice(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

using SumKernel = uint64_t (*)(const uint64_t* p, size_t n);

#if defined(__x86_64__)
// The widest loads this CPU has, four cache lines per round, each prefetched 4 KiB
// ahead. ggml's matrix-vector kernels stream weights with such loads; scalar loads
// measured 14-16 GB/s on a 2-vCPU Xeon where these read 23-25 GB/s and llama-bench's
// f16 decode streamed ~25 GB/s (the scalar figure made a roofline that decode beat).
constexpr size_t kPrefetchWords = 512;

__attribute__((target("avx512f"))) uint64_t SumSliceAvx512(const uint64_t* p, size_t n) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (size_t line = 0; line < 32; line += 8) {
      if (i + kPrefetchWords < n) _mm_prefetch(reinterpret_cast<const char*>(p + i + kPrefetchWords + line), _MM_HINT_T0);
    }
    a = _mm512_add_epi64(a, _mm512_loadu_si512(p + i));
    b = _mm512_add_epi64(b, _mm512_loadu_si512(p + i + 8));
    c = _mm512_add_epi64(c, _mm512_loadu_si512(p + i + 16));
    d = _mm512_add_epi64(d, _mm512_loadu_si512(p + i + 24));
  }
  __m512i sum = _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d));
  uint64_t lanes[8];
  std::memcpy(lanes, &sum, sizeof sum);
  uint64_t total = SumSlice(p + i, n - i);
  for (uint64_t x : lanes) total += x;
  return total;
}

__attribute__((target("avx2"))) uint64_t SumSliceAvx2(const uint64_t* p, size_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (size_t line = 0; line < 16; line += 8) {
      if (i + kPrefetchWords < n) _mm_prefetch(reinterpret_cast<const char*>(p + i + kPrefetchWords + line), _MM_HINT_T0);
    }
    a = _mm256_add_epi64(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_add_epi64(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    c = _mm256_add_epi64(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    d = _mm256_add_epi64(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  __m256i sum = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
  uint64_t lanes[4];
  std::memcpy(lanes, &sum, sizeof sum);
  return SumSlice(p + i, n - i) + lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

SumKernel WidestSum() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return SumSliceAvx512;
  if (__builtin_cpu_supports("avx2")) return SumSliceAvx2;
#endif
  return SumSlice;
}

// The compute kernels (x86-64 only; elsewhere the table's figures stand): `iters` rounds of kChains independent chains; each returns the
// operations it performed and writes a value derived from every chain to `sink`.
using Kernel = double (*)(long iters, double* sink);

#if defined(__x86_64__)
__attribute__((target("avx512f"))) double FmaAvx512(long iters, double* sink) {
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(1.0f + 0.01f * static_cast<float>(k));
  const __m512 m = _mm512_set1_ps(0.9999999f), a = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], m, a);
  }
  *sink = SumLanes<float>(acc);
  return 2.0 * 16 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx2,fma"))) double FmaAvx2(long iters, double* sink) {
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(1.0f + 0.01f * static_cast<float>(k));
  const __m256 m = _mm256_set1_ps(0.9999999f), a = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], m, a);
  }
  *sink = SumLanes<float>(acc);
  return 2.0 * 8 * kChains * static_cast<double>(iters);
}

// u8 x s8 -> i32: 64 multiply-accumulates per instruction.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double DotAvx512Vnni(long iters, double* sink) {
  __m512i acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_epi32(k);
  const __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], x, y);
  }
  *sink = SumLanes<int32_t>(acc);
  return 2.0 * 64 * kChains * static_cast<double>(iters);
}

// 32 multiply-accumulates per instruction.
__attribute__((target("avx2,avxvnni"))) double DotAvxVnni(long iters, double* sink) {
  __m256i acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_epi32(k);
  const __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_dpbusd_avx_epi32(acc[k], x, y);
  }
  *sink = SumLanes<int32_t>(acc);
  return 2.0 * 32 * kChains * static_cast<double>(iters);
}

// ggml's AVX2 int8 dot product: vpmaddubsw (u8 x s8 pairs -> i16), vpmaddwd (-> i32),
// vpaddd: 32 multiply-accumulates per three instructions. The empty asm makes `x` opaque
// to the compiler, so the products are computed in the loop, as with real weights.
__attribute__((target("avx2"))) double DotAvx2(long iters, double* sink) {
  __m256i acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_epi32(k);
  __m256i x = _mm256_set1_epi8(3);
  const __m256i y = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) {
      asm volatile("" : "+x"(x));
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), ones));
    }
  }
  *sink = SumLanes<int32_t>(acc);
  return 2.0 * 32 * kChains * static_cast<double>(iters);
}
#endif

// Runs `kernel` on `threads` threads for about `seconds` per pass; the best pass's rate.
double PeakRate(Kernel kernel, const ComputeProbe& probe) {
  double sink = 0;
  // Calibrate: iterations per second of one thread.
  long iters = 1 << 14;
  double elapsed = 0;
  while (true) {
    auto start = std::chrono::steady_clock::now();
    kernel(iters, &sink);
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > 0.01 || iters > (1L << 40)) break;
    iters *= 4;
  }
  const long pass_iters = std::max(1L, static_cast<long>(static_cast<double>(iters) * probe.seconds / elapsed));
  const auto t = static_cast<size_t>(probe.threads);
  std::vector<double> sinks(t), done(t);
  double best = 0;
  for (int pass = 0; pass < probe.passes; ++pass) {
    std::vector<std::thread> workers;
    auto start = std::chrono::steady_clock::now();
    for (size_t k = 0; k < t; ++k) {
      workers.emplace_back([&, k] { done[k] = kernel(pass_iters, &sinks[k]); });
    }
    for (auto& w : workers) w.join();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double total = 0;
    for (double d : done) total += d;
    if (seconds > 0) best = std::max(best, total / seconds);
  }
  volatile double keep = sink;
  for (double s : sinks) keep = keep + s;
  (void)keep;
  return best;
}

}  // namespace

uint64_t ProbeSum(const uint64_t* p, size_t n) { return WidestSum()(p, n); }

Result<double> MeasureReadBandwidth(const BandwidthProbe& probe) {
  if (probe.threads < 1 || probe.threads > 1024 || probe.passes < 1 || probe.bytes < (size_t{1} << 20)) {
    return InvalidArgument("bandwidth probe: threads 1..1024, passes >= 1 and at least 1 MiB");
  }
  const size_t words = probe.bytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> data(new (std::nothrow) uint64_t[words]);
  if (!data) return ResourceExhausted("bandwidth probe: cannot allocate the array");
  const int t = probe.threads;
  const size_t slice = words / static_cast<size_t>(t);
  std::vector<uint64_t> sums(static_cast<size_t>(t));
  const SumKernel sum = WidestSum();
  double best = 0;
  // Pass 0 writes the array (faulting every page in) and is not timed.
  for (int pass = 0; pass <= probe.passes; ++pass) {
    std::vector<std::thread> readers;
    auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < t; ++k) {
      readers.emplace_back([&, k, pass] {
        uint64_t* p = data.get() + static_cast<size_t>(k) * slice;
        if (pass == 0) {
          for (size_t i = 0; i < slice; ++i) p[i] = i ^ static_cast<size_t>(k);
        } else {
          sums[static_cast<size_t>(k)] += sum(p, slice);
        }
      });
    }
    for (auto& r : readers) r.join();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass > 0 && seconds > 0) {
      best = std::max(best, static_cast<double>(slice * static_cast<size_t>(t) * sizeof(uint64_t)) / seconds);
    }
  }
  // The sums are kept so the reads cannot be optimized away.
  volatile uint64_t sink = 0;
  for (uint64_t s : sums) sink = sink + s;
  (void)sink;
  return best;
}

Hardware WithMeasuredBandwidth(Hardware hw, double bytes_per_s, const std::string& source) {
  hw.measured_memory_bw_bytes_per_s = bytes_per_s;
  hw.measured_source = hw.measured_source.empty() ? source : source + "; other ceilings: " + hw.measured_source;
  return hw;
}

double LastLevelCacheBytes(const std::string& sysfs_cpu) {
  double best = 0;
  int best_level = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(sysfs_cpu, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("index")) continue;
    auto read = [&](const char* file) -> std::string {
      auto text = sys::ReadFile((entry.path() / file).string());
      return text ? std::string(Trim(*text)) : std::string();
    };
    const std::string type = read("type");
    if (type != "Data" && type != "Unified") continue;
    const int level = static_cast<int>(ParseInt(read("level")).value_or(0));
    // "307200K", "32M", or bytes.
    std::string size = read("size");
    double unit = 1;
    if (!size.empty() && (size.back() == 'K' || size.back() == 'M' || size.back() == 'G')) {
      unit = size.back() == 'K' ? 1024.0 : size.back() == 'M' ? 1024.0 * 1024 : 1024.0 * 1024 * 1024;
      size.pop_back();
    }
    const double bytes = static_cast<double>(ParseInt(size).value_or(0)) * unit;
    if (bytes > 0 && level > best_level) {
      best_level = level;
      best = bytes;
    }
  }
  return best;
}

Result<double> MeasureCacheBandwidth(double llc_bytes, int threads) {
  const double array = llc_bytes / 4;
  if (!(array >= static_cast<double>(size_t{1} << 20))) {
    return FailedPrecondition("cache bandwidth probe: the last-level cache is too small to probe");
  }
  // Many passes of a small array: each takes a few milliseconds.
  return MeasureReadBandwidth({.threads = threads, .bytes = static_cast<size_t>(array), .passes = 20});
}

Hardware WithMeasuredCache(Hardware hw, double llc_bytes, double bytes_per_s, const std::string& source) {
  hw.llc_bytes = llc_bytes;
  hw.llc_bw_bytes_per_s = bytes_per_s;
  hw.measured_source = hw.measured_source.empty() ? source : hw.measured_source + "; " + source;
  return hw;
}

Result<ComputePeaks> MeasureComputePeaks(const ComputeProbe& probe) {
  if (probe.threads < 1 || probe.threads > 1024 || probe.passes < 1 || !(probe.seconds > 0) || probe.seconds > 10) {
    return InvalidArgument("compute probe: threads 1..1024, passes >= 1, seconds in (0, 10]");
  }
  ComputePeaks out;
  Kernel fma = nullptr, dot = nullptr;
  out.fp32_isa = "none";
  out.int8_isa = "none";
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    fma = FmaAvx512;
    out.fp32_isa = "avx512f";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    fma = FmaAvx2;
    out.fp32_isa = "avx2+fma";
  }
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")) {
    dot = DotAvx512Vnni;
    out.int8_isa = "avx512vnni";
  } else if (__builtin_cpu_supports("avxvnni")) {
    dot = DotAvxVnni;
    out.int8_isa = "avxvnni";
  } else if (__builtin_cpu_supports("avx2")) {
    dot = DotAvx2;
    out.int8_isa = "avx2";
  }
#endif
  if (fma) out.fp32 = PeakRate(fma, probe);
  if (dot) out.int8 = PeakRate(dot, probe);
  return out;
}

Hardware WithMeasuredCompute(Hardware hw, const ComputePeaks& peaks, const std::string& source) {
  if (peaks.fp32 > 0) {
    hw.measured_peak_flops["fp32"] = peaks.fp32;
    hw.measured_peak_flops["fp16"] = peaks.fp32;
  }
  if (peaks.int8 > 0) hw.measured_peak_flops["int8"] = peaks.int8;
  hw.measured_source = hw.measured_source.empty() ? source : source + "; " + hw.measured_source;
  return hw;
}

}  // namespace hone::roofline
