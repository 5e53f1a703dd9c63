#include "net/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hone::net {
namespace {

TEST(PrometheusTest, ParsesLlamaCppAndVllmStyles) {
  const char* text =
      "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
      "# TYPE llamacpp:prompt_tokens_total counter\n"
      "llamacpp:prompt_tokens_total 1024\n"
      "llamacpp:prompt_seconds_total 2.5\n"
      "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 300.0\n"
      "vllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} 100.0\n"
      "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 42 1700000000\n"
      "sglang:cached_tokens_total{source=\"device\"} 5e3\n"
      "x_inf +Inf\n";
  auto m = ParsePrometheusText(text);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(*m->Sum("llamacpp:prompt_tokens_total"), 1024);
  EXPECT_EQ(*m->Sum("vllm:prefix_cache_hits_total"), 400);
  EXPECT_EQ(*m->Find("vllm:prefix_cache_hits_total", {{"engine", "1"}}), 100);
  EXPECT_EQ(*m->Find("vllm:e2e_request_latency_seconds_bucket", {{"le", "+Inf"}}), 42);
  EXPECT_EQ(*m->Sum("sglang:cached_tokens_total"), 5000);
  EXPECT_TRUE(std::isinf(*m->Sum("x_inf")));
  EXPECT_FALSE(m->Sum("absent"));
}

TEST(PrometheusTest, MalformedLineNamesItsNumber) {
  auto m = ParsePrometheusText("ok 1\nbad{le=\"x} 3\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("metrics line 2"), std::string::npos) << m.error().message;
  EXPECT_FALSE(ParsePrometheusText("name notanumber\n"));
}

}  // namespace
}  // namespace hone::net
