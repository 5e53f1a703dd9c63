// The sweep's Pareto front and its polygon-area index.
//
// Each operating point of a sweep gives a configuration two figures: throughput per GPU
// (tok/s/GPU, higher is better) and interactivity (tok/s/user, higher is better). A
// point is on the front when no other point is at least as good on both and better on
// one. The front's area is that of the polygon bounded by the axes and the front joined
// by straight segments, with the origin as the reference point:
//   (0,0) -> (0, y1) -> p1 -> p2 -> ... -> pn -> (xn, 0) -> (0,0)
// for the front sorted by interactivity ascending (so throughput descending). The index
// of a tuned configuration is area(best) / area(stock): above 1, the best dominates
// more of the throughput-interactivity plane than the stock did.
#pragma once

#include <optional>
#include <vector>

namespace hone::report {

struct FrontPoint {
  double x = 0;  // interactivity, tok/s/user
  double y = 0;  // throughput, tok/s/GPU
};

// The non-dominated points (non-positive coordinates dropped), sorted by x ascending.
std::vector<FrontPoint> ParetoFront(std::vector<FrontPoint> points);

// The area of the polygon the front and the axes bound (see above); 0 without points.
double FrontArea(const std::vector<FrontPoint>& front);

struct AreaIndex {
  std::vector<FrontPoint> stock_front, best_front;
  double stock_area = 0, best_area = 0;
  std::optional<double> index;  // best_area / stock_area; unset when the stock's area is 0
};

AreaIndex ComputeAreaIndex(const std::vector<FrontPoint>& stock, const std::vector<FrontPoint>& best);

}  // namespace hone::report
