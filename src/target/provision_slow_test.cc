// Provisioning from a local llama.cpp checkout (`hone provision llama.cpp --source`),
// with real git and a real cmake build of a stand-in source tree: four tiny tools that
// answer --version like llama.cpp's. No network, a few seconds.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "sys/files.h"
#include "sys/process.h"
#include "target/llamacpp.h"
#include "testing/test_util.h"

namespace hone::target {
namespace {

using namespace std::chrono_literals;

constexpr const char* kCMake = R"(cmake_minimum_required(VERSION 3.14)
project(fake_llama C)
foreach(tool llama-server llama-quantize llama-bench llama-perplexity)
  add_executable(${tool} tool.c)
  set_target_properties(${tool} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endforeach()
)";
constexpr const char* kTool = R"(#include <stdio.h>
int main(void) { printf("version: 0.4.0-dev (build 1, commit fake)\nbuilt with cc\n"); return 0; }
)";

class ProvisionSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(dir_, sys::TempDir::Create("hone-provision"));
    src_ = dir_->path() / "llama.cpp";
    ASSERT_OK(sys::EnsureDir(src_ / "models"));
    ASSERT_OK(sys::WriteFileAtomic(src_ / "CMakeLists.txt", kCMake));
    ASSERT_OK(sys::WriteFileAtomic(src_ / "tool.c", kTool));
    ASSERT_OK(sys::WriteFileAtomic(src_ / "models" / "ggml-vocab-llama-spm.gguf", "vocab"));
  }
  void Git(std::vector<std::string> args) {
    std::vector<std::string> argv = {"git", "-C", src_.string(), "-c", "user.name=t", "-c", "user.email=t@t"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = sys::RunCommand({.argv = argv}, 60s);
    ASSERT_TRUE(r && r->status.success()) << Join(argv, " ") << (r ? r->output : r.error().message);
  }
  ProvisionOptions Options() {
    return {.cache_dir = dir_->path() / "cache", .data_dir = testing::SourceDir().string(), .use_path = false,
            .jobs = 2, .source = src_.string()};
  }

  std::unique_ptr<sys::TempDir> dir_;
  std::filesystem::path src_;
};

TEST_F(ProvisionSourceTest, BuildsALocalCheckoutIntoItsOwnRootAndFindsIt) {
  Git({"init", "-q"});
  Git({"add", "-A"});
  Git({"commit", "-qm", "fake llama.cpp"});
  ASSERT_OK_AND_ASSIGN(Provisioned p, ProvisionLlamaCpp(Options()));
  EXPECT_EQ(p.origin, "source");
  EXPECT_EQ(p.variant, "cpu");
  EXPECT_EQ(p.tag, "local");
  EXPECT_EQ(p.version, "0.4.0-dev (build 1, commit fake)");
  EXPECT_TRUE(sys::FileExists(p.server));
  EXPECT_EQ(p.root.filename().string(), "local-" + p.commit.substr(0, 7));
  EXPECT_TRUE(sys::FileExists(p.VocabPath("llama-spm"))) << "the clone carries the vocab files";
  // The build's configure arguments are recorded: a patch rebuild repeats them.
  EXPECT_NE(std::find(p.cmake_args.begin(), p.cmake_args.end(), "-DGGML_NATIVE=ON"), p.cmake_args.end());
  // Found again without building; a CUDA build is not claimed.
  ASSERT_OK_AND_ASSIGN(Provisioned found, FindProvisioned(dir_->path() / "cache", testing::SourceDir().string()));
  EXPECT_EQ(found.server, p.server);
  EXPECT_EQ(found.cmake_args, p.cmake_args);
  auto cuda = FindProvisioned(dir_->path() / "cache", testing::SourceDir().string(), /*cuda=*/true);
  ASSERT_FALSE(cuda);
  EXPECT_NE(cuda.error().message.find("--cuda"), std::string::npos) << cuda.error().message;
  // A second provision returns at once with the same build.
  ASSERT_OK_AND_ASSIGN(Provisioned again, ProvisionLlamaCpp(Options()));
  EXPECT_EQ(again.server, p.server);
  // A build made with other flags than data/llama.cpp.yaml's now is built again (the AMX
  // flags of 2026-12-05 reach a cache built before them).
  const std::string stamp = (p.root / "build-cpu" / "hone-provision.json").string();
  ASSERT_OK_AND_ASSIGN(std::string text, sys::ReadFile(stamp));
  auto j = nlohmann::json::parse(text);
  j["cmake_args"] = std::vector<std::string>{"-DGGML_NATIVE=ON"};
  ASSERT_OK(sys::WriteFileAtomic(stamp, j.dump()));
  ASSERT_OK_AND_ASSIGN(Provisioned rebuilt, ProvisionLlamaCpp(Options()));
  EXPECT_EQ(rebuilt.cmake_args, p.cmake_args);
  ASSERT_OK_AND_ASSIGN(Provisioned stamped, FindProvisioned(dir_->path() / "cache", testing::SourceDir().string()));
  EXPECT_EQ(stamped.cmake_args, p.cmake_args);
}

TEST_F(ProvisionSourceTest, ATreeWithoutGitIsBuiltFromACopy) {
  ASSERT_OK_AND_ASSIGN(Provisioned p, ProvisionLlamaCpp(Options()));
  EXPECT_EQ(p.commit, "unversioned");
  EXPECT_EQ(p.root.filename().string(), "local-unversioned");
  EXPECT_TRUE(sys::FileExists(p.server));
}

TEST_F(ProvisionSourceTest, ASourceThatIsNotLlamaCppIsRefused) {
  ProvisionOptions o = Options();
  o.source = (dir_->path() / "nowhere").string();
  auto missing = ProvisionLlamaCpp(o);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(BuildArgsTest, EachVariantGetsItsOwnArguments) {
  LlamaCppSource src;
  src.cmake_args = {"-DCOMMON=1"};
  src.cpu_cmake_args = {"-DGGML_NATIVE=ON"};
  src.cuda_cmake_args = {"-DGGML_CUDA=ON"};
  EXPECT_EQ(BuildArgs(src, "cpu"), (std::vector<std::string>{"-DCOMMON=1", "-DGGML_NATIVE=ON"}));
  EXPECT_EQ(BuildArgs(src, "cuda-sm90"),
            (std::vector<std::string>{"-DCOMMON=1", "-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=90"}));
}

}  // namespace
}  // namespace hone::target
