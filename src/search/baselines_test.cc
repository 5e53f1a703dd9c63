// Response surfaces (files, noise, times, the accuracy gate), and the baselines the
// planner is compared with: random search, grid search and TPE, on small synthetic
// surfaces (lab/compare_test.cc runs them through the session's protocol).
#include "search/baselines.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "search/drive_for_tests.h"
#include "search/heuristics.h"
#include "search/surface.h"
#include "search/tpe.h"
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

class BaselinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-baselines");
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
  // The surface's axes as the search domain.
  static DomainOptions AxesOf(const ResponseSurface& s) {
    DomainOptions d;
    for (const SurfaceAxis& a : s.axes()) d.fixed.emplace_back(a.knob, a.values);
    return d;
  }
  // A session's context at its start: the stock is the incumbent and measured.
  static ProposalContext AtStock(const ResponseSurface& s) {
    ProposalContext ctx;
    ctx.stock = s.stock();
    ctx.best = ctx.stock;
    ctx.tried.insert(ctx.stock.Hash());
    return ctx;
  }
  std::unique_ptr<sys::TempDir> dir_;
  target::KnobCatalog catalog_;
  Heuristics heuristics_;
};

TEST_F(BaselinesTest, SurfaceRoundTripsAndMeasuresItsNoise) {
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

// `hone search record`'s order: the stock first (a recording cut short has its reference),
// every other point once in a shuffled order, the further passes, the repeat share and two
// more looks at the stock; a recording under way keeps its set of repeats whatever the
// first pass's order, and each shard takes only its own points.
TEST_F(BaselinesTest, ARecordingMeasuresTheStockFirst) {
  ResponseSurface s = Surface(0.05);  // 30 points; the stock a=4 b=x c=on
  const SurfacePoint* stock = s.Find(s.stock());
  ASSERT_NE(stock, nullptr);
  const size_t si = static_cast<size_t>(stock - s.points().data());
  ASSERT_NE(si, 0u);  // the grid's first point is not the stock: the order is the plan's doing
  for (uint64_t seed : {1u, 2u, 42u}) {
    std::vector<RecordStep> plan = RecordPlan(s, 2, 0.25, seed);
    ASSERT_EQ(plan.size(), 30u + 30u + 8u + 2u);
    EXPECT_EQ(plan[0].point, si);
    EXPECT_EQ(plan[0].wanted, 1u);
    std::vector<int> first(30, 0), second(30, 0);
    for (size_t k = 0; k < 30; ++k) first[plan[k].point] += plan[k].wanted == 1;
    for (size_t k = 30; k < 60; ++k) second[plan[k].point] += plan[k].wanted == 2;
    EXPECT_EQ(first, std::vector<int>(30, 1));  // each point exactly once in the first pass
    EXPECT_EQ(second, std::vector<int>(30, 1));
    EXPECT_EQ(plan[68].point, si);
    EXPECT_EQ(plan[69].wanted, 4u);
  }
  // A continuation replans from the same seed in a new process: the same plan.
  std::vector<RecordStep> a = RecordPlan(s, 1, 0.5, 7), b = RecordPlan(s, 1, 0.5, 7);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].point, b[k].point);
  // Shards: the stock first in its own shard, absent from the others.
  const int shards = 3;
  for (int k = 0; k < shards; ++k) {
    std::vector<RecordStep> part = RecordPlan(s, 1, 0, 42, k, shards);
    ASSERT_FALSE(part.empty());
    for (const RecordStep& st : part) EXPECT_EQ(static_cast<int>(st.point % shards), k);
    if (static_cast<int>(si % shards) == k) {
      EXPECT_EQ(part[0].point, si);
    }
  }
}

