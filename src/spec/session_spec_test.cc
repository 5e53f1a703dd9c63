#include "spec/session_spec.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/test_util.h"

namespace hone::spec {
namespace {

const std::vector<std::string> kMetrics = {"total_tps_per_gpu", "output_tps", "p90_intvty", "p99_ttft_ms"};

TEST(SessionSpecTest, FullSpecParses) {
  auto s = ParseSessionSpec(R"(
name: demo-1
target:
  adapter: llama.cpp
  model: {preset: small, seed: 7}
  server_args: [--ctx-size, "4096"]
  base_config: {parallel: "2"}
workload:
  isl: 64
  osl: 16
  concurrency: 2
  num_prompts: 12
  sweep:
    concurrency: [1, 4]
    isl_osl: [[128, 32], [512, 16]]
    slo_search: 6
objective:
  metric: output_tps
  slo: ["p90_intvty >= 5", "p99_ttft_ms <= 2000"]
accuracy: {min_token_agreement: 0.8, max_kld: 0.02}
budget: {wall: 8m, max_trials: 40}
measurement: {min_pairs: 3, max_pairs: 5, pool_retests: false, screen_recheck: 0}
search: {strategy: random, exclude: [weights], plateau: 0}
)", "demo.yaml", kMetrics);
  ASSERT_OK(s);
  EXPECT_EQ(s->name, "demo-1");
  EXPECT_EQ(s->target.model.preset, "small");
  EXPECT_EQ(s->target.model.seed, 7u);
  EXPECT_EQ(s->target.server_args, (std::vector<std::string>{"--ctx-size", "4096"}));
  EXPECT_EQ(s->target.base_config.ToString(), "parallel=2");
  EXPECT_EQ(s->workload.isl, 64);
  EXPECT_EQ(s->workload.sweep_concurrency, (std::vector<int>{1, 4}));
  EXPECT_EQ(s->workload.sweep_isl_osl[1], (std::pair<int64_t, int64_t>{512, 16}));
  EXPECT_EQ(s->workload.sweep_slo_search, 6);
  EXPECT_EQ(s->objective.metric, "output_tps");
  ASSERT_EQ(s->objective.slos.size(), 2u);
  EXPECT_EQ(s->objective.slos[0].ToString(), "p90_intvty >= 5");
  EXPECT_FALSE(s->objective.slos[1].at_least);
  EXPECT_EQ(s->budget.wall_s, 480);
  EXPECT_EQ(s->budget.max_trials, 40);
  EXPECT_EQ(s->measurement.max_pairs, 5);
  EXPECT_FALSE(s->measurement.pool_retests);
  EXPECT_EQ(s->measurement.screen_recheck, 0);
  EXPECT_EQ(s->search.strategy, "random");
  EXPECT_EQ(s->search.plateau, 0);
  EXPECT_DOUBLE_EQ(s->accuracy.max_kld, 0.02);
}

TEST(SessionSpecTest, MinimalSpecUsesDefaults) {
  auto s = ParseSessionSpec("target: {model: /m.gguf}\n", "m.yaml", kMetrics);
  ASSERT_OK(s);
  EXPECT_EQ(s->workload.sweep_slo_search, 4);
  EXPECT_EQ(s->search.plateau, 8);
  EXPECT_TRUE(s->measurement.pool_retests);
  EXPECT_EQ(s->measurement.screen_recheck, 2);
  EXPECT_FALSE(ParseSessionSpec("target: {model: /m.gguf}\nsearch: {plateau: -1}\n", "m.yaml", kMetrics).has_value());
  EXPECT_FALSE(ParseSessionSpec("target: {model: /m.gguf}\nmeasurement: {screen_recheck: -1}\n", "m.yaml", kMetrics));
  auto bad = ParseSessionSpec("target: {model: /m.gguf}\nworkload: {sweep: {concurrency: [1, 4], slo_search: 99}}\n",
                              "m.yaml", kMetrics);
  EXPECT_FALSE(bad.has_value());
  EXPECT_EQ(s->target.adapter, "llama.cpp");
  EXPECT_EQ(s->target.model.path, "/m.gguf");
  EXPECT_EQ(s->objective.metric, "total_tps_per_gpu");
  EXPECT_EQ(s->workload.kind, "fixed");
  EXPECT_EQ(s->budget.wall_s, 600);
  EXPECT_TRUE(s->accuracy.enabled);
}

TEST(SessionSpecTest, ErrorsNameFileLineAndField) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"target: {model: /m}\nworkload:\n  concurrency: 0\n", "s.yaml:3:16: workload.concurrency: must be >= 1 (got 0)"},
      {"target: {adapter: tgi, model: /m}\n", "s.yaml:1:19: target.adapter: unknown adapter 'tgi'"},
      {"target: {model: /m}\nobjective: {metric: speed}\n", "s.yaml:2:21: objective.metric: unknown metric 'speed'"},
      {"target: {model: /m}\nbudget: {wall: soon}\n", "s.yaml:2:16: budget.wall: not a duration: 'soon'"},
      {"target: {model: /m}\nworkloads: {}\n", "s.yaml:2:12: workloads: unknown field"},
      {"workload: {}\n", "s.yaml:1:1: target: required section is missing"},
      {"target: {model: {path: /m, preset: tiny}}\n", "s.yaml:1:17: target.model: give exactly one of path or preset"},
      {"target: {model: /m}\nobjective: {slo: [\"p90_intvty > 3\"]}\n", "expected 'metric >= value'"},
      {"target: {model: /m}\nkb: {url: mysql://db/kb}\n", "s.yaml:2:11: kb.url: must be a postgresql:// URL"},
      {"target: {model: /m}\nkb: {url: postgresql://db/kb, path: x.sqlite}\n", "kb.url: give either kb.path"},
  };
  for (const Case& c : cases) {
    auto s = ParseSessionSpec(c.text, "s.yaml", kMetrics);
    ASSERT_FALSE(s) << c.text;
    EXPECT_NE(s.error().message.find(c.error), std::string::npos) << s.error().message;
  }
}

