// The llama.cpp knob catalog against the provisioned llama-server: every flag is one
// the binary lists in --help, the binary's argument parser accepts every value the
// search may try (`llama-server FLAG VALUE --version`: the parser handles arguments in
// order and --version exits 0 after them, without loading a model), and every
// environment variable is one the binary or its OpenMP runtime reads.
#include <gtest/gtest.h>

#include "core/strings.h"
#include "sys/files.h"
#include "sys/process.h"
#include "target/catalog.h"
#include "target/catalog_check.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone::search {
namespace {

class LlamaCatalogHelpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HONE_REQUIRE_LLAMA();
    server_ = testing::Llama()->server;
    auto c = target::LoadCatalogFor((testing::SourceDir() / "catalogs").string(), "llama.cpp",
                                    target::NumericVersion(testing::Llama()->version));
    ASSERT_OK(c);
    catalog_ = std::move(*c);
  }
  sys::CommandOutput Run(std::vector<std::string> args) {
    args.insert(args.begin(), server_);
    auto out = sys::RunCommand({.argv = args}, std::chrono::milliseconds(30000));
    EXPECT_OK(out);
    return out ? *out : sys::CommandOutput{};
  }
  std::string server_;
  target::KnobCatalog catalog_;
};

TEST_F(LlamaCatalogHelpTest, EveryFlagValueAndVariableIsTheBinarys) {
  ASSERT_OK_AND_ASSIGN(target::CatalogCheck check, target::CheckCatalog(catalog_, server_));
  EXPECT_GT(check.help_options, 200);
  EXPECT_GT(check.flags_checked, 60);
  EXPECT_GT(check.values_checked, 150);
  EXPECT_GE(check.env_checked, 5);
  for (const std::string& p : check.problems) ADD_FAILURE() << p;
  // The check has teeth: a bad value and an unknown flag are refused.
  EXPECT_FALSE(Run({"--cache-type-k", "q9_9", "--version"}).status.success());
  EXPECT_FALSE(Run({"--no-such-flag", "--version"}).status.success());
}

TEST_F(LlamaCatalogHelpTest, ACatalogWithAWrongFlagOrValueFails) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-catalog"));
  std::string path = (dir->path() / "bad.yaml").string();
  ASSERT_OK(sys::WriteFileAtomic(path, R"(framework: llama.cpp
versions: "*"
knobs:
  - {name: threads, flag: --threads, type: int, min: 1, max: 64, default: "2", category: threads}
  - {name: bogus, flag: --no-such-flag, type: int, min: 1, max: 4, default: "1", category: threads}
  - {name: kv, flag: --cache-type-k, type: enum, choices: [f16, q9_9], default: f16, category: precision}
  - {name: env, env: HONE_NOT_READ_ANYWHERE, type: enum, choices: ["1"], default: "", category: threads}
)"));
  ASSERT_OK_AND_ASSIGN(target::KnobCatalog bad, target::KnobCatalog::Load(path));
  ASSERT_OK_AND_ASSIGN(target::CatalogCheck check, target::CheckCatalog(bad, server_));
  EXPECT_FALSE(check.ok());
  std::string all = Join(check.problems, "\n");
  EXPECT_NE(all.find("--no-such-flag (knob bogus) is not in --help"), std::string::npos) << all;
  EXPECT_NE(all.find("--cache-type-k q9_9 (knob kv) is refused"), std::string::npos) << all;
  EXPECT_NE(all.find("HONE_NOT_READ_ANYWHERE"), std::string::npos) << all;
  EXPECT_EQ(all.find("--threads"), std::string::npos) << all;
}

}  // namespace
}  // namespace hone::search
