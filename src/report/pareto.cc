#include "report/pareto.h"

#include <algorithm>
#include <cmath>

namespace hone::report {

std::vector<FrontPoint> ParetoFront(std::vector<FrontPoint> points) {
  std::erase_if(points, [](const FrontPoint& p) { return !(p.x > 0) || !(p.y > 0) || !std::isfinite(p.x) || !std::isfinite(p.y); });
  // By x descending (ties: y descending); a point is on the front when its y beats every
  // point with a larger x.
  std::sort(points.begin(), points.end(), [](const FrontPoint& a, const FrontPoint& b) {
    return a.x != b.x ? a.x > b.x : a.y > b.y;
  });
  std::vector<FrontPoint> front;
  double best_y = 0;
  for (const FrontPoint& p : points) {
    if (p.y > best_y) {
      front.push_back(p);
      best_y = p.y;
    }
  }
  std::reverse(front.begin(), front.end());
  return front;
}

double FrontArea(const std::vector<FrontPoint>& front) {
  if (front.empty()) return 0;
  std::vector<FrontPoint> poly;
  poly.push_back({0, 0});
  poly.push_back({0, front.front().y});
  poly.insert(poly.end(), front.begin(), front.end());
  poly.push_back({front.back().x, 0});
  double twice = 0;  // the shoelace formula
  for (size_t i = 0; i < poly.size(); ++i) {
    const FrontPoint& a = poly[i];
    const FrontPoint& b = poly[(i + 1) % poly.size()];
    twice += a.x * b.y - b.x * a.y;
  }
  return std::abs(twice) / 2;
}

AreaIndex ComputeAreaIndex(const std::vector<FrontPoint>& stock, const std::vector<FrontPoint>& best) {
  AreaIndex r;
  r.stock_front = ParetoFront(stock);
  r.best_front = ParetoFront(best);
  r.stock_area = FrontArea(r.stock_front);
  r.best_area = FrontArea(r.best_front);
  if (r.stock_area > 0) r.index = r.best_area / r.stock_area;
  return r;
}

}  // namespace hone::report
