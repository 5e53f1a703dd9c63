#include "report/report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "core/strings.h"
#include "report/pareto.h"
#include "session/coordinator.h"
#include "testing/fake_executor.h"
#include "sys/files.h"
#include "testing/fake_clock.h"
#include "testing/test_util.h"

namespace hone::report {
namespace {

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-report");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    spec_.name = "r";
    spec_.target.model.path = "/m.gguf";
    spec_.workload.sweep_concurrency = {1, 4};
    exec_.clock = &clock_;
    exec_.run_dir = dir_->path().string();
    exec_.factors = {{"weights=q8_0", 1.5}, {"threads=1", 0.5}};
    exec_.crashes = {{"ubatch=9999", "bad_flag"}};
    exec_.inaccurate = {"weights=q4_0"};
    session::ListProposer p({"threads=1", "ubatch=9999", "weights=q4_0", "weights=q8_0"});
    session::SessionServices svc;
    svc.executor = &exec_;
    svc.proposer = &p;
    svc.clock = &clock_;
    svc.risky = [](const Config& delta) { return delta.Has("weights"); };
    session::Coordinator c(spec_, svc, session::Coordinator::NewState(spec_, dir_->path().string(), clock_));
    auto s = c.Run();
    ASSERT_TRUE(s);
    state_ = *s;
    in_.state = &state_;
    in_.spec = &spec_;
    in_.trials = LoadTrials(dir_->path().string());
    in_.best_command = "llama-server --model /m-q8_0.gguf";
    in_.hardware = "test-cpu";
    in_.model = "synth:small";
  }
  testing::FakeClock clock_;
  session::FakeExecutor exec_;
  spec::SessionSpec spec_;
  session::SessionState state_;
  ReportInput in_;
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(ReportTest, MarkdownCarriesTheOutcomeStagesAndEvidence) {
  std::string md = RenderMarkdown(in_);
  EXPECT_TRUE(md.find("**Validated gain: +49.") != std::string::npos || md.find("**Validated gain: +50.") != std::string::npos) << md.substr(0, 2000);
  EXPECT_NE(md.find("| framework (cycle 1) | +"), std::string::npos);
  EXPECT_NE(md.find("validated end to end (close)"), std::string::npos);
  EXPECT_NE(md.find("llama-server --model /m-q8_0.gguf"), std::string::npos);
  EXPECT_NE(md.find("**SCREENED_OUT**"), std::string::npos);
  EXPECT_NE(md.find("**LAUNCH_FAILED**"), std::string::npos);
  EXPECT_NE(md.find("**ACCURACY_FAILED**"), std::string::npos);
  EXPECT_NE(md.find("bad_flag"), std::string::npos);
  // Every trial is listed with its id.
  for (const auto& t : in_.trials) EXPECT_NE(md.find("| " + t.id + " |"), std::string::npos) << t.id;
  EXPECT_EQ(in_.trials.size(), static_cast<size_t>(state_.trials_run));
  ASSERT_FALSE(state_.sweep.empty());
  EXPECT_NE(md.find("## Sweep"), std::string::npos);
}

// The validated gain names the pairs that ran: the close validation is sequential and
// may run more than min_pairs (it used to print min_pairs whatever ran).
TEST_F(ReportTest, TheValidatedGainCountsThePairsThatRan) {
  ASSERT_TRUE(state_.validated);
  state_.validation_trials.clear();
  for (int i = 0; i < 12; ++i) state_.validation_trials.push_back("t9" + std::to_string(100 + i));
  std::string md = RenderMarkdown(in_);
  EXPECT_NE(md.find(", 6 interleaved pairs)."), std::string::npos) << md.substr(0, 1500);
}

TEST_F(ReportTest, HtmlIsSelfContainedWithPlots) {
  std::string html = RenderHtml(in_);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("aria-label='objective over trials'"), std::string::npos);
  EXPECT_NE(html.find("aria-label='throughput vs interactivity'"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no external asset
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("<table>"), std::string::npos);
}

// An infeasible SLO is said loudly, never as a silent "no gain": report.md (and so
// report.html) and summary.json name it with the closest configuration.
TEST_F(ReportTest, AnInfeasibleSloIsSaidInTheReportAndSummary) {
  spec_.objective.slos = {{"p90_itl_ms", false, 50}};
  state_.stock_slo = "p90_itl_ms = 60 violates p90_itl_ms <= 50 (pooled over 64 requests of 4 trials)";
  state_.slo_infeasible = "the SLO (p90_itl_ms <= 50) is infeasible here: ...; closest: stock";
  std::string md = RenderMarkdown(in_);
  EXPECT_NE(md.find("## SLO"), std::string::npos);
  EXPECT_NE(md.find("**SLO INFEASIBLE**"), std::string::npos);
  EXPECT_NE(md.find("| stock | p90_itl_ms = 60 violates p90_itl_ms <= 50 (pooled over 64 requests of 4 trials) |"),
            std::string::npos)
      << md;
  EXPECT_NE(RenderHtml(in_).find("SLO INFEASIBLE"), std::string::npos);
  auto j = nlohmann::json::parse(RenderSummaryJson(in_));
  EXPECT_EQ(j["slo"]["feasible"], false);
  EXPECT_EQ(j["slo"]["infeasible"], state_.slo_infeasible);
  spec_.objective.slos.clear();
  EXPECT_TRUE(nlohmann::json::parse(RenderSummaryJson(in_))["slo"].is_null());  // no SLO: no section
  EXPECT_EQ(RenderMarkdown(in_).find("## SLO"), std::string::npos);
}

// The accuracy gate's probes, thresholds and A/A spread reach report.md and
// summary.json, with every checked configuration; a nondeterministic stock is said.
TEST_F(ReportTest, TheAccuracyGateShowsThresholdsAndTheAaSpread) {
  measure::AccuracyGateInfo g;
  g.prepared = true;
  g.probes = "windows of a fixed text (700 tokens, tokenized by the server)";
  g.method = "teacher-forced greedy tokens with top-8 logprobs";
  g.positions = 128;
  g.aa_ran = true;
  g.aa_agreement = 0.95;
  g.aa_positions = 128;
  g.aa_kl = 0.002;
  g.kld_tool = true;
  g.min_agreement = 0.90;
  g.max_kld = 0.01;
  g.max_ppl_delta = 0.05;
  g.nondeterministic = true;
  g.note = "the stock's greedy outputs differ across restarts";
  state_.accuracy_gate = g;
  std::string md = RenderMarkdown(in_);
  EXPECT_NE(md.find("## Accuracy gate"), std::string::npos);
  EXPECT_NE(md.find("128 teacher-forced positions compared per check"), std::string::npos) << md;
  EXPECT_NE(md.find("top-1 agreement >= 90.0%"), std::string::npos) << md;
  EXPECT_NE(md.find("|PPL ratio - 1| <= 0.05"), std::string::npos) << md;
  EXPECT_NE(md.find("agreement 95.0% over 128 positions"), std::string::npos) << md;
  EXPECT_NE(md.find("**nondeterministic**"), std::string::npos) << md;
  // Every accuracy-checked candidate has a row (the fake's q4_0 fails it).
  EXPECT_NE(md.find("`weights=q4_0` | **FAIL** | token agreement 50% |"), std::string::npos) << md;
  auto j = nlohmann::json::parse(RenderSummaryJson(in_));
  EXPECT_EQ(j["accuracy_gate"]["positions"], 128);
  EXPECT_EQ(j["accuracy_gate"]["nondeterministic"], true);
  EXPECT_DOUBLE_EQ(j["accuracy_gate"]["aa_agreement"].get<double>(), 0.95);
  state_.accuracy_gate = {};  // accuracy off: no section, null in the summary
  EXPECT_EQ(RenderMarkdown(in_).find("## Accuracy gate"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(RenderSummaryJson(in_))["accuracy_gate"].is_null());
}

TEST_F(ReportTest, SummaryJsonAndFiles) {
  ASSERT_OK(WriteReports(in_, dir_->path().string()));
  auto text = sys::ReadFile(dir_->path() / "summary.json");
  ASSERT_OK(text);
  auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["schema"], "hone-summary/1");
  EXPECT_EQ(j["best"]["config"]["weights"], "q8_0");
  EXPECT_NEAR(j["validated"]["gain"].get<double>(), 0.5, 0.05);
  EXPECT_EQ(j["validated"]["trials"].size(), 6u);
  EXPECT_TRUE(sys::FileExists(dir_->path() / "report.md"));
  EXPECT_TRUE(sys::FileExists(dir_->path() / "report.html"));
  auto stages = BuildStages(in_);
  ASSERT_GE(stages.size(), 3u);
  EXPECT_EQ(stages.front().name, "baseline (stock)");
  EXPECT_EQ(stages.back().name, "validated end to end (close)");
}

// A kept source patch with the stock's flags is named as the patch everywhere a change
// is shown, never as "(stock)": the candidates, accuracy and stage tables, the close's
// row, and summary.json (the session with the specialist's slot patch said "(stock)").
TEST_F(ReportTest, AKeptPatchIsNamedNotShownAsTheStock) {
  session::SessionState s = state_;
  session::CandidateRecord c;
  c.id = "c009";
  c.patch = "s1-more-default-slots";
  c.verdict = Verdict::kKeep;
  c.gain = 0.266;
  c.pairs = 3;
  c.accuracy = "pass: patched build";
  c.server_binary = "/run/bin/llama-server-s1-more-default-slots";
  s.candidates.push_back(c);
  s.best = s.stock;
  s.server_binary = c.server_binary;
  s.close_accuracy = "pass: agreement 100%";
  ReportInput in = in_;
  in.state = &s;
  const std::string md = RenderMarkdown(in);
  EXPECT_NE(md.find("| c009 | framework c0 | `patch s1-more-default-slots` | **KEEP**"), std::string::npos) << md;
  EXPECT_NE(md.find("| c009 | `patch s1-more-default-slots` | pass |"), std::string::npos);
  EXPECT_NE(md.find("c009 patch s1-more-default-slots"), std::string::npos) << "the stage's evidence";
  EXPECT_NE(md.find("| close | best `(stock) on build llama-server-s1-more-default-slots` |"), std::string::npos);
  const auto j = nlohmann::json::parse(RenderSummaryJson(in));
  EXPECT_EQ(j["best"]["server_binary"], c.server_binary);
  EXPECT_EQ(j["candidates"].back()["patch"], "s1-more-default-slots");
  // A knob delta and a patch together show both.
  c.delta = Config{{"parallel", "8"}};
  EXPECT_EQ(c.Change(), "parallel=8 + patch s1-more-default-slots");
  EXPECT_EQ(session::BuildNote(""), "");
  EXPECT_EQ(session::BuildNote("/run/patch/slot/build/bin/llama-server"), " on build /run/patch/slot/build/bin/llama-server");
}

// The sweep's fronts and polygon-area index reach report.md and summary.json, computed
// from the sweep points the session measured.
TEST_F(ReportTest, SweepCarriesTheParetoFrontAndAreaIndex) {
  ASSERT_EQ(state_.sweep.size(), 2u);
  std::vector<FrontPoint> stock, best;
  for (const auto& p : state_.sweep) {
    ASSERT_TRUE(p.verdict.has_value());
    stock.push_back({p.stock_intvty, p.stock_tps});
    best.push_back({p.best_intvty, p.best_tps});
  }
  AreaIndex want = ComputeAreaIndex(stock, best);
  ASSERT_TRUE(want.index.has_value());
  EXPECT_GT(*want.index, 1.0);  // the fake's q8_0 is 1.5x at every point
  std::string md = RenderMarkdown(in_);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", *want.index);
  EXPECT_NE(md.find(std::string("polygon-area index (best / stock): ") + buf), std::string::npos) << md;
  auto j = nlohmann::json::parse(RenderSummaryJson(in_));
  EXPECT_EQ(j["sweep"]["points"].size(), 2u);
  EXPECT_NEAR(j["sweep"]["area_index"].get<double>(), *want.index, 1e-9);
  EXPECT_EQ(j["sweep"]["best_front"].size(), want.best_front.size());
  EXPECT_NE(RenderHtml(in_).find("<polyline"), std::string::npos);
  EXPECT_EQ(md.find("Operating points not measured"), std::string::npos) << "every point was measured";
  // Points the budget left out are named under the table.
  bool noted = false;
  for (auto& ph : state_.phases) {
    if (ph.phase != session::Phase::kSweep || ph.status != session::PhaseStatus::kDone) continue;
    ph.note = "2 of 3 operating points; not measured: c16 isl64 osl16 (budget)";
    noted = true;
  }
  ASSERT_TRUE(noted);
  EXPECT_NE(RenderMarkdown(in_).find("Operating points not measured: c16 isl64 osl16 (budget)."), std::string::npos);
}

// A sweep over c1/c4/c16 at ISL 128 / OSL 32 against p90_itl_ms <= 50: the stock
// (10 tok/s per unit of load) meets it up to c4, the best (15) everywhere.
void SloSweep(spec::SessionSpec& spec, session::SessionState& state) {
  spec.objective.slos = {{"p90_itl_ms", false, 50}};
  state.sweep.clear();
  for (int c : {1, 4, 16}) {
    session::SweepPointRecord p;
    p.concurrency = c;
    p.isl = 128;
    p.osl = 32;
    p.stock_tps = 10.0 * c;
    p.best_tps = 15.0 * c;
    p.stock_slo_excess = c <= 4 ? 0 : 0.6;
    p.best_slo_excess = 0;
    p.verdict = Verdict::kKeep;
    state.sweep.push_back(p);
  }
}

// "Max concurrency at SLO": the highest load of the grid at which each arm met the
// SLO, per ISL/OSL pair, in report.md and summary.json.
TEST_F(ReportTest, TheSweepNamesTheHighestLoadEachConfigSustainsWithinTheSlo) {
  SloSweep(spec_, state_);
  session::SweepPointRecord other;  // another ISL/OSL pair where the stock never meets it
  other.concurrency = 1;
  other.isl = 1024;
  other.osl = 8;
  other.stock_slo_excess = 0.2;
  other.best_slo_excess = 0;
  other.best_tps = 7;
  state_.sweep.push_back(other);
  auto loads = MaxLoadAtSlo(state_);
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0].stock_concurrency, 4);
  EXPECT_EQ(loads[0].best_concurrency, 16);
  EXPECT_DOUBLE_EQ(loads[0].best_tps, 240);
  EXPECT_FALSE(loads[1].stock_concurrency.has_value());
  std::string md = RenderMarkdown(in_);
  EXPECT_NE(md.find("- ISL 128 / OSL 32: stock c4 (40.0 tok/s), best c16 (240.0 tok/s)"), std::string::npos) << md;
  EXPECT_NE(md.find("- ISL 1024 / OSL 8: stock no grid point, best c1 (7.0 tok/s)"), std::string::npos) << md;
  auto j = nlohmann::json::parse(RenderSummaryJson(in_));
  EXPECT_EQ(j["sweep"]["max_concurrency_at_slo"][0]["stock"]["concurrency"], 4);
  EXPECT_TRUE(j["sweep"]["max_concurrency_at_slo"][1]["stock"].is_null());
  // Sweep points never checked against an SLO name no load.
  for (auto& p : state_.sweep) p.stock_slo_excess = p.best_slo_excess = -1;
  EXPECT_TRUE(MaxLoadAtSlo(state_).empty());
}

