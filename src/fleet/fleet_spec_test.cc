// Fleet files: entries expand into the cross product of their models, precisions and
// workloads; every session gets a complete, valid session spec; errors name the
// fleet file's line and the session; command-line overrides apply.
#include "fleet/fleet_spec.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "bench/metrics.h"
#include "core/strings.h"
#include "testing/test_util.h"

namespace hone::fleet {
namespace {

const std::vector<std::string> kMetrics = {"total_tps_per_gpu", "output_tps", "p99_ttft_ms", "p90_intvty"};

constexpr const char* kFleet = R"(name: cpu
executor: {kind: local}
kb: {url: "postgresql://hone:secret@127.0.0.1:5432/kb"}
resources: {cpus: 2}
defaults:
  accuracy: {probes: 4}
  workload: {num_prompts: 6, warmups: 1}
  measurement: {min_pairs: 3, max_pairs: 6}
workloads:
  - model: [{preset: tiny}, {preset: small, seed: 7}]
    precision: [f16, q8_0]
    workload:
      - {name: fixed, kind: fixed, isl: 64, osl: 16, concurrency: 2}
      - {name: agentic, kind: agentic, trace_sessions: 4, duration: 20s, concurrency: 4}
    budget: 3m
    session:
      search: {knobs: [threads, flash_attn]}
)";

TEST(FleetSpecTest, AnEntryExpandsIntoTheCrossProductOfItsAxes) {
  ASSERT_OK_AND_ASSIGN(FleetSpec f, ParseFleetSpec(kFleet, "fleet.yaml", kMetrics));
  ASSERT_EQ(f.sessions.size(), 8u);
  std::vector<std::string> names;
  for (const FleetSession& s : f.sessions) names.push_back(s.name);
  EXPECT_EQ(Join(names, " "),
            "tiny-f16-fixed tiny-f16-agentic tiny-q8_0-fixed tiny-q8_0-agentic small-f16-fixed small-f16-agentic "
            "small-q8_0-fixed small-q8_0-agentic");
  const FleetSession& s = f.sessions[6];  // small-q8_0-fixed
  EXPECT_EQ(s.spec.name, "small-q8_0-fixed");
  EXPECT_EQ(s.spec.target.adapter, "llama.cpp");
  EXPECT_EQ(s.spec.target.model.preset, "small");
  EXPECT_EQ(s.spec.target.model.seed, 7u);
  EXPECT_EQ(s.spec.target.base_config.Get("weights"), "q8_0");
  // The precision is the stock's: the search does not change it.
  EXPECT_NE(std::find(s.spec.search.exclude.begin(), s.spec.search.exclude.end(), "weights"),
            s.spec.search.exclude.end());
  EXPECT_EQ(Join(s.spec.search.knobs, ","), "threads,flash_attn");
  // The entry's workload is merged over the fleet's defaults.
  EXPECT_EQ(s.spec.workload.kind, "fixed");
  EXPECT_EQ(s.spec.workload.isl, 64);
  EXPECT_EQ(s.spec.workload.num_prompts, 6);
  EXPECT_EQ(s.spec.accuracy.probes, 4);
  EXPECT_EQ(s.spec.budget.wall_s, 180);
  EXPECT_EQ(s.spec.kb.url, "postgresql://hone:secret@127.0.0.1:5432/kb");
  EXPECT_EQ(s.resources.cpus, 2);
  EXPECT_EQ(s.resources.time_limit_s, 180 + 600);
  EXPECT_EQ(s.identity.model, "hone-small-s7");
  EXPECT_EQ(s.identity.precision, "q8_0");
  EXPECT_EQ(s.kb_workload.kind, "fixed");
  EXPECT_EQ(s.kb_workload.isl, 64);
  const FleetSession& a = f.sessions[1];  // tiny-f16-agentic
  EXPECT_EQ(a.workload_kind, "agentic");
  EXPECT_EQ(a.spec.workload.trace_sessions, 4);
  EXPECT_EQ(a.spec.workload.duration_s, 20);
  EXPECT_EQ(a.kb_workload.trace_id, "cpu");
  // The generated spec is a plain session spec: it parses again on its own.
  ASSERT_OK(spec::ParseSessionSpec(s.spec_yaml, "again", kMetrics));
  EXPECT_FALSE(Contains(s.spec_yaml, "name: fixed")) << s.spec_yaml;  // the workload's label is the fleet's
}

TEST(FleetSpecTest, CommandLineOverridesApplyBeforeExpansion) {
  FleetOverrides ov;
  ov.executor = "slurm";
  ov.partition = "gpu";
  ov.kb = "/shared/kb.sqlite";
  ov.budget_s = 75;
  ov.only = {"tiny-f16-*", "small-q8_0-agentic"};
  ASSERT_OK_AND_ASSIGN(FleetSpec f, ParseFleetSpec(kFleet, "fleet.yaml", kMetrics, ov));
  EXPECT_EQ(f.executor.kind, "slurm");
  EXPECT_EQ(f.executor.partition, "gpu");
  EXPECT_EQ(f.kb_path, "/shared/kb.sqlite");
  EXPECT_TRUE(f.kb_url.empty());
  ASSERT_EQ(f.sessions.size(), 3u);
  EXPECT_EQ(f.sessions[0].name, "tiny-f16-fixed");
  EXPECT_EQ(f.sessions[1].name, "tiny-f16-agentic");
  EXPECT_EQ(f.sessions[2].name, "small-q8_0-agentic");
  for (const FleetSession& s : f.sessions) {
    EXPECT_EQ(s.spec.budget.wall_s, 75);
    EXPECT_EQ(s.spec.kb.path, "/shared/kb.sqlite");
    EXPECT_TRUE(s.spec.kb.url.empty());
  }
  // The overrides survive a trip through fleet.json.
  FleetOverrides back = FleetOverrides::FromPairs(ov.ToPairs());
  EXPECT_EQ(back.executor, "slurm");
  EXPECT_EQ(back.budget_s, 75);
  EXPECT_EQ(Join(back.only, ","), "tiny-f16-*,small-q8_0-agentic");
  ov.only = {"nothing-*"};
  EXPECT_FALSE(ParseFleetSpec(kFleet, "fleet.yaml", kMetrics, ov));
}

TEST(FleetSpecTest, ErrorsNameTheFleetFileAndTheSession) {
  auto bad_key = ParseFleetSpec("workloads:\n  - model: {preset: tiny}\n    precisoin: q8_0\n", "f.yaml", kMetrics);
  ASSERT_FALSE(bad_key);
  EXPECT_TRUE(bad_key.error().message.starts_with("f.yaml:3:")) << bad_key.error().message;
  EXPECT_TRUE(Contains(bad_key.error().message, "precisoin")) << bad_key.error().message;

  // A session spec error: located at the entry, naming the session and the field.
  auto bad_wl = ParseFleetSpec("workloads:\n  - model: {preset: tiny}\n    workload: {concurrency: 0}\n", "f.yaml",
                               kMetrics);
  ASSERT_FALSE(bad_wl);
  EXPECT_TRUE(bad_wl.error().message.starts_with("f.yaml:2:")) << bad_wl.error().message;
  EXPECT_TRUE(Contains(bad_wl.error().message, "session tiny-fixed")) << bad_wl.error().message;
  EXPECT_TRUE(Contains(bad_wl.error().message, "workload.concurrency")) << bad_wl.error().message;

  auto dup = ParseFleetSpec(
      "workloads:\n  - model: {preset: tiny}\n  - model: {preset: tiny}\n", "f.yaml", kMetrics);
  ASSERT_FALSE(dup);
  EXPECT_TRUE(Contains(dup.error().message, "two sessions are named 'tiny-fixed'")) << dup.error().message;

  auto url = ParseFleetSpec("kb: {url: mysql://x}\nworkloads:\n  - model: {preset: tiny}\n", "f.yaml", kMetrics);
  ASSERT_FALSE(url);
  EXPECT_TRUE(Contains(url.error().message, "postgresql://")) << url.error().message;

  auto owned = ParseFleetSpec("defaults: {kb: {path: x.sqlite}}\nworkloads:\n  - model: {preset: tiny}\n", "f.yaml",
                              kMetrics);
  ASSERT_FALSE(owned);
  EXPECT_TRUE(Contains(owned.error().message, "top-level kb")) << owned.error().message;

  auto exec = ParseFleetSpec("executor: {kind: k8s}\nworkloads:\n  - model: {preset: tiny}\n", "f.yaml", kMetrics);
  ASSERT_FALSE(exec);
  EXPECT_TRUE(Contains(exec.error().message, "local or slurm")) << exec.error().message;

  EXPECT_FALSE(ParseFleetSpec("workloads: []\n", "f.yaml", kMetrics));
}

TEST(FleetSpecTest, ResourcesAndExecutorFields) {
  ASSERT_OK_AND_ASSIGN(
      FleetSpec f,
      ParseFleetSpec(R"(executor:
  kind: slurm
  partition: h200
  account: lab
  gpu_request: "--gpus={n}"
  sbatch_args: [--constraint=nvlink]
  setup: ["module load cuda"]
  time_margin: 5m
workloads:
  - name: big
    model: /models/llama-8b.gguf
    gpus: 1
    cpus: 8
    mem: 64G
    budget: 20m
)",
                     "f.yaml", kMetrics));
  EXPECT_EQ(f.executor.partition, "h200");
  EXPECT_EQ(f.executor.gpu_request, "--gpus={n}");
  EXPECT_EQ(Join(f.executor.setup, ";"), "module load cuda");
  ASSERT_EQ(f.sessions.size(), 1u);
  const FleetSession& s = f.sessions[0];
  EXPECT_EQ(s.name, "big-llama-8b-fixed");
  EXPECT_EQ(s.resources.gpus, 1);
  EXPECT_EQ(s.resources.cpus, 8);
  EXPECT_EQ(s.resources.mem_mb, 64 * 1024);
  EXPECT_EQ(s.resources.time_limit_s, 20 * 60 + 5 * 60);
  EXPECT_EQ(s.spec.target.num_gpus, 1);
  EXPECT_EQ(s.spec.target.model.path, "/models/llama-8b.gguf");
  EXPECT_TRUE(s.spec.target.base_config.empty());  // no precision axis: the file's own
  EXPECT_EQ(s.identity.model, "llama-8b");
  EXPECT_EQ(s.identity.precision, "native");
}

// Every shipped fleet file (examples/fleet-*.yaml) loads, with the real metric names,
// into valid session specs.
TEST(FleetSpecTest, EveryExampleFleetLoads) {
  int loaded = 0;
  for (const auto& e : std::filesystem::directory_iterator(::hone::testing::SourceDir() / "examples")) {
    std::string name = e.path().filename().string();
    if (!name.starts_with("fleet-") || e.path().extension() != ".yaml") continue;
    auto f = LoadFleetSpec(e.path().string(), bench::MetricNames());
    ASSERT_TRUE(f) << name << ": " << f.error().message;
    EXPECT_GE(f->sessions.size(), 6u) << name;
    ++loaded;
  }
  EXPECT_GE(loaded, 1);
}

}  // namespace
}  // namespace hone::fleet
