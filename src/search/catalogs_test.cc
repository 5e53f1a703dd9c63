// Every knob catalog in catalogs/ loads and follows the conventions the search relies
// on; the planner's heuristics file loads and names only knobs its catalogs know.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "search/domain.h"
#include "search/heuristics.h"
#include "target/catalog.h"
#include "testing/test_util.h"

namespace hone::search {
namespace {

namespace fs = std::filesystem;

// The nine categories of the knob-catalog design; catalogs may use others as long as
// the planner has a prior for them (data/search/heuristics.yaml).
const std::set<std::string> kCategories = {"threads", "batching", "scheduling",  "cache",  "precision",
                                           "attention", "speculative", "parallelism", "memory"};

const Heuristics& Priors() {
  static const Heuristics* h = [] {
    auto r = Heuristics::Load((testing::SourceDir() / "data/search/heuristics.yaml").string());
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return new Heuristics(r ? *r : Heuristics{});
  }();
  return *h;
}

std::vector<fs::path> CatalogFiles() {
  std::vector<fs::path> out;
  for (const auto& fw : fs::directory_iterator(testing::SourceDir() / "catalogs")) {
    if (!fw.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(fw.path())) {
      if (f.path().extension() == ".yaml") out.push_back(f.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CatalogsTest, EveryCatalogLoadsAndFollowsTheConventions) {
  auto files = CatalogFiles();
  ASSERT_GE(files.size(), 3u);  // llama.cpp, vllm, sglang
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    auto c = target::KnobCatalog::Load(f.string());
    ASSERT_OK(c);
    EXPECT_EQ(c->framework(), f.parent_path().filename().string());
    EXPECT_GT(c->knobs().size(), 10u);
    for (const target::Knob& k : c->knobs()) {
      EXPECT_TRUE(Priors().categories.contains(k.category))
          << k.name << ": category " << k.category << " has no prior in data/search/heuristics.yaml";
      EXPECT_FALSE(k.why.empty()) << k.name << " has no why";
      if (k.type == target::KnobType::kEnum && !k.default_value.empty() && k.default_value != "auto" &&
          k.default_value != "source") {
        EXPECT_TRUE(std::find(k.choices.begin(), k.choices.end(), k.default_value) != k.choices.end())
            << k.name << ": default " << k.default_value << " is not a choice";
      }
      if (k.type == target::KnobType::kBool) {
        EXPECT_TRUE(k.default_value == "on" || k.default_value == "off" || k.default_value == "auto")
            << k.name << ": bool default " << k.default_value;
      }
    }
    // The search finds something to do on both device kinds.
    ProposalContext ctx;
    ctx.cpus = 8;
    ctx.concurrency = 4;
    for (bool gpu : {false, true}) {
      if (c->framework() != "llama.cpp" && !gpu) continue;  // GPU-only engines
      auto d = SearchDomain::Build(*c, {.gpu = gpu}, ctx);
      ASSERT_OK(d);
      EXPECT_GE(d->knobs().size(), 3u) << (gpu ? "gpu" : "cpu");
      for (const KnobDomain& kd : d->knobs()) {
        for (const std::string& v : kd.values) EXPECT_OK(kd.knob->ValidateValue(v));
      }
    }
  }
}

TEST(CatalogsTest, LlamaCatalogCoversThePerformanceFlagsOfTheProvisionedVersion) {
  auto c = target::LoadCatalogFor((testing::SourceDir() / "catalogs").string(), "llama.cpp", "0.4.0");
  ASSERT_OK(c);
  for (const char* k : {"threads", "threads_batch", "poll", "cpu_strict", "prio", "omp_wait_policy", "gomp_spincount",
                        "parallel", "batch_size", "ubatch_size", "cont_batching", "kv_unified", "kv_unified_per_slot",
                        "cache_prompt", "cache_reuse", "cache_ram", "cache_idle_slots", "flash_attn", "cache_type_k",
                        "cache_type_v", "weights", "repack", "load_mode", "n_gpu_layers", "split_mode", "kv_offload",
                        "op_offload", "fit", "n_cpu_moe", "ggml_cuda_disable_graphs", "ggml_cuda_graph_opt",
                        "spec_type", "spec_default", "spec_draft_n_max", "spec_draft_model", "spec_ngram_mod_n_match",
                        "backend_sampling"}) {
    EXPECT_NE(c->Find(k), nullptr) << k;
  }
  // Dependencies the engine enforces.
  EXPECT_FALSE(c->Validate(Config{{"cache_type_v", "q8_0"}, {"flash_attn", "off"}}));
  EXPECT_FALSE(c->Validate(Config{{"spec_draft_n_max", "8"}}));  // spec_type defaults to none
  EXPECT_OK(c->Validate(Config{{"spec_draft_n_max", "8"}, {"spec_type", "ngram-mod"}}));
  EXPECT_FALSE(c->Validate(Config{{"spec_ngram_mod_n_match", "12"}, {"spec_type", "ngram-simple"}}));
  EXPECT_FALSE(c->Validate(Config{{"cache_reuse", "256"}, {"cache_prompt", "off"}}));
  EXPECT_FALSE(c->Validate(Config{{"omp_places", "cores"}}));  // needs omp_proc_bind
  EXPECT_OK(c->Validate(Config{{"omp_places", "cores"}, {"omp_proc_bind", "close"}}));
}

TEST(CatalogsTest, HeuristicsLoadAndNameKnownKnobs) {
  ASSERT_OK_AND_ASSIGN(Heuristics h, Heuristics::Load((testing::SourceDir() / "data/search/heuristics.yaml").string()));
  for (const std::string& cat : kCategories) EXPECT_TRUE(h.categories.contains(cat)) << cat;
  EXPECT_GT(h.RiskPenalty(target::AccuracyRisk::kHigh), h.RiskPenalty(target::AccuracyRisk::kMedium));
  for (const auto& [fw, fh] : h.frameworks) {
    SCOPED_TRACE(fw);
    auto c = target::LoadCatalogFor((testing::SourceDir() / "catalogs").string(), fw, "999");
    ASSERT_OK(c);
    for (const auto& [knob, hints] : fh.value_hints) EXPECT_NE(c->Find(knob), nullptr) << knob;
    for (const auto& [knob, others] : fh.interactions) {
      EXPECT_NE(c->Find(knob), nullptr) << knob;
      for (const std::string& o : others) EXPECT_NE(c->Find(o), nullptr) << o;
    }
    for (const Bundle& b : fh.bundles) {
      Config resolved;
      for (const auto& [k, v] : b.delta.values()) resolved.Set(k, ResolveValueExpression(v, 4, 8));
      EXPECT_OK(c->Validate(resolved));
    }
  }
}

TEST(HeuristicsTest, DiagnosisFollowsTheRulesInOrder) {
  DiagnosisRules r;
  r.roofline["memory_bandwidth"] = Bottleneck::kDecode;
  // Measured limits (a full KV cache, a queue) come before the roofline class; the
  // roofline class comes before the latency shares.
  EXPECT_EQ(Diagnose("memory_bandwidth", {{"kv_usage_max", 1.0}}, r).bottleneck, Bottleneck::kKvCapacity);
  EXPECT_EQ(Diagnose("memory_bandwidth", {{"queue_depth_mean", 60}}, r).bottleneck, Bottleneck::kQueueing);
  EXPECT_EQ(Diagnose("memory_bandwidth", {{"mean_ttft_ms", 900}, {"mean_tpot_ms", 10}, {"osl", 32}}, r).bottleneck,
            Bottleneck::kDecode);
  EXPECT_EQ(Diagnose("", {{"kv_usage_max", 0.95}, {"queue_depth_mean", 3}}, r).bottleneck, Bottleneck::kKvCapacity);
  EXPECT_EQ(Diagnose("", {{"queue_depth_mean", 3}}, r).bottleneck, Bottleneck::kQueueing);
  EXPECT_EQ(Diagnose("", {{"running_mean", 2}, {"concurrency", 8}}, r).bottleneck, Bottleneck::kQueueing);
  // An idle scrape (running 0) is no evidence of queueing.
  Diagnosis d = Diagnose("", {{"running_mean", 0}, {"concurrency", 8}, {"mean_ttft_ms", 50}, {"mean_tpot_ms", 10},
                              {"osl", 100}}, r);
  EXPECT_EQ(d.bottleneck, Bottleneck::kDecode);
  EXPECT_NE(d.evidence.find("decode share"), std::string::npos);
  EXPECT_EQ(Diagnose("", {{"mean_ttft_ms", 900}, {"mean_tpot_ms", 10}, {"osl", 32}}, r).bottleneck,
            Bottleneck::kPrefill);
  EXPECT_EQ(Diagnose("", {}, r).bottleneck, Bottleneck::kUnknown);
  EXPECT_EQ(ResolveValueExpression("concurrency", 6, 2), "6");
  EXPECT_EQ(ResolveValueExpression("cpus", 6, 2), "2");
  EXPECT_EQ(ResolveValueExpression("q8_0", 6, 2), "q8_0");
}

TEST(HeuristicsTest, BadFilesNameTheProblem) {
  auto r = Heuristics::Parse("categories:\n  threads: {scale: -1}\n", "h.yaml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("h.yaml:2"), std::string::npos) << r.error().message;
  r = Heuristics::Parse("bottlenecks:\n  slow: {threads: 2}\n", "h.yaml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unknown bottleneck 'slow'"), std::string::npos) << r.error().message;
  r = Heuristics::Parse("frameworks:\n  x:\n    bundles:\n      - {title: t, when: [decode], category: c, delta: {a: 1}}\n",
                        "h.yaml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("at least two knobs"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace hone::search