// Between grid points the sweep's bisection refines the stock's answer: c4 (grid) ->
// c6, with the probes that moved it named, in report.md and summary.json.
TEST_F(ReportTest, TheBisectedLoadAtSloRefinesTheGridsAnswer) {
  SloSweep(spec_, state_);
  session::SloLoadSearch l;
  l.isl = 128;
  l.osl = 32;
  l.arm = "stock";
  l.grid_lo = 4;
  l.grid_hi = 16;
  l.grid_lo_tps = 40;
  l.lo = 6;
  l.hi = 7;
  l.probes = {{10, {"t0090", "t0091", "t0092"}, false, 0.3, 70, "missed"},
              {7, {"t0093", "t0094", "t0095"}, false, 0.1, 65, "missed"},
              {5, {"t0096", "t0097", "t0098"}, true, 0, 50, "met"},
              {6, {"t0099", "t0100", "t0101"}, true, 0, 58, "met"}};
  state_.slo_loads = {l};
  auto loads = MaxLoadAtSlo(state_);
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0].stock_concurrency, 6);
  EXPECT_DOUBLE_EQ(loads[0].stock_tps, 58);
  EXPECT_EQ(loads[0].best_concurrency, 16);
  EXPECT_EQ(loads[0].best_search, nullptr);
  std::string md = RenderMarkdown(in_);
  EXPECT_NE(md.find("- ISL 128 / OSL 32: stock c6 (58.0 tok/s; bisected between c4 (met) and c16 (missed): c10 "
                    "missed, c7 missed, c5 met, c6 met), best c16 (240.0 tok/s)"),
            std::string::npos)
      << md;
  auto j = nlohmann::json::parse(RenderSummaryJson(in_));
  const auto& stock = j["sweep"]["max_concurrency_at_slo"][0]["stock"];
  EXPECT_EQ(stock["concurrency"], 6);
  EXPECT_EQ(stock["bisection"]["grid_met"], 4);
  EXPECT_EQ(stock["bisection"]["missed"], 7);
  ASSERT_EQ(stock["bisection"]["probes"].size(), 4u);
  EXPECT_EQ(stock["bisection"]["probes"][3]["trials"][2], "t0101");
  // Stopped early: the words say where and why.
  state_.slo_loads[0].probes.resize(2);
  state_.slo_loads[0].lo = 4;
  state_.slo_loads[0].note = "budget";
  md = RenderMarkdown(in_);
  EXPECT_NE(md.find("c10 missed, c7 missed; stopped at c4..c7 (budget)"), std::string::npos) << md;
}