TEST(SessionSpecTest, SloNamesAndGoodputObjectives) {
  const std::vector<std::string> known = {"total_tps_per_gpu", "goodput_rps", "p90_itl_ms", "p95_ttft_ms"};
  auto s = ParseSessionSpec(
      "target: {model: /m}\nobjective: {metric: goodput, slo: [\"ttft_ms <= 500\", \"tpot_ms <= 50\", "
      "\"p90_itl_ms <= 40\", \"p95_ttft_ms <= 900\"]}\n",
      "s.yaml", known);
  ASSERT_OK(s);
  EXPECT_EQ(s->objective.metric, "goodput_rps");
  EXPECT_EQ(s->objective.good_ttft_ms, 500);
  EXPECT_EQ(s->objective.good_tpot_ms, 50);
  EXPECT_EQ(s->objective.good_e2el_ms, 0);
  ASSERT_EQ(s->objective.slos.size(), 2u);  // the per-request ones define goodput, not constraints
  EXPECT_EQ(s->objective.slos[0].ToString(), "p90_itl_ms <= 40");
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"target: {model: /m}\nobjective: {metric: goodput}\n", "goodput counts the requests that meet per-request SLOs"},
      {"target: {model: /m}\nobjective: {slo: [\"p42_itl_ms <= 3\"]}\n", "unknown SLO metric 'p42_itl_ms'"},
      {"target: {model: /m}\nobjective: {slo: [\"ttft_ms >= 3\"]}\n", "a per-request SLO is 'ttft_ms <= milliseconds'"},
  };
  for (const Case& c : cases) {
    auto bad = ParseSessionSpec(c.text, "s.yaml", known);
    ASSERT_FALSE(bad) << c.text;
    EXPECT_NE(bad.error().message.find(c.error), std::string::npos) << bad.error().message;
  }
}

