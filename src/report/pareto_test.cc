#include "report/pareto.h"

#include <gtest/gtest.h>

namespace hone::report {
namespace {

TEST(ParetoTest, DropsDominatedPointsAndSortsByInteractivity) {
  auto front = ParetoFront({{10, 100}, {5, 300}, {8, 90}, {20, 40}, {5, 250}, {-1, 1000}, {3, 0}});
  ASSERT_EQ(front.size(), 3u);
  EXPECT_DOUBLE_EQ(front[0].x, 5);
  EXPECT_DOUBLE_EQ(front[0].y, 300);
  EXPECT_DOUBLE_EQ(front[1].x, 10);
  EXPECT_DOUBLE_EQ(front[2].x, 20);
}

TEST(ParetoTest, EqualPointsKeepOne) {
  auto front = ParetoFront({{4, 4}, {4, 4}, {4, 2}});
  ASSERT_EQ(front.size(), 1u);
  EXPECT_DOUBLE_EQ(front[0].y, 4);
}

TEST(ParetoTest, AreaOfOnePointIsItsRectangle) {
  EXPECT_DOUBLE_EQ(FrontArea({{3, 4}}), 12);
  EXPECT_DOUBLE_EQ(FrontArea({}), 0);
}

TEST(ParetoTest, AreaJoinsPointsWithStraightSegments) {
  // (0,0)-(0,10)-(2,10)-(6,2)-(6,0): rectangle 2x10 plus the trapezoid from x=2 to 6.
  EXPECT_DOUBLE_EQ(FrontArea({{2, 10}, {6, 2}}), 20 + (10 + 2) / 2.0 * 4);
}

TEST(ParetoTest, IndexIsBestAreaOverStockArea) {
  AreaIndex r = ComputeAreaIndex({{1, 10}, {2, 5}}, {{1, 20}, {2, 10}, {1, 5}});
  EXPECT_DOUBLE_EQ(r.stock_area, 10 + 7.5);
  EXPECT_DOUBLE_EQ(r.best_area, 2 * (10 + 7.5));
  ASSERT_TRUE(r.index.has_value());
  EXPECT_DOUBLE_EQ(*r.index, 2.0);
  EXPECT_EQ(r.best_front.size(), 2u);
  EXPECT_FALSE(ComputeAreaIndex({}, {{1, 1}}).index.has_value());
}

}  // namespace
}  // namespace hone::report
