// The patch executor on the real llama.cpp source tree (a clone of the provisioned
// checkout, which itself is never touched).
//
// RealTreeApplyKeepRevertReject runs on every slow run: clone, worktree, strip
// detection, validation and commit/revert on the real tree, with no build.
// RealPatchGoesTheWholeWay is the full path: a change to a default in tools/server,
// an incremental CMake build of llama-server in the worktree's build directory, a
// measurement that starts the patched server and reads /props, then KEEP (commit)
// and a second, reverted proposal. Its first build compiles llama-server from scratch
// (minutes on 2 cores; later runs hit ccache), so it runs only with
// HONE_PATCH_LLAMA_BUILD=1.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "net/http.h"
#include "patch/executor.h"
#include "patch/git.h"
#include "testing/patch_fixture.h"
#include "patch/validate.h"
#include "sys/clock.h"
#include "target/llamacpp.h"
#include "target/server.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone::patch {
namespace {

using testing::Approve;
using ::testing::HasSubstr;
using testing::Sh;

// The auto n_parallel default of llama-server (tools/server/server.cpp): 4 -> `to`.
std::string AutoParallelDiff(const fs::path& repo, int to) {
  std::string expr = "s/params.n_parallel = 4;/params.n_parallel = " + std::to_string(to) + ";/";
  std::string out = Sh(
      repo, "sed -i '" + expr + "' tools/server/server.cpp && git diff && git checkout -q -- tools/server/server.cpp");
  return out;
}

class RealLlamaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) == "RealPatchGoesTheWholeWay" &&
        !std::getenv("HONE_PATCH_LLAMA_BUILD")) {
      GTEST_SKIP() << "set HONE_PATCH_LLAMA_BUILD=1 to build llama-server in a worktree (minutes on 2 cores)";
    }
    HONE_REQUIRE_LLAMA();
    prov_ = hone::testing::Llama();
    auto d = sys::TempDir::Create("hone-patch-llama");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    provisioned_before_ = TreeFingerprint(prov_->src_dir).value_or("error");
    live_ = dir_->path() / "llama.cpp";
    Sh(dir_->path(), "git clone -q " + ShellQuote(prov_->src_dir.string()) + " llama.cpp");
    clone_before_ = TreeFingerprint(live_).value_or("error");
    gate_ = testing::ShippedGate();
    ASSERT_NE(gate_, nullptr);
  }
  void TearDown() override {
    if (!prov_) return;
    EXPECT_EQ(TreeFingerprint(prov_->src_dir).value_or("error"), provisioned_before_) << "the provisioned tree changed";
    EXPECT_EQ(TreeFingerprint(live_).value_or("error"), clone_before_) << "the live clone changed";
    EXPECT_EQ(Sh(live_, "git status --porcelain"), "");
    EXPECT_EQ(Trim(Sh(live_, "git branch --list --format='%(refname:short)' 'hone/p/*'")), "");
  }

  const target::Provisioned* prov_ = nullptr;
  std::unique_ptr<sys::TempDir> dir_;
  fs::path live_;
  std::string provisioned_before_;
  std::string clone_before_;
  std::unique_ptr<policy::Gate> gate_;
};

