// The "command" adapter: a user's launch template and knob table from the session
// spec, rendered and validated like a catalog's, and a real process started through
// it (a shell script standing in for the user's server) classified on failure.
#include "target/command.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/strings.h"
#include "spec/session_spec.h"
#include "sys/files.h"
#include "target/llamacpp.h"
#include "target/server.h"
#include "testing/test_util.h"

namespace hone::target {
namespace {

spec::TargetSpec Target(const std::string& yaml) {
  auto s = spec::ParseSessionSpec("name: t\ntarget:\n" + yaml, "t.yaml", {});
  EXPECT_TRUE(s) << s.error().ToString();
  return s ? s->target : spec::TargetSpec{};
}

const char* kTarget = R"(  adapter: command
  model: /models/tiny-f16.gguf
  command: [my-server, -m, "/models/tiny-{quant}.gguf", --listen, "{host}:{port}", --name, "{model}"]
  health_path: /ready
  version: "2.1"
  knobs:
    - {name: quant, type: enum, choices: [f16, q8_0, q4_0], default: f16, accuracy_risk: high, category: precision}
    - {name: threads, flag: --threads, type: int, min: 1, max: 8, search: [1, 2], default: "2"}
    - {name: batch, flag: --batch, type: int, min: 1, max: 4096, default: "512", requires: ["quant!=q4_0"]}
    - {name: fast, flag: --fast, negative_flag: --no-fast, type: bool, default: "off"}
    - {name: omp, env: OMP_WAIT_POLICY, type: enum, choices: [active, passive], default: passive}
)";

TEST(CommandAdapterTest, RendersTheTemplateFlagsAndEnvironment) {
  ASSERT_OK_AND_ASSIGN(auto a, CommandAdapter::Create(Target(kTarget), testing::SourceDir().string()));
  EXPECT_EQ(a->name(), "command");
  EXPECT_EQ(a->catalog().framework(), "command");
  EXPECT_EQ(a->catalog().Find("quant")->accuracy_risk, AccuracyRisk::kHigh);
  EXPECT_EQ(a->catalog().Find("threads")->category, "command");  // no category given
  EXPECT_TRUE(a->catalog().ChangesNumerics(Config{{"quant", "q8_0"}}));
  LaunchContext ctx{.model_path = "/models/tiny-f16.gguf", .port = 8123, .extra_args = {"--log", "x"}};
  ASSERT_OK_AND_ASSIGN(LaunchSpec stock, a->BuildLaunch(Config{}, ctx));
  EXPECT_EQ(stock.ShellCommand(),
            "my-server -m /models/tiny-f16.gguf --listen 127.0.0.1:8123 --name /models/tiny-f16.gguf --log x");
  EXPECT_EQ(stock.health_path, "/ready");
  ASSERT_OK_AND_ASSIGN(LaunchSpec tuned,
                       a->BuildLaunch(Config{{"quant", "q8_0"}, {"threads", "1"}, {"fast", "on"}, {"omp", "active"}},
                                      ctx));
  EXPECT_EQ(tuned.ShellCommand(),
            "OMP_WAIT_POLICY=active my-server -m /models/tiny-q8_0.gguf --listen 127.0.0.1:8123 --name "
            "/models/tiny-f16.gguf --log x --fast --threads 1");
  // A patched or stand-in binary replaces the template's program.
  ctx.server_binary = "/tmp/other-server";
  ASSERT_OK_AND_ASSIGN(LaunchSpec other, a->BuildLaunch(Config{}, ctx));
  EXPECT_EQ(other.argv[0], "/tmp/other-server");
  // The catalog's rules hold for the user's table: values, ranges, requirements.
  ctx.server_binary.clear();
  auto bad = a->BuildLaunch(Config{{"quant", "q5_0"}}, ctx);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("quant"), std::string::npos) << bad.error().message;
  auto conflict = a->BuildLaunch(Config{{"quant", "q4_0"}, {"batch", "64"}}, ctx);
  ASSERT_FALSE(conflict);
  EXPECT_NE(conflict.error().message.find("requires quant!=q4_0"), std::string::npos) << conflict.error().message;
  EXPECT_FALSE(a->BuildLaunch(Config{{"threads", "99"}}, ctx));
}

