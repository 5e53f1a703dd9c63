#include <nlohmann/json.hpp>

#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "core/strings.h"
#include "net/http.h"
#include "net/sse.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/signals.h"
#include "sys/term.h"
#include "target/llamacpp.h"
#include "target/server.h"

namespace hone::cli {

using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct ServeOpts {
  std::string model;
  std::vector<std::string> sets;
  std::vector<std::string> server_args;
  int port = 0;
  bool smoke = false;
  std::string prompt = "Write one sentence about fast inference.";
  int max_tokens = 32;
  int health_timeout_s = 180;
  std::string log;
};

// One non-streamed completion and one streamed chat completion, printed as they arrive.
Status Smoke(const target::Server& server, const ServeOpts& o) {
  json body = {{"prompt", o.prompt}, {"max_tokens", o.max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
  HONE_ASSIGN_OR_RETURN(auto r, net::PostJson(server.host(), server.port(), "/v1/completions", body.dump(), 120s));
  if (r.status != 200) return Unavailable("/v1/completions answered HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 200));
  auto parsed = json::parse(r.body, nullptr, false);
  if (parsed.is_discarded()) return DataLoss("/v1/completions returned invalid JSON");
  std::printf("completion (%d tokens): %s\n", parsed["usage"].value("completion_tokens", 0),
              parsed["choices"][0].value("text", "").c_str());

  json chat = {{"messages", {{{"role", "user"}, {"content", o.prompt}}}},
               {"max_tokens", o.max_tokens}, {"temperature", 0}, {"ignore_eos", true}, {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  net::HttpRequest req{.method = "POST", .host = server.host(), .port = server.port(), .path = "/v1/chat/completions",
                       .body = chat.dump()};
  int chunks = 0;
  int completion_tokens = -1;
  bool done = false;
  std::string error;
  int64_t start = net::HttpLoop::NowNs();
  int64_t first = 0;
  std::printf("streamed chat: ");
  std::fflush(stdout);
  net::SseParser sse([&](std::string_view data, int64_t t) {
    if (data == "[DONE]") {
      done = true;
      return;
    }
    auto ev = json::parse(data, nullptr, false);
    if (ev.is_discarded()) {
      error = "invalid JSON event: " + std::string(data.substr(0, 80));
      return;
    }
    if (ev.contains("error")) error = ev["error"].dump();
    if (ev.contains("usage") && ev["usage"].is_object()) completion_tokens = ev["usage"].value("completion_tokens", -1);
    if (ev.contains("choices") && !ev["choices"].empty()) {
      const auto& delta = ev["choices"][0]["delta"];
      if (delta.is_object() && delta.contains("content") && delta["content"].is_string()) {
        std::string text = delta["content"];
        if (!text.empty()) {
          if (!first) first = t;
          ++chunks;
          std::fputs(text.c_str(), stdout);
          std::fflush(stdout);
        }
      }
    }
  });
  HONE_ASSIGN_OR_RETURN(auto sr, net::Stream(req, 120s, [&](std::string_view d, int64_t t) { sse.Feed(d, t); }));
  std::printf("\n");
  if (sr.status != 200) return Unavailable("/v1/chat/completions answered HTTP " + std::to_string(sr.status));
  if (!error.empty()) return Unavailable("stream error: " + error);
  if (!done) return DataLoss("the stream ended without [DONE]");
  double ttft_ms = first ? static_cast<double>(first - start) / 1e6 : 0;
  std::printf("streamed %d content chunks, %d completion tokens (usage), TTFT %.1f ms\n", chunks, completion_tokens, ttft_ms);
  if (completion_tokens != o.max_tokens) {
    return DataLoss("asked for " + std::to_string(o.max_tokens) + " tokens, usage says " + std::to_string(completion_tokens));
  }
  return Ok();
}

}  // namespace

Action RegisterServe(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("serve", "Start llama-server on a model with a configuration and supervise it");
  auto o = std::make_shared<ServeOpts>();
  cmd->add_option("--model", o->model, "GGUF model to serve")->required();
  cmd->add_option("--set", o->sets, "Knob value from the catalog, e.g. --set threads=2 (repeatable)");
  cmd->add_option("--server-arg", o->server_args, "Extra raw llama-server argument (repeatable)")->allow_extra_args(false);
  cmd->add_option("--port", o->port, "Port on 127.0.0.1 (default: a free one)");
  cmd->add_flag("--smoke", o->smoke, "Send one completion and one streamed chat completion, then stop");
  cmd->add_option("--prompt", o->prompt, "Prompt for --smoke");
  cmd->add_option("--max-tokens", o->max_tokens, "Tokens to generate in --smoke (forced exactly)");
  cmd->add_option("--health-timeout", o->health_timeout_s, "Seconds to wait for /health");
  cmd->add_option("--log", o->log, "Server log file (default: <cache>/logs/serve-<port>.log)");
  return [o, &ctx]() -> int {
    auto config = ParseSettings(o->sets, "--set");
    if (!config) return ReportError(config.error());
    if (!sys::FileExists(o->model)) {
      return ReportError(Error{ErrorCode::kNotFound, "model file not found: " + o->model, {}});
    }
    auto prov = target::FindProvisioned(ctx.cache_dir, ctx.data_dir);
    if (!prov) return ReportError(prov.error());
    auto adapter = target::LlamaCppAdapter::Create(ctx.data_dir, prov->version);
    if (!adapter) return ReportError(adapter.error());
    std::string log = o->log;
    if (log.empty()) {
      if (auto s = sys::EnsureDir(ctx.cache_dir / "logs"); !s) return ReportError(s.error());
      log = (ctx.cache_dir / "logs" / ("serve-" + std::to_string(sys::DefaultClock().WallMicros()) + ".log")).string();
    }
    target::LaunchContext lc{.server_binary = prov->server, .model_path = o->model, .port = o->port,
                             .extra_args = o->server_args};
    sys::Progress progress("starting llama-server");
    progress.Update(-1, config->ToString());
    auto server = target::StartServer(**adapter, *config, lc,
                                      {.log_path = log, .health_timeout = std::chrono::seconds(o->health_timeout_s)});
    if (!server) {
      progress.Done("failed");
      return ReportError(server.error());
    }
    progress.Done("healthy at " + (*server)->base_url() + " (pid " + std::to_string((*server)->pid()) + ")");
    std::printf("command: %s\nlog: %s\n", (*server)->spec().ShellCommand().c_str(), log.c_str());
    std::fflush(stdout);
    if (o->smoke) {
      auto s = Smoke(**server, *o);
      (*server)->Stop();
      if (!s) return ReportError(s.error());
      return 0;
    }
    std::printf("serving until interrupted (Ctrl-C)\n");
    std::fflush(stdout);
    while (!sys::InterruptRequested()) {
      if (!(*server)->Alive()) {
        return ReportError(Error{ErrorCode::kUnavailable, "llama-server exited unexpectedly",
                                 {{"log_excerpt", (*server)->LogTail(2000)}}});
      }
      std::this_thread::sleep_for(200ms);
    }
    (*server)->Stop();
    std::fprintf(stderr, "hone: stopped llama-server\n");
    return 130;
  };
}

}  // namespace hone::cli
