// Slow tests: the real llama-server (provisioned) with a synthesized tiny model.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "net/http.h"
#include "net/raw_server.h"
#include "sys/files.h"
#include "target/llamacpp.h"
#include "target/server.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone::target {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class LlamaServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HONE_REQUIRE_LLAMA();
    prov_ = testing::Llama();
    auto a = LlamaCppAdapter::Create(testing::SourceDir().string(), prov_->version);
    ASSERT_OK(a);
    adapter_ = std::move(*a);
    auto d = sys::TempDir::Create("hone-srv");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    model_ = testing::SynthModel("tiny", "q8_0");
    ASSERT_FALSE(model_.empty());
  }
  LaunchContext Ctx() { return LaunchContext{.server_binary = prov_->server, .model_path = model_}; }
  ServerOptions Opts(std::chrono::milliseconds health = 60s) {
    return ServerOptions{.log_path = (dir_->path() / "server.log").string(), .health_timeout = health};
  }
  static bool Gone(pid_t pid) { return kill(pid, 0) != 0; }

  const Provisioned* prov_ = nullptr;
  std::unique_ptr<LlamaCppAdapter> adapter_;
  std::unique_ptr<sys::TempDir> dir_;
  std::string model_;
};

TEST_F(LlamaServerTest, ServesCompletionsWithExactLengths) {
  auto server = StartServer(*adapter_, Config{{"threads", "2"}, {"parallel", "2"}}, Ctx(), Opts());
  ASSERT_OK(server);
  pid_t pid = (*server)->pid();
  json body = {{"prompt", "hello"}, {"max_tokens", 12}, {"ignore_eos", true}, {"temperature", 0}};
  auto r = net::PostJson("127.0.0.1", (*server)->port(), "/v1/completions", body.dump(), 60s);
  ASSERT_OK(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = json::parse(r->body);
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  // Greedy decoding is deterministic: the same request gives the same text.
  auto r2 = net::PostJson("127.0.0.1", (*server)->port(), "/v1/completions", body.dump(), 60s);
  ASSERT_OK(r2);
  EXPECT_EQ(json::parse(r2->body)["choices"][0]["text"], j["choices"][0]["text"]);
  auto metrics = net::Get("127.0.0.1", (*server)->port(), "/metrics", 10s);
  ASSERT_OK(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("llamacpp:tokens_predicted_total"), std::string::npos);
  // The log file captured the server's output.
  EXPECT_NE(sys::ReadFile(dir_->path() / "server.log")->find("listening on http://127.0.0.1"), std::string::npos);
  (*server)->Stop();
  EXPECT_TRUE(Gone(pid));
}

TEST_F(LlamaServerTest, BadFlagIsClassifiedAndNothingRuns) {
  LaunchContext ctx = Ctx();
  ctx.extra_args = {"--bogus-flag"};
  auto server = StartServer(*adapter_, Config{}, ctx, Opts());
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().Get("failure_kind"), "bad_flag");
  EXPECT_NE(server.error().Get("log_excerpt").find("--bogus-flag"), std::string::npos);
  EXPECT_NE(server.error().message.find("server exited during start-up: bad_flag"), std::string::npos)
      << server.error().message;
}

TEST_F(LlamaServerTest, MissingAndCorruptModels) {
  LaunchContext ctx = Ctx();
  ctx.model_path = (dir_->path() / "absent.gguf").string();
  auto missing = StartServer(*adapter_, Config{}, ctx, Opts());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().Get("failure_kind"), "model_load");
  std::string corrupt = (dir_->path() / "corrupt.gguf").string();
  ASSERT_OK(sys::WriteFileAtomic(corrupt, "GGUF" + std::string(2000, '\x7f')));
  ctx.model_path = corrupt;
  auto bad = StartServer(*adapter_, Config{}, ctx, Opts());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().Get("failure_kind"), "model_load");
}

TEST_F(LlamaServerTest, EngineRefusedCombinationIsContextCreate) {
  // A quantized V cache without flash attention: the catalog forbids it, so pass the
  // raw flags to check that the engine's own refusal is classified too.
  LaunchContext ctx = Ctx();
  ctx.extra_args = {"--flash-attn", "off", "--cache-type-v", "q8_0"};
  auto server = StartServer(*adapter_, Config{}, ctx, Opts());
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().Get("failure_kind"), "context_create") << server.error().ToString();
}

