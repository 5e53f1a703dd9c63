#include "policy/rules.h"

#include "core/strings.h"
#include "testing/test_util.h"

namespace hone::policy {
namespace {

// The smallest complete rule set; tests append to it.
std::string Base(const std::string& extra = "") {
  std::string invariants;
  for (const char* id : {"role.unknown", "action.malformed", "gate.token_invalid", "patch.unknown_target",
                         "patch.not_a_diff", "patch.absolute_path", "patch.path_escape", "patch.git_dir",
                         "patch.symlink_escape", "patch.does_not_apply", "patch.undeclared_change", "build.failed"}) {
    invariants += "  - {id: " + std::string(id) + ", type: invariant, hint: h}\n";
  }
  return "version: 1\nroles: [coordinator, critic]\nrules:\n"
         "  - {id: r.roles, type: role_actions, hint: h, roles: {coordinator: [merge_patch], critic: "
         "[sign_off_patch]}}\n"
         "  - {id: r.state, type: state_default, hint: h}\n"
         "  - {id: r.signoff, type: critic_signoff, hint: h, actions: [merge_patch], verdicts: [approve]}\n"
         "  - {id: r.size, type: patch_size, hint: h, max_bytes: 100, max_files: 2, max_changed_lines: 10}\n"
         "  - {id: r.bin, type: patch_binary, hint: h, allow: false}\n"
         "  - {id: r.mode, type: patch_mode, hint: h, allow: false}\n"
         "  - {id: r.timeout, type: build_timeout, hint: h, seconds: 60}\n" +
         invariants + extra;
}

TEST(RulesTest, ShippedRulesLoad) {
  ASSERT_OK_AND_ASSIGN(Rules r, Rules::Load((testing::SourceDir() / "data/policy/rules.yaml").string()));
  EXPECT_TRUE(r.HasRole("critic"));
  EXPECT_TRUE(r.role_allow.at("critic").contains(ActionKind::kSignOffPatch));
  EXPECT_FALSE(r.role_allow.at("specialist").contains(ActionKind::kMergePatch));
  EXPECT_TRUE(r.signoff.actions.contains(ActionKind::kMergePatch));
  ASSERT_NE(r.FilesFor("llama.cpp"), nullptr);
  EXPECT_EQ(r.CheckPatchFile("llama.cpp", "tools/server/server.cpp"), std::nullopt);
  auto cm = r.CheckPatchFile("llama.cpp", "tools/server/CMakeLists.txt");
  ASSERT_TRUE(cm);
  EXPECT_EQ(cm->rule_id, "patch.allowed_files.llama_cpp");
  EXPECT_THAT(cm->message, ::testing::HasSubstr("denied pattern"));
  auto outside = r.CheckPatchFile("llama.cpp", "convert_hf_to_gguf.py");
  ASSERT_TRUE(outside);
  EXPECT_THAT(outside->message, ::testing::HasSubstr("outside the files"));
  EXPECT_EQ(r.CheckPatchFile("vllm", "x.py")->rule_id, kRuleUnknownTarget);
  // Every rule id is unique and every hint is one line.
  std::set<std::string> ids;
  for (const RuleInfo& info : r.all) {
    EXPECT_TRUE(ids.insert(info.id).second) << info.id;
    EXPECT_FALSE(info.hint.empty()) << info.id;
  }
}

TEST(RulesTest, MinimalSetParses) {
  ASSERT_OK_AND_ASSIGN(Rules r, Rules::Parse(Base(), "rules.yaml"));
  EXPECT_EQ(r.patch_size.max_files, 2);
  EXPECT_EQ(r.build_timeout.seconds, 60);
  EXPECT_EQ(r.Invariant("patch.git_dir").id, "patch.git_dir");
}

TEST(RulesTest, UnknownRoleNamesTheLine) {
  auto r =
      Rules::Parse(Base("  - {id: x, type: state_writers, hint: h, fields: [a], roles: [wizard]}\n"), "rules.yaml");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("rules.yaml:"));
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("unknown role 'wizard'"));
}

TEST(RulesTest, UnknownActionAndTypeAreErrors) {
  auto a = Rules::Parse(Base("  - {id: x, type: max_gpus, hint: h, actions: [fly], max: 1}\n"), "rules.yaml");
  ASSERT_FALSE(a);
  EXPECT_THAT(a.error().message, ::testing::HasSubstr("unknown action 'fly'"));
  auto t = Rules::Parse(Base("  - {id: x, type: vibes, hint: h}\n"), "rules.yaml");
  ASSERT_FALSE(t);
  EXPECT_THAT(t.error().message, ::testing::HasSubstr("unknown rule type 'vibes'"));
}

TEST(RulesTest, DuplicateIdsAndSingletonsAreErrors) {
  auto d = Rules::Parse(Base("  - {id: r.size, type: no_self_review, hint: h}\n"), "rules.yaml");
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, ::testing::HasSubstr("duplicate rule id 'r.size'"));
  auto s = Rules::Parse(Base("  - {id: r.bin2, type: patch_binary, hint: h, allow: true}\n"), "rules.yaml");
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, ::testing::HasSubstr("only one rule of type 'patch_binary'"));
}

TEST(RulesTest, SignoffCannotBeRemovedFromMerges) {
  std::string text = ReplaceAll(Base(), "actions: [merge_patch], verdicts", "actions: [apply_patch], verdicts");
  auto r = Rules::Parse(text, "rules.yaml");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("must include merge_patch"));
}

TEST(RulesTest, MissingInvariantIsAnError) {
  std::string text = Base();
  size_t at = text.find("  - {id: patch.git_dir");
  text.erase(at, text.find('\n', at) - at + 1);
  auto r = Rules::Parse(text, "rules.yaml");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("patch.git_dir"));
}

TEST(RulesTest, UnknownKeyInARuleIsAnError) {
  auto r = Rules::Parse(Base("  - {id: x, type: no_self_review, hint: h, strict: true}\n"), "rules.yaml");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("unknown field"));
}

}  // namespace
}  // namespace hone::policy
