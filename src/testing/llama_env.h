// Access to the real llama.cpp engine for slow tests: the provisioned binaries (from
// the user's cache, see `hone provision llama.cpp`) and synthesized tiny models made
// once per test binary. When llama.cpp is not provisioned the tests skip, unless
// HONE_REQUIRE_LLAMA=1 (set by scripts/test.sh), where they fail instead.
#pragma once

#include <optional>
#include <string>

#include "target/llamacpp.h"

namespace hone::testing {

// The provisioned llama.cpp, or nullopt (after recording a skip/failure reason).
const target::Provisioned* Llama();
// Path of a synthesized model for `preset` ("tiny") quantized to `type` ("f16", "q8_0"),
// created on first use in a per-process temp directory.
std::string SynthModel(const std::string& preset, const std::string& type);
// The reason Llama() returned null.
std::string LlamaUnavailableReason();

}  // namespace hone::testing

// Skips (or fails, under HONE_REQUIRE_LLAMA=1) the current test without llama.cpp.
#define HONE_REQUIRE_LLAMA()                                                   \
  do {                                                                         \
    if (::hone::testing::Llama() == nullptr) {                                 \
      if (std::getenv("HONE_REQUIRE_LLAMA")) {                                 \
        FAIL() << ::hone::testing::LlamaUnavailableReason();                   \
      }                                                                        \
      GTEST_SKIP() << ::hone::testing::LlamaUnavailableReason();               \
    }                                                                          \
  } while (0)
