#include "target/catalog.h"

#include <gtest/gtest.h>

#include "sys/files.h"
#include "target/adapter.h"
#include "testing/test_util.h"

namespace hone::target {
namespace {

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-cat");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  Result<KnobCatalog> LoadText(const std::string& text) {
    std::string p = (dir_->path() / "c.yaml").string();
    EXPECT_OK(sys::WriteFileAtomic(p, text));
    return KnobCatalog::Load(p);
  }
  std::unique_ptr<sys::TempDir> dir_;
};

constexpr const char* kSmall = R"(framework: demo
versions: ">=1.0,<2"
knobs:
  - {name: threads, flag: --threads, type: int, min: 1, max: 64, category: threads, default: auto}
  - {name: fa, flag: --flash-attn, type: enum, choices: ["on", "off", "auto"], default: auto, category: attention}
  - {name: kv, flag: --kv, type: enum, choices: [f16, q8_0], default: f16, category: precision, accuracy_risk: medium,
     conflicts: ["fa=off"]}
  - {name: cb, flag: --cb, negative_flag: --no-cb, type: bool, default: "on", category: scheduling}
  - {name: omp, env: OMP_WAIT_POLICY, type: enum, choices: [active, passive], category: threads}
  - {name: spec_n, flag: --spec-n, type: int, min: 1, max: 8, default: "3", category: speculative, requires: ["fa!=off"]}
)";

TEST_F(CatalogTest, ValidatesValuesAndConflicts) {
  ASSERT_OK_AND_ASSIGN(KnobCatalog c, LoadText(kSmall));
  EXPECT_EQ(c.framework(), "demo");
  EXPECT_OK(c.Validate(Config{{"threads", "2"}, {"kv", "q8_0"}}));
  EXPECT_EQ(c.Validate(Config{{"threads", "0"}}).error().message, "knob threads=0: below the minimum 1");
  EXPECT_EQ(c.Validate(Config{{"fa", "maybe"}}).error().message, "knob fa=maybe: not one of: on, off, auto");
  EXPECT_EQ(c.Validate(Config{{"bogus", "1"}}).error().message.substr(0, 29), "unknown knob 'bogus' for demo");
  EXPECT_EQ(c.Validate(Config{{"kv", "q8_0"}, {"fa", "off"}}).error().message, "knob kv=q8_0 conflicts with fa=off");
  EXPECT_EQ(c.Validate(Config{{"spec_n", "4"}, {"fa", "off"}}).error().message, "knob spec_n=4 requires fa!=off");
  EXPECT_OK(c.Validate(Config{{"spec_n", "4"}}));  // fa defaults to auto
}

TEST_F(CatalogTest, RendersFlagsBoolsAndEnv) {
  ASSERT_OK_AND_ASSIGN(KnobCatalog c, LoadText(kSmall));
  LaunchSpec spec;
  spec.argv = {"srv"};
  ASSERT_OK(AppendKnobs(c, Config{{"cb", "off"}, {"omp", "passive"}, {"threads", "2"}}, spec));
  EXPECT_EQ(spec.argv, (std::vector<std::string>{"srv", "--no-cb", "--threads", "2"}));
  EXPECT_EQ(spec.env.at("OMP_WAIT_POLICY"), "passive");
  EXPECT_EQ(spec.ShellCommand(), "OMP_WAIT_POLICY=passive srv --no-cb --threads 2");
}

