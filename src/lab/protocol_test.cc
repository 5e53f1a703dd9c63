// The session's protocol replayed on a surface: each verdict path, what it costs, and
// what the proposer is told.
#include "lab/protocol.h"

#include <gtest/gtest.h>

#include "lab/test_surfaces.h"

namespace hone::lab {
namespace {

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = MakeDemo();
    ASSERT_TRUE(d) << d.error().ToString();
    demo_ = std::move(*d);
  }
  search::Candidate Cand(Config delta) {
    search::Candidate c;
    c.idea = delta.ToString();
    c.delta = std::move(delta);
    return c;
  }
  Demo demo_;
};

TEST_F(ProtocolTest, PreludeMeasuresTheNoiseFloorOnTheStock) {
  search::ResponseSurface s = DemoSurface(0.0, 3.0);
  SurfaceFacts f = SurfaceFacts::Of(s);
  SurfaceSession session(s, f, demo_.catalog, {}, 1);
  session.Prelude();
  EXPECT_EQ(session.trials(), 6);                 // 3 A/A pairs
  EXPECT_DOUBLE_EQ(session.elapsed_s(), 7 * 3.0);  // and the discarded first launch
  EXPECT_DOUBLE_EQ(session.noise_floor(), 0.0);
  EXPECT_EQ(session.incumbent(), s.stock());
  EXPECT_NEAR(session.quality(), 100.0 * 0.85 / (100 * 1.3 * 1.05), 1e-9);

  // A noisy machine (20% per trial) gets up to two more A/A pairs.
  ProtocolOptions noisy;
  noisy.noise = 0.20;
  int more = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SurfaceSession n(s, f, demo_.catalog, noisy, seed);
    n.Prelude();
    EXPECT_GE(n.trials(), 6);
    EXPECT_LE(n.trials(), 10);
    more += n.trials() > 6 ? 1 : 0;
    EXPECT_GT(n.noise_floor(), 0.0);
  }
  EXPECT_GT(more, 0);
}

// --drift: the host's speed walks over the run's trial time. Without trial noise the
// stock's A/A floor is then no longer 0 and later trials sit elsewhere than the first;
// with drift 0 nothing of a run changes (the committed comparisons reproduce).
TEST_F(ProtocolTest, DriftMovesTheHostsSpeedOverTheRunsTrials) {
  search::ResponseSurface s = DemoSurface(0.0, 60.0);  // one minute a trial
  SurfaceFacts f = SurfaceFacts::Of(s);
  ProtocolOptions still;
  still.noise = 0.0;
  ProtocolOptions drifting = still;
  drifting.drift = 0.3;
  SurfaceSession a(s, f, demo_.catalog, still, 7), b(s, f, demo_.catalog, still, 7);
  a.Prelude();
  b.Prelude();
  EXPECT_DOUBLE_EQ(a.noise_floor(), 0.0);
  EXPECT_DOUBLE_EQ(a.noise_floor(), b.noise_floor());
  int moved = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SurfaceSession d(s, f, demo_.catalog, drifting, seed);
    d.Prelude();
    moved += d.noise_floor() > 0.001;
    EXPECT_LE(d.trials(), 10);
  }
  EXPECT_EQ(moved, 10);  // six one-minute trials at 30% per 10 minutes: the pairs differ
}

// The replay's screen re-checks its reference as a session's does: on a flat surface (every
// change a no-op) under drift, a drop after two in a row measures the incumbent again (a
// second trial in the step) and fewer no-ops are screened out than with the reference
// never re-checked; without drift or noise nothing is dropped and nothing re-checked.
TEST_F(ProtocolTest, ScreenDropsInARowReMeasureTheIncumbentUnderDrift) {
  search::ResponseSurface s = DemoSurface(0.0, 60.0);
  for (search::SurfacePoint& p : s.mutable_points()) p.samples = {100, 100};
  SurfaceFacts f = SurfaceFacts::Of(s);
  std::vector<Config> changes;
  for (const search::SurfacePoint& p : s.points()) {
    if (!(p.config == s.stock())) changes.push_back(p.config.DeltaFrom(s.stock()));
  }
  auto dropped = [&](int recheck, double drift, int* rechecks) {
    int n = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      ProtocolOptions o;
      o.noise = 0.0;
      o.drift = drift;
      o.accuracy = false;
      o.measurement.screen_recheck = recheck;
      SurfaceSession session(s, f, demo_.catalog, o, seed);
      session.Prelude();
      for (const Config& d : changes) {
        Step step = session.Evaluate(Cand(d));
        if (step.obs.verdict == Verdict::kScreenedOut) {
          ++n;
          if (rechecks && step.trials == 2) ++*rechecks;
        }
      }
    }
    return n;
  };
  int rechecks = 0;
  const int with = dropped(2, 0.5, &rechecks), without = dropped(0, 0.5, nullptr);
  EXPECT_GT(without, 0) << "drift makes no-ops look like losers";
  EXPECT_LT(with, without);
  EXPECT_GT(rechecks, 0) << "a drop after a re-check costs two trials";
  EXPECT_EQ(dropped(2, 0.0, nullptr), 0);
}

