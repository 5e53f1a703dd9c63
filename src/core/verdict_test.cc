#include "core/verdict.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace hone {
namespace {

const Verdict kAll[] = {Verdict::kPending,      Verdict::kKeep,          Verdict::kRevert,
                        Verdict::kInconclusive, Verdict::kScreenedOut,   Verdict::kLaunchFailed,
                        Verdict::kAccuracyFailed, Verdict::kInvalid,     Verdict::kSkippedBudget,
                        Verdict::kPatchFailed,  Verdict::kBuildFailed,   Verdict::kPatchRejected,
                        Verdict::kNotValidated};

TEST(VerdictTest, NamesRoundTripAndAreDistinct) {
  std::set<std::string> names;
  for (Verdict v : kAll) {
    std::string name(VerdictName(v));
    EXPECT_TRUE(names.insert(name).second) << name;
    auto parsed = ParseVerdict(name);
    ASSERT_TRUE(parsed) << name;
    EXPECT_EQ(*parsed, v);
  }
  EXPECT_EQ(names.size(), 13u);
  // The file format's words (state.json, events, reports).
  EXPECT_EQ(VerdictName(Verdict::kKeep), "KEEP");
  EXPECT_EQ(VerdictName(Verdict::kScreenedOut), "SCREENED_OUT");
  EXPECT_EQ(VerdictName(Verdict::kNotValidated), "NOT_VALIDATED");
}

TEST(VerdictTest, UnknownNamesAreErrorsThatNameThem) {
  auto v = ParseVerdict("keep");  // case matters: the files hold the upper-case words
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(v.error().message.find("'keep'"), std::string::npos);
  EXPECT_FALSE(ParseVerdict(""));
}

TEST(VerdictTest, MeasuredAndFailureClasses) {
  std::set<Verdict> measured, failures;
  for (Verdict v : kAll) {
    if (IsMeasured(v)) measured.insert(v);
    if (IsFailure(v)) failures.insert(v);
    EXPECT_FALSE(IsMeasured(v) && IsFailure(v)) << VerdictName(v);
  }
  EXPECT_EQ(measured, (std::set<Verdict>{Verdict::kKeep, Verdict::kRevert, Verdict::kInconclusive,
                                         Verdict::kScreenedOut}));
  EXPECT_EQ(failures, (std::set<Verdict>{Verdict::kLaunchFailed, Verdict::kAccuracyFailed, Verdict::kInvalid,
                                         Verdict::kPatchFailed, Verdict::kBuildFailed, Verdict::kPatchRejected}));
}

}  // namespace
}  // namespace hone
