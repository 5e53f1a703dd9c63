// AgentProposer over a scripted orchestrator endpoint: only valid, catalog-checked
// knob deltas become candidates; claims go to the calibration table; the
// deterministic planner takes over when the agent cannot help; recoveries change
// only what is proposed.
#include "agent/agent_proposer.h"

#include <gtest/gtest.h>

#include "agent/http_backends.h"
#include "testing/agent_endpoint.h"
#include "search/catalog_proposer.h"
#include "testing/fake_clock.h"

namespace hone::agent {
namespace {

using json = nlohmann::json;
using testing::Ideas;
using testing::OpenAiJson;

class AgentProposerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-agent-proposer");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    catalog_ = testing::TestCatalog(dir_->path());
    ep_ = testing::ScriptedEndpoint::Start();
    HttpBackendOptions o;
    o.base_url = ep_->url();
    o.model = "scripted";
    backend_ = std::make_unique<OpenAiBackend>(o, transport_, redactor_);
    client_ = std::make_unique<LlmClient>(*backend_, meter_, clock_, redactor_, nullptr,
                                          ClientOptions{testing::Data().retry, nullptr});
    orchestrator_ = std::make_unique<Orchestrator>(*client_, testing::Data());
    options_.protected_knobs = {"seed", "model"};
    options_.max_failed_turns = 2;
  }
  search::ProposalContext Ctx() {
    search::ProposalContext c;
    c.best = Config{{"threads", "4"}};
    c.stock = Config{};
    c.tried = {c.best.Hash(), Config{}.Hash()};
    c.cpus = 8;
    c.time_left_s = 3600;
    return c;
  }
  search::Observation Obs(const search::Candidate& c, Verdict verdict, double gain,
                          const std::string& failure = "") {
    search::Observation o;
    o.candidate = c;
    o.config = Ctx().best.Merged(c.delta);
    o.verdict = verdict;
    o.gain = gain;
    o.failure_kind = failure;
    return o;
  }

  std::unique_ptr<sys::TempDir> dir_;
  target::KnobCatalog catalog_;
  std::unique_ptr<testing::ScriptedEndpoint> ep_;
  Redactor redactor_;
  RealTransport transport_;
  hone::testing::FakeClock clock_;
  UsageMeter meter_{UsageLimits{}};
  std::unique_ptr<OpenAiBackend> backend_;
  std::unique_ptr<LlmClient> client_;
  std::unique_ptr<Orchestrator> orchestrator_;
  AgentProposerOptions options_;
};

std::optional<IdeaRejection> CheckOne(const target::KnobCatalog& cat, const search::ProposalContext& ctx,
                                      const AgentProposerOptions& o,
                                      std::vector<std::pair<std::string, std::string>> delta,
                                      std::set<std::string> excluded = {}) {
  IdeaProposal p;
  p.title = "t";
  p.delta = std::move(delta);
  Config out;
  return AgentProposer::Check(p, cat, ctx, o, excluded, &out);
}

TEST_F(AgentProposerTest, CheckNamesTheRuleForEveryInvalidIdea) {
  search::ProposalContext ctx = Ctx();
  auto rule = [&](std::vector<std::pair<std::string, std::string>> d, std::set<std::string> ex = {}) {
    auto r = CheckOne(catalog_, ctx, options_, std::move(d), std::move(ex));
    return r ? r->rule : std::string("valid");
  };
  EXPECT_EQ(rule({}), "agent.empty_delta");
  EXPECT_EQ(rule({{"warp_drive", "on"}}), "agent.unknown_knob");
  EXPECT_EQ(rule({{"seed", "7"}}), "agent.protected_knob");
  EXPECT_EQ(rule({{"numa", "distribute"}}), "agent.not_searchable");
  EXPECT_EQ(rule({{"gpu_layers", "99"}}), "agent.wrong_device");
  EXPECT_EQ(rule({{"threads", "lots"}}), "agent.bad_value");
  EXPECT_EQ(rule({{"threads", "0"}}), "agent.bad_value");
  EXPECT_EQ(rule({{"speed", "ludicrous"}}), "agent.bad_value");
  EXPECT_EQ(rule({{"threads", "4"}}), "agent.no_change");
  EXPECT_EQ(rule({{"speed", "fast"}, {"speed", "slow"}}), "agent.duplicate_knob");
  EXPECT_EQ(rule({{"batch", "512"}}, {"batch"}), "agent.excluded_knob");
  ctx.tried.insert(ctx.best.Merged(Config{{"speed", "fast"}}).Hash());
  EXPECT_EQ(rule({{"speed", "fast"}}), "agent.already_tried");
  EXPECT_EQ(rule({{"speed", "slow"}, {"batch", "512"}}), "valid");
  // The delta handed out is relative to the best: unchanged knobs are dropped.
  IdeaProposal p{"t", {{"threads", "4"}, {"speed", "slow"}}, "", 0, false};
  Config delta;
  EXPECT_FALSE(AgentProposer::Check(p, catalog_, ctx, options_, {}, &delta));
  EXPECT_EQ(delta.ToString(), "speed=slow");
}

