// Agentic session replay (AgentX-style), closed loop over lanes.
//
// `concurrency` lanes each hold one session tree (root + subagents). A request is
// sent when its dependencies are done and its recorded think gap (scaled by
// think_scale, capped per tree) has passed; a lane takes the next trace, from turn 0,
// only when its whole tree has drained. Initial lanes start at a sampled turn in
// [start_min, start_max] of their trace: the turn before it is sent first as a 1-token
// warm-up with its full prefix, so the measured window starts with warm caches, as in
// AgentX. When nothing is in flight or ready, every timer shifts so that the next
// request is at most system_idle_cap_s away. The window closes after duration_s:
// nothing new starts, in-flight requests finish and are included.
//
// Payloads are chat requests built block by block: each hash id maps to deterministic
// text of about block_size tokens (seeded by trace id and hash id), so turns that
// share blocks share byte-identical prefixes and the server's prefix cache behaves as
// in the recorded sessions. Turn k keeps the history up to the longest common block
// prefix with turn k-1, then an assistant message of ceil(prev_out/block) blocks and a
// user message with the rest. A "[rid:<12 hex>]" marker on the first user message
// makes every play's turn 0 cold.
#pragma once

#include <string>
#include <vector>

#include "bench/runner.h"
#include "bench/trace.h"

namespace hone::bench {

struct AgenticOptions {
  int concurrency = 1;
  double duration_s = 60;
  uint64_t seed = 42;
  double start_min = 0.25;      // initial lanes start at a turn in [min, max] of the trace
  double start_max = 0.75;
  bool lane_warmup = true;      // send the turn before the start turn as a 1-token warm-up
  double think_scale = 1.0;     // 1 = recorded think times; < 1 compresses them (a documented deviation)
  double system_idle_cap_s = 10;
  double tree_idle_cap_s = 300;
  int64_t max_context = 0;      // drop traces with a request over this (in + out); 0 = no limit
  int max_plays = 0;            // stop starting trees after this many (0 = until the window ends)
  double tokens_per_word = 1.3;
};

Result<RunOutput> RunAgentic(const std::vector<Trace>& traces, const AgenticOptions& agentic,
                             const RunOptions& options);

// The chat messages a node of a play sends (exposed for tests).
class PayloadBuilder {
 public:
  PayloadBuilder(const ReplaySession& session, std::string marker, double tokens_per_word);
  std::vector<Message> Build(const ReplayNode& node);

 private:
  struct Msg {
    std::string role;
    std::vector<int64_t> blocks;
    std::string extra;  // marker / partial tail
  };
  std::string Render(const Msg& m) const;

  const ReplaySession& session_;
  std::string marker_;
  double tokens_per_word_;
  uint64_t trace_seed_;
  std::vector<std::vector<Msg>> conv_;          // per stream
  std::vector<std::vector<int64_t>> blocks_;    // per stream: hash ids of the last turn
};

}  // namespace hone::bench
