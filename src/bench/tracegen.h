// A synthetic agentic-session generator that writes AgentX's trace format, for users
// without the recorded corpus. Sessions grow a shared prefix turn by turn (system +
// tool prompt, user turns, assistant outputs, tool results), sometimes compact their
// history (the prefix is cut back, as context management does), and spawn subagents
// with fresh contexts that share the session's hash namespace. Sizes come from a
// profile: "cpu" keeps prompts within a few thousand tokens for CPU engines, "gpu"
// approaches the real corpus (tens of thousands of tokens). Deterministic per seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/trace.h"
#include "core/error.h"

namespace hone::bench {

struct TraceGenOptions {
  int sessions = 8;
  int turns_min = 4, turns_max = 10;
  int64_t system_tokens = 256;       // + tool_tokens form the shared prefix of turn 0
  int64_t tool_tokens = 128;
  int64_t user_min = 32, user_max = 160;
  int64_t tool_result_min = 64, tool_result_max = 320;
  double tool_turn_prob = 0.6;       // a turn carries a tool result instead of a user message
  int64_t out_min = 16, out_max = 64;
  double subagent_prob = 0.2;        // per turn, a subagent spawned after it
  int sub_requests_min = 2, sub_requests_max = 4;
  double compact_prob = 0.05;        // per turn, history compaction
  double think_min_s = 0.2, think_max_s = 2.0;
  double decode_tps = 50;            // for recorded api_time = out / decode_tps
  int64_t max_context = 4096;        // sessions stop growing (compact) beyond this
  int64_t block_size = 64;
  uint64_t seed = 42;
};

// "cpu" or "gpu" presets.
Result<TraceGenOptions> TraceGenPreset(const std::string& name);
std::vector<Trace> GenerateTraces(const TraceGenOptions& options);

}  // namespace hone::bench
