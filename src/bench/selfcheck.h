// The benchmark client measuring itself against a loopback SSE emitter.
//
// The emitter (a net::RawServer in this process) streams OpenAI-style completion
// chunks. Two measurements:
//  - throughput: the emitter writes as fast as the socket allows (events coalesced
//    into large writes), the production client path (RunRequests + StreamHandler)
//    reads them; reported as chunks/s of wall time, chunks per CPU-second of the
//    client thread, and CPU microseconds per chunk;
//  - timing: the emitter sends one event per write at a fixed cadence and stamps
//    each send with the same monotonic clock the client uses; the error is the
//    difference between client-measured and emitter-stamped gaps (p50/p99), plus
//    the absolute send->receive delay.
// The reference comparison runs bench/ref_client.py (Python asyncio, stdlib only)
// on the same throughput job and reports the chunk-rate ratio.
#pragma once

#include <string>

#include "core/error.h"

namespace hone::bench {

struct SelfCheckOptions {
  int streams = 64;
  int chunks_per_stream = 20000;    // throughput mode
  int timing_streams = 4;
  int timing_chunks = 2000;         // timing mode, per stream
  int timing_interval_us = 200;
  std::string python_client;        // path of ref_client.py; empty: skip the comparison
  std::string python = "python3";
};

struct SelfCheckReport {
  double chunks = 0;
  double wall_s = 0;
  double client_cpu_s = 0;
  double chunks_per_s = 0;          // wall
  double chunks_per_cpu_s = 0;      // per client-thread CPU second
  double cpu_us_per_chunk = 0;
  double gap_error_p50_us = 0, gap_error_p99_us = 0;
  double delay_p50_us = 0, delay_p99_us = 0;
  int timing_samples = 0;
  double python_chunks_per_s = 0;   // 0 when not run
  double ratio_vs_python = 0;
  std::string python_error;
  std::string ToText() const;
};

Result<SelfCheckReport> RunSelfCheck(const SelfCheckOptions& options);

}  // namespace hone::bench
