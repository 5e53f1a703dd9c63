// Test helpers for the agent layer (tests only): a scripted LLM endpoint on a real
// loopback socket (net::RawServer) that answers from a queue of canned responses and
// records every request, reply builders for the OpenAI and Anthropic formats, a
// small knob catalog, and the shipped agent data. Nothing here reaches beyond
// 127.0.0.1.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/settings.h"
#include "net/raw_server.h"
#include "sys/files.h"
#include "target/catalog.h"
#include "testing/test_util.h"

namespace hone::agent::testing {

struct Canned {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds delay{0};
};

class ScriptedEndpoint {
 public:
  static std::unique_ptr<ScriptedEndpoint> Start() {
    std::unique_ptr<ScriptedEndpoint> e(new ScriptedEndpoint());
    auto s = net::RawServer::Start([p = e.get()](const net::RawRequest& r, net::RawWriter& w) { p->Serve(r, w); });
    EXPECT_TRUE(s) << (s ? "" : s.error().ToString());
    if (s) e->server_ = std::move(*s);
    return e;
  }
  ~ScriptedEndpoint() {
    if (server_) server_->Stop();
  }
  void Push(Canned c) {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(c));
  }
  // Answers every request once the queue is empty (default: 500).
  void SetDefault(Canned c) {
    std::lock_guard<std::mutex> l(mu_);
    default_ = std::move(c);
  }
  std::vector<net::RawRequest> requests() const {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  size_t count() const {
    std::lock_guard<std::mutex> l(mu_);
    return requests_.size();
  }
  int port() const { return server_ ? server_->port() : 0; }
  std::string url(const std::string& path = "/v1") const {
    return "http://127.0.0.1:" + std::to_string(port()) + path;
  }

 private:
  ScriptedEndpoint() = default;
  void Serve(const net::RawRequest& r, net::RawWriter& w) {
    Canned c;
    {
      std::lock_guard<std::mutex> l(mu_);
      requests_.push_back(r);
      if (!queue_.empty()) {
        c = std::move(queue_.front());
        queue_.pop_front();
      } else {
        c = default_;
      }
    }
    if (c.delay.count()) std::this_thread::sleep_for(c.delay);
    std::string out = "HTTP/1.1 " + std::to_string(c.status) + " X\r\nContent-Type: application/json\r\n";
    for (const auto& [k, v] : c.headers) out += k + ": " + v + "\r\n";
    out += "Content-Length: " + std::to_string(c.body.size()) + "\r\nConnection: close\r\n\r\n" + c.body;
    w.Write(out);
  }

  std::unique_ptr<net::RawServer> server_;
  mutable std::mutex mu_;
  std::deque<Canned> queue_;
  Canned default_{500, R"({"error":"no scripted response left"})", {}, {}};
  std::vector<net::RawRequest> requests_;
};

// A chat-completions response whose message content is `content`.
inline Canned OpenAiReply(const std::string& content, int prompt_tokens = 100, int completion_tokens = 20) {
  nlohmann::json j = {{"id", "x"},
                      {"model", "scripted"},
                      {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}},
                                    {"finish_reason", "stop"}}}},
                      {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}};
  return Canned{200, j.dump(), {}, {}};
}
inline Canned OpenAiJson(const nlohmann::json& content, int prompt_tokens = 100, int completion_tokens = 20) {
  return OpenAiReply(content.dump(), prompt_tokens, completion_tokens);
}
// A Messages API response that calls the forced tool with `input`.
inline Canned AnthropicToolReply(const nlohmann::json& input, int in = 100, int out = 20) {
  nlohmann::json j = {{"id", "msg"},
                      {"type", "message"},
                      {"model", "scripted-claude"},
                      {"content", {{{"type", "tool_use"}, {"id", "t1"}, {"name", "reply"}, {"input", input}}}},
                      {"stop_reason", "tool_use"},
                      {"usage", {{"input_tokens", in}, {"output_tokens", out}}}};
  return Canned{200, j.dump(), {}, {}};
}

// An orchestrator reply with one idea per (delta, claimed gain %) entry.
inline nlohmann::json Ideas(const std::vector<std::pair<std::vector<std::pair<std::string, std::string>>, double>>& ideas) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [delta, pct] : ideas) {
    nlohmann::json d = nlohmann::json::array();
    std::string title;
    for (const auto& [k, v] : delta) {
      d.push_back({{"knob", k}, {"value", v}});
      title += k + "=" + v + " ";
    }
    list.push_back({{"title", "try " + title}, {"delta", d}, {"rationale", "because"}, {"expected_gain_pct", pct}});
  }
  return {{"ideas", list}};
}

inline const AgentData& Data() {
  static AgentData* d = [] {
    auto loaded = AgentData::Load(hone::testing::SourceDir().string());
    EXPECT_TRUE(loaded) << (loaded ? "" : loaded.error().ToString());
    return new AgentData(loaded ? std::move(*loaded) : AgentData{});
  }();
  return *d;
}

constexpr char kCatalogYaml[] = R"yaml(framework: fake
versions: "*"
knobs:
  - name: speed
    flag: --speed
    type: enum
    choices: [slow, normal, fast]
    default: normal
    category: threads
    why: "how fast the fake server runs"
  - name: threads
    flag: --threads
    type: int
    min: 1
    max: 64
    default: auto
    category: threads
    why: "decode threads"
  - name: flash_attn
    flag: --flash-attn
    type: enum
    choices: ["on", "off", "auto"]
    default: auto
    category: attention
    why: "fused attention"
  - name: batch
    flag: --batch
    type: int
    min: 1
    max: 8192
    default: "2048"
    category: batching
    why: "logical batch"
  - name: gpu_layers
    flag: --n-gpu-layers
    type: int
    min: 0
    max: 999
    default: "0"
    category: memory
    applies_to: gpu
    why: "layers on the GPU"
  - name: numa
    flag: --numa
    type: enum
    choices: [distribute, isolate]
    default: ""
    category: threads
    searchable: false
    why: "NUMA placement"
  - name: seed
    flag: --seed
    type: int
    min: 0
    max: 100000
    default: "42"
    category: sampling
    why: "the sampling seed (workload contract)"
)yaml";

// The small test catalog, loaded from a file in `dir`.
inline target::KnobCatalog TestCatalog(const std::filesystem::path& dir) {
  auto path = dir / "catalog.yaml";
  EXPECT_TRUE(sys::WriteFileAtomic(path, kCatalogYaml));
  auto c = target::KnobCatalog::Load(path.string());
  EXPECT_TRUE(c) << (c ? "" : c.error().ToString());
  return c ? std::move(*c) : target::KnobCatalog{};
}

}  // namespace hone::agent::testing
