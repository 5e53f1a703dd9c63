#include "bench/runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "bench/metrics.h"
#include "core/strings.h"
#include "net/raw_server.h"
#include "testing/test_util.h"

namespace hone::bench {
namespace {

using namespace std::chrono_literals;

int MaxTokens(const std::string& body) {
  size_t p = body.find("\"max_tokens\":");
  if (p == std::string::npos) return 1;
  return static_cast<int>(ParseInt(body.substr(p + 13, body.find_first_of(",}", p) - p - 13)).value_or(1));
}

// A fake OpenAI server streaming like llama-server (chunked SSE), with a behaviour
// chosen per request by `mode(i)`.
class FakeServer {
 public:
  enum class Mode { kOk, k429, k503, kReset, kStall, kMalformed, kTruncate };
  explicit FakeServer(std::function<Mode(int)> mode, std::chrono::milliseconds delay = 0ms)
      : mode_(std::move(mode)), delay_(delay) {
    auto s = net::RawServer::Start([this](const net::RawRequest& req, net::RawWriter& w) { Handle(req, w); });
    EXPECT_TRUE(s);
    server_ = std::move(*s);
  }
  int port() const { return server_->port(); }
  int max_concurrent() const { return max_.load(); }
  int requests() const { return count_.load(); }

 private:
  void Handle(const net::RawRequest& req, net::RawWriter& w) {
    if (req.path == "/metrics") {
      int n = ++scrapes_;
      std::string body = "llamacpp:prompt_tokens_total " + std::to_string(n * 100) + "\n";
      w.Write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
      return;
    }
    int i = count_++;
    int cur = ++cur_;
    int prev = max_.load();
    while (cur > prev && !max_.compare_exchange_weak(prev, cur)) {
    }
    Mode m = mode_(i);
    int n = MaxTokens(req.body);
    // The request leaves the count before its last byte is written: a client may
    // start its next request the moment it reads the end, before this handler returns.
    bool counted = true;
    auto leave = [&] {
      if (counted) --cur_;
      counted = false;
    };
    switch (m) {
      case Mode::k429:
        leave();
        w.Write("HTTP/1.1 429 Too Many Requests\r\nContent-Length: 4\r\n\r\nslow");
        break;
      case Mode::k503:
        leave();
        w.Write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 7\r\n\r\nloading");
        break;
      case Mode::kReset:
        w.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        w.WriteChunk("data: {\"choices\":[{\"text\":\"a\"}]}\n\n");
        leave();
        w.Reset();
        break;
      default: {
        w.Write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (int k = 0; k < n; ++k) {
          if (m == Mode::kMalformed && k == 1) w.WriteChunk("data: {broken\n\n");
          w.WriteChunk("data: {\"choices\":[{\"text\":\"t\",\"index\":0}]}\n\n");
          if (delay_.count()) std::this_thread::sleep_for(delay_);
          if (m == Mode::kStall && k == 0) std::this_thread::sleep_for(3000ms);
          if (m == Mode::kTruncate && k == 0) {
            leave();
            w.EndChunks();
            return;
          }
        }
        leave();
        w.WriteChunk("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":" + std::to_string(n) +
                     "}}\n\n");
        w.WriteChunk("data: [DONE]\n\n");
        w.EndChunks();
      }
    }
    leave();
  }

