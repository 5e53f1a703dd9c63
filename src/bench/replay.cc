#include "bench/replay.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "bench/workload.h"
#include "core/rng.h"
#include "core/strings.h"
#include "sys/files.h"
#include "sys/signals.h"
#include "sys/term.h"

namespace hone::bench {

namespace {

uint64_t Hash64(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

int64_t Lcp(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

}  // namespace

PayloadBuilder::PayloadBuilder(const ReplaySession& session, uint64_t marker_id, const TokenPlan* tokens,
                               double tokens_per_word, Endpoint endpoint)
    : session_(session), tokens_(tokens && tokens->usable() ? tokens : nullptr), tokens_per_word_(tokens_per_word),
      endpoint_(endpoint), trace_seed_(Hash64(session.trace_id)) {
  if (tokens_) {
    marker_ = PoolText(*tokens_, marker_id, kMarkerTokens);
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "[rid:%012llx]\n\n", static_cast<unsigned long long>(marker_id & 0xffffffffffffULL));
    marker_ = buf;
  }
  int streams = 1;
  for (const auto& n : session.nodes) streams = std::max(streams, n.stream + 1);
  conv_.resize(static_cast<size_t>(streams));
  blocks_.resize(static_cast<size_t>(streams));
}

std::string PayloadBuilder::BlockText(int64_t hash_id) const {
  const uint64_t seed = MixSeed(trace_seed_, static_cast<uint64_t>(hash_id));
  if (tokens_) return PoolText(*tokens_, seed, session_.block_size);
  return TextSynth(tokens_per_word_).Text(seed, session_.block_size);
}

std::string PayloadBuilder::Render(const Msg& m) const {
  // Token plan: every piece is pool words with leading spaces, so pieces simply
  // concatenate and their token counts add up. Legacy text: newline-separated.
  const std::string sep = tokens_ ? "" : "\n";
  std::string out;
  for (int64_t b : m.blocks) {
    if (!out.empty()) out += sep;
    out += BlockText(b);
  }
  if (!m.extra.empty()) {
    if (!out.empty()) out += sep;
    out += m.extra;
  }
  if (m.marker) out = marker_ + out;
  return out;
}

std::vector<Message> PayloadBuilder::Build(const ReplayNode& node) {
  const int64_t bs = session_.block_size;
  auto& conv = conv_[static_cast<size_t>(node.stream)];
  auto& prev = blocks_[static_cast<size_t>(node.stream)];
  const std::vector<int64_t>& h = node.hash_ids;
  const bool has_tail = node.isl > static_cast<int64_t>(h.size()) * bs;
  const std::string filler = tokens_ ? PoolText(*tokens_, MixSeed(trace_seed_, 0xc0c0), 1) : "continue";
  if (node.first_in_stream || conv.empty()) {
    conv.clear();
    int64_t sys = std::min<int64_t>(session_.system_blocks, static_cast<int64_t>(h.size()));
    if (sys > 0) conv.push_back({"system", std::vector<int64_t>(h.begin(), h.begin() + sys), false, ""});
    conv.push_back({"user", std::vector<int64_t>(h.begin() + sys, h.end()), node.stream == 0, ""});
  } else {
    int64_t lcp = Lcp(prev, h);
    // Keep whole messages within the common prefix; trim the one that straddles it.
    int64_t used = 0;
    size_t keep = 0;
    for (; keep < conv.size(); ++keep) {
      int64_t n = static_cast<int64_t>(conv[keep].blocks.size());
      if (used + n > lcp) {
        if (lcp > used) {
          conv[keep].blocks.resize(static_cast<size_t>(lcp - used));
          conv[keep].extra.clear();
          used = lcp;
          ++keep;
        }
        break;
      }
      used += n;
    }
    conv.resize(keep);
    std::vector<int64_t> fresh(h.begin() + std::min<int64_t>(used, static_cast<int64_t>(h.size())), h.end());
    int64_t a = std::min<int64_t>((node.prev_out + bs - 1) / bs, static_cast<int64_t>(fresh.size()));
    if (a == static_cast<int64_t>(fresh.size()) && a > 0 && !has_tail) --a;  // leave the user something
    if (a > 0) conv.push_back({"assistant", std::vector<int64_t>(fresh.begin(), fresh.begin() + a), false, ""});
    Msg user{"user", std::vector<int64_t>(fresh.begin() + a, fresh.end()), false, ""};
    if (user.blocks.empty() && !has_tail) user.extra = filler;
    conv.push_back(user);
  }
  prev = h;
  std::vector<Message> out;
  for (const Msg& m : conv) out.push_back({m.role, Render(m)});
  if (tokens_) {
    FitToTrace(out, node);
  } else if (has_tail) {
    int64_t tail_tokens = node.isl - static_cast<int64_t>(h.size()) * bs;
    std::string tail = TextSynth(tokens_per_word_).Text(MixSeed(trace_seed_, 0x7a11ULL + static_cast<uint64_t>(node.id)),
                                                        tail_tokens);
    out.back().content += (out.back().content.empty() ? "" : "\n") + tail;
  }
  return out;
}

void PayloadBuilder::FitToTrace(std::vector<Message>& out, const ReplayNode& node) {
  // Every content is pool words, one token each: its token count is its word count.
  auto words = [](const std::string& s) { return static_cast<int64_t>(std::count(s.begin(), s.end(), ' ')); };
  std::vector<std::string> roles;
  int64_t content = 0;
  for (const Message& m : out) {
    roles.push_back(m.role);
    content += words(m.content);
  }
  const int64_t overhead =
      endpoint_ == Endpoint::kChat ? ChatOverhead(*tokens_, roles) : tokens_->completion_base;
  int64_t need = node.isl - overhead - content;
  if (need > 0) {
    // The partial tail and the template's shortfall: fresh words on the last message.
    out.back().content += PoolText(*tokens_, MixSeed(trace_seed_, 0x7a11ULL + static_cast<uint64_t>(node.id)), need);
    content += need;
  }
  // The template's own tokens come off the end of the newest content: the shared
  // prefix (earlier messages) stays byte-identical with the turns before.
  for (size_t i = out.size(); need < 0 && i-- > 0;) {
    std::string& c = out[i].content;
    while (need < 0 && !c.empty()) {
      size_t cut = c.rfind(' ');
      c.resize(cut == std::string::npos ? 0 : cut);
      ++need;
      --content;
    }
  }
  planned_tokens_ = overhead + content;
}

RequestSpec PayloadBuilder::BuildRequest(const ReplayNode& node) {
  RequestSpec spec;
  spec.endpoint = endpoint_;
  std::vector<Message> messages = Build(node);
  if (endpoint_ == Endpoint::kChat) {
    spec.messages = std::move(messages);
  } else {
    for (const Message& m : messages) {
      if (!tokens_ && !spec.prompt_text.empty()) spec.prompt_text += "\n";
      spec.prompt_text += m.content;
    }
  }
  spec.isl_expected = node.isl;
  return spec;
}

namespace {

enum class NodeState { kPending, kWaiting, kInFlight, kDone };

struct Play {
  size_t session_index = 0;
  int play_number = 0;
  std::unique_ptr<PayloadBuilder> builder;
  std::vector<NodeState> state;
  std::vector<int64_t> ready_at_ns;  // for kWaiting
  std::vector<int64_t> done_ns;
  int remaining = 0;
  int64_t start_ns = 0;
};

struct Lane {
  Play play;
  bool active = false;
};


}  // namespace

Result<RunOutput> RunAgentic(const std::vector<Trace>& traces, const AgenticOptions& ag, const RunOptions& options) {
  if (ag.concurrency < 1) return InvalidArgument("agentic replay needs concurrency >= 1");
  std::vector<ReplaySession> sessions;
  int dropped = 0;
  for (const Trace& t : traces) {
    bool fits = true;
    if (ag.max_context > 0) {
      for (const auto& item : t.items) {
        auto check = [&](const TraceRequest& r) { fits = fits && r.in + r.out <= ag.max_context; };
        if (item.is_subagent) {
          for (const auto& r : item.requests) check(r);
        } else {
          check(item.request);
        }
      }
    }
    ReplaySession s = BuildSession(t);
    if (!fits || s.nodes.empty()) {
      ++dropped;
      continue;
    }
    sessions.push_back(std::move(s));
  }
  if (sessions.empty()) {
    return InvalidArgument("no usable trace (" + std::to_string(dropped) + " dropped: empty or longer than max_context)");
  }
  sys::RaiseFdLimit();
  HONE_ASSIGN_OR_RETURN(auto loop, net::HttpLoop::Create());
  Rng rng(options.seed);
  std::vector<size_t> order(sessions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(i) - 1))]);
  size_t next_session = 0;
  int plays_started = 0;

  RunOutput out;
  std::unique_ptr<ServerScraper> scraper;
  if (options.scrape_interval_s > 0) scraper = std::make_unique<ServerScraper>(*loop, options.host, options.port, options.profile.metrics);

  struct InFlight {
    std::unique_ptr<StreamHandler> handler;
    int lane = 0;
    int node = 0;
    bool warmup = false;
    bool done = false;  // set by the handler's completion callback
  };
  // Heap entries: the completion callback holds a pointer to its own entry.
  std::vector<std::unique_ptr<InFlight>> in_flight;
  uint64_t request_index = 0;
  std::vector<Lane> lanes(static_cast<size_t>(ag.concurrency));
  bool window_open = false;
  int64_t window_end_ns = INT64_MAX;

  auto marker_for = [&](size_t session_index, int play) {
    return MixSeed(MixSeed(options.seed, session_index), static_cast<uint64_t>(play));
  };

  // Sends a node of a lane's play; `prebuilt` carries the request when the caller
  // already built it (the warm-up turn, built while replaying history).
  auto send = [&](int lane_index, int node_id, Phase phase, int64_t max_tokens, RequestSpec* prebuilt) {
    Lane& lane = lanes[static_cast<size_t>(lane_index)];
    const ReplaySession& s = sessions[lane.play.session_index];
    const ReplayNode& node = s.nodes[static_cast<size_t>(node_id)];
    RequestSpec spec = prebuilt ? std::move(*prebuilt) : lane.play.builder->BuildRequest(node);
    spec.max_tokens = max_tokens;
    spec.phase = phase;
    spec.session = s.trace_id + "#" + std::to_string(lane.play.play_number);
    spec.turn = node.id;
    spec.hit_blocks = node.hit_blocks;
    spec.total_blocks = node.total_blocks;
    RequestRecord rec;
    rec.index = request_index++;
    rec.phase = phase;
    rec.session = spec.session;
    rec.turn = spec.turn;
    rec.isl = spec.isl_expected;
    rec.isl_expected = spec.isl_expected;
    rec.osl_expected = max_tokens;
    rec.hit_blocks = spec.hit_blocks;
    rec.total_blocks = spec.total_blocks;
    rec.t_start_ns = net::HttpLoop::NowNs();
    if (phase == Phase::kProfiling && out.window_start_ns == 0) out.window_start_ns = rec.t_start_ns;
    auto entry = std::make_unique<InFlight>();
    InFlight* e = entry.get();
    e->handler =
        std::make_unique<StreamHandler>(std::move(rec), [e](StreamHandler&) { e->done = true; }, options.slot_context);
    e->lane = lane_index;
    e->node = node_id;
    e->warmup = phase == Phase::kWarmup;
    StreamHandler* raw = e->handler.get();
    in_flight.push_back(std::move(entry));
    if (phase == Phase::kProfiling) lane.play.state[static_cast<size_t>(node_id)] = NodeState::kInFlight;
    loop->Submit({.method = "POST", .host = options.host, .port = options.port,
                  .path = std::string(EndpointPath(ag.endpoint)), .body = BuildRequestBody(spec, options.profile)},
                 raw, options.limits);
    out.peak_in_flight = std::max(out.peak_in_flight, static_cast<int>(loop->active()));
  };

  // Starts the lane's next play at root turn `start_root_turn`; the history before it
  // is built (not sent) and the messages of the turn just before it are left in
  // `warmup` (with its node id in `warmup_node`).
  auto start_play = [&](int lane_index, int start_root_turn, RequestSpec* warmup, int* warmup_node) -> bool {
    if (ag.max_plays > 0 && plays_started >= ag.max_plays) return false;
    Lane& lane = lanes[static_cast<size_t>(lane_index)];
    size_t si = order[next_session % order.size()];
    ++next_session;
    const ReplaySession& s = sessions[si];
    lane.active = true;
    lane.play = Play{};
    lane.play.session_index = si;
    lane.play.play_number = plays_started++;
    lane.play.builder = std::make_unique<PayloadBuilder>(s, marker_for(si, lane.play.play_number), ag.tokens,
                                                         ag.tokens_per_word, ag.endpoint);
    lane.play.state.assign(s.nodes.size(), NodeState::kPending);
    lane.play.ready_at_ns.assign(s.nodes.size(), 0);
    lane.play.done_ns.assign(s.nodes.size(), 0);
    lane.play.remaining = static_cast<int>(s.nodes.size());
    lane.play.start_ns = net::HttpLoop::NowNs();
    if (start_root_turn > 0) {
      // Nodes before the start turn are history: build their payloads (to keep the
      // conversation state) without sending, and mark them done.
      int roots = 0;
      for (const ReplayNode& n : s.nodes) {
        if (n.stream == 0 && roots++ >= start_root_turn) break;
        RequestSpec m = lane.play.builder->BuildRequest(n);
        if (n.stream == 0 && warmup) {
          *warmup = std::move(m);
          *warmup_node = n.id;
        }
      }
      roots = 0;
      for (const ReplayNode& n : s.nodes) {
        bool before = n.stream == 0 ? roots++ < start_root_turn : false;
        if (n.stream != 0) {
          // A subagent belongs to the history when the root request that spawned it does.
          for (int d : n.deps) before = before || (s.nodes[static_cast<size_t>(d)].stream == 0 &&
                                                   lane.play.state[static_cast<size_t>(d)] == NodeState::kDone);
        }
        if (before) {
          lane.play.state[static_cast<size_t>(n.id)] = NodeState::kDone;
          lane.play.done_ns[static_cast<size_t>(n.id)] = lane.play.start_ns;
          --lane.play.remaining;
        }
      }
    }
    return true;
  };

  // Warm-up: every initial lane starts mid-trace; the turn before is sent (1 token).
  if (scraper) scraper->ScrapeNow();
  for (int l = 0; l < ag.concurrency; ++l) {
    size_t si = order[next_session % order.size()];
    const ReplaySession& s = sessions[si];
    double u = ag.start_min + (ag.start_max - ag.start_min) * rng.NextDouble();
    int start = ag.lane_warmup ? static_cast<int>(std::floor(u * s.root_requests)) : 0;
    start = std::clamp(start, 0, std::max(0, s.root_requests - 1));
    RequestSpec warm;
    int warm_node = -1;
    if (!start_play(l, start, &warm, &warm_node)) {
      lanes[static_cast<size_t>(l)].active = false;
      continue;
    }
    // The root request just before the start turn, with its full prefix, 1 token.
    if (warm_node >= 0) send(l, warm_node, Phase::kWarmup, 1, &warm);
  }
  std::unique_ptr<sys::Progress> progress;
  if (options.progress) progress = std::make_unique<sys::Progress>("replay");

  int profiled = 0, errors = 0;
  // Moves finished requests into the output and frees their handlers.
  auto reap = [&](int64_t now) {
    for (size_t i = 0; i < in_flight.size();) {
      InFlight& f = *in_flight[i];
      if (!f.done) {
        ++i;
        continue;
      }
      RequestRecord rec = std::move(f.handler->record());
      if (!f.warmup) {
        Lane& lane = lanes[static_cast<size_t>(f.lane)];
        lane.play.state[static_cast<size_t>(f.node)] = NodeState::kDone;
        lane.play.done_ns[static_cast<size_t>(f.node)] = now;
        --lane.play.remaining;
        out.window_end_ns = std::max(out.window_end_ns, rec.t_end_ns);
        ++profiled;
        if (!rec.ok()) ++errors;
        if (rec.error == ErrorCategory::kContextOverflow) {
          // As in AgentX, a context overflow ends its session: nothing after it is sent.
          for (size_t n = 0; n < lane.play.state.size(); ++n) {
            if (lane.play.state[n] == NodeState::kPending || lane.play.state[n] == NodeState::kWaiting) {
              lane.play.state[n] = NodeState::kDone;
              lane.play.done_ns[n] = now;
              --lane.play.remaining;
            }
          }
        }
      }
      out.records.push_back(std::move(rec));
      in_flight.erase(in_flight.begin() + static_cast<long>(i));
    }
  };
  bool aborted = false;
  // Profiling starts once warm-ups are drained.
  while (!in_flight.empty() && !sys::InterruptRequested()) {
    loop->RunOnce(20);
    reap(net::HttpLoop::NowNs());
  }
  window_open = true;
  const int64_t window_start = net::HttpLoop::NowNs();
  window_end_ns = window_start + static_cast<int64_t>(ag.duration_s * 1e9);
  for (Lane& lane : lanes) {
    if (lane.active) lane.play.start_ns = window_start;
  }

  while (!sys::InterruptRequested()) {
    int64_t now = net::HttpLoop::NowNs();
    if (now >= window_end_ns) window_open = false;
    // Advance every lane: ready nodes get their dispatch time, due nodes are sent.
    int64_t earliest_wait = INT64_MAX;
    bool anything_due = false;
    for (int l = 0; l < ag.concurrency; ++l) {
      Lane& lane = lanes[static_cast<size_t>(l)];
      if (!lane.active) continue;
      const ReplaySession& s = sessions[lane.play.session_index];
      if (lane.play.remaining == 0) {
        lane.active = false;
        if (window_open && !aborted) start_play(l, 0, nullptr, nullptr);
        if (!lanes[static_cast<size_t>(l)].active) continue;
      }
      Play& play = lane.play;
      const ReplaySession& cur = sessions[play.session_index];
      (void)s;
      for (const ReplayNode& n : cur.nodes) {
        size_t i = static_cast<size_t>(n.id);
        if (play.state[i] == NodeState::kPending) {
          bool ready = true;
          int64_t deps_done = play.start_ns;
          for (int d : n.deps) {
            if (play.state[static_cast<size_t>(d)] != NodeState::kDone) {
              ready = false;
              break;
            }
            deps_done = std::max(deps_done, play.done_ns[static_cast<size_t>(d)]);
          }
          if (!ready) continue;
          double gap = n.deps.empty() ? std::max(0.0, n.t - cur.nodes.front().t) : n.gap_s;
          gap = std::min(gap * ag.think_scale, ag.tree_idle_cap_s);
          play.ready_at_ns[i] = deps_done + static_cast<int64_t>(gap * 1e9);
          play.state[i] = NodeState::kWaiting;
        }
        if (play.state[i] == NodeState::kWaiting) {
          if (!window_open || aborted) continue;
          if (play.ready_at_ns[i] <= now) {
            send(l, n.id, Phase::kProfiling, n.osl, nullptr);
            anything_due = true;
          } else {
            earliest_wait = std::min(earliest_wait, play.ready_at_ns[i]);
          }
        }
      }
    }
    bool lanes_active = std::any_of(lanes.begin(), lanes.end(), [](const Lane& l) { return l.active; });
    if (in_flight.empty() && (!window_open || aborted || !lanes_active)) break;
    // System idle cap: nothing in flight and nothing due soon -> shift all timers.
    if (in_flight.empty() && !anything_due && earliest_wait != INT64_MAX) {
      int64_t cap_ns = static_cast<int64_t>(ag.system_idle_cap_s * 1e9);
      int64_t shift = earliest_wait - (now + cap_ns);
      if (shift > 0) {
        for (Lane& lane : lanes) {
          for (size_t i = 0; i < lane.play.ready_at_ns.size(); ++i) {
            if (lane.active && lane.play.state[i] == NodeState::kWaiting) lane.play.ready_at_ns[i] -= shift;
          }
        }
        earliest_wait -= shift;
      }
    }
    int wait_ms = 20;
    if (earliest_wait != INT64_MAX) wait_ms = static_cast<int>(std::clamp<int64_t>((earliest_wait - now) / 1'000'000, 0, 20));
    loop->RunOnce(wait_ms);
    reap(net::HttpLoop::NowNs());
    if (scraper) scraper->Tick(net::HttpLoop::NowNs(), static_cast<int64_t>(options.scrape_interval_s * 1e9));
    if (progress) {
      double frac = std::min(1.0, static_cast<double>(net::HttpLoop::NowNs() - window_start) / (ag.duration_s * 1e9));
      char buf[128];
      std::snprintf(buf, sizeof buf, "%d requests, %zu in flight, %d errors, %d sessions", profiled, in_flight.size(),
                    errors, plays_started);
      progress->Update(frac, buf);
    }
    if (!aborted && profiled >= 20 && static_cast<double>(errors) > options.max_error_rate * profiled) {
      aborted = true;
      char buf[128];
      std::snprintf(buf, sizeof buf, "error rate above %.0f%% (%d of %d requests): run aborted",
                    options.max_error_rate * 100, errors, profiled);
      out.invalid_reasons.push_back(buf);
    }
  }
  if (sys::InterruptRequested()) {
    out.interrupted = true;
    out.invalid_reasons.push_back("interrupted before the run completed");
    // Cancel what is still running while its handlers are alive, then keep the records.
    loop->CancelAll();
    reap(net::HttpLoop::NowNs());
  }
  if (scraper && !out.interrupted) {
    scraper->ScrapeNow();
    int64_t deadline = net::HttpLoop::NowNs() + 3'000'000'000LL;
    while (scraper->busy() && net::HttpLoop::NowNs() < deadline) loop->RunOnce(20);
    out.series = scraper->series();
  }
  loop->CancelAll();  // a scrape still in flight must end while the scraper lives
  if (progress) progress->Done(out.invalid_reasons.empty() ? "done" : "ended early");
  return out;
}

}  // namespace hone::bench
