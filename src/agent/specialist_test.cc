// The specialist end to end on a real git repository laid out like llama.cpp (the
// patch layer's fixture): a coding-agent CLI edits its own worktree, the diff goes
// through the real policy gate, a fresh critic signs it, and the real patch executor
// builds, measures and merges it. A chat specialist's diff must apply.
#include "agent/specialist.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "agent/cli_backend.h"
#include "agent/critic.h"
#include "agent/http_backends.h"
#include "testing/agent_endpoint.h"
#include "core/strings.h"
#include "patch/executor.h"
#include "testing/patch_fixture.h"
#include "testing/fake_clock.h"

namespace hone::agent {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace pt = hone::patch::testing;

class SpecialistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = pt::Fixture::Create();
    ASSERT_OK(f);
    fx_ = std::move(*f);
    gate_ = pt::ShippedGate();
    ASSERT_NE(gate_, nullptr);
  }
  std::string Script(const std::string& body) {
    std::string path = (fx_.dir->path() / "fake-agent").string();
    EXPECT_OK(sys::WriteFileAtomic(path, "#!/bin/sh\n" + body));
    chmod(path.c_str(), 0755);
    return path;
  }
  std::unique_ptr<LlmClient> CliClient(const std::string& script) {
    CliBackendOptions o;
    o.name = "fake";
    o.preset.argv = {script, "{prompt}"};
    o.preset.output = "text";
    o.preset.worst_case_usd = 0.1;
    o.env = ProcessEnv();
    cli_ = std::make_unique<CliBackend>(o, redactor_);
    return std::make_unique<LlmClient>(*cli_, meter_, clock_, redactor_, nullptr,
                                       ClientOptions{testing::Data().retry, nullptr});
  }
  SpecialistTask Task() {
    SpecialistTask t;
    t.id = "p1";
    t.title = "more default slots";
    t.goal = "The server is limited by its slot count at concurrency 8.";
    t.repo = fx_.live;
    t.work_dir = fx_.dir->path() / "specialists";
    return t;
  }

  pt::Fixture fx_;
  std::unique_ptr<policy::Gate> gate_;
  Redactor redactor_;
  UsageMeter meter_{UsageLimits{}};
  hone::testing::FakeClock clock_;
  std::unique_ptr<CliBackend> cli_;
};

TEST_F(SpecialistTest, CliSpecialistDiffGoesThroughGateCriticAndExecutor) {
  std::string live_before = pt::WalkHash(fx_.live);
  auto client = CliClient(Script(
      "sed -i 's/return 4;/return 8;/' common/common.h && echo 'Raised the slots; this is 30% faster.'\n"));
  Specialist s(*client, testing::Data(), &gate_->rules());
  ASSERT_OK_AND_ASSIGN(SpecialistResult r, s.Run(Task()));
  EXPECT_EQ(r.author, "specialist#1");
  EXPECT_NE(r.diff.find("+  return 8;"), std::string::npos) << r.diff;
  EXPECT_EQ(r.facts.files, std::vector<std::string>{"common/common.h"});
  EXPECT_EQ(r.facts.diff_sha256, sys::Sha256Hex(r.diff));
  // The speed claim is cut out of the summary and kept aside.
  EXPECT_EQ(r.summary, "Raised the slots; this is [claim].");
  EXPECT_EQ(r.claims, std::vector<std::string>{"30% faster"});
  // The live tree was never touched and the worktree is gone.
  EXPECT_EQ(pt::WalkHash(fx_.live), live_before);
  EXPECT_FALSE(std::filesystem::exists(Task().work_dir / "p1" / "worktree"));

  // Gate -> fresh critic -> sign-off -> executor (build, measure, merge).
  policy::PolicyDecision apply = gate_->Decide(ApplyAction(r));
  ASSERT_TRUE(apply.allowed) << apply.ToString();
  auto ep = testing::ScriptedEndpoint::Start();
  ep->Push(testing::OpenAiJson({{"approve", true}, {"reason", "one-line, on-topic"}, {"learning", "slots"}}));
  HttpBackendOptions ho;
  ho.base_url = ep->url();
  ho.model = "scripted";
  RealTransport transport;
  OpenAiBackend chat(ho, transport, redactor_);
  LlmClient critic_client(chat, meter_, clock_, redactor_, nullptr, {testing::Data().retry, nullptr});
  ASSERT_OK_AND_ASSIGN(auto critic, Critic::Create(critic_client, testing::Data()));
  Decision d;
  d.kind = "patch";
  d.subject = r.proposal_id;
  d.measured_verdict = Verdict::kPending;
  d.diff = r.diff;
  d.diff_sha256 = r.facts.diff_sha256;
  d.author = r.author;
  ASSERT_OK_AND_ASSIGN(CriticVerdict v, critic->Review(d));
  ASSERT_TRUE(critic->Verify(v, d));
  ASSERT_TRUE(gate_->RecordReview("critic", ToReview(v, d)).allowed);
  ASSERT_OK_AND_ASSIGN(auto ex, patch::PatchExecutor::Create(fx_.Options(), *gate_));
  patch::Proposal p{r.proposal_id, r.title, r.author, "proposal", r.diff};
  ASSERT_OK_AND_ASSIGN(patch::PatchRecord rec, ex->Run(p, apply, pt::ExpectParallel(8)));
  EXPECT_EQ(rec.verdict, patch::PatchVerdict::kKept) << rec.reason;
  EXPECT_EQ(pt::WalkHash(fx_.live), live_before);
}

