// Test helpers shared by every layer's tests: Status-aware assertions and locations
// of the real engine (llama-server) that slow tests use.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"

#define EXPECT_OK(expr)                                              \
  do {                                                               \
    auto&& hone_ok_ = (expr);                                        \
    EXPECT_TRUE(hone_ok_) << (hone_ok_ ? "" : hone_ok_.error().ToString()); \
  } while (0)

#define ASSERT_OK(expr)                                              \
  do {                                                               \
    auto&& hone_ok_ = (expr);                                        \
    ASSERT_TRUE(hone_ok_) << (hone_ok_ ? "" : hone_ok_.error().ToString()); \
  } while (0)

#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(HONE_CONCAT_(hone_oaa_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)              \
  auto tmp = (expr);                                             \
  ASSERT_TRUE(tmp) << (tmp ? "" : tmp.error().ToString());       \
  lhs = std::move(*tmp)

namespace hone::testing {

// The source tree root (HONE_DATA_DIR, set by ctest).
std::filesystem::path SourceDir();
// The build tree root (HONE_BINARY_DIR, set by ctest): where the hone binary is.
std::filesystem::path BinaryDir();

}  // namespace hone::testing
