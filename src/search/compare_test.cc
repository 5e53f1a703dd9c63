// The comparison harness on small synthetic surfaces, and random and grid search.
#include "search/compare.h"

#include <gtest/gtest.h>

#include "search/baselines.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::search {
namespace {

constexpr const char* kCatalog = R"(framework: demo
versions: "*"
knobs:
  - {name: a, flag: --a, type: int, min: 1, max: 64, default: "4", category: threads}
  - {name: b, flag: --b, type: enum, choices: [x, y, z], default: x, category: precision}
  - {name: c, flag: --c, type: enum, choices: ["on", "off"], default: "on", category: attention}
)";

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-compare");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    std::string p = (dir_->path() / "c.yaml").string();
    ASSERT_OK(sys::WriteFileAtomic(p, kCatalog));
    ASSERT_OK_AND_ASSIGN(catalog_, target::KnobCatalog::Load(p));
    ASSERT_OK_AND_ASSIGN(heuristics_, Heuristics::Parse("categories: {threads: {scale: 0.25}, precision: {scale: 0.3}, "
                                                        "attention: {scale: 0.1}}\n",
                                                        "h.yaml"));
  }
  // objective = product of per-knob factors, so the best is a=8 b=z c=off.
  ResponseSurface Surface(double noise_spread) {
    ResponseSurface s = ResponseSurface::Grid(
        {{"a", {"1", "2", "4", "8", "16"}}, {"b", {"x", "y", "z"}}, {"c", {"on", "off"}}},
        Config{{"a", "4"}, {"b", "x"}, {"c", "on"}});
    for (SurfacePoint& p : s.mutable_points()) {
      double a = *NumericValue(p.config.GetOr("a", "4"));
      double fa = 1.0 - 0.15 * std::abs(std::log2(a / 8));
      double fb = p.config.GetOr("b", "x") == "z" ? 1.3 : p.config.GetOr("b", "x") == "y" ? 1.1 : 1.0;
      double fc = p.config.GetOr("c", "on") == "off" ? 1.05 : 1.0;
      double v = 100 * fa * fb * fc;
      p.samples = {v * (1 - noise_spread), v * (1 + noise_spread)};
    }
    s.info()["objective"] = "output_tps";
    s.info()["cpus"] = "8";
    return s;
  }
  std::unique_ptr<sys::TempDir> dir_;
  target::KnobCatalog catalog_;
  Heuristics heuristics_;
};

TEST_F(CompareTest, SurfaceRoundTripsAndMeasuresItsNoise) {
  ResponseSurface s = Surface(0.05);
  s.mutable_points()[3].samples.clear();
  s.mutable_points()[3].failure_kind = "out_of_memory";
  std::string path = (dir_->path() / "s.json").string();
  ASSERT_OK(s.Save(path));
  ASSERT_OK_AND_ASSIGN(ResponseSurface t, ResponseSurface::Load(path));
  EXPECT_EQ(t.points().size(), 30u);
  EXPECT_EQ(t.failed(), 1);
  EXPECT_EQ(t.repeated(), 29);
  EXPECT_NEAR(t.RelativeNoise(), 0.05 * std::sqrt(2.0), 1e-9);  // two samples: n-1 = 1
  ASSERT_NE(t.Best(), nullptr);
  EXPECT_EQ(t.Best()->config.ToString(), "a=8 b=z c=off");
  EXPECT_DOUBLE_EQ(t.Quality(*t.BestMean()), 1.0);
  EXPECT_EQ(t.info().at("objective"), "output_tps");
  // Broken files name the problem.
  EXPECT_FALSE(ResponseSurface::Parse("{}", "x.json"));
  auto r = ResponseSurface::Parse(R"({"schema": "hone.surface/1", "axes": [{"knob": "a", "values": ["1"]}],
                                      "stock": {"a": "2"}, "points": [{"config": {"a": "1"}, "samples": [1]}]})",
                                  "x.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("stock configuration is not a grid point"), std::string::npos);
}