TEST(SessionSpecTest, TheKnowledgeBaseIsAFileOrAPostgresUrl) {
  auto url = ParseSessionSpec("target: {model: /m}\nkb: {url: \"postgresql://hone@db:5432/kb\"}\n", "s.yaml", kMetrics);
  ASSERT_OK(url);
  EXPECT_EQ(url->kb.Location(), "postgresql://hone@db:5432/kb");
  auto path = ParseSessionSpec("target: {model: /m}\nkb: {path: /shared/kb.sqlite}\n", "s.yaml", kMetrics);
  ASSERT_OK(path);
  EXPECT_EQ(path->kb.Location(), "/shared/kb.sqlite");
  auto none = ParseSessionSpec("target: {model: /m}\n", "s.yaml", kMetrics);
  ASSERT_OK(none);
  EXPECT_EQ(none->kb.Location(), "");  // the default file in the cache
}

TEST(SessionSpecTest, AgentsSection) {
  auto s = ParseSessionSpec(R"(target: {model: /m.gguf}
agents:
  mode: openai
  endpoint: http://127.0.0.1:8091/v1
  model: local
  max_cost_usd: 2
  max_tokens: 1000
  roles: [orchestrator, critic]
  required: false
  price: {input: 3, output: 15}
)",
                            "a.yaml", kMetrics);
  ASSERT_OK(s);
  EXPECT_EQ(s->agents.mode, "openai");
  EXPECT_EQ(s->agents.endpoint, "http://127.0.0.1:8091/v1");
  EXPECT_EQ(s->agents.roles, (std::vector<std::string>{"orchestrator", "critic"}));
  EXPECT_FALSE(s->agents.required);
  EXPECT_EQ(s->agents.max_tokens, 1000);
  EXPECT_DOUBLE_EQ(s->agents.price_output_usd_per_mtok, 15);
  auto d = ParseSessionSpec("target: {model: /m.gguf}\nagents: {mode: cli, command: [my-agent, \"{prompt}\"]}\n",
                            "a.yaml", kMetrics);
  ASSERT_OK(d);
  EXPECT_TRUE(d->agents.required);
  EXPECT_TRUE(d->agents.roles.empty());  // the default roles
  EXPECT_EQ(d->agents.command, (std::vector<std::string>{"my-agent", "{prompt}"}));
  // A relative path to the agent is relative to the spec file (it runs in a worktree).
  auto rel = ParseSessionSpec("target: {model: /m.gguf}\nagents: {mode: cli, command: [./agent.sh, \"{prompt_file}\"]}\n",
                              "specs/a.yaml", kMetrics);
  ASSERT_OK(rel);
  EXPECT_EQ(rel->agents.command,
            (std::vector<std::string>{(std::filesystem::current_path() / "specs/agent.sh").string(), "{prompt_file}"}));
  auto abs = ParseSessionSpec("target: {model: /m.gguf}\nagents: {mode: cli, command: [/opt/agent]}\n", "specs/a.yaml",
                              kMetrics);
  ASSERT_OK(abs);
  EXPECT_EQ(abs->agents.command, (std::vector<std::string>{"/opt/agent"}));
  auto bad = ParseSessionSpec("target: {model: /m.gguf}\nagents: {mode: openai, roles: [judge]}\n", "a.yaml", kMetrics);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("agents.roles: unknown role 'judge'"), std::string::npos) << bad.error().message;
}