TEST_F(RealLlamaTest, RealTreeApplyKeepRevertReject) {
  ExecutorOptions o;
  o.repo = live_;
  o.work_root = dir_->path() / "work";
  o.target = "llama.cpp";
  ASSERT_OK_AND_ASSIGN(auto ex, PatchExecutor::Create(o, *gate_));
  const std::string base = ex->accepted_commit();
  EXPECT_EQ(base, prov_->commit);

  auto reads = [](int want) -> MeasureFn {
    return [want](const BuiltTree& t) -> Result<Measurement> {
      HONE_ASSIGN_OR_RETURN(std::string src, sys::ReadFile(t.src_dir / "tools/server/server.cpp"));
      std::string line = "params.n_parallel = " + std::to_string(want) + ";";
      if (Contains(src, line)) return Measurement{Verdict::kKeep, "source has " + line};
      return Measurement{Verdict::kRevert, "source lacks " + line};
    };
  };
  Proposal p{.id = "np2",
             .title = "server: auto n_parallel 4 -> 2",
             .author = "specialist#1",
             .diff = AutoParallelDiff(live_, 2)};
  ASSERT_OK_AND_ASSIGN(PatchRecord kept, ex->Run(p, Approve(*gate_, p, "llama.cpp"), reads(2)));
  EXPECT_EQ(kept.verdict, PatchVerdict::kKept) << kept.reason;
  EXPECT_EQ(kept.strip, 1);
  EXPECT_EQ(kept.files, std::vector<std::string>{"tools/server/server.cpp"});
  EXPECT_EQ(Trim(Sh(live_, "git diff --name-only " + base + " hone/accepted")), "tools/server/server.cpp");

  Proposal q{.id = "np3",
             .title = "server: auto n_parallel -> 3",
             .author = "specialist#1",
             .diff = ReplaceAll(ReplaceAll(p.diff, "n_parallel = 2;", "n_parallel = 3;"), "n_parallel = 4;",
                                "n_parallel = 2;")};
  ASSERT_OK_AND_ASSIGN(PatchRecord reverted, ex->Run(q, Approve(*gate_, q, "llama.cpp"), reads(2)));
  EXPECT_EQ(reverted.verdict, PatchVerdict::kReverted) << reverted.reason;
  EXPECT_TRUE(reverted.reset_verified);
  EXPECT_EQ(ex->accepted_commit(), kept.commit);

  Proposal bad{.id = "cmake",
               .title = "sneak a build step in",
               .author = "specialist#1",
               .diff = "--- a/CMakeLists.txt\n+++ b/CMakeLists.txt\n@@ -1 +1,2 @@\n" +
                       std::string("+execute_process(COMMAND touch /tmp/hone-pwned)\n ") +
                       Sh(live_, "head -1 CMakeLists.txt")};
  ASSERT_OK_AND_ASSIGN(PatchRecord rejected, ex->Run(bad, Approve(*gate_, bad, "llama.cpp"), reads(2)));
  EXPECT_EQ(rejected.verdict, PatchVerdict::kRejected);
  EXPECT_EQ(rejected.stopped_by, "patch.allowed_files.llama_cpp");
}

Result<int> TotalSlots(const target::Server& server) {
  HONE_ASSIGN_OR_RETURN(auto r, net::Get(server.host(), server.port(), "/props", std::chrono::seconds(30)));
  if (r.status != 200) return Unavailable("/props answered HTTP " + std::to_string(r.status));
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("total_slots")) return DataLoss("/props has no total_slots");
  return j["total_slots"].get<int>();
}

// Starts `binary` with the tiny synthesized model and no --parallel flag; returns the
// slot count the server chose (its auto default).
Result<int> AutoSlots(const std::string& binary, const fs::path& log) {
  HONE_ASSIGN_OR_RETURN(std::string version, target::ProbeLlamaVersion(binary));
  HONE_ASSIGN_OR_RETURN(auto adapter, target::LlamaCppAdapter::Create(hone::testing::SourceDir().string(), version));
  target::LaunchContext ctx;
  ctx.server_binary = binary;
  ctx.model_path = hone::testing::SynthModel("tiny", "f16");
  if (ctx.model_path.empty()) return Internal("could not synthesize the tiny model");
  HONE_ASSIGN_OR_RETURN(auto server,
                        target::StartServer(*adapter, Config{}, ctx, target::ServerOptions{.log_path = log.string()}));
  return TotalSlots(*server);
}

