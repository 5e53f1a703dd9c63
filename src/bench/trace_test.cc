#include "bench/trace.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>

#include "bench/replay.h"
#include "bench/tracegen.h"
#include "core/strings.h"
#include "net/raw_server.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::bench {
namespace {

// A small trace: 3 root turns, a subagent between turns 1 and 2 (joined by turn 2),
// and a background subagent after the last turn.
constexpr const char* kTrace = R"({"id":"t1","block_size":64,"tool_tokens":64,"system_tokens":64,"requests":[
 {"t":0,"type":"s","in":256,"out":10,"hash_ids":[1,2,3,4],"api_time":1.0},
 {"t":3,"type":"s","in":384,"out":10,"hash_ids":[1,2,3,4,5,6],"api_time":1.0},
 {"type":"subagent","t":4.5,"agent_id":"a","subagent_type":"Explore","requests":[
   {"t":4.6,"in":192,"out":5,"hash_ids":[1,2,9],"api_time":0.5},
   {"t":5.2,"in":256,"out":5,"hash_ids":[1,2,9,10],"api_time":0.5}]},
 {"t":7,"type":"s","in":512,"out":10,"hash_ids":[1,2,3,4,5,6,7,8],"api_time":1.0},
 {"type":"subagent","t":8.5,"agent_id":"b","requests":[{"t":8.6,"in":128,"out":5,"hash_ids":[1,2],"api_time":0.2}]}
]})";

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-trace");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string p = (dir_->path() / name).string();
    EXPECT_OK(sys::WriteFileAtomic(p, text));
    return p;
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(TraceTest, LoadsObjectArrayAndJsonLines) {
  ASSERT_OK_AND_ASSIGN(auto one, LoadTraces(Write("a.json", kTrace)));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].id, "t1");
  EXPECT_EQ(one[0].RequestCount(), 6u);
  EXPECT_TRUE(one[0].items[2].is_subagent);
  EXPECT_EQ(one[0].items[2].subagent_type, "Explore");
  std::string line = TraceToJson(one[0]);
  ASSERT_OK_AND_ASSIGN(auto jsonl, LoadTraces(Write("b.jsonl", line + "\n\n" + line + "\n")));
  EXPECT_EQ(jsonl.size(), 2u);
  EXPECT_EQ(jsonl[1].items[3].request.hash_ids.size(), 8u);
  ASSERT_OK_AND_ASSIGN(auto arr, LoadTraces(Write("c.json", "[" + line + "," + line + "]")));
  EXPECT_EQ(arr.size(), 2u);
}

