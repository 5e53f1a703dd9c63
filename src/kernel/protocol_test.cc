#include "kernel/protocol.h"

#include <nlohmann/json.hpp>

#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::kernel {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

OpCatalog Catalog() {
  auto cat = OpCatalog::Load((testing::SourceDir() / "data/kernel/ops.yaml").string());
  EXPECT_TRUE(cat) << cat.error().ToString();
  return *cat;
}

const char* kResult = R"({
  "schema": "hone.kernel.result/v1", "backend": "fake", "status": "ok",
  "accepted": [{"task_id": "t", "op": "rmsnorm_fp8_quant", "case_id": "a",
                "config": {"index": 3, "name": "threads=256,vpt=2", "num_splits": 1},
                "baseline": "torch_compile", "claimed_speedup": 1.4}],
  "rejected": [{"task_id": "t", "case_id": "b", "reason": "no correct candidate"}],
  "artifacts": {"library": "/x/lib.so", "tuning": {"t": "/x/tune-t.json"}},
  "compiler": "Cuda compilation tools, release 13.0, V13.0.88"})";

TEST(ProtocolTest, PackageCarriesResolvedTasksAndKeys) {
  OpCatalog cat = Catalog();
  ASSERT_OK_AND_ASSIGN(KernelTaskSpec t,
                       LoadTaskSpec((testing::SourceDir() / "data/kernel/paged_decode_attention.yaml").string(), cat));
  PackageInput in{.workload = "w", .device = "NVIDIA H200", .arch = "sm_90a", .best_config = {{"tp", "1"}}, .tasks = {t}};
  ASSERT_OK_AND_ASSIGN(std::string text, WritePackageJson(in, cat));
  json j = json::parse(text);
  EXPECT_EQ(j["schema"], "hone.kernel.package/v1");
  EXPECT_EQ(j["hardware"]["device"], "NVIDIA H200");
  EXPECT_EQ(j["best_config"]["tp"], "1");
  const json& task = j["tasks"][0];
  EXPECT_EQ(task["op"], "paged_decode_attention");
  EXPECT_EQ(task["spec_sha256"], t.sha256);
  EXPECT_EQ(task["batch_dims"], json({"batch", "seq_len"}));
  EXPECT_EQ(task["cases"].size(), t.cases.size());
  EXPECT_EQ(task["cases"][0]["dims"]["head_dim"], 128);
  EXPECT_EQ(task["held_out_cases"].size(), t.held_out_cases.size());
  EXPECT_EQ(task["timing"]["runs"], 3);
}

TEST(ProtocolTest, ParsesResult) {
  ASSERT_OK_AND_ASSIGN(BackendResult r, ParseBackendResult(kResult, "r.json"));
  EXPECT_EQ(r.backend, "fake");
  ASSERT_EQ(r.accepted.size(), 1u);
  EXPECT_EQ(r.accepted[0].config.index, 3);
  EXPECT_DOUBLE_EQ(r.accepted[0].claimed_speedup, 1.4);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].reason, "no correct candidate");
  EXPECT_EQ(r.artifacts.at("tuning.t"), "/x/tune-t.json");
}

TEST(ProtocolTest, RejectsMalformedResults) {
  EXPECT_THAT(ParseBackendResult("not json", "r.json").error().message, HasSubstr("not a JSON object"));
  EXPECT_THAT(ParseBackendResult(R"({"schema": "other/v9"})", "r.json").error().message,
              HasSubstr("unsupported schema 'other/v9'"));
  json j = json::parse(kResult);
  j["accepted"][0].erase("config");
  EXPECT_THAT(ParseBackendResult(j.dump(), "r.json").error().message, HasSubstr("accepted[0]: an accepted kernel needs a config"));
  j = json::parse(kResult);
  j["accepted"][0]["claimed_speedup"] = -1;
  EXPECT_THAT(ParseBackendResult(j.dump(), "r.json").error().message, HasSubstr("claimed_speedup must be > 0"));
  j = json::parse(kResult);
  j["status"] = "great";
  EXPECT_FALSE(ParseBackendResult(j.dump(), "r.json"));
}

// A real child process at the seam: a shell script that reads its arguments the way
// any backend must.
class RunBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-kernel-proto");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    pkg_ = (dir_->path() / "package.json").string();
    res_ = (dir_->path() / "result.json").string();
    ASSERT_OK(sys::WriteFileAtomic(pkg_, R"({"schema": "hone.kernel.package/v1", "tasks": []})"));
    ASSERT_OK(sys::WriteFileAtomic(dir_->path() / "canned.json", kResult));
  }
  BackendCommand Script(const std::string& body) {
    return BackendCommand{.argv = {"/bin/sh", "-c", body, "backend"}, .timeout = std::chrono::seconds(20), .log_path = ""};
  }
  std::unique_ptr<sys::TempDir> dir_;
  std::string pkg_, res_;
};

TEST_F(RunBackendTest, PassesPackageAndReadsResult) {
  // $1 $2 = --package P, $3 $4 = --result R; the script checks it got the package.
  std::string canned = (dir_->path() / "canned.json").string();
  ASSERT_OK_AND_ASSIGN(BackendResult r,
                       RunBackend(Script("test \"$1\" = --package && grep -q hone.kernel.package \"$2\" && "
                                         "test \"$3\" = --result && cp " + canned + " \"$4\""),
                                  pkg_, res_));
  EXPECT_EQ(r.accepted.size(), 1u);
}

TEST_F(RunBackendTest, FailingBackendReportsItsOutput) {
  auto r = RunBackend(Script("echo tuning exploded >&2; exit 3"), pkg_, res_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("exit 3"));
  EXPECT_THAT(std::string(r.error().Get("output_tail")), HasSubstr("tuning exploded"));
}

TEST_F(RunBackendTest, StaleResultDoesNotCountAsThisRuns) {
  ASSERT_OK(sys::WriteFileAtomic(res_, kResult));
  auto r = RunBackend(Script("exit 0"), pkg_, res_);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("wrote no result"));
}

TEST_F(RunBackendTest, TimeoutKillsTheBackend) {
  BackendCommand cmd = Script("sleep 30");
  cmd.timeout = std::chrono::milliseconds(300);
  auto r = RunBackend(cmd, pkg_, res_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace hone::kernel