  std::function<Mode(int)> mode_;
  std::chrono::milliseconds delay_;
  std::atomic<int> count_{0}, cur_{0}, max_{0}, scrapes_{0};
  std::unique_ptr<net::RawServer> server_;
};

std::vector<RequestSpec> Requests(int n, int warmups, int osl) {
  std::vector<RequestSpec> out;
  for (int i = 0; i < warmups + n; ++i) {
    RequestSpec r;
    r.prompt_ids = {1, 2, 3};
    r.isl_expected = 3;
    r.max_tokens = osl;
    r.phase = i < warmups ? Phase::kWarmup : Phase::kProfiling;
    out.push_back(r);
  }
  return out;
}

RunOptions Options(int port, int concurrency) {
  RunOptions o;
  o.port = port;
  o.shape.concurrency = concurrency;
  o.progress = false;
  o.scrape_interval_s = 0;
  return o;
}

TEST(RunnerTest, ClosedLoopHoldsConcurrencyAndRecordsEverything) {
  FakeServer server([](int) { return FakeServer::Mode::kOk; }, 5ms);
  auto out = RunRequests(Requests(24, 2, 4), Options(server.port(), 4));
  ASSERT_OK(out);
  EXPECT_EQ(out->records.size(), 26u);
  EXPECT_EQ(server.max_concurrent(), 4);
  int warm = 0;
  for (const auto& r : out->records) {
    EXPECT_TRUE(r.ok()) << ErrorCategoryName(r.error);
    EXPECT_EQ(r.osl, 4);
    EXPECT_EQ(r.chunk_ns.size(), 4u);
    EXPECT_GE(r.t_first_ns, r.t_start_ns);
    warm += r.phase == Phase::kWarmup;
  }
  EXPECT_EQ(warm, 2);
  EXPECT_GT(out->window_end_ns, out->window_start_ns);
  EXPECT_TRUE(out->invalid_reasons.empty());
}

TEST(RunnerTest, AWindowCutsTheRequestsStillRunningAndCountsTheirTokens) {
  // 50 tokens at 20 ms each: no request can finish inside a 0.3 s window.
  FakeServer server([](int) { return FakeServer::Mode::kOk; }, 20ms);
  RunOptions o = Options(server.port(), 4);
  o.duration_s = 0.3;
  o.cut_at_window_end = true;
  auto out = RunRequests(Requests(100, 0, 50), o);
  ASSERT_OK(out);
  EXPECT_EQ(out->cut, 4);
  ASSERT_EQ(out->records.size(), 4u) << "nothing is sent after the window";
  int64_t chunks = 0;  // streamed inside the window (the cut comes a poll later)
  for (const auto& r : out->records) {
    EXPECT_TRUE(r.cut);
    EXPECT_GT(r.chunk_ns.size(), 0u);
    EXPECT_LT(r.chunk_ns.size(), 50u);
    for (int64_t t : r.chunk_ns) chunks += t >= out->window_start_ns && t <= out->window_end_ns;
  }
  EXPECT_LE(out->window_end_ns - out->window_start_ns, 300'000'000) << "the window ends at its length";
  EXPECT_TRUE(out->invalid_reasons.empty());
  BenchResult r = ComputeResult(*out, RunContext{}, {}, {});
  EXPECT_EQ(r.cut, 4);
  EXPECT_EQ(r.failed, 0) << "a cut is not an error";
  EXPECT_EQ(r.successful, 0);
  EXPECT_TRUE(r.valid) << "the window measured tokens: " << Join(r.invalid_reasons, "; ");
  EXPECT_EQ(r.total_output_tokens, chunks);
  EXPECT_EQ(r.prefilled_input_tokens, 4 * 3) << "every prompt was prefilled inside the window";
  EXPECT_EQ(r.total_input_tokens, std::llround(3.0 * static_cast<double>(chunks) / 50)) << "3 prompt tokens per 50 output";
  EXPECT_GT(r.output_tps, 0);
  EXPECT_EQ(r.ttft.n, 0u) << "latencies come from completed requests only";
}

TEST(RunnerTest, ARampKeepsTheFirstBurstOutOfTheWindowAndStaggersTheFirstWave) {
  // 50 tokens at 20 ms each, 2 in flight, a 0.3 s ramp then a 0.3 s window: the first
  // wave asks for 25 and 50 tokens, so the first request ends near 0.5 s, inside the
  // window, and its successor starts (and prefills) there, while the second is cut.
  FakeServer server([](int) { return FakeServer::Mode::kOk; }, 20ms);
  RunOptions o = Options(server.port(), 2);
  o.duration_s = 0.3;
  o.ramp_s = 0.3;
  o.cut_at_window_end = true;
  auto out = RunRequests(Requests(100, 0, 50), o);
  ASSERT_OK(out);
  EXPECT_TRUE(out->windowed);
  EXPECT_EQ(out->window_end_ns - out->window_start_ns, 300'000'000) << "the window is its length, after the ramp";
  std::vector<const RequestRecord*> by_index(out->records.size());
  ASSERT_EQ(out->records.size(), 3u) << "two in the first wave, one successor";
  for (const auto& r : out->records) by_index[r.index] = &r;
  EXPECT_EQ(by_index[0]->osl_expected, 25) << "first wave: request 1 of 2 asks for half its tokens";
  EXPECT_EQ(by_index[1]->osl_expected, 50) << "first wave: request 2 of 2 asks for all of them";
  EXPECT_EQ(by_index[2]->osl_expected, 50) << "after the first wave, the workload's length";
  EXPECT_TRUE(by_index[0]->ok());
  EXPECT_FALSE(by_index[0]->osl_mismatch) << "the staggered length is what the request expects";
  EXPECT_TRUE(by_index[1]->cut);
  EXPECT_TRUE(by_index[2]->cut);
  EXPECT_LT(by_index[1]->t_start_ns, out->window_start_ns);
  EXPECT_GE(by_index[2]->t_first_ns, out->window_start_ns) << "the successor prefilled inside the window";
  int64_t inside = 0, all = 0;
  for (const auto& r : out->records) {
    for (int64_t t : r.chunk_ns) inside += t >= out->window_start_ns && t <= out->window_end_ns;
    all += static_cast<int64_t>(r.chunk_ns.size());
  }
  BenchResult r = ComputeResult(*out, RunContext{}, {}, {});
  EXPECT_EQ(r.total_output_tokens, inside);
  EXPECT_LT(inside, all) << "tokens streamed during the ramp do not count";
  EXPECT_EQ(r.prefilled_input_tokens, by_index[2]->isl) << "only the successor prefilled inside the window";
  double credit = 0;  // each prompt per output token inside, at the workload's OSL (the first wave's too)
  for (const auto& rec : out->records) {
    int64_t in = 0;
    for (int64_t t : rec.chunk_ns) in += t >= out->window_start_ns && t <= out->window_end_ns;
    credit += static_cast<double>(rec.isl) * static_cast<double>(in) / 50;
  }
  EXPECT_EQ(r.total_input_tokens, std::llround(credit));
  EXPECT_TRUE(r.valid);
}

TEST(RunnerTest, EveryErrorIsACountedCategory) {
  FakeServer server([](int i) {
    switch (i % 7) {
      case 1: return FakeServer::Mode::k429;
      case 2: return FakeServer::Mode::k503;
      case 3: return FakeServer::Mode::kReset;
      case 4: return FakeServer::Mode::kStall;
      case 5: return FakeServer::Mode::kMalformed;
      case 6: return FakeServer::Mode::kTruncate;
      default: return FakeServer::Mode::kOk;
    }
  });
  RunOptions o = Options(server.port(), 7);
  o.limits.idle_timeout = 1000ms;  // a stall is 3 s: a loaded host never makes a slow write look like one
  o.max_error_rate = 1.0;  // keep going: this test wants every category
  auto out = RunRequests(Requests(14, 0, 3), o);
  ASSERT_OK(out);
  ASSERT_EQ(out->records.size(), 14u);
  BenchResult r = ComputeResult(*out, RunContext{}, {}, {});
  EXPECT_EQ(r.successful, 2);
  EXPECT_EQ(r.failed, 12);
  EXPECT_EQ(r.error_categories["http_429"], 2);
  EXPECT_EQ(r.error_categories["http_503"], 2);
  EXPECT_EQ(r.error_categories["stalled"], 2);
  EXPECT_EQ(r.error_categories["malformed"], 2);
  EXPECT_EQ(r.error_categories["truncated"] + r.error_categories["connection_reset"], 4);
  EXPECT_FALSE(r.valid);
}

TEST(RunnerTest, TooManyErrorsAbortTheRun) {
  FakeServer server([](int) { return FakeServer::Mode::k503; });
  auto out = RunRequests(Requests(200, 0, 2), Options(server.port(), 2));
  ASSERT_OK(out);
  EXPECT_LT(out->records.size(), 200u);
  ASSERT_FALSE(out->invalid_reasons.empty());
  EXPECT_NE(out->invalid_reasons[0].find("run aborted"), std::string::npos);
}

TEST(RunnerTest, ConnectionRefusedIsRecorded) {
  auto port = net::FreeLoopbackPort();
  ASSERT_OK(port);
  RunOptions o = Options(*port, 1);
  o.max_error_rate = 1.0;
  auto out = RunRequests(Requests(3, 0, 2), o);
  ASSERT_OK(out);
  ASSERT_EQ(out->records.size(), 3u);
  for (const auto& r : out->records) EXPECT_EQ(r.error, ErrorCategory::kConnectionRefused);
}

TEST(RunnerTest, OpenLoopArrivalsAreSeededAndQueueUnderACap) {
  LoadShape poisson = *LoadShape::Parse("poisson:50", 1);
  auto a = ArrivalOffsets(poisson, 2000, 7);
  EXPECT_EQ(a, ArrivalOffsets(poisson, 2000, 7));
  EXPECT_NE(a, ArrivalOffsets(poisson, 2000, 8));
  EXPECT_NEAR(a.back() / 1999, 1.0 / 50, 0.002);  // mean gap 1/rate
  auto c = ArrivalOffsets(*LoadShape::Parse("constant:4", 0), 5, 1);
  EXPECT_EQ(c, (std::vector<double>{0, 0.25, 0.5, 0.75, 1.0}));
  EXPECT_FALSE(LoadShape::Parse("bursty:3", 1));
  EXPECT_FALSE(LoadShape::Parse("poisson:-1", 1));

  FakeServer server([](int) { return FakeServer::Mode::kOk; }, 10ms);
  RunOptions o = Options(server.port(), 1);  // cap 1 in flight
  o.shape = *LoadShape::Parse("constant:200", 1);
  auto out = RunRequests(Requests(10, 0, 3), o);
  ASSERT_OK(out);
  EXPECT_EQ(server.max_concurrent(), 1);
  double queued = 0;
  for (const auto& r : out->records) queued += r.client_queue_s;
  EXPECT_GT(queued, 0.0);  // arrivals every 5 ms, each request takes ~30 ms
}

TEST(RunnerTest, ScrapesMetricsDuringTheRun) {
  FakeServer server([](int) { return FakeServer::Mode::kOk; }, 100ms);
  RunOptions o = Options(server.port(), 2);
  o.scrape_interval_s = 0.1;
  o.profile.metrics.prompt_tokens_total = "llamacpp:prompt_tokens_total";
  auto out = RunRequests(Requests(4, 0, 3), o);
  ASSERT_OK(out);
  EXPECT_GE(out->series.samples.size(), 3u);
  EXPECT_GT(*out->series.Delta("llamacpp:prompt_tokens_total"), 0);
}

TEST(RunnerTest, ThousandConcurrentStreamsFromOneThread) {
  FakeServer server([](int) { return FakeServer::Mode::kOk; });
  auto out = RunRequests(Requests(1000, 0, 5), Options(server.port(), 1000));
  ASSERT_OK(out);
  ASSERT_EQ(out->records.size(), 1000u);
  int ok = 0;
  for (const auto& r : out->records) ok += r.ok();
  EXPECT_EQ(ok, 1000);
  EXPECT_GE(out->peak_in_flight, 500);
}

}  // namespace
}  // namespace hone::bench
