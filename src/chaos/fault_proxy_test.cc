#include "chaos/fault_proxy.h"

#include <gtest/gtest.h>

#include "bench/runner.h"
#include "chaos/plan.h"
#include "core/strings.h"
#include "testing/test_util.h"

namespace hone::chaos {
namespace {

// An upstream that streams 8 content events, usage and [DONE] in chunks, as
// llama-server does.
std::unique_ptr<net::RawServer> Upstream() {
  auto s = net::RawServer::Start([](const net::RawRequest&, net::RawWriter& w) {
    w.Write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int k = 0; k < 8; ++k) w.WriteChunk("data: {\"choices\":[{\"text\":\"tok\",\"index\":0}]}\n\n");
    w.WriteChunk("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":8}}\n\n");
    w.WriteChunk("data: [DONE]\n\n");
    w.EndChunks();
  });
  EXPECT_TRUE(s);
  return std::move(*s);
}

// Four requests through the proxy; the second one gets the fault.
std::vector<bench::RequestRecord> RunThrough(const ProxyFault& fault, int* injected) {
  auto upstream = Upstream();
  auto proxy = FaultProxy::Start(upstream->port(), fault);
  EXPECT_TRUE(proxy);
  std::vector<bench::RequestSpec> requests(4);
  for (auto& r : requests) {
    r.prompt_ids = std::vector<int32_t>(16, 1000);
    r.max_tokens = 8;
    r.isl_expected = 16;
  }
  bench::RunOptions o;
  o.port = (*proxy)->port();
  o.progress = false;
  o.scrape_interval_s = 0;
  o.limits.idle_timeout = std::chrono::milliseconds(400);
  auto out = bench::RunRequests(requests, o);
  EXPECT_TRUE(out);
  *injected = (*proxy)->injected();
  return out ? out->records : std::vector<bench::RequestRecord>{};
}

struct Case {
  const char* fault;
  int status;
  bench::ErrorCategory expected;
};

class ProxyFaultTest : public ::testing::TestWithParam<Case> {};

TEST_P(ProxyFaultTest, TheClientClassifiesEveryInjectedFault) {
  const Case& c = GetParam();
  ProxyFault f;
  ASSERT_OK_AND_ASSIGN(f.kind, ParseProxyFault(c.fault));
  f.first = 1;
  f.count = 1;
  f.status = c.status;
  f.stall_s = 2;  // past the client's 400 ms idle timeout
  f.drip_bytes = 3;
  f.drip_ms = 2;
  int injected = 0;
  auto records = RunThrough(f, &injected);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(injected, 1);
  int failed = 0;
  for (const auto& r : records) {
    if (r.ok()) {
      EXPECT_EQ(r.osl, 8);
      continue;
    }
    ++failed;
    EXPECT_EQ(r.error, c.expected) << c.fault << ": got " << bench::ErrorCategoryName(r.error) << " "
                                   << r.error_detail;
  }
  EXPECT_EQ(failed, 1) << c.fault;
}

INSTANTIATE_TEST_SUITE_P(
    Faults, ProxyFaultTest,
    ::testing::Values(Case{"drop_mid_stream", 0, bench::ErrorCategory::kConnectionReset},
                      Case{"stall", 0, bench::ErrorCategory::kStalled},
                      Case{"http_error", 429, bench::ErrorCategory::kHttp429},
                      Case{"http_error", 500, bench::ErrorCategory::kHttp500},
                      Case{"http_error", 503, bench::ErrorCategory::kHttp503},
                      Case{"malformed_sse", 0, bench::ErrorCategory::kMalformed},
                      Case{"truncated_sse", 0, bench::ErrorCategory::kTruncated},
                      Case{"slow_loris", 0, bench::ErrorCategory::kSlowStream}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.fault) + std::to_string(p.param.status); });

TEST(FaultProxyTest, WithoutAFaultItIsTransparent) {
  int injected = 0;
  auto records = RunThrough(ProxyFault{}, &injected);
  ASSERT_EQ(records.size(), 4u);
  for (const auto& r : records) EXPECT_TRUE(r.ok()) << r.error_detail;
  EXPECT_EQ(injected, 0);
}

TEST(FaultPlanTest, RulesPickTrialsByIdOrByRoleAndOccurrence) {
  ASSERT_OK_AND_ASSIGN(FaultPlan plan, FaultPlan::Parse(R"({"faults":[
    {"role":"candidate","nth":2,"fault":"http_error","status":429,"count":3},
    {"trial":"t0009","fault":"kill_server","at_request":4},
    {"role":"screen","fault":"port_taken"}]})"));
  EXPECT_EQ(plan.size(), 3u);
  EXPECT_FALSE(plan.For("t0001", "candidate").any());
  TrialFaults second = plan.For("t0002", "candidate");
  EXPECT_EQ(second.proxy.kind, ProxyFaultKind::kHttpError);
  EXPECT_EQ(second.proxy.status, 429);
  EXPECT_EQ(second.proxy.count, 3);
  EXPECT_FALSE(plan.For("t0003", "candidate").any());
  EXPECT_EQ(plan.For("t0009", "incumbent").server, ServerFaultKind::kKill);
  EXPECT_EQ(plan.For("t0009", "incumbent").at_request, 4);
  EXPECT_EQ(plan.For("t0010", "screen").server, ServerFaultKind::kPortTaken);
  EXPECT_FALSE(FaultPlan::Parse(R"({"faults":[{"role":"x","fault":"gremlins"}]})"));
  EXPECT_FALSE(FaultPlan::Parse(R"({"faults":[{"fault":"stall"}]})"));
  EXPECT_FALSE(FaultPlan::Parse("[]"));
}

}  // namespace
}  // namespace hone::chaos