TEST_F(CatalogTest, BadCatalogsNameTheProblem) {
  auto r = LoadText("framework: x\nknobs:\n  - {name: a, type: int, category: c}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("needs a flag, an env or artifact"), std::string::npos) << r.error().message;
  r = LoadText("framework: x\nknobs:\n  - {name: a, flag: --a, type: enum, choices: [x], category: c, requires: [\"b=1\"]}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unknown knob 'b'"), std::string::npos);
  r = LoadText("framework: x\nknobs:\n  - {name: a, flag: --a, type: int, category: c, search: [\"x\"]}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not an integer"), std::string::npos);
  // auto_means: a host value or a knob, on a knob with a default.
  ASSERT_OK_AND_ASSIGN(KnobCatalog ok, LoadText("framework: x\nknobs:\n"
                                                "  - {name: t, flag: --t, type: int, category: c, default: auto, auto_means: cores}\n"
                                                "  - {name: tb, flag: --tb, type: int, category: c, default: auto, auto_means: t}\n"));
  EXPECT_EQ(ok.Find("t")->auto_means, "cores");
  EXPECT_EQ(ok.Find("tb")->auto_means, "t");
  r = LoadText("framework: x\nknobs:\n  - {name: a, flag: --a, type: int, category: c, default: auto, auto_means: sockets}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("auto_means 'sockets' is neither a host value (cores, cpus) nor a knob"),
            std::string::npos)
      << r.error().message;
  // A chain that comes back to itself never resolves: refused when the catalog loads.
  r = LoadText("framework: x\nknobs:\n"
               "  - {name: a, flag: --a, type: int, category: c, default: auto, auto_means: b}\n"
               "  - {name: b, flag: --b, type: int, category: c, default: auto, auto_means: a}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("knob a: auto_means a -> b -> a is a cycle"), std::string::npos)
      << r.error().message;
  r = LoadText("framework: x\nknobs:\n  - {name: a, flag: --a, type: int, category: c, default: auto, auto_means: a}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("auto_means a -> a is a cycle"), std::string::npos) << r.error().message;
  r = LoadText("framework: x\nknobs:\n  - {name: a, flag: --a, type: int, category: c, auto_means: cores}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("the knob needs a default"), std::string::npos) << r.error().message;
}

// Accuracy risk is compared as a level: medium and high change numerics.
TEST_F(CatalogTest, AccuracyRiskIsALevel) {
  ASSERT_OK_AND_ASSIGN(KnobCatalog c, LoadText(kSmall));
  EXPECT_EQ(c.Find("kv")->accuracy_risk, AccuracyRisk::kMedium);
  EXPECT_EQ(c.Find("threads")->accuracy_risk, AccuracyRisk::kNone);
  EXPECT_TRUE(c.ChangesNumerics(Config{{"threads", "2"}, {"kv", "q8_0"}}));
  EXPECT_FALSE(c.ChangesNumerics(Config{{"threads", "2"}, {"fa", "on"}}));
  EXPECT_FALSE(c.ChangesNumerics(Config{{"unknown", "1"}}));
  EXPECT_FALSE(ChangesNumerics(AccuracyRisk::kLow));
  EXPECT_TRUE(ChangesNumerics(AccuracyRisk::kHigh));
  auto r = LoadText("framework: x\nknobs:\n  - {name: a, flag: --a, type: int, category: c, accuracy_risk: huge}\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("must be none, low, medium or high"), std::string::npos) << r.error().message;
}

// A knob may carry its own prior spread (effect_scale) where it moves the objective
// less or more than its category: the shipped catalog gives llama.cpp's thread-wait
// knobs (poll, prio, ...) a small one and leaves the thread count to its category's.
TEST_F(CatalogTest, AnEffectScaleIsAPositiveSpreadAndOptional) {
  ASSERT_OK_AND_ASSIGN(KnobCatalog c,
                       LoadText("framework: x\nknobs:\n  - {name: a, flag: --a, type: int, category: c, "
                                "effect_scale: 0.08}\n  - {name: b, flag: --b, type: int, category: c}\n"));
  ASSERT_TRUE(c.Find("a")->effect_scale.has_value());
  EXPECT_DOUBLE_EQ(*c.Find("a")->effect_scale, 0.08);
  EXPECT_FALSE(c.Find("b")->effect_scale.has_value());
  for (const char* bad : {"0", "-0.1", "3"}) {
    auto r = LoadText(std::string("framework: x\nknobs:\n  - {name: a, flag: --a, type: int, category: c, "
                                  "effect_scale: ") + bad + "}\n");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("must be in (0, 2]"), std::string::npos) << r.error().message;
  }
  auto shipped = LoadCatalogFor((testing::SourceDir() / "catalogs").string(), "llama.cpp", "0.4.0");
  ASSERT_OK(shipped);
  ASSERT_TRUE(shipped->Find("poll")->effect_scale.has_value());
  EXPECT_LT(*shipped->Find("poll")->effect_scale, 0.25);
  EXPECT_FALSE(shipped->Find("threads")->effect_scale.has_value());
}

TEST(VersionTest, RangesAndComparison) {
  EXPECT_EQ(CompareVersions("0.10.1", "0.9"), 1);
  EXPECT_EQ(CompareVersions("1.0", "1.0.0"), 0);
  EXPECT_TRUE(VersionInRange("0.4.0", ">=0.4.0,<0.5"));
  EXPECT_FALSE(VersionInRange("0.5.1", ">=0.4.0,<0.5"));
  EXPECT_TRUE(VersionInRange("9", "*"));
}

TEST(LlamaCatalogTest, ShippedCatalogLoadsAndCoversTheMainKnobs) {
  auto c = LoadCatalogFor((testing::SourceDir() / "catalogs").string(), "llama.cpp", "0.4.0");
  ASSERT_OK(c);
  for (const char* k : {"threads", "ubatch_size", "flash_attn", "cache_type_k", "cache_type_v", "parallel",
                        "cont_batching", "weights", "repack", "cache_reuse"}) {
    EXPECT_NE(c->Find(k), nullptr) << k;
  }
  // The conflict the reference probe found: quantized V cache needs flash attention.
  EXPECT_FALSE(c->Validate(Config{{"cache_type_v", "q8_0"}, {"flash_attn", "off"}}));
  EXPECT_OK(c->Validate(Config{{"cache_type_v", "q8_0"}, {"flash_attn", "on"}}));
}

}  // namespace
}  // namespace hone::target
