// Small synthetic response surfaces and a demo catalog for the lab's tests: fast,
// deterministic, no timing (the noise is a number on the surface).
#pragma once

#include <cmath>
#include <memory>
#include <string>

#include "search/domain.h"
#include "search/heuristics.h"
#include "search/surface.h"
#include "sys/files.h"
#include "target/catalog.h"
#include "testing/test_util.h"

namespace hone::lab {

// a: threads-like (numeric), b: weight precision (medium accuracy risk), c: attention.
inline constexpr const char* kDemoCatalog = R"(framework: demo
versions: "*"
knobs:
  - {name: a, flag: --a, type: int, min: 1, max: 64, default: "4", category: threads}
  - {name: b, flag: --b, type: enum, choices: [x, y, z], default: x, category: precision, accuracy_risk: medium}
  - {name: c, flag: --c, type: enum, choices: ["on", "off"], default: "on", category: attention}
)";

inline constexpr const char* kDemoHeuristics =
    "categories: {threads: {scale: 0.25}, precision: {scale: 0.3}, attention: {scale: 0.1}}\n";

struct Demo {
  std::unique_ptr<sys::TempDir> dir;
  target::KnobCatalog catalog;
  search::Heuristics heuristics;
};

inline Result<Demo> MakeDemo() {
  Demo d;
  HONE_ASSIGN_OR_RETURN(d.dir, sys::TempDir::Create("hone-lab"));
  std::string p = (d.dir->path() / "c.yaml").string();
  HONE_TRY(sys::WriteFileAtomic(p, kDemoCatalog));
  HONE_ASSIGN_OR_RETURN(d.catalog, target::KnobCatalog::Load(p));
  HONE_ASSIGN_OR_RETURN(d.heuristics, search::Heuristics::Parse(kDemoHeuristics, "h.yaml"));
  return d;
}

// objective = 100 x f(a) x f(b) x f(c): the best is a=8 b=z c=off (+30% for z, +5% for
// off, a peak at 8); stock a=4 b=x c=on. Two samples per point, `spread` apart, so
// the pooled relative noise is spread x sqrt(2); every trial takes `trial_s` seconds.
inline search::ResponseSurface DemoSurface(double spread, double trial_s = 2.0) {
  search::ResponseSurface s = search::ResponseSurface::Grid(
      {{"a", {"1", "2", "4", "8", "16"}}, {"b", {"x", "y", "z"}}, {"c", {"on", "off"}}},
      Config{{"a", "4"}, {"b", "x"}, {"c", "on"}});
  for (search::SurfacePoint& p : s.mutable_points()) {
    double a = *search::NumericValue(p.config.GetOr("a", "4"));
    double fa = 1.0 - 0.15 * std::abs(std::log2(a / 8));
    std::string b = p.config.GetOr("b", "x");
    double fb = b == "z" ? 1.3 : b == "y" ? 1.1 : 1.0;
    double fc = p.config.GetOr("c", "on") == "off" ? 1.05 : 1.0;
    double v = 100 * fa * fb * fc;
    p.samples = {v * (1 - spread), v * (1 + spread)};
    p.seconds = {trial_s, trial_s};
  }
  s.info()["objective"] = "output_tps";
  s.info()["cpus"] = "8";
  return s;
}

}  // namespace hone::lab
