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
// Payloads are built block by block: each hash id maps to deterministic text (seeded by
// trace id and hash id), so turns that share blocks share byte-identical prefixes and
// the server's prefix cache behaves as in the recorded sessions. Turn k keeps the
// history up to the longest common block prefix with turn k-1, then an assistant
// message of ceil(prev_out/block) blocks and a user message with the rest. A marker on
// the first user message makes every play's turn 0 cold. With a TokenPlan
// (bench/tokens.h) a block is exactly block_size tokens of the served model and the
// last message is padded or trimmed by the template's own overhead, so the server
// counts exactly the trace's `in`; without one, blocks are text sized by a
// tokens-per-word ratio (the old, approximate sizing). Chat requests carry the
// messages; completions requests the same contents as one prompt.
#pragma once

#include <string>
#include <vector>

#include "bench/runner.h"
#include "bench/tokens.h"
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
  Endpoint endpoint = Endpoint::kChat;
  const TokenPlan* tokens = nullptr;  // token-exact payloads (null: sized by tokens_per_word)
  double tokens_per_word = 1.3;
};

Result<RunOutput> RunAgentic(const std::vector<Trace>& traces, const AgenticOptions& agentic,
                             const RunOptions& options);

// The messages a node of a play sends (exposed for tests). A play's marker is
// derived from `marker_id`; `tokens` (optional) must outlive the builder.
class PayloadBuilder {
 public:
  PayloadBuilder(const ReplaySession& session, uint64_t marker_id, const TokenPlan* tokens, double tokens_per_word,
                 Endpoint endpoint = Endpoint::kChat);
  std::vector<Message> Build(const ReplayNode& node);
  // The request a node sends on the builder's endpoint (chat: the messages;
  // completions: their contents as one prompt).
  RequestSpec BuildRequest(const ReplayNode& node);
  // The tokens the last Build planned (template overhead included; token plan only).
  int64_t planned_tokens() const { return planned_tokens_; }
  const std::string& marker() const { return marker_; }

  static constexpr int64_t kMarkerTokens = 6;

 private:
  struct Msg {
    std::string role;
    std::vector<int64_t> blocks;
    bool marker = false;  // the play's cache-bust marker leads this message
    std::string extra;    // filler ("continue") when the message would be empty
  };
  std::string Render(const Msg& m) const;
  std::string BlockText(int64_t hash_id) const;
  void FitToTrace(std::vector<Message>& out, const ReplayNode& node);

  const ReplaySession& session_;
  const TokenPlan* tokens_;
  double tokens_per_word_;
  Endpoint endpoint_;
  std::string marker_;
  uint64_t trace_seed_;
  int64_t planned_tokens_ = 0;
  std::vector<std::vector<Msg>> conv_;          // per stream
  std::vector<std::vector<int64_t>> blocks_;    // per stream: hash ids of the last turn
};

}  // namespace hone::bench