TEST_F(RealLlamaTest, RealPatchGoesTheWholeWay) {
  ASSERT_OK_AND_ASSIGN(target::LlamaCppSource source,
                       target::LoadLlamaCppSource((hone::testing::SourceDir() / "data/llama.cpp.yaml").string()));
  std::vector<std::string> args = source.cmake_args;
  args.insert(args.end(), source.cpu_cmake_args.begin(), source.cpu_cmake_args.end());
  ExecutorOptions o;
  o.repo = live_;
  // A fixed work root (not the temp dir) keeps the slot path, so later runs rebuild
  // incrementally; HONE_PATCH_WORK_ROOT overrides it.
  const char* wr = std::getenv("HONE_PATCH_WORK_ROOT");
  o.work_root = wr ? fs::path(wr) : sys::DefaultCacheDir() / "patch-test" / "llama.cpp";
  std::error_code ec;
  fs::remove_all(o.work_root / "slot" / "src", ec);  // a previous run's clone is gone
  o.target = "llama.cpp";
  o.recipe = CMakeRecipe("llama.cpp llama-server", args, {"llama-server"}, {"bin/llama-server"});
  o.jobs = 2;
  o.build_timeout = std::chrono::minutes(45);
  ASSERT_OK_AND_ASSIGN(auto ex, PatchExecutor::Create(o, *gate_));

  // The stock server picks 4 slots when --parallel is not given.
  ASSERT_OK_AND_ASSIGN(int stock, AutoSlots(prov_->server, dir_->path() / "stock.log"));
  EXPECT_EQ(stock, 4);

  auto expect_slots = [&](int want) -> MeasureFn {
    return [&, want](const BuiltTree& t) -> Result<Measurement> {
      HONE_ASSIGN_OR_RETURN(int slots, AutoSlots((t.build_dir / "bin/llama-server").string(),
                                                 dir_->path() / (t.proposal_id + ".server.log")));
      std::string what = "/props total_slots=" + std::to_string(slots) + " (stock 4)";
      return Measurement{slots == want ? Verdict::kKeep : Verdict::kRevert, what};
    };
  };
  Proposal p{.id = "np2",
             .title = "server: auto n_parallel 4 -> 2",
             .author = "specialist#1",
             .diff = AutoParallelDiff(live_, 2)};
  ASSERT_OK_AND_ASSIGN(PatchRecord kept, ex->Run(p, Approve(*gate_, p, "llama.cpp"), expect_slots(2)));
  std::printf("proposal np2: %s [%s] build %.1f s (incremental=%d) total %.1f s: %s\n",
              std::string(PatchVerdictName(kept.verdict)).c_str(), kept.stopped_by.c_str(), kept.build_seconds,
              kept.incremental, kept.total_seconds, kept.reason.c_str());
  if (!kept.build_log_tail.empty()) std::printf("%s\n", kept.build_log_tail.c_str());
  ASSERT_EQ(kept.verdict, PatchVerdict::kKept) << kept.reason;
  EXPECT_THAT(kept.reason, HasSubstr("total_slots=2"));

  // A second proposal on top: rebuilt incrementally, measured, reverted.
  Proposal q{.id = "np3",
             .title = "server: auto n_parallel -> 3",
             .author = "specialist#1",
             .diff = ReplaceAll(ReplaceAll(p.diff, "n_parallel = 2;", "n_parallel = 3;"), "n_parallel = 4;",
                                "n_parallel = 2;")};
  ASSERT_OK_AND_ASSIGN(PatchRecord reverted, ex->Run(q, Approve(*gate_, q, "llama.cpp"), expect_slots(2)));
  std::printf("proposal np3: %s build %.1f s (incremental=%d) total %.1f s: %s\n",
              std::string(PatchVerdictName(reverted.verdict)).c_str(), reverted.build_seconds, reverted.incremental,
              reverted.total_seconds, reverted.reason.c_str());
  EXPECT_EQ(reverted.verdict, PatchVerdict::kReverted);
  EXPECT_TRUE(reverted.incremental);
  EXPECT_THAT(reverted.reason, HasSubstr("total_slots=3"));
  EXPECT_TRUE(reverted.reset_verified);
  EXPECT_EQ(ex->accepted_commit(), kept.commit);
}

}  // namespace
}  // namespace hone::patch