TEST(CommandAdapterTest, RefusesTablesItCouldNotRender) {
  const std::string dir = testing::SourceDir().string();
  auto expect_error = [&](const std::string& target, const std::string& needle) {
    auto a = CommandAdapter::Create(Target(target), dir);
    ASSERT_FALSE(a) << target;
    EXPECT_NE(a.error().message.find(needle), std::string::npos) << a.error().message;
  };
  expect_error("  adapter: command\n  model: m\n  command: [s, '{port}', '{nope}']\n", "{nope} is neither");
  expect_error("  adapter: command\n  model: m\n  command: [s, '{q}']\n  knobs: [{name: q, type: string}]\n",
               "needs a default");
  expect_error("  adapter: command\n  model: m\n  command: [s]\n  knobs: [{name: q, type: int, default: '1'}]\n",
               "or a {q} in target.command");
  expect_error("  adapter: command\n  model: m\n  command: [s, '{weights}']\n"
               "  knobs: [{name: weights, type: enum, choices: [f16], default: f16}]\n",
               "'weights' is reserved");
  expect_error("  adapter: command\n  model: m\n  command: [s]\n  knobs: [{name: t, flag: --t, type: int, default: '1', "
               "accuracy_risk: huge}]\n",
               "must be none, low, medium or high");
}

// A real process launched through the template: it answers health on the port it was
// given, and one that fails the way a server fails is classified from its log.
TEST(CommandAdapterTest, ARealProcessStartsAndAFailedOneIsClassified) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-command"));
  const std::string script = (dir->path() / "serve.sh").string();
  // python's http.server answers 200 on "/" (a directory listing); the mode knob makes
  // it fail like a server whose port is taken.
  ASSERT_OK(sys::WriteFileAtomic(script, R"SH(#!/usr/bin/env bash
if [ "$1" = busy ]; then echo "error: bind: Address already in use" >&2; exit 1; fi
cd "$(dirname "$0")" && exec python3 -m http.server --bind 127.0.0.1 "$2"
)SH"));
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  auto target = Target(R"(  adapter: command
  model: m
  command: [)" + script + R"(, "{mode}", "{port}"]
  health_path: /
  knobs: [{name: mode, type: enum, choices: [serve, busy], default: serve}]
)");
  ASSERT_OK_AND_ASSIGN(auto a, CommandAdapter::Create(target, testing::SourceDir().string()));
  ServerOptions options{.log_path = (dir->path() / "server.log").string(), .health_timeout = std::chrono::seconds(60)};
  ASSERT_OK_AND_ASSIGN(auto server, StartServer(*a, Config{}, LaunchContext{.model_path = "m"}, options));
  EXPECT_TRUE(server->Alive());
  EXPECT_GT(server->port(), 0);
  server->Stop();
  auto busy = StartServer(*a, Config{{"mode", "busy"}}, LaunchContext{.model_path = "m", .port = 1}, options);
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().Get("failure_kind"), "port_in_use") << busy.error().ToString();
}

