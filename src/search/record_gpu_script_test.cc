// bench/search/gpu/record-gpu.sh picks the operating points the lent card can continue
// before it builds anything: a surface is recorded on one kind of card, and the device
// tool once lent an H100 for a call that named an H200 (both recorders refused after the
// five-minute CUDA build). The script runs here for real in a copy of its tree, with a
// stand-in nvidia-smi naming the card; "check" stops it before the build.
#include <gtest/gtest.h>

#include <string>

#include "core/strings.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/test_util.h"

namespace hone::search {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class RecordGpuScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("hone-record-gpu");
    ASSERT_TRUE(dir);
    dir_ = std::move(*dir);
    const fs::path gpu = dir_->path() / "bench/search/gpu";
    fs::create_directories(gpu);
    fs::create_directories(dir_->path() / "bin");
    const fs::path src = hone::testing::SourceDir() / "bench/search/gpu";
    fs::copy_file(src / "record-gpu.sh", gpu / "record-gpu.sh");
    for (const char* op : {"c4x1", "c32", "c64h100", "c64"}) {
      const std::string spec = std::string("surface-gpu-8b-") + op + ".spec.yaml";
      fs::copy_file(src / spec, gpu / spec);
    }
    // The card a stand-in nvidia-smi names (as `--query-gpu=name` and `--list-gpus` do).
    ASSERT_OK(sys::WriteFileAtomic(dir_->path() / "bin/nvidia-smi",
                             "#!/bin/sh\ncase \"$*\" in *--list-gpus*) echo \"GPU 0: $FAKE_GPU (UUID: x)\";;"
                             " *) echo \"$FAKE_GPU\";; esac\n"));
    fs::permissions(dir_->path() / "bin/nvidia-smi", fs::perms::owner_all);
  }

  // A shard whose info names the card it was recorded on (what `hone search record` writes).
  void Shard(const std::string& where, const std::string& op, const std::string& hardware) {
    const fs::path dir = dir_->path() / where;
    fs::create_directories(dir);
    ASSERT_OK(sys::WriteFileAtomic(dir / ("surface-gpu-8b-" + op + ".shard-0-of-1.json"),
                             "{\"axes\": [], \"info\": {\"gpus\": \"1\", \"hardware\": \"" + hardware +
                                 "\", \"model\": \"hone-llama-3.1-8b-s42\"}, \"points\": []}\n"));
  }

  sys::CommandOutput Run(const std::string& card, const std::string& ops, const std::string& mode) {
    sys::ProcessSpec spec{.argv = {"bash", (dir_->path() / "bench/search/gpu/record-gpu.sh").string(), ops, "60"},
                          .env = {{"FAKE_GPU", card},
                                  {"PATH", (dir_->path() / "bin").string() + ":/usr/bin:/bin"},
                                  {"OUT", (dir_->path() / "out").string()}}};
    if (!mode.empty()) spec.argv.push_back(mode);
    auto out = sys::RunCommand(spec, 30s);
    EXPECT_TRUE(out) << out.error().ToString();
    return out ? *out : sys::CommandOutput{};
  }

  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(RecordGpuScriptTest, AnH100LentForH200PointsStopsBeforeItBuildsAnything) {
  Shard("bench/search/gpu", "c4x1", "nvidia-h200");
  Shard("bench/search/gpu", "c32", "nvidia-h200");
  // No "check": on a card that fits, the script would go on to build.
  sys::CommandOutput out = Run("NVIDIA H100 80GB HBM3", "c4x1,c32", "");
  EXPECT_EQ(out.status.code, 3) << out.output;
  EXPECT_TRUE(Contains(out.output, "skipping c4x1: recorded on nvidia-h200, this card is nvidia-h100-80gb-hbm3"))
      << out.output;
  EXPECT_TRUE(Contains(out.output, "skipping c32: recorded on nvidia-h200")) << out.output;
  EXPECT_TRUE(Contains(out.output, "nothing to record on nvidia-h100-80gb-hbm3")) << out.output;
  // Nothing was unpacked, built or written.
  EXPECT_FALSE(fs::exists(dir_->path() / ".device-cache"));
  EXPECT_FALSE(fs::exists(dir_->path() / "out"));
}

TEST_F(RecordGpuScriptTest, OneCallRecordsWhatFitsWhicheverCardComes) {
  Shard("bench/search/gpu", "c4x1", "nvidia-h200");
  Shard("bench/search/gpu", "c32", "nvidia-h200");
  Shard("bench/search/gpu", "c64h100", "nvidia-h100-80gb-hbm3");
  // c64 has no shard yet: any card may start it.
  sys::CommandOutput h100 = Run("NVIDIA H100 80GB HBM3", "c4x1,c32,c64h100,c64", "check");
  EXPECT_TRUE(h100.status.success()) << h100.output;
  EXPECT_TRUE(Contains(h100.output, "would record c64h100 c64 on nvidia-h100-80gb-hbm3")) << h100.output;
  sys::CommandOutput h200 = Run("NVIDIA H200", "c4x1,c32,c64h100,c64", "check");
  EXPECT_TRUE(h200.status.success()) << h200.output;
  EXPECT_TRUE(Contains(h200.output, "skipping c64h100: recorded on nvidia-h100-80gb-hbm3, this card is nvidia-h200"))
      << h200.output;
  EXPECT_TRUE(Contains(h200.output, "would record c4x1 c32 c64 on nvidia-h200")) << h200.output;
}

TEST_F(RecordGpuScriptTest, AShardThatCameBackThisSessionIsTheOneRead) {
  // The committed shard is an H200's; the one the last call brought back (.device/surfaces,
  // what the next call continues) was started anew on an H100.
  Shard("bench/search/gpu", "c64", "nvidia-h200");
  Shard(".device/surfaces", "c64", "nvidia-h100-80gb-hbm3");
  sys::CommandOutput out = Run("NVIDIA H100 80GB HBM3", "c64", "check");
  EXPECT_TRUE(out.status.success()) << out.output;
  EXPECT_TRUE(Contains(out.output, "would record c64 on nvidia-h100-80gb-hbm3")) << out.output;
}

}  // namespace
}  // namespace hone::search