TEST_F(LlamaServerTest, PortInUseFailsBeforeLaunch) {
  auto occupant = net::RawServer::Start([](const net::RawRequest&, net::RawWriter&) {});
  ASSERT_OK(occupant);
  LaunchContext ctx = Ctx();
  ctx.port = (*occupant)->port();
  auto server = StartServer(*adapter_, Config{}, ctx, Opts());
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().Get("failure_kind"), "port_in_use");
  EXPECT_NE(server.error().message.find("is already in use"), std::string::npos);
}

// Another process takes the chosen port between the check and the server's bind, and
// answers /health as a server would: it is never taken for ours; the launch is a
// port_in_use and runs again on a new port.
TEST_F(LlamaServerTest, APortTakenBetweenTheCheckAndTheBindIsRelaunched) {
  std::unique_ptr<net::RawServer> squatter;
  ServerOptions o = Opts();
  o.before_launch = [&](int port) {
    if (squatter) return;
    auto s = net::RawServer::Start(
        [](const net::RawRequest&, net::RawWriter& w) {
          w.Write("HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"status\":\"ok\"}");
        },
        port);
    ASSERT_OK(s);
    squatter = std::move(*s);
  };
  auto server = StartServer(*adapter_, Config{}, Ctx(), o);
  ASSERT_OK(server);
  ASSERT_TRUE(squatter);
  EXPECT_NE((*server)->port(), squatter->port());
  ASSERT_EQ((*server)->relaunches().size(), 1u);
  EXPECT_NE((*server)->relaunches()[0].find("port_in_use"), std::string::npos) << (*server)->relaunches()[0];
  auto r = net::PostJson("127.0.0.1", (*server)->port(), "/v1/completions",
                         json{{"prompt", "hi"}, {"max_tokens", 2}}.dump(), 60s);
  ASSERT_OK(r);
  EXPECT_EQ(r->status, 200);

  // A process that never listens, with a stranger answering on its port: not healthy.
  LaunchSpec spec{.argv = {"sh", "-c", "exec sleep 60"}, .port = squatter->port()};
  auto fooled = Server::Start(spec, adapter_->failure_rules(), Opts(1500ms));
  ASSERT_FALSE(fooled);
  EXPECT_EQ(fooled.error().Get("failure_kind"), "port_in_use") << fooled.error().ToString();
}

TEST_F(LlamaServerTest, ServerThatNeverBecomesHealthyIsStopped) {
  LaunchSpec spec{.argv = {"sh", "-c", "echo starting; exec sleep 60"}, .port = *net::FreeLoopbackPort()};
  auto start = std::chrono::steady_clock::now();
  auto server = Server::Start(spec, adapter_->failure_rules(), Opts(700ms));
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().Get("failure_kind"), "health_timeout");
  EXPECT_EQ(server.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST_F(LlamaServerTest, ServerThatExitsAtOnce) {
  LaunchSpec spec{.argv = {"sh", "-c", "echo fatal: boom; exit 3"}, .port = *net::FreeLoopbackPort()};
  auto server = Server::Start(spec, adapter_->failure_rules(), Opts());
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().Get("failure_kind"), "exited");
  EXPECT_EQ(server.error().Get("exit"), "exit 3");
  EXPECT_NE(server.error().Get("log_excerpt").find("fatal: boom"), std::string::npos);
}

TEST_F(LlamaServerTest, ProvisionIsInstantTheSecondTime) {
  auto start = std::chrono::steady_clock::now();
  auto p = ProvisionLlamaCpp({.cache_dir = sys::DefaultCacheDir(), .data_dir = testing::SourceDir().string(),
                              .use_path = false});
  ASSERT_OK(p);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_EQ(p->server, prov_->server);
  EXPECT_EQ(p->commit, "80fb11ac73e66d89eae2c6a91d8a77428fa733ed");
  auto version = ProbeLlamaVersion(p->server);
  ASSERT_OK(version);
  EXPECT_NE(version->find("80fb11a"), std::string::npos);
}

}  // namespace
}  // namespace hone::target
