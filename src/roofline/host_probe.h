// Host probes: the CPU machine's own memory-bandwidth ceiling, measured in under a
// second. A CPU entry in data/hardware.yaml names a family ("AMD EPYC, 2 vCPU"), but a
// virtual machine's CPU string hides which host it runs on, and two hosts behind the
// same string were measured here at 20 and 40 GB/s. A roofline bound that a real
// run beats is no bound, so on a CPU host the session measures the bandwidth itself
// and that figure overrides the table's.
#pragma once

#include <cstddef>

#include "core/error.h"
#include "roofline/hardware.h"

namespace hone::roofline {

struct BandwidthProbe {
  int threads = 2;                   // readers, one per core the server will use
  size_t bytes = size_t{512} << 20;  // far larger than any last-level cache
  int passes = 5;                    // the best pass is the ceiling
};

// Sustained read bandwidth in bytes/s: `threads` threads each sum their slice of one
// array; the best of `passes` timed passes (after one untimed pass that faults the
// pages in). kInvalidArgument for bad parameters, kResourceExhausted when the array
// cannot be allocated.
Result<double> MeasureReadBandwidth(const BandwidthProbe& probe = {});

// `hw` with its measured bandwidth replaced by `bytes_per_s` (and the source noted).
Hardware WithMeasuredBandwidth(Hardware hw, double bytes_per_s, const std::string& source);

}  // namespace hone::roofline