// `hone search show`: what a surface holds, read as a user reads a recording under way:
// the stock's value or that it is not measured yet, the best (so far) as its changes from
// the stock and its ratio to the stock, each value's mean and best, the noise once a
// point was measured twice; for a metric to minimize, the best is the smallest.
TEST_F(BaselinesTest, ASurfaceDescribesItselfCompleteOrUnderWay) {
  ResponseSurface s = Surface(0.05);  // stock a=4 b=x c=on: 85; best a=8 b=z c=off: 136.5
  s.info()["hardware"] = "cpu-test-8c";
  std::string d = DescribeSurface(s, 2);
  EXPECT_NE(d.find("points     30 of 30 measured, 30 repeated, 0 failed; 0 accuracy-checked, 0 fail the gate\n"),
            std::string::npos) << d;
  EXPECT_NE(d.find("objective  output_tps (maximize); recorded on cpu-test-8c\n"), std::string::npos) << d;
  EXPECT_NE(d.find("noise      7.1% relative spread of one trial (30 points measured more than once)"),
            std::string::npos) << d;
  EXPECT_NE(d.find("stock      a=4 b=x c=on: 85.0 (2 samples)\n"), std::string::npos) << d;
  EXPECT_NE(d.find("best       136.5 at a=8 b=z c=off  1.61x the stock\n"), std::string::npos) << d;
  EXPECT_NE(d.find("top 2 "), std::string::npos) << d;
  EXPECT_NE(d.find("       130.0 (2)  a=8 b=z  1.53x the stock\n"), std::string::npos) << d;
  // Only the top 2: not the third (116.0 at a=4 or a=16, b=z c=off).
  EXPECT_EQ(d.find("(2)  b=z c=off"), std::string::npos) << d;
  EXPECT_EQ(d.find("(2)  a=16 b=z c=off"), std::string::npos) << d;
  // b=z over a's five values and c's two: 100 x mean(fa) 0.79 x 1.3 x mean(fc) 1.025.
  EXPECT_NE(d.find("  z: 105.3, best 136.5 (10)"), std::string::npos) << d;

  // Under way: the stock and the best not measured yet, one sample each elsewhere.
  for (SurfacePoint& p : s.mutable_points()) p.samples.resize(1);
  s.MutableFind(s.stock())->samples.clear();
  s.MutableFind(Config{{"a", "8"}, {"b", "z"}, {"c", "off"}})->samples.clear();
  s.mutable_points()[1].failure_kind = "out_of_memory";  // a=1 b=x c=off
  s.mutable_points()[1].samples.clear();
  d = DescribeSurface(s, 1);
  EXPECT_NE(d.find("points     27 of 30 measured (2 not yet: a recording under way), 0 repeated, 1 failed"),
            std::string::npos) << d;
  EXPECT_NE(d.find("noise      unknown: no point measured twice yet\n"), std::string::npos) << d;
  EXPECT_NE(d.find("stock      a=4 b=x c=on: not measured yet\n"), std::string::npos) << d;
  EXPECT_NE(d.find("best so far 123.5 at a=8 b=z\n"), std::string::npos) << d;  // 130 x 0.95, no ratio
  EXPECT_EQ(d.find("x the stock"), std::string::npos) << d;

  // A metric to minimize: the best is the smallest (a=1 b=x c=on, 55 x 0.95).
  s.set_maximize(false);
  d = DescribeSurface(s, 0);
  EXPECT_NE(d.find("(minimize)"), std::string::npos) << d;
  ASSERT_NE(s.Best(), nullptr);
  char best[32];
  std::snprintf(best, sizeof best, "%.1f", s.Best()->mean());
  EXPECT_NE(d.find(std::string("best so far ") + best + " at a=1\n"), std::string::npos) << d;
  EXPECT_EQ(d.find("top "), std::string::npos) << d;
}

