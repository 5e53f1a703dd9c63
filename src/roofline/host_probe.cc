#include "roofline/host_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>
#include <vector>

namespace hone::roofline {
namespace {

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

}  // namespace

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
          sums[static_cast<size_t>(k)] += SumSlice(p, slice);
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

}  // namespace hone::roofline
