// Test support: drives a proposer the way the session's coordinator does, against a
// world the test writes (what each proposal measures), so that tests of the planner and
// the baselines share one loop instead of spelling it out each time.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "search/proposer.h"

namespace hone::search {

// What a test's world says of one proposal: the verdict the coordinator would report.
struct Outcome {
  Verdict verdict;
  double gain = 0;
  std::string failure;
  bool last = false;  // judged, then the drive stops
};
// nullopt: stop before judging the proposal (it stays out for measurement).
using World = std::function<std::optional<Outcome>(const Candidate& c, const Config& full)>;

// Drives `p` for at most `steps` proposals: proposes, merges the delta into the
// incumbent, marks the configuration tried, asks `world` for the verdict, moves the
// incumbent on a KEEP and reports the outcome. Stops early when the proposer has nothing
// left or the world says so. Returns the proposals, in order.
inline std::vector<Candidate> Drive(Proposer& p, ProposalContext& ctx, int steps, const World& world) {
  std::vector<Candidate> proposed;
  for (int i = 0; i < steps; ++i) {
    auto c = p.Next(ctx);
    if (!c) break;
    Config full = ctx.best.Merged(c->delta);
    ctx.tried.insert(full.Hash());
    proposed.push_back(*c);
    std::optional<Outcome> o = world(*c, full);
    if (!o) break;
    if (o->verdict == Verdict::kKeep) ctx.best = full;
    p.Observe({*c, full, o->verdict, o->gain, o->failure});
    if (o->last) break;
  }
  return proposed;
}

// A world where every proposal gets the same verdict.
inline World Always(Verdict verdict, double gain, const std::string& failure = "") {
  return [=](const Candidate&, const Config&) { return Outcome{verdict, gain, failure}; };
}

}  // namespace hone::search