TEST_F(SpecialistTest, NewFilesAreInTheDiffAndNoChangeIsAnError) {
  auto client = CliClient(Script("printf 'int added = 1;\\n' > src/added.cpp\n"));
  Specialist s(*client, testing::Data(), &gate_->rules());
  ASSERT_OK_AND_ASSIGN(SpecialistResult r, s.Run(Task()));
  EXPECT_EQ(r.facts.files, std::vector<std::string>{"src/added.cpp"});
  auto idle = CliClient(Script("echo 'I looked around and changed nothing'\n"));
  Specialist lazy(*idle, testing::Data());
  SpecialistTask t = Task();
  t.id = "p2";
  auto none = lazy.Run(t);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
}

TEST_F(SpecialistTest, AWorkflowEditIsDeniedByTheGate) {
  auto client = CliClient(Script("mkdir -p .github && echo 'on: push' > .github/ci.yml\n"));
  Specialist s(*client, testing::Data(), &gate_->rules());
  ASSERT_OK_AND_ASSIGN(SpecialistResult r, s.Run(Task()));
  policy::PolicyDecision d = gate_->Decide(ApplyAction(r));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule_id, "patch.allowed_files.llama_cpp") << d.ToString();
}

TEST_F(SpecialistTest, ChatSpecialistMustReplyWithADiffThatApplies) {
  auto ep = testing::ScriptedEndpoint::Start();
  std::string stale = pt::ParallelDiff(8);
  stale = ReplaceAll(stale, "-  return 4;", "-  return 5;");  // does not match the tree
  ep->Push(testing::OpenAiJson({{"diff", "just raise the slot count"}, {"summary", "x"}}));
  ep->Push(testing::OpenAiJson({{"diff", stale}, {"summary", "x"}}));
  ep->Push(testing::OpenAiJson({{"diff", pt::ParallelDiff(8)}, {"summary", "2x speedup expected"}}));
  HttpBackendOptions ho;
  ho.base_url = ep->url();
  ho.model = "scripted";
  RealTransport transport;
  OpenAiBackend chat(ho, transport, redactor_);
  RetryPolicy rp = testing::Data().retry;
  rp.max_invalid_replies = 2;
  LlmClient client(chat, meter_, clock_, redactor_, nullptr, {rp, nullptr});
  Specialist s(client, testing::Data(), &gate_->rules());
  SpecialistTask t = Task();
  t.files = {"common/common.h"};
  ASSERT_OK_AND_ASSIGN(SpecialistResult r, s.Run(t));
  EXPECT_EQ(r.diff, pt::ParallelDiff(8));
  EXPECT_EQ(r.claims, std::vector<std::string>{"2x speedup"});
  auto rej = client.rejections();
  ASSERT_EQ(rej.size(), 2u);
  EXPECT_EQ(rej[0].kind, "role_check");
  EXPECT_NE(rej[0].detail.find("not a usable unified diff"), std::string::npos) << rej[0].detail;
  EXPECT_NE(rej[1].detail.find("git apply --check failed"), std::string::npos) << rej[1].detail;
  // The model was shown the file it should change.
  std::string prompt = json::parse(ep->requests()[0].body)["messages"].back()["content"];
  EXPECT_NE(prompt.find("inline int DefaultParallel()"), std::string::npos);
}

TEST_F(SpecialistTest, ADiffCarryingACredentialIsRefused) {
  redactor_.Add("sk-live-specialist-canary-42");
  auto client = CliClient(Script("echo 'const char* k = \"sk-live-specialist-canary-42\";' >> src/llama.cpp\n"));
  Specialist s(*client, testing::Data(), &gate_->rules());
  auto r = s.Run(Task());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(r.error().ToString().find("canary"), std::string::npos);
}

TEST(StripClaimsTest, CutsNumericPerformanceClaims) {
  std::vector<std::string> claims;
  EXPECT_EQ(StripClaims("gives +12.5 % and 3x, maybe 10 times faster; touches 2 files", &claims),
            "gives [claim] and [claim], maybe [claim]; touches 2 files");
  EXPECT_EQ(claims, (std::vector<std::string>{"+12.5 %", "3x", "10 times faster"}));
}

}  // namespace
}  // namespace hone::agent
