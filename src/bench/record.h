// What one benchmark request was and what happened to it.
//
// RequestSpec is the request as planned (endpoint, prompt, forced output length,
// session/turn for agentic replay). RequestRecord is the measured outcome: monotonic
// timestamps of dispatch, first and last content chunk and stream end, every
// content-chunk arrival (for ITL), server-reported token counts with their source,
// and an error category. Errors are outcomes, never dropped: every request that was
// sent has a record. Plain value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hone::bench {

enum class Endpoint { kCompletions, kChat };
std::string_view EndpointPath(Endpoint e);  // "/v1/completions", "/v1/chat/completions"

enum class Phase { kWarmup, kProfiling };

struct Message {
  std::string role;  // system | user | assistant
  std::string content;
};

struct RequestSpec {
  Endpoint endpoint = Endpoint::kCompletions;
  std::vector<int32_t> prompt_ids;  // completions with token ids (exact ISL)
  std::string prompt_text;          // completions with text
  std::vector<Message> messages;    // chat
  int64_t max_tokens = 0;           // forced output length (OSL)
  int64_t isl_expected = 0;         // planned input tokens
  Phase phase = Phase::kProfiling;
  std::string session;              // agentic: session tree id
  int turn = -1;
  int64_t hit_blocks = 0;           // agentic: theoretical prefix-cache hit
  int64_t total_blocks = 0;
};

enum class ErrorCategory {
  kNone,
  kConnectionRefused,
  kConnectionReset,
  kStalled,          // no bytes within the per-request idle timeout
  kTimeout,          // the request exceeded its total time limit
  kTruncated,        // the stream ended without [DONE] / mid-body
  kMalformed,        // unparseable SSE or JSON
  kHttp429,
  kHttp500,
  kHttp503,
  kHttp4xx,
  kHttp5xx,
  kContextOverflow,  // the prompt did not fit the server's context
  kStreamError,      // an error object inside a 200 stream
  kNoContent,        // a complete stream without a single content token
  kSlowStream,       // the response was dripped a few bytes at a time (slow-loris)
  kCancelled,
};
std::string_view ErrorCategoryName(ErrorCategory c);

// Where a record's token counts came from (the anchors prefer the server's usage).
enum class CountSource { kUsage, kChunks, kClient };
std::string_view CountSourceName(CountSource s);

struct RequestRecord {
  uint64_t index = 0;
  Phase phase = Phase::kProfiling;
  std::string session;
  int turn = -1;
  int64_t t_start_ns = 0;  // request sent (monotonic)
  int64_t t_first_ns = 0;  // first non-empty content chunk
  int64_t t_last_ns = 0;   // last content chunk
  int64_t t_end_ns = 0;    // stream closed
  int64_t isl = 0;
  int64_t isl_expected = 0;  // the planned input (agentic: the trace's `in`); 0 when not planned
  int64_t osl = 0;
  int64_t osl_expected = 0;
  // The workload's OSL when the runner asked this request for fewer tokens (a staggered
  // first wave, RunOptions::ramp_s); 0 = osl_expected. A window credits the request's
  // prompt per output token at isl / osl_nominal.
  int64_t osl_nominal = 0;
  int64_t cached_tokens = -1;  // usage.prompt_tokens_details.cached_tokens (or llama.cpp timings.cache_n)
  CountSource count_source = CountSource::kClient;
  std::vector<int64_t> chunk_ns;  // arrival of each content chunk
  int http_status = 0;
  ErrorCategory error = ErrorCategory::kNone;
  std::string error_detail;
  bool osl_mismatch = false;
  // Cancelled by the client at the end of a measurement window (RunOptions::
  // cut_at_window_end): not an error; its tokens up to the cut count toward throughput.
  bool cut = false;
  double client_queue_s = 0;  // open loop: waiting for a concurrency slot
  int64_t hit_blocks = 0;
  int64_t total_blocks = 0;

  bool ok() const { return error == ErrorCategory::kNone; }
  double ttft_s() const { return static_cast<double>(t_first_ns - t_start_ns) * 1e-9; }
  double e2el_s() const { return static_cast<double>(t_last_ns - t_start_ns) * 1e-9; }
  // (E2EL - TTFT) / (OSL - 1); only meaningful for OSL >= 2.
  double tpot_s() const { return osl >= 2 ? (e2el_s() - ttft_s()) / static_cast<double>(osl - 1) : 0.0; }
};

}  // namespace hone::bench