TEST_F(AgentProposerTest, OnlyValidIdeasBecomeCandidatesAndRejectionsAreRemembered) {
  ep_->Push(OpenAiJson(Ideas({{{{"threads", "lots"}}, 50.0},
                              {{{"speed", "fast"}}, 20.0},
                              {{{"threads", "4"}}, 5.0},
                              {{{"batch", "512"}, {"threads", "8"}}, 10.0}})));
  options_.ideas_per_turn = 4;
  AgentProposer p(*orchestrator_, catalog_, options_);
  search::ProposalContext ctx = Ctx();
  auto a = p.Next(ctx);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->delta.ToString(), "speed=fast");
  EXPECT_EQ(a->idea, "agent:speed=fast");
  EXPECT_DOUBLE_EQ(a->expected_gain, 0.20);  // the claim, as a fraction
  auto b = p.Next(ctx);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->delta.ToString(), "batch=512 threads=8");
  ASSERT_EQ(p.rejections().size(), 2u);
  EXPECT_EQ(p.rejections()[0].rule, "agent.bad_value");
  EXPECT_EQ(p.rejections()[1].rule, "agent.no_change");
  EXPECT_EQ(ep_->count(), 1u);
  // The next turn tells the orchestrator what was rejected.
  ep_->Push(OpenAiJson(Ideas({})));
  EXPECT_FALSE(p.Next(ctx));  // no fallback: nothing more
  std::string prompt = json::parse(ep_->requests()[1].body)["messages"].back()["content"];
  EXPECT_NE(prompt.find("agent.bad_value"), std::string::npos) << prompt;
}

TEST_F(AgentProposerTest, UnknownKnobsAreSchemaRejectionsAndReAsked) {
  // The schema sent (and checked) lists only this catalog's searchable knobs.
  ep_->Push(OpenAiJson(Ideas({{{{"warp_drive", "on"}}, 1000.0}})));
  ep_->Push(OpenAiJson(Ideas({{{{"flash_attn", "on"}}, 5.0}})));
  AgentProposer p(*orchestrator_, catalog_, options_);
  auto c = p.Next(Ctx());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->delta.ToString(), "flash_attn=on");
  auto rej = client_->rejections();
  ASSERT_EQ(rej.size(), 1u);
  EXPECT_EQ(rej[0].kind, "schema_violation");
  json knob_enum = json::parse(ep_->requests()[0].body)["response_format"]["json_schema"]["schema"]["properties"]
                                                          ["ideas"]["items"]["properties"]["delta"]["items"]
                                                          ["properties"]["knob"]["enum"];
  EXPECT_EQ(knob_enum, json({"speed", "threads", "flash_attn", "batch"}));  // no seed, numa, gpu_layers
}

TEST_F(AgentProposerTest, LongMultibyteModelTextIsClippedSafely) {
  json ideas = Ideas({{{{"speed", "fast"}}, 10.0}});
  std::string title;
  for (int i = 0; i < 90; ++i) title += "\xD0\x96";  // 180 bytes of Cyrillic
  ideas["ideas"][0]["title"] = title;
  ideas["ideas"][0]["rationale"] = title + title;
  ep_->Push(OpenAiJson(ideas));
  AgentProposer p(*orchestrator_, catalog_, options_);
  auto c = p.Next(Ctx());
  ASSERT_TRUE(c);
  EXPECT_LE(c->title.size(), 100u);
  EXPECT_NO_THROW((void)json(c->title).dump());
  EXPECT_NO_THROW((void)json(c->rationale).dump());
  p.Observe(Obs(*c, Verdict::kRevert, -0.02));
  AgentProposer q(*orchestrator_, catalog_, options_);
  EXPECT_OK(q.Load(p.Save()));
}

TEST_F(AgentProposerTest, ClaimsLandInTheCalibrationTableOnly) {
  ep_->Push(OpenAiJson(Ideas({{{{"speed", "slow"}}, 900.0}})));
  AgentProposer p(*orchestrator_, catalog_, options_);
  auto c = p.Next(Ctx());
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->expected_gain, 9.0);
  p.Observe(Obs(*c, Verdict::kScreenedOut, -0.4));
  ASSERT_EQ(p.calibration().size(), 1u);
  EXPECT_DOUBLE_EQ(p.calibration()[0].claimed_gain, 9.0);
  EXPECT_DOUBLE_EQ(p.calibration()[0].measured_gain, -0.4);
  std::string table = FormatCalibrationTable(p.calibration());
  EXPECT_NE(table.find("| speed=slow | +900.0% | -40.0% | SCREENED_OUT |"), std::string::npos) << table;
  EXPECT_NE(table.find("mean absolute error of the claims: 940.0 points over 1 ideas"), std::string::npos) << table;
  EXPECT_NE(p.Describe().find("+900.0%"), std::string::npos);
}