TEST(SessionSpecTest, SpecialistTasksComeWithTheSpecialistAndTheCritic) {
  auto s = ParseSessionSpec(R"(target: {model: /m.gguf}
agents:
  mode: openai
  roles: [critic, specialist]
  specialist_tasks:
    - title: more default slots
      goal: raise the default slot count
      files: [common/common.h]
    - {title: faster sampling, goal: avoid the copy}
)",
                            "a.yaml", kMetrics);
  ASSERT_OK(s);
  ASSERT_EQ(s->agents.specialist_tasks.size(), 2u);
  EXPECT_EQ(s->agents.specialist_tasks[0].title, "more default slots");
  EXPECT_EQ(s->agents.specialist_tasks[0].goal, "raise the default slot count");
  EXPECT_EQ(s->agents.specialist_tasks[0].files, (std::vector<std::string>{"common/common.h"}));
  EXPECT_TRUE(s->agents.specialist_tasks[1].files.empty());
  auto no_tasks = ParseSessionSpec("target: {model: /m.gguf}\nagents: {mode: openai, roles: [critic, specialist]}\n",
                                   "a.yaml", kMetrics);
  ASSERT_FALSE(no_tasks);
  EXPECT_NE(no_tasks.error().message.find("needs agents.specialist_tasks"), std::string::npos)
      << no_tasks.error().message;
  auto no_critic = ParseSessionSpec(
      "target: {model: /m.gguf}\nagents: {mode: openai, roles: [specialist], specialist_tasks: [{title: t, goal: g}]}\n",
      "a.yaml", kMetrics);
  ASSERT_FALSE(no_critic);
  EXPECT_NE(no_critic.error().message.find("need the critic's sign-off"), std::string::npos)
      << no_critic.error().message;
  auto no_role = ParseSessionSpec(
      "target: {model: /m.gguf}\nagents: {mode: openai, specialist_tasks: [{title: t, goal: g}]}\n", "a.yaml",
      kMetrics);
  ASSERT_FALSE(no_role);
  EXPECT_NE(no_role.error().message.find("need the specialist in agents.roles"), std::string::npos)
      << no_role.error().message;
  auto no_goal = ParseSessionSpec(
      "target: {model: /m.gguf}\nagents: {mode: openai, roles: [critic, specialist], specialist_tasks: [{title: t}]}\n",
      "a.yaml", kMetrics);
  ASSERT_FALSE(no_goal);
}

TEST(SessionSpecTest, Durations) {
  EXPECT_EQ(*ParseDurationSeconds("90s"), 90);
  EXPECT_EQ(*ParseDurationSeconds("10m"), 600);
  EXPECT_EQ(*ParseDurationSeconds("1.5h"), 5400);
  EXPECT_EQ(*ParseDurationSeconds("42"), 42);
  EXPECT_FALSE(ParseDurationSeconds("-3m"));
  EXPECT_FALSE(ParseDurationSeconds("x"));
}

TEST(SessionSpecTest, TheCommandAdapterTakesAKnobTableAndTheOthersALauncher) {
  auto s = ParseSessionSpec(R"(name: c
target:
  adapter: command
  model: /m.gguf
  command: [srv, --port, "{port}", -t, "{threads}"]
  version: "3.1"
  knobs:
    - {name: threads, type: int, min: 1, max: 8, default: "4"}
)", "c.yaml", {});
  ASSERT_OK(s);
  EXPECT_EQ(s->target.version, "3.1");
  EXPECT_NE(s->target.knobs_yaml.find("threads"), std::string::npos);
  // A knob table belongs to the command adapter; vLLM and SGLang take one launcher.
  auto knobs = ParseSessionSpec("name: v\ntarget: {adapter: vllm, model: m, knobs: [{name: x}]}\n", "v.yaml", {});
  ASSERT_FALSE(knobs);
  EXPECT_NE(knobs.error().message.find("a knob table is for adapter 'command'"), std::string::npos);
  auto launcher = ParseSessionSpec("name: v\ntarget: {adapter: sglang, model: m, command: [python, -m, x]}\n", "v.yaml", {});
  ASSERT_FALSE(launcher);
  EXPECT_NE(launcher.error().message.find("command names one launcher"), std::string::npos);
  ASSERT_OK(ParseSessionSpec("name: v\ntarget: {adapter: vllm, model: m, command: [/opt/venv/bin/vllm]}\n", "v.yaml", {}));
}

}  // namespace
}  // namespace hone::spec
