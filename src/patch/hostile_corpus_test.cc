// The hostile corpus (testdata/hostile/corpus.yaml): every case is refused or undone
// with its rule, and the live tree is byte-identical afterwards.
#include <cstdio>
#include <map>

#include "core/strings.h"
#include "patch/executor.h"
#include "patch/git.h"
#include "testing/patch_fixture.h"
#include "patch/validate.h"
#include "spec/yaml.h"
#include "testing/test_util.h"

namespace hone::patch {
namespace {

using testing::Approve;
using testing::ExpectParallel;
using testing::Fixture;
using testing::Sh;
using testing::WalkHash;

struct Case {
  std::string name;
  std::string diff;
  std::string expect;
  std::string rule;
  int build_timeout_s = 60;
};

std::vector<Case> LoadCorpus() {
  fs::path dir = hone::testing::SourceDir() / "src/patch/testdata/hostile";
  auto root = spec::Field::LoadFile((dir / "corpus.yaml").string());
  EXPECT_TRUE(root) << root.error().ToString();
  std::vector<Case> out;
  if (!root) return out;
  for (const spec::Field& c : (*root)["cases"].Items()) {
    Case k;
    k.expect = c["expect"].Str().value_or("?");
    k.rule = c["rule"].Str().value_or("?");
    k.build_timeout_s = static_cast<int>(c["build_timeout_s"].IntOr(60).value_or(60));
    if (c["file"].defined()) {
      k.name = *c["file"].Str();
      auto text = sys::ReadFile(dir / k.name);
      EXPECT_TRUE(text) << k.name;
      k.diff = text.value_or("");
    } else if (c["generate"].Str().value_or("") == "huge") {
      // 20k added lines (~500 KiB): over the size limit, never parsed.
      k.name = "generated:huge";
      k.diff = "--- a/common/huge.h\n+++ b/common/huge.h\n@@ -0,0 +1,20000 @@\n";
      for (int i = 0; i < 20000; ++i) k.diff += "+int filler_" + std::to_string(i) + " = 0;\n";
    }
    out.push_back(std::move(k));
  }
  return out;
}

// What a person could see of the live tree and the files around it.
struct LiveState {
  std::string walk, git, outside;
  bool operator==(const LiveState&) const = default;
};
LiveState Observe(const Fixture& f) {
  LiveState s;
  s.walk = WalkHash(f.live);
  s.git = Sh(f.live,
             "git status --porcelain=v1 --untracked-files=all --ignored; git stash list; git ls-files -s; "
             "git rev-parse HEAD main; git rev-parse --verify -q hone/accepted; "
             "git worktree list --porcelain | grep -c '^worktree '; git branch --list --format='%(refname)'");
  s.outside = WalkHash(f.outside);
  return s;
}

TEST(HostileCorpusTest, EveryCaseIsRefusedOrUndoneAndTheLiveTreeIsUntouched) {
  std::vector<Case> corpus = LoadCorpus();
  ASSERT_GE(corpus.size(), 30u);
  ASSERT_OK_AND_ASSIGN(Fixture fx, Fixture::Create());
  std::unique_ptr<policy::Gate> gate = testing::ShippedGate();
  ASSERT_NE(gate, nullptr);
  // Create the accepted line once, so "unchanged" below includes it.
  { ASSERT_OK(PatchExecutor::Create(fx.Options(), *gate)); }
  const LiveState before = Observe(fx);
  ASSERT_EQ(Sh(fx.live, "git status --porcelain=v1 --untracked-files=all"), "");

  int n = 0;
  std::map<int, std::unique_ptr<PatchExecutor>> executors;  // by build timeout
  for (const Case& c : corpus) {
    // "honest": the proposer declares what the diff really touches (the gate may stop
    // it). "lying": it claims to touch only tools/server/server.cpp, so the gate lets
    // it through and the executor must catch it on its own.
    for (const char* mode : {"honest", "lying"}) {
      if (std::string(mode) == "lying" && c.expect != "rejected") continue;
      SCOPED_TRACE(c.name + " (" + mode + ")");
      if (!executors.contains(c.build_timeout_s)) {
        executors.clear();  // one executor per work root at a time
        ExecutorOptions o = fx.Options();
        o.build_timeout = std::chrono::seconds(c.build_timeout_s);
        ASSERT_OK_AND_ASSIGN(executors[c.build_timeout_s], PatchExecutor::Create(o, *gate));
      }
      PatchExecutor* ex = executors[c.build_timeout_s].get();
      Proposal p{.id = "case" + std::to_string(++n), .title = c.name, .author = "specialist#7", .diff = c.diff};
      policy::PolicyDecision d;
      if (std::string(mode) == "honest") {
        d = Approve(*gate, p, "llama.cpp");
      } else {
        policy::Action a{
            .kind = policy::ActionKind::kApplyPatch, .role = "specialist", .actor = "specialist#7", .subject = p.id};
        a.patch.target = "llama.cpp";
        a.patch.diff_sha256 = sys::Sha256Hex(p.diff);
        a.patch.files = {"tools/server/server.cpp"};
        a.patch.diff_bytes = 100;
        d = gate->Decide(a);
        ASSERT_TRUE(d.allowed) << d.ToString();
        gate->RecordReview("critic", policy::CriticReview{p.id, a.patch.diff_sha256, "critic#1",
                                                          policy::CriticVerdict::kApprove, "lgtm"});
      }
      auto r = ex->Run(p, d, ExpectParallel(2));
      ASSERT_TRUE(r) << r.error().ToString();
      EXPECT_EQ(std::string(PatchVerdictName(r->verdict)), c.expect) << r->reason;
      EXPECT_EQ(r->stopped_by, c.rule) << r->reason;
      EXPECT_FALSE(r->reason.empty());
      EXPECT_TRUE(r->commit.empty());
      if (r->verdict == PatchVerdict::kReverted) {
        EXPECT_TRUE(r->reset_verified);
      }
      std::printf("  %-28s %-7s %-9s %-32s %s\n", c.name.c_str(), mode,
                  std::string(PatchVerdictName(r->verdict)).c_str(), r->stopped_by.c_str(),
                  r->reason.substr(0, 90).c_str());
      EXPECT_TRUE(Observe(fx) == before) << "the live tree or its surroundings changed";
    }
  }
  // Nothing escaped and nothing was left behind.
  EXPECT_FALSE(fs::exists("/tmp/hone-stolen.h"));
  EXPECT_FALSE(fs::exists("/tmp/hone-hook-ran"));
  EXPECT_FALSE(fs::exists(fx.outside / "pwned.txt"));
  EXPECT_FALSE(fs::exists(fx.outside / "pwned.h"));
  EXPECT_EQ(Trim(Sh(fx.live, "git branch --list --format='%(refname:short)' 'hone/p/*'")), "");
  EXPECT_EQ(Sh(fx.live, "git worktree list --porcelain | grep -c '^worktree '"), "1\n");

  // And the executor still works: a good proposal after all of that is kept.
  executors.clear();
  ASSERT_OK_AND_ASSIGN(auto ex, PatchExecutor::Create(fx.Options(), *gate));
  Proposal good{.id = "good", .title = "two slots", .author = "specialist#7", .diff = testing::ParallelDiff(2)};
  ASSERT_OK_AND_ASSIGN(PatchRecord kept, ex->Run(good, Approve(*gate, good, "llama.cpp"), ExpectParallel(2)));
  EXPECT_EQ(kept.verdict, PatchVerdict::kKept) << kept.reason;
  EXPECT_EQ(WalkHash(fx.live), before.walk);
}

// Every rule id the corpus expects exists in the shipped rules.
TEST(HostileCorpusTest, ExpectedRulesExistInTheShippedRules) {
  auto rules = policy::Rules::Load((hone::testing::SourceDir() / "data/policy/rules.yaml").string());
  ASSERT_TRUE(rules) << rules.error().ToString();
  for (const Case& c : LoadCorpus()) EXPECT_NE(rules->Find(c.rule), nullptr) << c.rule;
}

}  // namespace
}  // namespace hone::patch