TEST_F(TraceTest, BadFieldsNameFileLineAndField) {
  auto r = LoadTraces(Write("bad.jsonl", std::string(R"({"id":"x","requests":[{"t":0,"in":10,"out":2}]})") + "\n" +
                                             R"({"id":"y","requests":[{"t":0,"in":-5,"out":2}]})" + "\n"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("bad.jsonl:2: requests[0].in: must be >= 0"), std::string::npos) << r.error().message;
  r = LoadTraces(Write("bad2.jsonl", R"({"id":"x","requests":[{"t":0,"out":2}]})"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("requests[0].in: required field is missing"), std::string::npos);
  r = LoadTraces(Write("bad3.jsonl", R"({"id":"x","requests":[{"t":0,"in":1,"out":2,"hash_ids":[1,"z"]}]})"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("hash_ids[1]: expected an integer"), std::string::npos);
  r = LoadTraces(Write("bad4.jsonl", "{\"id\":1}\nnot json\n"));
  ASSERT_FALSE(r);
  EXPECT_FALSE(LoadTraces(Write("empty.jsonl", "  \n")));
}

TEST_F(TraceTest, SessionGraphFollowsTheReplayRules) {
  ASSERT_OK_AND_ASSIGN(auto traces, LoadTraces(Write("a.json", kTrace)));
  ReplaySession s = BuildSession(traces[0]);
  ASSERT_EQ(s.nodes.size(), 6u);
  EXPECT_EQ(s.root_requests, 3);
  EXPECT_EQ(s.system_blocks, 2);
  // Node order: r0, r1, a0, a1, r2, b0.
  EXPECT_TRUE(s.nodes[0].deps.empty());
  EXPECT_EQ(s.nodes[1].deps, (std::vector<int>{0}));
  EXPECT_DOUBLE_EQ(s.nodes[1].gap_s, 2.0);  // starts 2 s after r0 ended
  EXPECT_EQ(s.nodes[2].stream, 1);
  EXPECT_EQ(s.nodes[2].deps, (std::vector<int>{1}));  // spawned by r1
  EXPECT_EQ(s.nodes[3].deps, (std::vector<int>{2}));
  // r2 waits for r0, r1 (its stream) and the whole subagent (join).
  EXPECT_EQ(s.nodes[4].deps, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(s.nodes[3].background);
  EXPECT_TRUE(s.nodes[5].background);  // nothing follows it
  EXPECT_EQ(s.nodes[1].prev_out, 10);
  // Theoretical hits: r1 shares 4 blocks with r0; a1 shares 3 with a0.
  EXPECT_EQ(s.nodes[1].hit_blocks, 4);
  EXPECT_EQ(s.nodes[3].hit_blocks, 3);
  EXPECT_EQ(s.nodes[0].hit_blocks, 0);
}

TEST_F(TraceTest, OverlappingRequestsRunInParallel) {
  ASSERT_OK_AND_ASSIGN(auto traces, LoadTraces(Write("o.json", R"({"id":"o","requests":[
    {"t":0,"in":64,"out":2,"hash_ids":[1],"api_time":5},
    {"t":1,"in":64,"out":2,"hash_ids":[2],"api_time":1},
    {"t":9,"in":64,"out":2,"hash_ids":[3],"api_time":1}]})")));
  ReplaySession s = BuildSession(traces[0]);
  EXPECT_TRUE(s.nodes[1].deps.empty());                  // overlaps r0
  EXPECT_EQ(s.nodes[2].deps, (std::vector<int>{0, 1}));  // after both
}

TEST_F(TraceTest, SubagentWithoutASpawningTurnIsDropped) {
  ASSERT_OK_AND_ASSIGN(auto traces, LoadTraces(Write("d.json", R"({"id":"d","requests":[
    {"type":"subagent","t":0,"requests":[{"t":0,"in":64,"out":2}]},
    {"t":1,"in":64,"out":2}]})")));
  ReplaySession s = BuildSession(traces[0]);
  EXPECT_EQ(s.dropped_subagents, 1);
  EXPECT_EQ(s.nodes.size(), 1u);
}

TEST_F(TraceTest, PayloadsShareByteIdenticalPrefixes) {
  ASSERT_OK_AND_ASSIGN(auto traces, LoadTraces(Write("a.json", kTrace)));
  ReplaySession s = BuildSession(traces[0]);
  PayloadBuilder b(s, 0xabcd, nullptr, 1.3);
  auto m0 = b.Build(s.nodes[0]);
  auto m1 = b.Build(s.nodes[1]);
  ASSERT_EQ(m0.size(), 2u);  // system (2 blocks) + user
  EXPECT_EQ(m0[0].role, "system");
  EXPECT_TRUE(m0[1].content.starts_with("[rid:00000000abcd]"));
  // Turn 1 extends turn 0: same system and first user message, then assistant + user.
  ASSERT_EQ(m1.size(), 4u);
  EXPECT_EQ(m1[0].content, m0[0].content);
  EXPECT_EQ(m1[1].content, m0[1].content);
  EXPECT_EQ(m1[2].role, "assistant");  // ceil(10/64) = 1 block of the previous output
  EXPECT_EQ(m1[3].role, "user");
  // The subagent starts a fresh context: its system prompt matches the root's (same
  // blocks 1,2) and it carries no marker.
  auto a0 = b.Build(s.nodes[2]);
  EXPECT_EQ(a0[0].content, m0[0].content);
  EXPECT_EQ(a0[1].content.find("[rid:"), std::string::npos);
  // Deterministic.
  PayloadBuilder again(s, 0xabcd, nullptr, 1.3);
  EXPECT_EQ(again.Build(s.nodes[0])[1].content, m0[1].content);
}

TEST_F(TraceTest, GeneratorWritesLoadableGrowingSessions) {
  TraceGenOptions o = *TraceGenPreset("cpu");
  o.sessions = 5;
  auto traces = GenerateTraces(o);
  ASSERT_EQ(traces.size(), 5u);
  std::string p = (dir_->path() / "gen.jsonl").string();
  ASSERT_OK(WriteTraces(p, traces));
  ASSERT_OK_AND_ASSIGN(auto back, LoadTraces(p));
  ASSERT_EQ(back.size(), 5u);
  EXPECT_EQ(TraceToJson(back[2]), TraceToJson(traces[2]));
  double hit = 0, total = 0;
  for (const auto& t : back) {
    ReplaySession s = BuildSession(t);
    for (const auto& n : s.nodes) {
      EXPECT_LE(n.isl, o.max_context + o.user_max + o.block_size);
      hit += static_cast<double>(n.hit_blocks);
      total += static_cast<double>(n.total_blocks);
    }
  }
  EXPECT_GT(hit / total, 0.5);  // agentic sessions reuse most of their prefix
  EXPECT_FALSE(TraceGenPreset("tpu"));
}

// Replay against a fake chat server: every request starts only after each of its
// dependencies finished, lanes recycle, warm-ups come first with 1 token.
TEST_F(TraceTest, ReplayRespectsDependencies) {
  std::atomic<int> served{0};
  auto server = net::RawServer::Start([&](const net::RawRequest& req, net::RawWriter& w) {
    ++served;
    size_t p = req.body.find("\"max_tokens\":");
    int n = static_cast<int>(ParseInt(req.body.substr(p + 13, req.body.find_first_of(",}", p) - p - 13)).value_or(1));
    w.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int k = 0; k < n; ++k) w.WriteChunk("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n");
    w.WriteChunk("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":" + std::to_string(n) +
                 "}}\n\ndata: [DONE]\n\n");
    w.EndChunks();
  });
  ASSERT_OK(server);
  ASSERT_OK_AND_ASSIGN(auto traces, LoadTraces(Write("a.json", kTrace)));
  AgenticOptions ag;
  ag.concurrency = 2;
  ag.duration_s = 30;
  ag.think_scale = 0.01;  // recorded gaps of seconds become tens of ms
  ag.max_plays = 4;
  RunOptions o;
  o.port = (*server)->port();
  o.progress = false;
  o.scrape_interval_s = 0;
  ASSERT_OK_AND_ASSIGN(RunOutput out, RunAgentic(traces, ag, o));
  EXPECT_TRUE(out.invalid_reasons.empty());
  ReplaySession s = BuildSession(traces[0]);
  std::map<std::string, std::map<int, const RequestRecord*>> by_play;
  int warmups = 0;
  for (const auto& r : out.records) {
    EXPECT_TRUE(r.ok()) << ErrorCategoryName(r.error) << r.error_detail;
    if (r.phase == Phase::kWarmup) {
      ++warmups;
      EXPECT_EQ(r.osl, 1);
      continue;
    }
    by_play[r.session][r.turn] = &r;
  }
  EXPECT_LE(warmups, 2);
  EXPECT_EQ(by_play.size(), 4u);  // max_plays
  int checked = 0;
  for (const auto& [play, turns] : by_play) {
    for (const auto& [turn, rec] : turns) {
      for (int dep : s.nodes[static_cast<size_t>(turn)].deps) {
        auto it = turns.find(dep);
        if (it == turns.end()) continue;  // history before a mid-trace start
        EXPECT_GE(rec->t_start_ns, it->second->t_end_ns) << play << " turn " << turn << " before dep " << dep;
        ++checked;
      }
      EXPECT_EQ(rec->osl, s.nodes[static_cast<size_t>(turn)].osl);
    }
  }
  EXPECT_GT(checked, 10);
}

}  // namespace
}  // namespace hone::bench