TEST_F(AgentProposerTest, RejectedCredentialsHandOverToTheDeterministicPlanner) {
  ep_->Push({401, R"({"error":"bad key"})", {}, {}});
  search::CatalogProposer fallback(catalog_, {});
  AgentProposer p(*orchestrator_, catalog_, options_, &fallback);
  std::set<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    auto c = p.Next(Ctx());
    ASSERT_TRUE(c);
    EXPECT_FALSE(c->idea.starts_with("agent:")) << c->idea;
    EXPECT_TRUE(seen.insert(c->idea).second);
    p.Observe(Obs(*c, Verdict::kRevert, -0.01));
  }
  EXPECT_EQ(ep_->count(), 1u);  // one request, never another
  EXPECT_TRUE(p.agent_off());
  EXPECT_TRUE(p.calibration().empty());
  bool noted = false;
  for (const auto& n : p.notes()) noted = noted || n.find("deterministic planner continues") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST_F(AgentProposerTest, TurnsWithoutValidIdeasFallBack) {
  ep_->SetDefault(OpenAiJson(Ideas({{{{"threads", "-3"}}, 10.0}})));
  search::CatalogProposer fallback(catalog_, {});
  AgentProposer p(*orchestrator_, catalog_, options_, &fallback);
  auto c = p.Next(Ctx());
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->idea.starts_with("agent:"));
  EXPECT_EQ(ep_->count(), static_cast<size_t>(options_.max_failed_turns));
  EXPECT_EQ(p.rejections().size(), static_cast<size_t>(options_.max_failed_turns));
  // A new cycle gives the agent another chance.
  search::ProposalContext next = Ctx();
  next.cycle = 2;
  ep_->Push(OpenAiJson(Ideas({{{{"speed", "fast"}}, 10.0}})));
  auto d = p.Next(next);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->idea, "agent:speed=fast");
}

TEST_F(AgentProposerTest, StateSurvivesAResume) {
  ep_->Push(OpenAiJson(Ideas({{{{"speed", "fast"}}, 30.0}, {{{"batch", "256"}}, 5.0}})));
  search::CatalogProposer fb1(catalog_, {});
  AgentProposer p(*orchestrator_, catalog_, options_, &fb1);
  auto a = p.Next(Ctx());
  ASSERT_TRUE(a);
  p.Observe(Obs(*a, Verdict::kKeep, 0.12));
  std::string saved = p.Save();
  search::CatalogProposer fb2(catalog_, {});
  AgentProposer q(*orchestrator_, catalog_, options_, &fb2);
  ASSERT_OK(q.Load(saved));
  EXPECT_EQ(q.Save(), saved);
  auto b = q.Next(Ctx());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->delta.ToString(), "batch=256");  // from the saved queue, no new request
  EXPECT_EQ(ep_->count(), 1u);
  ASSERT_EQ(q.calibration().size(), 1u);
  EXPECT_DOUBLE_EQ(q.calibration()[0].measured_gain, 0.12);
  EXPECT_FALSE(q.Load("{not json"));
}

TEST_F(AgentProposerTest, ACrashLoopExcludesTheCrashingKnob) {
  ep_->Push(OpenAiJson(Ideas({{{{"batch", "8192"}}, 40.0},
                              {{{"batch", "4096"}}, 30.0},
                              {{{"batch", "2049"}}, 20.0},
                              {{{"batch", "1024"}}, 10.0},
                              {{{"speed", "fast"}}, 5.0}})));
  options_.ideas_per_turn = 5;
  Robustness robustness(nullptr, testing::Data());  // no model: the default recovery
  AgentProposer p(*orchestrator_, catalog_, options_, nullptr, &robustness);
  for (int i = 0; i < testing::Data().detectors.crash_streak; ++i) {
    auto c = p.Next(Ctx());
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->delta.Has("batch"));
    p.Observe(Obs(*c, Verdict::kLaunchFailed, 0, "out_of_memory"));
  }
  EXPECT_TRUE(p.excluded().contains("batch"));
  auto next = p.Next(Ctx());
  ASSERT_TRUE(next);
  EXPECT_EQ(next->delta.ToString(), "speed=fast");  // the queued batch=1024 was dropped
  auto names = p.Snapshot(Ctx()).knob_names;
  EXPECT_EQ(std::find(names.begin(), names.end(), "batch"), names.end());
  bool noted = false;
  for (const auto& n : p.notes()) noted = noted || n.find("recovery (default): exclude_knobs batch") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace hone::agent
