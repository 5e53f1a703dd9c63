#include "bench/tracegen.h"

#include <algorithm>

#include "core/rng.h"

namespace hone::bench {

Result<TraceGenOptions> TraceGenPreset(const std::string& name) {
  TraceGenOptions o;
  if (name == "cpu") return o;
  if (name == "gpu") {
    o.sessions = 64;
    o.turns_min = 8;
    o.turns_max = 40;
    o.system_tokens = 6000;
    o.tool_tokens = 10000;
    o.user_min = 100;
    o.user_max = 1500;
    o.tool_result_min = 500;
    o.tool_result_max = 8000;
    o.out_min = 100;
    o.out_max = 1500;
    o.sub_requests_min = 3;
    o.sub_requests_max = 12;
    o.think_min_s = 1;
    o.think_max_s = 20;
    o.max_context = 200000;
    return o;
  }
  return InvalidArgument("unknown trace preset '" + name + "' (cpu, gpu)");
}

namespace {

int64_t Blocks(int64_t tokens, int64_t bs) { return (tokens + bs - 1) / bs; }

}  // namespace

std::vector<Trace> GenerateTraces(const TraceGenOptions& o) {
  std::vector<Trace> out;
  const int64_t bs = o.block_size;
  for (int si = 0; si < o.sessions; ++si) {
    Rng rng(MixSeed(o.seed, static_cast<uint64_t>(si)));
    Trace t;
    t.id = "synth-" + std::to_string(o.seed) + "-" + std::to_string(si);
    t.block_size = bs;
    t.system_tokens = o.system_tokens;
    t.tool_tokens = o.tool_tokens;
    int64_t next_hash = 1;
    auto fresh = [&](int64_t n) {
      std::vector<int64_t> ids;
      for (int64_t i = 0; i < n; ++i) ids.push_back(next_hash++);
      return ids;
    };
    // The system + tool prefix is identical for every session (a real agent's tools
    // and system prompt), so its block ids are fixed; per-session blocks follow.
    std::vector<int64_t> prefix;
    for (int64_t i = 0; i < Blocks(o.system_tokens + o.tool_tokens, bs); ++i) prefix.push_back(1'000'000 + i);
    std::vector<int64_t> history = prefix;
    double now = 0;
    int turns = static_cast<int>(rng.Uniform(o.turns_min, o.turns_max));
    int64_t prev_out = 0;
    for (int turn = 0; turn < turns; ++turn) {
      // New input of this turn: the previous output (as assistant text) + user/tool text.
      bool tool = turn > 0 && rng.NextDouble() < o.tool_turn_prob;
      int64_t added = tool ? rng.Uniform(o.tool_result_min, o.tool_result_max) : rng.Uniform(o.user_min, o.user_max);
      auto out_blocks = fresh(Blocks(prev_out, bs));
      auto in_blocks = fresh(Blocks(added, bs));
      history.insert(history.end(), out_blocks.begin(), out_blocks.end());
      history.insert(history.end(), in_blocks.begin(), in_blocks.end());
      if (static_cast<int64_t>(history.size()) * bs > o.max_context || (turn > 2 && rng.NextDouble() < o.compact_prob)) {
        // Compaction: keep the shared prefix, replace the rest by a short summary.
        history = prefix;
        auto summary = fresh(Blocks(std::min<int64_t>(o.user_max, o.max_context / 8), bs));
        history.insert(history.end(), summary.begin(), summary.end());
        auto again = fresh(Blocks(added, bs));
        history.insert(history.end(), again.begin(), again.end());
      }
      TraceRequest r;
      r.t = now;
      r.in = static_cast<int64_t>(history.size()) * bs;
      r.out = rng.Uniform(o.out_min, o.out_max);
      r.hash_ids = history;
      r.api_time = static_cast<double>(r.out) / o.decode_tps;
      r.think_time = turn == 0 ? 0.0 : o.think_min_s + (o.think_max_s - o.think_min_s) * rng.NextDouble();
      r.t = now + r.think_time;
      now = r.t + r.api_time;
      prev_out = r.out;
      TraceItem item;
      item.request = r;
      t.items.push_back(std::move(item));
      if (rng.NextDouble() < o.subagent_prob && turn + 1 < turns) {
        TraceItem sub;
        sub.is_subagent = true;
        sub.t = now;
        sub.agent_id = "a" + std::to_string(turn);
        sub.subagent_type = "Explore";
        std::vector<int64_t> sub_history = prefix;
        auto task = fresh(Blocks(rng.Uniform(o.user_min, o.user_max), bs));
        sub_history.insert(sub_history.end(), task.begin(), task.end());
        double st = now;
        int64_t sub_prev = 0;
        int n = static_cast<int>(rng.Uniform(o.sub_requests_min, o.sub_requests_max));
        for (int k = 0; k < n; ++k) {
          auto ob = fresh(Blocks(sub_prev, bs));
          auto ib = fresh(Blocks(rng.Uniform(o.tool_result_min, o.tool_result_max) / 2, bs));
          sub_history.insert(sub_history.end(), ob.begin(), ob.end());
          sub_history.insert(sub_history.end(), ib.begin(), ib.end());
          if (static_cast<int64_t>(sub_history.size()) * bs > o.max_context) sub_history.resize(static_cast<size_t>(o.max_context / bs));
          TraceRequest sr;
          sr.think_time = k == 0 ? 0.05 : o.think_min_s / 2;
          sr.t = st + sr.think_time;
          sr.in = static_cast<int64_t>(sub_history.size()) * bs;
          sr.out = rng.Uniform(o.out_min, o.out_max);
          sr.hash_ids = sub_history;
          sr.api_time = static_cast<double>(sr.out) / o.decode_tps;
          st = sr.t + sr.api_time;
          sub_prev = sr.out;
          sub.requests.push_back(std::move(sr));
        }
        now = st;
        t.items.push_back(std::move(sub));
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace hone::bench