TEST_F(ProtocolTest, EachVerdictCostsWhatTheCoordinatorWouldSpend) {
  search::ResponseSurface s = DemoSurface(0.0, 2.0);
  // a=2 never launches.
  for (search::SurfacePoint& p : s.mutable_points()) {
    if (p.config.GetOr("a", "") == "2") {
      p.samples.clear();
      p.seconds = {0.5};
      p.failure_kind = "out_of_memory";
    }
  }
  SurfaceFacts f = SurfaceFacts::Of(s);
  SurfaceSession session(s, f, demo_.catalog, {}, 1);
  session.Prelude();
  double t0 = session.elapsed_s();

  // No gain (a=16 measures as a=4): the screen passes it, the pairs revert it.
  Step revert = session.Evaluate(Cand({{"a", "16"}}));
  EXPECT_EQ(revert.obs.verdict, Verdict::kRevert);
  EXPECT_EQ(revert.trials, 7);
  EXPECT_DOUBLE_EQ(revert.seconds, 14.0);
  EXPECT_TRUE(revert.counted);
  EXPECT_EQ(session.incumbent(), s.stock());
  EXPECT_DOUBLE_EQ(session.elapsed_s() - t0, 14.0);

  // A clear win: screen + 3 pairs, KEEP, the incumbent moves.
  Step keep = session.Evaluate(Cand({{"a", "8"}}));
  EXPECT_EQ(keep.obs.verdict, Verdict::kKeep);
  EXPECT_NEAR(keep.obs.gain, 1.0 / 0.85 - 1, 1e-9);
  EXPECT_EQ(keep.trials, 7);
  EXPECT_EQ(session.incumbent().GetOr("a", ""), "8");

  // A clear loss (-45% < -10%): the screening trial drops it.
  Step screened = session.Evaluate(Cand({{"a", "1"}}));
  EXPECT_EQ(screened.obs.verdict, Verdict::kScreenedOut);
  EXPECT_NEAR(screened.obs.gain, 0.55 - 1, 1e-9);
  EXPECT_EQ(screened.trials, 1);

  // A launch failure costs its recorded time.
  Step failed = session.Evaluate(Cand({{"a", "2"}}));
  EXPECT_EQ(failed.obs.verdict, Verdict::kLaunchFailed);
  EXPECT_EQ(failed.obs.failure_kind, "out_of_memory");
  EXPECT_EQ(failed.trials, 1);
  EXPECT_DOUBLE_EQ(failed.seconds, 0.5);

  // A point whose server stalled (recorded without a valid run): INVALID, as a session's
  // veto of an invalid run ends it, for the trial it cost.
  {
    search::ResponseSurface stalled_surface = s;
    for (search::SurfacePoint& p : stalled_surface.mutable_points()) {
      if (p.config.GetOr("a", "") == "2") p.failure_kind = "invalid: no token arrived inside the measurement window";
    }
    SurfaceFacts sf = SurfaceFacts::Of(stalled_surface);
    SurfaceSession other(stalled_surface, sf, demo_.catalog, {}, 1);
    other.Prelude();
    Step stalled = other.Evaluate(Cand({{"a", "2"}}));
    EXPECT_EQ(stalled.obs.verdict, Verdict::kInvalid);
    EXPECT_EQ(stalled.trials, 1);
    EXPECT_TRUE(stalled.counted);
    EXPECT_TRUE(stalled.obs.no_valid_run()) << stalled.obs.failure_kind;  // the search learns from it
  }
  // A point whose trial faulted twice: INVALID as well, but with no failure kind, as a
  // session's veto of a fault says nothing about the configuration.
  {
    search::ResponseSurface faulted_surface = s;
    for (search::SurfacePoint& p : faulted_surface.mutable_points()) {
      if (p.config.GetOr("a", "") == "2") p.failure_kind = "faulted: connection_reset x3";
    }
    SurfaceFacts sf = SurfaceFacts::Of(faulted_surface);
    SurfaceSession other(faulted_surface, sf, demo_.catalog, {}, 1);
    other.Prelude();
    Step faulted = other.Evaluate(Cand({{"a", "2"}}));
    EXPECT_EQ(faulted.obs.verdict, Verdict::kInvalid);
    EXPECT_EQ(faulted.obs.failure_kind, "");
    EXPECT_EQ(faulted.trials, 1);
  }

  // Off the surface: not measurable, costs nothing.
  Step invalid = session.Evaluate(Cand({{"a", "3"}}));
  EXPECT_EQ(invalid.obs.verdict, Verdict::kInvalid);
  EXPECT_FALSE(invalid.counted);
  EXPECT_EQ(invalid.trials, 0);
  EXPECT_EQ(session.incumbent().GetOr("a", ""), "8");
}