// Text from servers (log excerpts in reasons), agents (ideas, knob values, critic
// notes, their summary) and diffs (patch names) is data: in report.html it never
// becomes markup, never ends its table cell, list item or code block.
TEST_F(ReportTest, UntrustedTextNeverBecomesMarkup) {
  // The clean report has every section the hostile one has.
  state_.candidates[0].patch = "fix.diff";
  state_.kb_result = "recorded";
  state_.agents = "agent said: ok\n";
  in_.search_summary = "planner\n";
  const std::string clean = RenderHtml(in_);
  const std::string clean_md = RenderMarkdown(in_);
  const std::string evil = "<script>alert(\"x\")</script>'\"><img src=x onerror=alert(1)>|`**\n## injected\n```\n</pre>";
  ASSERT_GE(state_.candidates.size(), 2u);
  for (auto& c : state_.candidates) {
    c.idea = evil;
    c.reason = "server log: " + evil;
    c.critic = evil;
    c.accuracy = evil;
    c.rationale = evil;
    c.delta.Set("threads", evil);
  }
  state_.candidates[0].patch = "fix.diff" + evil;
  state_.phases.back().note = evil;
  state_.stop_reason = evil;
  state_.kb_result = evil;
  state_.best.Set("ubatch", evil);
  state_.agents = "agent said:\n" + evil + "\n```\n<script>late()</script>\n";
  in_.search_summary = "````\n" + evil;
  in_.best_command = "llama-server ```\n" + evil;
  for (auto& t : in_.trials) {
    t.config.Set("threads", evil);
    t.failure_kind = evil;
    t.failure_detail = evil;  // a server's log excerpt (the role is hone's own enum)
    t.injected = evil;
  }
  const std::string html = RenderHtml(in_);
  // Only hone's own tags, never one from the text.
  const std::set<std::string> allowed = {"!doctype", "html", "head", "meta", "title", "style", "body", "h1", "h2",
                                         "p", "b", "code", "pre", "table", "tr", "th", "td", "ul", "li", "svg",
                                         "rect", "line", "circle", "text", "polyline", "path", "g"};
  for (size_t at = html.find('<'); at != std::string::npos; at = html.find('<', at + 1)) {
    size_t end = html.find_first_of(" >/", at + 2);
    std::string tag = ToLower(html.substr(at + 1, end - at - 1));
    if (tag.starts_with("/")) tag = tag.substr(1);
    EXPECT_TRUE(allowed.contains(tag)) << "tag <" << tag << "> at " << html.substr(at, 60);
  }
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;"), std::string::npos);
  // The structure is the clean report's: same headings, same code blocks, and every
  // candidate row still has its eleven cells.
  auto count = [](const std::string& h, const std::string& what) {
    size_t n = 0;
    for (size_t at = h.find(what); at != std::string::npos; at = h.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(html, "<h2>"), count(clean, "<h2>"));
  EXPECT_EQ(count(html, "<pre>"), count(clean, "<pre>"));
  EXPECT_EQ(count(html, "<pre>"), count(html, "</pre>"));
  EXPECT_EQ(count(html, "<table>"), count(clean, "<table>"));
  size_t cand = html.find("<h2>Candidates</h2>");
  ASSERT_NE(cand, std::string::npos);
  std::string table = html.substr(cand, html.find("</table>", cand) - cand);
  for (size_t at = table.find("<tr>"); at != std::string::npos; at = table.find("<tr>", at + 1)) {
    std::string row = table.substr(at, table.find("</tr>", at) - at);
    EXPECT_EQ(count(row, "<td>") + count(row, "<th>"), 11u) << row.substr(0, 300);
  }
  // The Markdown carries the same guarantees: the text starts no heading outside its
  // code blocks, and every line of a table is a row of it.
  std::string md = RenderMarkdown(in_);
  std::string fence;
  int headings = 0;
  for (const std::string& line : Split(md, '\n')) {
    if (fence.empty() && line.starts_with("```")) {
      fence = line.substr(0, line.find_first_not_of('`'));
    } else if (!fence.empty() && line == fence) {
      fence.clear();
    } else if (fence.empty() && line.starts_with("#")) {
      ++headings;
    }
  }
  EXPECT_EQ(headings, static_cast<int>(count(clean_md, "\n## ") + count(clean_md, "\n# ") + 1));
}

}  // namespace
}  // namespace hone::report