// A surface grows over sessions: more values of a knob and another knob, its recorded
// points carried onto the larger grid (at the stock's value of the added knob), nothing
// else; a grid that drops a value or an axis, or moves the stock, is another grid.
TEST_F(BaselinesTest, ASurfaceGrowsOntoALargerGridKeepingWhatItRecorded) {
  ResponseSurface old = ResponseSurface::Grid({{"a", {"4", "16"}}, {"b", {"x", "y"}}}, Config{{"a", "4"}, {"b", "x"}});
  for (size_t i = 0; i < old.points().size(); ++i) {
    SurfacePoint& p = old.mutable_points()[i];
    p.samples = {100.0 + static_cast<double>(i), 101.0 + static_cast<double>(i)};
    p.seconds = {10, 11};
    p.trial_ids = {"s000" + std::to_string(i)};
    p.accuracy = PointAccuracy{.passed = p.config.GetOr("b", "") == "x", .of = "b=" + p.config.GetOr("b", "")};
  }
  old.mutable_points()[3].samples.clear();
  old.mutable_points()[3].failure_kind = "out_of_memory";
  old.info()["trials"] = "7";
  old.info()["extended_from"] = "1 points: a{4}";
  auto grid = [] {
    return ResponseSurface::Grid({{"a", {"4", "8", "16"}}, {"b", {"x", "y"}}, {"c", {"on", "off"}}},
                                 Config{{"a", "4"}, {"b", "x"}, {"c", "on"}});
  };
  ASSERT_OK_AND_ASSIGN(ResponseSurface grown, ExtendSurface(old, grid()));
  EXPECT_EQ(grown.points().size(), 12u);
  EXPECT_EQ(grown.measured(), 3);
  EXPECT_EQ(grown.failed(), 1);
  EXPECT_EQ(grown.accuracy_checked(), 4);
  for (const SurfacePoint& p : old.points()) {
    Config at = p.config;
    at.Set("c", "on");
    const SurfacePoint* q = grown.Find(at);
    ASSERT_NE(q, nullptr) << at.ToString();
    EXPECT_EQ(q->config, at);
    EXPECT_EQ(q->samples, p.samples);
    EXPECT_EQ(q->seconds, p.seconds);
    EXPECT_EQ(q->trial_ids, p.trial_ids);
    EXPECT_EQ(q->failure_kind, p.failure_kind);
    EXPECT_EQ(q->accuracy->of, p.accuracy->of);
  }
  const SurfacePoint* fresh = grown.Find(Config{{"a", "8"}, {"b", "x"}, {"c", "on"}});
  ASSERT_NE(fresh, nullptr);
  EXPECT_TRUE(fresh->samples.empty());
  EXPECT_FALSE(fresh->accuracy.has_value());
  EXPECT_TRUE(grown.Find(Config{{"a", "4"}, {"b", "x"}, {"c", "off"}})->samples.empty());
  EXPECT_EQ(grown.info().at("trials"), "7");
  EXPECT_EQ(grown.info().at("extended_from"), "1 points: a{4}; 4 points: a{4,16} x b{x,y}");
  // Saved and loaded, it is a surface like any other.
  std::string path = (dir_->path() / "grown.json").string();
  ASSERT_OK(grown.Save(path));
  ASSERT_OK_AND_ASSIGN(ResponseSurface back, ResponseSurface::Load(path));
  EXPECT_EQ(back.points().size(), 12u);
  // Not a larger grid holding the old one.
  auto dropped_value = ExtendSurface(old, ResponseSurface::Grid({{"a", {"4", "8"}}, {"b", {"x", "y"}}},
                                                                Config{{"a", "4"}, {"b", "x"}}));
  ASSERT_FALSE(dropped_value);
  EXPECT_NE(dropped_value.error().message.find("drops a=16"), std::string::npos) << dropped_value.error().message;
  auto dropped_axis = ExtendSurface(old, ResponseSurface::Grid({{"a", {"4", "16"}}}, Config{{"a", "4"}}));
  ASSERT_FALSE(dropped_axis);
  EXPECT_NE(dropped_axis.error().message.find("drops the axis b"), std::string::npos);
  auto moved = ExtendSurface(old, ResponseSurface::Grid({{"a", {"4", "16"}}, {"b", {"x", "y"}}},
                                                        Config{{"a", "16"}, {"b", "x"}}));
  ASSERT_FALSE(moved);
  EXPECT_NE(moved.error().message.find("stock's a differs"), std::string::npos);
}

