// Statistics used by the benchmark and the measurement protocol.
//
// Percentiles use linear interpolation at k = (n-1)*p/100 (numpy's "linear", the
// definition vLLM, SGLang and InferenceX use). Standard deviations are population
// (ddof = 0), as in InferenceX's aggregation. Bootstrap intervals are deterministic
// for a seed so that a verdict can be recomputed from the stored samples.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hone {

double Mean(std::span<const double> xs);
double PopulationStd(std::span<const double> xs);
// p in [0, 100]. Empty input gives 0 (callers check n first when it matters).
double Percentile(std::span<const double> xs, double p);
double PercentileSorted(std::span<const double> sorted, double p);
double Median(std::span<const double> xs);

struct Summary {
  size_t n = 0;
  double mean = 0, std = 0, min = 0, max = 0;
  double p50 = 0, p75 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0;
};
Summary Summarize(std::span<const double> xs);

struct Interval {
  double estimate = 0;  // the point estimate
  double lo = 0;
  double hi = 0;
  double confidence = 0.95;
};

// Percentile-bootstrap interval of mean(b)/mean(a) for independent samples.
Interval BootstrapRatioOfMeans(std::span<const double> a, std::span<const double> b,
                               double confidence, int iterations, uint64_t seed);

// Percentile-bootstrap interval of sum(b)/sum(a) over resampled pairs (a_i, b_i):
// for interleaved A/B trials, where pair i shares the machine's state at time i.
Interval BootstrapPairedRatio(std::span<const double> a, std::span<const double> b,
                              double confidence, int iterations, uint64_t seed);

}  // namespace hone