TEST_F(CompareTest, PlannerBeatsRandomOnASeparableSurface) {
  ResponseSurface s = Surface(0.02);
  CompareOptions o;
  o.seeds = 30;
  o.budget = 10;
  ASSERT_OK_AND_ASSIGN(CompareReport r, Compare(s, catalog_, heuristics_, o));
  EXPECT_EQ(r.points, 30);
  EXPECT_EQ(r.horizon, 29);
  ASSERT_EQ(r.strategies.size(), 4u);
  EXPECT_EQ(r.strategies[0].name, "planner");
  EXPECT_EQ(r.strategies[0].trials_to_reach.size(), 30u);
  // A separable surface with small noise: coordinate moves find the best fast.
  EXPECT_LT(r.strategies[0].MedianTrials(), r.strategies[1].MedianTrials());
  EXPECT_GT(r.ratio_random, 1.0);
  EXPECT_GE(r.strategies[0].MedianFinal(), 0.95);
  EXPECT_FALSE(r.example.empty());
  EXPECT_NE(r.example_tree.find("idea tree"), std::string::npos);
  std::string text = FormatCompare(s, r, "s.json");
  EXPECT_NE(text.find("ratio random/planner"), std::string::npos);
  EXPECT_NE(text.find("planner >= grid in"), std::string::npos);
  // Deterministic for a seed.
  ASSERT_OK_AND_ASSIGN(CompareReport again, Compare(s, catalog_, heuristics_, o));
  EXPECT_EQ(again.strategies[1].trials_to_reach, r.strategies[1].trials_to_reach);
  EXPECT_EQ(FormatCompare(s, again, "s.json"), text);
}

TEST_F(CompareTest, AxesMustBeCatalogKnobs) {
  ResponseSurface s = ResponseSurface::Grid({{"nope", {"1", "2"}}}, Config{{"nope", "1"}});
  s.mutable_points()[0].samples = {1};
  s.mutable_points()[1].samples = {2};
  auto r = Compare(s, catalog_, heuristics_, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not in the demo catalog"), std::string::npos) << r.error().message;
}

TEST_F(CompareTest, RandomSearchNeverRepeatsAndGridCoversItsCoarseAxes) {
  DomainOptions d;
  d.fixed = {{"a", {"1", "2", "4", "8", "16"}}, {"b", {"x", "y", "z"}}, {"c", {"on", "off"}}};
  ProposalContext ctx;
  ctx.stock = Config{{"a", "4"}, {"b", "x"}, {"c", "on"}};
  ctx.best = ctx.stock;
  ctx.tried.insert(ctx.stock.Hash());
  RandomProposer random(catalog_, d, 7);
  std::set<std::string> seen;
  for (int i = 0; i < 40; ++i) {
    auto c = random.Next(ctx);
    if (!c) break;
    Config full = ctx.best.Merged(c->delta);
    EXPECT_TRUE(seen.insert(full.ToString()).second) << full.ToString();
    ctx.tried.insert(full.Hash());
    random.Observe({*c, full, Verdict::kRevert, -0.1, ""});
  }
  EXPECT_EQ(seen.size(), 29u);  // every other point, then nothing
  auto axes = GridProposer::CoarseAxes({{"1", "2", "4", "8", "16"}, {"x", "y", "z"}, {"on", "off"}}, {"4", "x", "on"}, 12);
  ASSERT_EQ(axes.size(), 3u);
  EXPECT_LE(axes[0].size() * axes[1].size() * axes[2].size(), 12u);
  EXPECT_EQ(axes[0].front(), "1");  // ends included
  EXPECT_EQ(axes[0].back(), "16");
  EXPECT_EQ(GridProposer::CoarseAxes({{"1", "2", "4"}}, {"2"}, 1)[0], std::vector<std::string>{"2"});  // the stock value
  EXPECT_EQ(GridProposer::CoarseAxes({{"1", "2", "4"}}, {"2"}, 0)[0].size(), 3u);                      // full grid
  ProposalContext g = ctx;
  g.tried = {g.stock.Hash()};
  GridProposer grid(catalog_, d, 12, 3);
  int n = 0;
  while (auto c = grid.Next(g)) {
    Config full = g.best.Merged(c->delta);
    g.tried.insert(full.Hash());
    ++n;
  }
  EXPECT_GE(n, 8);
  EXPECT_LE(n, 12);
  EXPECT_NE(grid.Describe().find("grid search over a{"), std::string::npos) << grid.Describe();
}

}  // namespace
}  // namespace hone::search