// Samples pool only with samples of the same engine, model, machine, objective and
// workload: a continuation or a merge of anything else is refused, naming what differs.
TEST_F(BaselinesTest, ARecordingPoolsOnlySamplesOfTheSameMachineAndWorkload) {
  const std::map<std::string, std::string> recorded = {
      {"framework", "llama.cpp"}, {"framework_version", "0.4.0 (commit 80fb11a)"}, {"model", "hone-tiny-s42"},
      {"hardware", "cpu-intel-xeon-2c"}, {"cpus", "2"}, {"gpus", "0"}, {"objective", "total_tps_per_gpu"},
      {"workload", "fixed c8 isl64 osl32 n16"}, {"trials", "290"}};
  std::map<std::string, std::string> now = recorded;
  now["trials"] = "12";
  now["framework_version"] = "0.4.0 (commit 253866b)";  // a local build's own commit: not compared
  EXPECT_OK(CheckSameRecording(recorded, now));
  now["hardware"] = "cpu-amd-epyc-2c";
  now["workload"] = "fixed c4 isl64 osl32 n16";
  auto refused = CheckSameRecording(recorded, now);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "recorded elsewhere (hardware: recorded cpu-intel-xeon-2c, now cpu-amd-epyc-2c; workload: recorded fixed c8 "
            "isl64 osl32 n16, now fixed c4 isl64 osl32 n16)");
  // A key the older recording lacks is not compared.
  EXPECT_OK(CheckSameRecording({{"framework", "llama.cpp"}}, now));

  ResponseSurface a = ResponseSurface::Grid({{"a", {"4", "16"}}}, Config{{"a", "4"}});
  ResponseSurface b = a;
  a.mutable_points()[0].samples = {100};
  b.mutable_points()[0].samples = {104};
  a.info() = recorded;
  b.info() = recorded;
  ASSERT_OK_AND_ASSIGN(ResponseSurface merged, MergeSurfaces({a, b}));
  EXPECT_EQ(merged.points()[0].samples, (std::vector<double>{100, 104}));
  b.info()["model"] = "hone-deep-gqa-s42";
  auto mixed = MergeSurfaces({a, b});
  ASSERT_FALSE(mixed);
  EXPECT_EQ(mixed.error().message,
            "part 2 was recorded elsewhere (model: recorded hone-tiny-s42, now hone-deep-gqa-s42)");
}

