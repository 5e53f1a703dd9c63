// Rng: a small deterministic random generator (SplitMix64) for everything that must
// be reproducible from a seed: synthesized weights, prompts, bootstrap resampling.
// Not thread-safe; give each thread its own.
#pragma once

#include <cmath>
#include <cstdint>

namespace hone {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  // The generator's position: Rng(state()) continues the integer and uniform streams
  // exactly (a cached second Gaussian is not part of it).
  uint64_t state() const { return state_; }

  uint64_t NextU64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double NextDouble() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi] (inclusive).
  int64_t Uniform(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(NextU64() % span);
  }
  // Standard normal (Box-Muller; caches the second value).
  double NextGaussian() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = NextDouble();
    double u2 = NextDouble();
    if (u1 < 1e-300) u1 = 1e-300;
    double r = std::sqrt(-2.0 * std::log(u1));
    double theta = 2.0 * M_PI * u2;
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }
  // Exponential with the given mean (for Poisson arrivals).
  double NextExponential(double mean) {
    double u = NextDouble();
    if (u < 1e-300) u = 1e-300;
    return -std::log(u) * mean;
  }

 private:
  uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// Mixes several values into one seed (for per-block / per-request seeds).
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  Rng r(a ^ (b * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL));
  return r.NextU64();
}

}  // namespace hone
