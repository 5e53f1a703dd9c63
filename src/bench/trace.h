// Agentic session traces in AgentX's "Weka" format, and the replay graph built from
// them (shared/reference/serving-benchmarks.md §1.2-1.4).
//
// A trace is one recorded session: requests (t, in, out, hash_ids of 64-token KV
// blocks, api_time, think_time) and subagent blocks with nested requests sharing the
// parent's hash namespace. LoadTraces reads one JSON object, a JSON array, or JSON
// lines; a bad field is an error naming the file, the line and the field path.
// BuildSession turns a trace into nodes with dependencies:
//  - within a stream (the root, or one subagent), a request waits for every earlier
//    request of that stream whose recorded interval ended before it started (the
//    "predecessor frontier"; overlapping requests run in parallel);
//  - a subagent is spawned by the root request before it and joined by the root
//    request after it; without a following root request it runs in the background;
//    without a preceding one it is dropped (as AIPerf does);
//  - the gap before a request is its recorded think_time (or the recorded start gap);
//  - theoretical prefix-cache hits: the longest block prefix shared with an earlier
//    request of the same session tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace hone::bench {

struct TraceRequest {
  double t = 0;
  std::string type = "s";  // "n" normal, "s" streaming
  int64_t in = 0;
  int64_t out = 0;
  std::vector<int64_t> hash_ids;
  double api_time = 0;
  double think_time = -1;  // absent: derived from the recorded start gap
};

struct TraceItem {
  bool is_subagent = false;
  TraceRequest request;  // when !is_subagent
  // Subagent:
  double t = 0;
  std::string agent_id;
  std::string subagent_type;
  std::vector<TraceRequest> requests;
};

struct Trace {
  std::string id;
  int64_t block_size = 64;
  int64_t tool_tokens = 0;
  int64_t system_tokens = 0;
  std::vector<TraceItem> items;
  size_t RequestCount() const;
};

Result<std::vector<Trace>> LoadTraces(const std::string& path);
// Writes JSON lines (one trace per line).
Status WriteTraces(const std::string& path, const std::vector<Trace>& traces);
std::string TraceToJson(const Trace& t);

struct ReplayNode {
  int id = 0;
  int stream = 0;          // 0 = root; k = k-th subagent
  double t = 0;
  int64_t isl = 0;
  int64_t osl = 0;
  std::vector<int64_t> hash_ids;
  double api_time = 0;
  double gap_s = 0;        // wait after the last dependency finished
  std::vector<int> deps;
  bool background = false;
  bool first_in_stream = false;
  int64_t prev_out = 0;    // output tokens of the stream's previous request
  int prev_in_stream = -1; // node id of the stream's previous request (-1 none)
  int64_t hit_blocks = 0;
  int64_t total_blocks = 0;
};

struct ReplaySession {
  std::string trace_id;
  int64_t block_size = 64;
  int64_t system_blocks = 0;  // ceil((tool + system)/block_size)
  std::vector<ReplayNode> nodes;
  int root_requests = 0;
  int dropped_subagents = 0;
};

ReplaySession BuildSession(const Trace& trace);

}  // namespace hone::bench