TEST_F(BaselinesTest, RandomSearchNeverRepeatsAndGridCoversItsCoarseAxes) {
  DomainOptions d;
  d.fixed = {{"a", {"1", "2", "4", "8", "16"}}, {"b", {"x", "y", "z"}}, {"c", {"on", "off"}}};
  ProposalContext ctx;
  ctx.stock = Config{{"a", "4"}, {"b", "x"}, {"c", "on"}};
  ctx.best = ctx.stock;
  ctx.tried.insert(ctx.stock.Hash());
  RandomProposer random(catalog_, d, 7);
  std::set<std::string> seen;
  Drive(random, ctx, 40, [&](const Candidate&, const Config& full) {
    EXPECT_TRUE(seen.insert(full.ToString()).second) << full.ToString();
    return Outcome{Verdict::kRevert, -0.1};
  });
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

TEST_F(BaselinesTest, SurfaceKeepsTrialTimesAndTheAccuracyGate) {
  ResponseSurface s = Surface(0.05);
  // Without recorded times a trial counts 1 (trial units), or the recording's average.
  EXPECT_FALSE(s.timed());
  EXPECT_DOUBLE_EQ(s.TrialSeconds(s.points()[0]), 1.0);
  s.info()["seconds"] = "300";
  s.info()["trials"] = "100";
  EXPECT_DOUBLE_EQ(s.TrialSeconds(s.points()[0]), 3.0);
  // Recorded times: the point's own mean, else the surface's.
  s.mutable_points()[0].seconds = {4, 6};
  s.mutable_points()[1].seconds = {8};
  EXPECT_TRUE(s.timed());
  EXPECT_DOUBLE_EQ(s.TrialSeconds(s.points()[0]), 5.0);
  EXPECT_DOUBLE_EQ(s.TrialSeconds(s.points()[2]), 6.0);
  EXPECT_DOUBLE_EQ(s.AccuracySeconds(s.points()[2]), 30.0);  // 5 trials' worth when never recorded
  // The best point fails the accuracy gate: the best is the best that passes.
  SurfacePoint* top = s.MutableFind(Config{{"a", "8"}, {"b", "z"}, {"c", "off"}});
  ASSERT_NE(top, nullptr);
  top->accuracy = PointAccuracy{.passed = false, .token_agreement = 0.5, .kld_mean = 0.2, .seconds = 12,
                                .detail = "agreement 0.50 < 0.90", .of = "a=4 b=z c=off"};
  EXPECT_EQ(s.Best()->config.ToString(), "a=8 b=z c=on");
  EXPECT_EQ(s.accuracy_checked(), 1);
  EXPECT_EQ(s.accuracy_failed(), 1);
  EXPECT_DOUBLE_EQ(s.AccuracySeconds(s.points()[2]), 12.0);
  std::string path = (dir_->path() / "t.json").string();
  ASSERT_OK(s.Save(path));
  ASSERT_OK_AND_ASSIGN(ResponseSurface t, ResponseSurface::Load(path));
  const SurfacePoint* back = t.Find(top->config);
  ASSERT_NE(back, nullptr);
  ASSERT_TRUE(back->accuracy.has_value());
  EXPECT_FALSE(back->accuracy->passed);
  EXPECT_DOUBLE_EQ(*back->accuracy->kld_mean, 0.2);
  EXPECT_FALSE(back->accuracy->same_top.has_value());
  EXPECT_EQ(back->accuracy->of, "a=4 b=z c=off");
  EXPECT_EQ(t.points()[0].seconds, (std::vector<double>{4, 6}));
  EXPECT_EQ(t.Best()->config.ToString(), "a=8 b=z c=on");
}

TEST_F(BaselinesTest, HeuristicsNameTheSurfacesTheyWereTunedOn) {
  ASSERT_OK_AND_ASSIGN(Heuristics h, Heuristics::Parse("tuned_on: [surface-a, surface-b]\n", "h.yaml"));
  EXPECT_TRUE(h.TunedOn("surface-a"));
  EXPECT_FALSE(h.TunedOn("surface-c"));
  EXPECT_FALSE(heuristics_.TunedOn("surface-a"));
}

// TPE: a whole configuration per proposal, never one measured before; after its random
// start-up it draws from the good observations' density.
TEST_F(BaselinesTest, TpeLearnsWhereTheGoodConfigurationsAre) {
  ResponseSurface s = Surface(0.0);
  const DomainOptions d = AxesOf(s);
  const ProposalContext ctx0 = AtStock(s);
  const double stock = s.Find(ctx0.stock)->mean();
  // Over seeds: how often the proposals after the start-up pick b=z (+30%), against
  // the third a uniform draw gives.
  int z_model = 0, z_random = 0, model = 0, random = 0;
  std::string saved, describe;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    TpeProposer tpe(catalog_, d, seed, TpeOptions{.startup = 6});
    ProposalContext ctx = ctx0;
    std::set<std::string> seen;
    int i = 0;
    Drive(tpe, ctx, 14, [&](const Candidate&, const Config& full) -> std::optional<Outcome> {
      EXPECT_TRUE(seen.insert(full.ToString()).second) << full.ToString();
      const SurfacePoint* p = s.Find(full);
      EXPECT_NE(p, nullptr);
      if (!p) return std::nullopt;
      bool z = full.GetOr("b", "") == "z";
      (i < 6 ? z_random : z_model) += z ? 1 : 0;
      (i < 6 ? random : model) += 1;
      ++i;
      // Every observation relative to the stock (nothing kept): gain = level.
      return Outcome{Verdict::kRevert, p->mean() / stock - 1};
    });
    ASSERT_EQ(i, 14);
    if (seed == 1) {
      saved = tpe.Save();
      describe = tpe.Describe();
    }
  }
  EXPECT_GT(z_model * 1.0 / model, 0.5) << z_model << " of " << model << " (random start-up: " << z_random << " of "
                                         << random << ")";
  EXPECT_NE(describe.find("8 from the model after 6 random"), std::string::npos) << describe;
  EXPECT_EQ(TpeProposer(catalog_, d, 1).GoodCount(1), 1);
  EXPECT_EQ(TpeProposer(catalog_, d, 1).GoodCount(30), 3);
  EXPECT_EQ(TpeProposer(catalog_, d, 1).GoodCount(1000), 25);
  // The state round-trips: a restored TPE never proposes what was proposed before.
  TpeProposer restored(catalog_, d, 1, TpeOptions{.startup = 6});
  ASSERT_OK(restored.Load(saved));
  EXPECT_EQ(restored.Save(), saved);
  ProposalContext ctx = ctx0;
  auto later = Drive(restored, ctx, 16, [&](const Candidate&, const Config& full) {
    EXPECT_EQ(saved.find("\"" + full.ToString() + "\""), std::string::npos) << full.ToString();
    return Outcome{Verdict::kScreenedOut, -0.2};
  });
  EXPECT_EQ(later.size(), 15u);  // all 29 other points proposed, then nothing
  EXPECT_FALSE(restored.Load("{not json"));
}

