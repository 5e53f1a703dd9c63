#include "core/error.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace hone {
namespace {

Result<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  HONE_ASSIGN_OR_RETURN(int h, Half(x));
  HONE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  HONE_TRY(Half(x));
  return Ok();
}

TEST(ErrorTest, PropagatesThroughMacros) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);  // 6 -> 3 -> odd
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message, "odd: 3");
  EXPECT_TRUE(CheckEven(4));
  EXPECT_FALSE(CheckEven(5));
}

TEST(ErrorTest, ToStringIsOneLineWithContext) {
  Error e{ErrorCode::kUnavailable, "server exited", {}};
  e.With("port", "8080").With("log", "line1\nline2");
  EXPECT_EQ(e.ToString(), "server exited [port=8080, log=line1 line2]");
  EXPECT_EQ(e.Get("port"), "8080");
  EXPECT_EQ(e.Get("missing"), "");
}

TEST(ErrorTest, WrapKeepsCodeAndContext) {
  Error e = std::move(Error{ErrorCode::kNotFound, "no such file", {{"path", "/x"}}}).Wrap("reading spec");
  EXPECT_EQ(e.message, "reading spec: no such file");
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_EQ(e.Get("path"), "/x");
}

TEST(ErrorTest, TryCatchConvertsExceptions) {
  auto r = TryCatch(ErrorCode::kInvalidArgument, "parsing", []() -> int { throw std::runtime_error("boom"); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "parsing: boom");
  auto ok = TryCatch(ErrorCode::kInternal, "x", [] { return 5; });
  EXPECT_EQ(*ok, 5);
}

}  // namespace
}  // namespace hone
