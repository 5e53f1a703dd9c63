#include "target/adapter.h"

#include <gtest/gtest.h>

#include "target/llamacpp.h"
#include "testing/test_util.h"

namespace hone::target {
namespace {

std::vector<FailureRule> Rules(const std::string& fw) {
  auto r = LoadFailureRules((testing::SourceDir() / "data/failures.yaml").string(), fw);
  EXPECT_TRUE(r) << r.error().ToString();
  return *r;
}

// Log lines recorded from the provisioned llama-server (v0.4.0, 80fb11a).
TEST(ClassifyTest, LlamaServerLogs) {
  auto rules = Rules("llama.cpp");
  struct Case {
    const char* log;
    FailureKind kind;
  } cases[] = {
      {"error: invalid argument: --bogus-flag\n", FailureKind::kBadFlag},
      {"error while handling argument \"-fa\": error: unknown value for --flash-attn: 'maybe'\n", FailureKind::kBadFlag},
      {"error while handling argument \"-ub\": stoi\n\nusage:\n", FailureKind::kBadFlag},
      {"0.00.004.620 E llama_model_load_from_file_impl: failed to load model\n"
       "0.00.005.137 E srv  llama_server: exiting due to model loading error\n",
       FailureKind::kModelLoad},
      {"0.00.003.610 E srv         start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 18113\n",
       FailureKind::kPortInUse},
      {"llama_init_from_model: failed to create context\n", FailureKind::kContextCreate},
      {"ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 999999\n", FailureKind::kOutOfMemory},
  };
  for (const auto& c : cases) {
    Classification got = Classify(rules, c.log, 1, 0);
    EXPECT_EQ(FailureKindName(got.kind), FailureKindName(c.kind)) << c.log;
    EXPECT_FALSE(got.excerpt.empty());
  }
  EXPECT_EQ(Classify(rules, "nothing useful\n", 0, 9).kind, FailureKind::kCrashed);
  EXPECT_EQ(Classify(rules, "nothing useful\n", 3, 0).kind, FailureKind::kExited);
  EXPECT_EQ(Classify(rules, "all good\n", 0, 0).kind, FailureKind::kNone);
}

TEST(ClassifyTest, VllmAndSglangRulesLoad) {
  EXPECT_EQ(Classify(Rules("vllm"), "torch.OutOfMemoryError: CUDA out of memory.", 1, 0).kind,
            FailureKind::kOutOfMemory);
  EXPECT_EQ(Classify(Rules("sglang"), "error: unrecognized arguments: --bogus", 2, 0).kind, FailureKind::kBadFlag);
}

TEST(LlamaAdapterTest, BuildsCommandLineFromConfig) {
  auto a = LlamaCppAdapter::Create(testing::SourceDir().string(), "0.4.0-dev (build 1, commit 80fb11a)");
  ASSERT_OK(a);
  LaunchContext ctx{.server_binary = "/bin/llama-server", .model_path = "/m.gguf", .port = 9000,
                    .extra_args = {"--ctx-size", "4096"}};
  auto spec = (*a)->BuildLaunch(Config{{"threads", "2"}, {"cont_batching", "off"}, {"weights", "q8_0"},
                                       {"omp_wait_policy", "passive"}},
                                ctx);
  ASSERT_OK(spec);
  EXPECT_EQ(spec->ShellCommand(),
            "OMP_WAIT_POLICY=passive /bin/llama-server --model /m.gguf --host 127.0.0.1 --port 9000 --metrics "
            "--no-webui --offline --log-colors off --ctx-size 4096 --no-cont-batching --threads 2");
  auto bad = (*a)->BuildLaunch(Config{{"flash_attn", "maybe"}}, ctx);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

TEST(LlamaVersionTest, NumericVersion) {
  EXPECT_EQ(NumericVersion("0.4.0-dev (build 1, commit 80fb11a)"), "0.4.0");
  EXPECT_EQ(NumericVersion("v0.4.0"), "0.4.0");
  EXPECT_EQ(NumericVersion("b6500"), "0");
}

}  // namespace
}  // namespace hone::target
