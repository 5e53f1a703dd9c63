// Runner: drives requests against a server under a load shape and records every one.
//
// One thread, one net::HttpLoop: closed-loop concurrency (N requests in flight, the
// next sent when one completes), or open-loop arrivals (Poisson or constant rate,
// optionally capped by a concurrency limit whose wait is recorded as client queue
// time). Warm-up requests run first and are recorded but never measured. /metrics is
// scraped on the same loop. A run stops early, marked invalid, when the error rate
// passes the threshold; an interrupt (SIGINT) ends it cleanly with what was measured.
// Agentic session replay has its own entry point (replay.h) on the same engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/openai.h"
#include "bench/record.h"
#include "bench/scrape.h"
#include "core/error.h"

namespace hone::bench {

struct LoadShape {
  enum class Kind { kClosedLoop, kPoisson, kConstant };
  Kind kind = Kind::kClosedLoop;
  int concurrency = 1;   // closed loop: requests in flight; open loop: cap (0 = none)
  double rate_rps = 0;   // open loop arrivals per second
  // "closed", "poisson:4.5", "constant:2"
  static Result<LoadShape> Parse(std::string_view text, int concurrency);
  std::string ToString() const;
};

struct RunOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  ServerProfile profile;
  LoadShape shape;
  net::RequestLimits limits;
  double duration_s = 0;            // 0: run until the request list is exhausted
  // With duration_s: cancel the requests still running when the window ends (records
  // marked `cut`) instead of waiting for them; the window then ends at duration_s.
  bool cut_at_window_end = false;
  // With cut_at_window_end: load runs this long before the measurement window opens
  // (steady state: every slot busy, the first prefill burst over); only tokens streamed
  // inside the window count. A closed loop staggers its first wave's output lengths
  // over the ramp (request k of N asks for (k+1)/N of its tokens) so that completions
  // and the next prefills are spread in time, not synchronized for the whole run.
  double ramp_s = 0;
  double scrape_interval_s = 1.0;   // 0: no /metrics scraping
  uint64_t seed = 42;               // open-loop arrival times
  double max_error_rate = 0.10;     // above this (after 20 requests) the run is aborted, invalid
  int64_t slot_context = 0;         // the server's per-slot context (ProbeServerLimits); 0 = unknown
  bool progress = true;
};

struct RunOutput {
  std::vector<RequestRecord> records;  // warm-up and profiling, in completion order
  ServerSeries series;
  int64_t window_start_ns = 0;  // first profiling dispatch (or the ramp's end)
  int64_t window_end_ns = 0;    // last profiling completion (or the cut)
  bool windowed = false;        // a cut window: throughput counts the tokens streamed inside it
  std::vector<std::string> invalid_reasons;
  bool interrupted = false;
  int peak_in_flight = 0;
  int cut = 0;  // requests cut at the window's end
};

Result<RunOutput> RunRequests(const std::vector<RequestSpec>& requests, const RunOptions& options);

// Arrival offsets (seconds from the start) for `n` open-loop requests.
std::vector<double> ArrivalOffsets(const LoadShape& shape, size_t n, uint64_t seed);

}  // namespace hone::bench
