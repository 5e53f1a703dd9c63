// End-to-end tests of the hone binary as a user runs it: bad input gives one-line
// errors and non-zero exits; a served model answers; interrupting or killing hone
// leaves no llama-server behind.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <thread>

#include "core/strings.h"
#include "net/raw_server.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone {
namespace {

using namespace std::chrono_literals;

std::string Hone() { return (testing::BinaryDir() / "src/cli/hone").string(); }

// Processes whose command line mentions `needle` (to prove nothing was left behind).
std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    auto pid = ParseInt(e->d_name);
    if (!pid) continue;
    auto cmd = sys::ReadFile("/proc/" + std::string(e->d_name) + "/cmdline");
    if (!cmd) continue;
    auto stat = sys::ReadFile("/proc/" + std::string(e->d_name) + "/stat");
    if (stat && Contains(*stat, ") Z ")) continue;  // zombies are dead
    if (Contains(*cmd, needle) && !Contains(*cmd, "hone_cli_slow_tests")) out.push_back(static_cast<pid_t>(*pid));
  }
  closedir(d);
  return out;
}

// What a survivor is: "pid state ppid: command line", one per process.
std::string Describe(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t pid : pids) {
    std::string base = "/proc/" + std::to_string(pid);
    std::string cmd = sys::ReadFile(base + "/cmdline").value_or("");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    std::string stat = sys::ReadFile(base + "/stat").value_or("");
    size_t close = stat.rfind(')');
    std::string fields = close == std::string::npos ? "" : stat.substr(close + 2, 16);
    out += "\n  " + std::to_string(pid) + " [" + fields + "]: " + cmd;
  }
  return out;
}

bool NoneLeftWithin(const std::string& needle, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ProcessesMentioning(needle).empty()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

sys::CommandOutput RunHone(std::vector<std::string> args, std::chrono::milliseconds timeout = 120s) {
  args.insert(args.begin(), Hone());
  auto out = sys::RunCommand({.argv = args}, timeout);
  EXPECT_TRUE(out) << out.error().ToString();
  return out ? *out : sys::CommandOutput{};
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-cli");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  std::string Path(const std::string& n) { return (dir_->path() / n).string(); }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(CliTest, BadInputGivesOneLineErrors) {
  auto r = RunHone({"model", "synth", "--preset", "nope", "--out", Path("x.gguf")});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_NE(r.output.find("hone: error: unknown model preset 'nope' (known: tiny, small, medium)"), std::string::npos)
      << r.output;

  ASSERT_OK(sys::WriteFileAtomic(Path("shape.json"), "{\"num_hidden_layers\": 2, \"hidden_size\": 100}"));
  r = RunHone({"model", "synth", "--shape", Path("shape.json"), "--out", Path("x.gguf")});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_NE(r.output.find("shape.json:1:1: num_attention_heads: required field is missing"), std::string::npos)
      << r.output;

  ASSERT_OK(sys::WriteFileAtomic(Path("bad.gguf"), "GGUF\x03\0\0\0garbage"));
  r = RunHone({"model", "info", Path("bad.gguf")});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.output.find("hone: error: corrupt GGUF file"), std::string::npos) << r.output;

  r = RunHone({"model", "synth", "--preset", "tiny", "--vocab", Path("novocab.gguf"), "--out", Path("x.gguf")});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.output.find("hone: error: vocab file not found: "), std::string::npos) << r.output;

  r = RunHone({"serve", "--model", Path("absent.gguf"), "--smoke"});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.output.find("hone: error: model file not found"), std::string::npos) << r.output;

  r = RunHone({"provision", "tensorrt"});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_NE(r.output.find("unknown engine 'tensorrt'"), std::string::npos);
}

class CliLlamaTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    HONE_REQUIRE_LLAMA();
    // A private copy, so the processes of this test are recognizable by path.
    model_ = Path("cli-tiny.gguf");
    ASSERT_OK(sys::WriteFileAtomic(model_, *sys::ReadFile(testing::SynthModel("tiny", "q8_0"))));
  }
  std::string model_;
};

TEST_F(CliLlamaTest, SmokeServesAStreamedCompletion) {
  auto r = RunHone({"serve", "--model", model_, "--smoke", "--max-tokens", "16", "--set", "threads=2"});
  EXPECT_EQ(r.status.code, 0) << r.output;
  EXPECT_NE(r.output.find("streamed 16 content chunks, 16 completion tokens (usage)"), std::string::npos) << r.output;
  EXPECT_TRUE(NoneLeftWithin(model_, 5s));
}

TEST_F(CliLlamaTest, StartupFailuresLeaveNothingRunning) {
  auto r = RunHone({"serve", "--model", model_, "--smoke", "--set", "flash_attn=maybe"});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_NE(r.output.find("hone: error: knob flash_attn=maybe: not one of: on, off, auto"), std::string::npos)
      << r.output;
  r = RunHone({"serve", "--model", model_, "--smoke", "--server-arg=--bogus-flag"});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.output.find("bad_flag"), std::string::npos) << r.output;
  EXPECT_TRUE(NoneLeftWithin(model_, 5s));

  auto occupant = net::RawServer::Start([](const net::RawRequest&, net::RawWriter&) {});
  ASSERT_OK(occupant);
  r = RunHone({"serve", "--model", model_, "--smoke", "--port", std::to_string((*occupant)->port())});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.output.find("port_in_use"), std::string::npos) << r.output;
  EXPECT_TRUE(ProcessesMentioning(model_).empty());
}

// Starts `hone serve` and waits until it reports the server healthy.
std::unique_ptr<sys::ChildProcess> StartServe(const std::string& model) {
  auto child = sys::ChildProcess::Start({.argv = {Hone(), "serve", "--model", model}});
  EXPECT_TRUE(child);
  if (!child) return nullptr;
  for (int i = 0; i < 600; ++i) {
    if (Contains((*child)->Output(), "serving until interrupted")) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(Contains((*child)->Output(), "serving until interrupted")) << (*child)->Output();
  return std::move(*child);
}

TEST_F(CliLlamaTest, InterruptStopsTheServer) {
  auto hone = StartServe(model_);
  ASSERT_TRUE(hone);
  EXPECT_GE(ProcessesMentioning(model_).size(), 2u);  // hone serve, its guard, llama-server
  kill(hone->pid(), SIGINT);
  auto status = hone->WaitFor(20s, /*honor_interrupt=*/false);
  ASSERT_OK(status);
  EXPECT_EQ(status->code, 130);
  EXPECT_TRUE(NoneLeftWithin(model_, 5s));
}

TEST_F(CliLlamaTest, KilledHoneLeavesNoOrphanedServer) {
  auto hone = StartServe(model_);
  ASSERT_TRUE(hone);
  std::smatch m;
  std::string out = hone->Output();
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(\(pid (\d+)\))")));
  pid_t server_pid = static_cast<pid_t>(*ParseInt(m[1].str()));
  EXPECT_EQ(kill(server_pid, 0), 0);
  kill(hone->pid(), SIGKILL);  // no handler, no destructor: only the guard can clean up
  ASSERT_OK(hone->WaitFor(10s, false));
  EXPECT_TRUE(NoneLeftWithin(model_, 10s)) << "llama-server " << server_pid << " or its guard survived the supervisor:"
                                           << Describe(ProcessesMentioning(model_));
}

}  // namespace
}  // namespace hone