// The planner explores with a TPE that has seen what the planner measured: recorded
// configurations count as observations (the start-up is over sooner) and are never
// proposed again; TPE's own candidates are left to Observe.
TEST_F(BaselinesTest, TpeLearnsFromConfigurationsAnotherProposerMeasured) {
  ResponseSurface s = Surface(0.0);
  const DomainOptions d = AxesOf(s);
  ProposalContext ctx = AtStock(s);
  const double stock = s.Find(ctx.stock)->mean();
  TpeProposer tpe(catalog_, d, 3, TpeOptions{.startup = 3});
  int recorded = 0;
  ASSERT_OK(tpe.Prepare(ctx));
  for (const SurfacePoint& p : s.points()) {
    if (p.config == ctx.stock || recorded == 3) continue;
    Candidate c{.idea = "a=" + p.config.GetOr("a", ""), .delta = p.config};
    tpe.Record(p.config, {c, p.config, Verdict::kRevert, p.mean() / stock - 1, ""});
    ctx.tried.insert(p.config.Hash());
    ++recorded;
  }
  EXPECT_NE(tpe.Describe().find("3 measured"), std::string::npos) << tpe.Describe();
  auto c = tpe.Next(ctx);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->title.find("start-up"), std::string::npos) << c->title;  // the model, at once
  // Its own candidate is Observe's: Record leaves it alone.
  Config full = ctx.best.Merged(c->delta);
  tpe.Record(full, {*c, full, Verdict::kRevert, 0.0, ""});
  EXPECT_NE(tpe.Describe().find("3 measured"), std::string::npos) << tpe.Describe();
  tpe.Observe({*c, full, Verdict::kRevert, 0.0, ""});
  EXPECT_NE(tpe.Describe().find("4 measured"), std::string::npos) << tpe.Describe();
  // A value outside the options is no point.
  Config odd = ctx.stock;
  odd.Set("a", "nowhere");
  tpe.Record(odd, {{.idea = "a=nowhere"}, odd, Verdict::kRevert, 0.0, ""});
  EXPECT_NE(tpe.Describe().find("4 measured"), std::string::npos) << tpe.Describe();
}

TEST_F(BaselinesTest, TpeScoresFailuresBelowEverythingMeasured) {
  ResponseSurface s = Surface(0.0);
  // Every b=z configuration fails to launch; the rest measure as the surface says.
  TpeProposer tpe(catalog_, AxesOf(s), 5, TpeOptions{.startup = 8});
  ProposalContext ctx = AtStock(s);
  int z_late = 0, i = 0;
  auto proposed = Drive(tpe, ctx, 24, [&](const Candidate&, const Config& full) {
    bool z = full.GetOr("b", "") == "z";
    if (i++ >= 14 && z) ++z_late;
    if (z) return Outcome{Verdict::kLaunchFailed, 0, "crashed"};
    return Outcome{Verdict::kRevert, s.Find(full)->mean() / s.Find(ctx.stock)->mean() - 1};
  });
  ASSERT_EQ(proposed.size(), 24u);
  EXPECT_LE(z_late, 3);
}

// A configuration whose own run served nothing valid (a stalled server: INVALID with
// the no-valid-run kind) is a failure to TPE like a launch failure; an INVALID that
// says nothing about the candidate (the incumbent's trial failed) is no evidence.
TEST_F(BaselinesTest, TpeLearnsFromAConfigurationThatStalledTheServer) {
  ResponseSurface s = Surface(0.0);
  auto run = [&](const std::string& failure_kind, int* z_late) {
    TpeProposer tpe(catalog_, AxesOf(s), 5, TpeOptions{.startup = 8});
    ProposalContext ctx = AtStock(s);
    *z_late = 0;
    int i = 0;
    Drive(tpe, ctx, 16, [&](const Candidate&, const Config& full) {
      bool z = full.GetOr("b", "") == "z";
      if (i++ >= 8 && z) ++*z_late;  // after the 8 random start-up draws
      if (z) return Outcome{Verdict::kInvalid, 0, failure_kind};
      return Outcome{Verdict::kRevert, s.Find(full)->mean() / s.Find(ctx.stock)->mean() - 1};
    });
    return tpe.Describe();
  };
  int stalled_late = 0, other_late = 0;
  const std::string stalled = run("invalid: no token arrived inside the measurement window", &stalled_late);
  const std::string other = run("", &other_late);
  EXPECT_LE(stalled_late, 1) << stalled;
  EXPECT_GT(other_late, stalled_late) << other;
  // Every stalled configuration is a measured (failed) point; the other INVALIDs are none.
  EXPECT_NE(stalled.find("16 measured"), std::string::npos) << stalled;
  EXPECT_EQ(other.find("16 measured"), std::string::npos) << other;
}

}  // namespace
}  // namespace hone::search
