// Test-only helpers for the kb layer's tests: a valid recipe, a validated admission
// request, the repository's rules and a temp-dir store. Not part of the library.
#pragma once

#include <memory>
#include <string>

#include "kb/store.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::kb::testing {

inline Identity TestIdentity() {
  return {.model = "llama-tiny",
          .hardware = "cpu-x86_64-2c",
          .framework = "llama.cpp",
          .model_type = "llama",
          .architecture = "LlamaForCausalLM",
          .framework_version = "0.4.2",
          .precision = "q8_0"};
}

inline Recipe TestRecipe(const std::string& session = "s-1") {
  Recipe r;
  r.identity = TestIdentity();
  r.workload = {.kind = "fixed", .concurrency = 4, .isl = 512, .osl = 128};
  r.config = Config{{"threads", "2"}, {"flash_attn", "on"}};
  r.objective = {.name = "output_tok_per_s", .value = 120, .ci_lo = 115, .ci_hi = 125, .unit = "tok/s",
                 .higher_is_better = true, .trial_ids = {"t-7", "t-9"}};
  r.baseline = {.value = 100, .trial_ids = {"t-1", "t-2"}};
  r.learnings = {{"threads", "2", 0.15, 0.10, 0.20, {"t-3"}}, {"flash_attn", "on", 0.04, 0.01, 0.07, {"t-5"}}};
  r.failures = {{Config{{"cache_type_v", "q4_0"}}, FailureKind::kCrashed, "context_create: V cache needs flash_attn",
                 {"t-4"}}};
  r.notes = {{"critic", "c003 threads=4 REVERT", "threads past the core count slowed decode", session}};
  r.provenance = {.hone_version = "0.1.0", .session_id = session, .date = "2026-01-02T03:04:05Z"};
  return r;
}

// `r` as the store keeps what a session wrote: each learning's and failure's trial id
// names the session ("s-1/t-3"; RecipeStore::Admit, KeepStockRecord).
inline Recipe SessionQualified(Recipe r) {
  for (Learning& l : r.learnings) {
    for (std::string& t : l.trial_ids) t = r.provenance.session_id + "/" + t;
  }
  for (Failure& f : r.failures) {
    for (std::string& t : f.trial_ids) t = r.provenance.session_id + "/" + t;
  }
  return r;
}

inline AdmissionRequest Validated(Recipe r) {
  return {.recipe = std::move(r), .verdict_keep = true, .accuracy_passed = true, .remeasured_at_close = true};
}

inline KbRules RepoRules() {
  auto rules = LoadKbRules(::hone::testing::SourceDir().string());
  EXPECT_TRUE(rules) << rules.error().ToString();
  return rules ? *rules : KbRules{};
}

}  // namespace hone::kb::testing