TEST_F(ProtocolTest, TheAccuracyGateIsPartOfTheSurface) {
  search::ResponseSurface s = DemoSurface(0.0, 2.0);
  for (search::SurfacePoint& p : s.mutable_points()) {
    bool z = p.config.GetOr("b", "") == "z";
    bool off = p.config.GetOr("c", "") == "off";
    // b=z changes the outputs too much; so does c=off (a knob without accuracy risk).
    p.accuracy = search::PointAccuracy{.passed = !z && !off, .token_agreement = z || off ? 0.6 : 1.0,
                                       .kld_mean = z || off ? 0.05 : 0.001, .seconds = 10};
  }
  SurfaceFacts f = SurfaceFacts::Of(s);
  EXPECT_TRUE(f.accuracy);
  SurfaceSession session(s, f, demo_.catalog, {}, 1);
  session.Prelude();
  EXPECT_DOUBLE_EQ(session.elapsed_s(), 7 * 2.0 + 10);  // the reference is captured once
  // The best that passes: a=8 b=y c=on.
  EXPECT_NEAR(session.quality(), 0.85 / 1.1, 1e-9);

  // A risky change is checked before any pair: one screening trial and the check.
  Step z = session.Evaluate(Cand({{"b", "z"}}));
  EXPECT_EQ(z.obs.verdict, Verdict::kAccuracyFailed);
  EXPECT_EQ(z.trials, 1);
  EXPECT_DOUBLE_EQ(z.seconds, 2.0 + 10);
  EXPECT_EQ(session.incumbent(), s.stock());

  // Anything else is checked after a KEEP: the pairs were run, the gate still refuses.
  Step off = session.Evaluate(Cand({{"c", "off"}}));
  EXPECT_EQ(off.obs.verdict, Verdict::kAccuracyFailed);
  EXPECT_EQ(off.trials, 7);
  EXPECT_DOUBLE_EQ(off.seconds, 7 * 2.0 + 10);
  EXPECT_EQ(session.incumbent(), s.stock());

  // A risky change that passes: checked once, then kept.
  Step y = session.Evaluate(Cand({{"b", "y"}}));
  EXPECT_EQ(y.obs.verdict, Verdict::kKeep);
  EXPECT_DOUBLE_EQ(y.seconds, 7 * 2.0 + 10);

  // Without the gate (an option), the failing point is kept.
  ProtocolOptions no_gate;
  no_gate.accuracy = false;
  SurfaceSession free(s, f, demo_.catalog, no_gate, 1);
  free.Prelude();
  EXPECT_EQ(free.Evaluate(Cand({{"b", "z"}})).obs.verdict, Verdict::kKeep);
}

TEST_F(ProtocolTest, NoiseMakesSmallGainsInconclusiveAndCostsMorePairs) {
  search::ResponseSurface s = DemoSurface(0.0, 1.0);
  SurfaceFacts f = SurfaceFacts::Of(s);
  ProtocolOptions o;
  o.noise = 0.08;
  int keeps = 0, runs = 0, max_trials = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SurfaceSession session(s, f, demo_.catalog, o, seed);
    session.Prelude();
    Step step = session.Evaluate(Cand({{"c", "off"}}));  // +5%, below the noise floor
    keeps += step.obs.verdict == Verdict::kKeep ? 1 : 0;
    runs += step.trials;
    max_trials = std::max(max_trials, step.trials);
    EXPECT_LE(step.trials, 1 + 2 * 9);
  }
  EXPECT_LE(keeps, 4);            // rarely provable
  EXPECT_EQ(max_trials, 1 + 18);  // some candidates take every look
  EXPECT_GT(runs, 40 * 7);
}

// A re-test of an INCONCLUSIVE candidate continues its comparison, as the coordinator's
// does (measurement.pool_retests): b=z is +30% at 20% trial noise, which nine pairs
// often cannot prove; judged on eighteen, the re-test proves it more often than a
// comparison of its own. The noise draws are the same with and without pooling (same
// seed, same trials until the verdicts part).
TEST_F(ProtocolTest, ARetestPoolsThePairsOfItsInconclusiveLook) {
  search::ResponseSurface s = DemoSurface(0.0, 1.0);
  SurfaceFacts f = SurfaceFacts::Of(s);
  int keeps[2] = {0, 0}, inconclusive[2] = {0, 0};
  for (int pool = 0; pool < 2; ++pool) {
    ProtocolOptions o;
    o.noise = 0.20;
    o.measurement.screen = false;
    o.measurement.pool_retests = pool == 1;
    for (uint64_t seed = 1; seed <= 100; ++seed) {
      SurfaceSession session(s, f, demo_.catalog, o, seed);
      session.Prelude();
      if (session.Evaluate(Cand({{"b", "z"}})).obs.verdict != Verdict::kInconclusive) continue;
      ++inconclusive[pool];
      Step again = session.Evaluate(Cand({{"b", "z"}}));
      EXPECT_LE(again.trials, 18);  // its own pairs only: the earlier ones are not measured again
      keeps[pool] += again.obs.verdict == Verdict::kKeep ? 1 : 0;
    }
  }
  EXPECT_EQ(inconclusive[0], inconclusive[1]);  // the first looks are the same
  EXPECT_GT(inconclusive[0], 10);
  EXPECT_GT(keeps[1], keeps[0] + inconclusive[0] / 5) << "pooled " << keeps[1] << ", alone " << keeps[0] << " of "
                                                       << inconclusive[0];
}

}  // namespace
}  // namespace hone::lab