// llama-server logs through a worker thread its exit does not wait for: on a loaded
// machine a server that exits at once can lose the line naming the cause (CI saw a
// corrupt model classified "exited"). A stand-in loses it on its first launch: the
// exit is launched once more and classified from the second log; an exit that stays
// unexplained is reported after two launches.
TEST(StartServerTest, AnUnexplainedExitIsLaunchedOnceMoreForItsLog) {
  auto dir = sys::TempDir::Create("hone-exit");
  ASSERT_TRUE(dir);
  const std::string script = ((*dir)->path() / "llama-server").string();
  const std::string count = ((*dir)->path() / "launches").string();
  ASSERT_OK(sys::WriteFileAtomic(
      script, "#!/bin/sh\necho launch >> '" + count + "'\n" +
                  "if [ \"$(wc -l < '" + count + "')\" -ge 2 ] && [ \"$HONE_TEST_SILENT\" != 1 ]; then\n" +
                  "  echo 'E llama_model_load_from_file_impl: failed to load model' >&2\nfi\nexit 1\n"));
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  ASSERT_OK_AND_ASSIGN(auto adapter, LlamaCppAdapter::Create(testing::SourceDir().string(), "0.4.0"));
  ServerOptions options{.log_path = ((*dir)->path() / "server.log").string(), .health_timeout = std::chrono::seconds(30)};
  LaunchContext ctx{.server_binary = script, .model_path = "/models/corrupt.gguf"};
  auto failed = StartServer(*adapter, Config{}, ctx, options);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().Get("failure_kind"), "model_load") << failed.error().ToString();
  EXPECT_EQ(Split(Trim(*sys::ReadFile(count)), '\n').size(), 2u);
  // Silent every time: still "exited", after two launches (not more).
  ASSERT_EQ(::unlink(count.c_str()), 0);
  ::setenv("HONE_TEST_SILENT", "1", 1);
  auto silent = StartServer(*adapter, Config{}, ctx, options);
  ::unsetenv("HONE_TEST_SILENT");
  ASSERT_FALSE(silent);
  EXPECT_EQ(silent.error().Get("failure_kind"), "exited");
  EXPECT_EQ(Split(Trim(*sys::ReadFile(count)), '\n').size(), 2u);
}

// The two relaunch bounds are separate: an exit whose log lost its cause costs one
// relaunch and leaves both port-race relaunches. The stand-in exits silently, then loses
// the port race twice, then serves: four launches, and a healthy server.
TEST(StartServerTest, AnExitRelaunchLeavesThePortRaceRelaunches) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-exit-race"));
  const std::string script = (dir->path() / "llama-server").string();
  const std::string count = (dir->path() / "launches").string();
  ASSERT_OK(sys::WriteFileAtomic(dir->path() / "health", "ok"));
  // llama-server's flags: the port follows --port.
  ASSERT_OK(sys::WriteFileAtomic(script, "#!/usr/bin/env bash\necho launch >> '" + count + "'\n" +
                                             "n=$(wc -l < '" + count + "')\n" +
                                             "[ \"$n\" -eq 1 ] && exit 1\n" +
                                             "if [ \"$n\" -le 3 ]; then echo \"couldn't bind HTTP server socket\" >&2; exit 1; fi\n" +
                                             "while [ $# -gt 0 ]; do [ \"$1\" = --port ] && port=$2; shift; done\n" +
                                             "cd \"$(dirname \"$0\")\" && exec python3 -m http.server --bind 127.0.0.1 \"$port\"\n"));
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  ASSERT_OK_AND_ASSIGN(auto adapter, LlamaCppAdapter::Create(testing::SourceDir().string(), "0.4.0"));
  ServerOptions options{.log_path = (dir->path() / "server.log").string(), .health_timeout = std::chrono::seconds(60)};
  auto server = StartServer(*adapter, Config{}, LaunchContext{.server_binary = script, .model_path = "m.gguf"}, options);
  ASSERT_TRUE(server) << server.error().ToString();
  EXPECT_TRUE((*server)->Alive());
  EXPECT_EQ(Split(Trim(*sys::ReadFile(count)), '\n').size(), 4u);
  ASSERT_EQ((*server)->relaunches().size(), 3u);
  EXPECT_NE((*server)->relaunches()[0].find("exited without a recognizable cause"), std::string::npos);
  EXPECT_NE((*server)->relaunches()[2].find("port_in_use"), std::string::npos) << (*server)->relaunches()[2];
  (*server)->Stop();
}

}  // namespace
}  // namespace hone::target
