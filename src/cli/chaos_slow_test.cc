// hone under faults, as a user would meet them, on the real binary: a representative
// subset of the chaos suite (scripts/chaos.sh runs all of it and writes the table in
// docs/reliability.md). A session against a real llama-server whose trials meet a
// dropped stream and a killed server; kill -9 of `hone run` at several moments, each
// followed by `hone resume`, against an uninterrupted session on the same scripted
// measurements; a knowledge base locked by another process; a damaged state.json and
// event log. Tests assert behaviour, never timing.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/strings.h"
#include "kb/sqlite.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

std::string Hone() { return (testing::BinaryDir() / "src/cli/hone").string(); }

sys::CommandOutput RunHone(std::vector<std::string> args, std::map<std::string, std::string> env,
                           std::chrono::milliseconds timeout = 300s) {
  args.insert(args.begin(), Hone());
  auto out = sys::RunCommand({.argv = args, .env = std::move(env)}, timeout);
  EXPECT_TRUE(out) << out.error().ToString();
  return out ? *out : sys::CommandOutput{};
}

json ReadJson(const fs::path& p) {
  auto text = sys::ReadFile(p);
  return text ? json::parse(*text, nullptr, false) : json();
}

bool Alive(int pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  auto stat = sys::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  return !(stat && Contains(*stat, ") Z "));
}

// Pids of the stand-in servers a scripted session started that are still running
// `within` after the question (the guard needs its TERM->KILL grace).
std::vector<int> Survivors(const fs::path& run_dir, std::chrono::milliseconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  while (true) {
    std::vector<int> alive;
    for (const std::string& line : Split(sys::ReadFile(run_dir / "scripted-servers.pids").value_or(""), '\n')) {
      if (auto pid = ParseInt(line); pid && Alive(static_cast<int>(*pid))) alive.push_back(static_cast<int>(*pid));
    }
    if (alive.empty() || std::chrono::steady_clock::now() > deadline) return alive;
    std::this_thread::sleep_for(50ms);
  }
}

// state.json's trial count (-1 without one).
int TrialsRun(const fs::path& run) {
  json s = ReadJson(run / "state.json");
  return s.is_object() ? s.value("trials_run", 0) : -1;
}

// Waits until the session in `run` has run more than `trials` trials (or `hone` ended).
void WaitForProgress(sys::ChildProcess& hone, const fs::path& run, int trials) {
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while (!hone.Poll() && TrialsRun(run) <= trials && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
}

// The decided candidates of a state: id -> "idea/delta: VERDICT".
std::map<std::string, std::string> Decided(const json& state) {
  std::map<std::string, std::string> out;
  if (!state.is_object()) return out;
  for (const auto& c : state["candidates"]) {
    std::string v = c.value("verdict", "PENDING");
    if (v != "PENDING") out[c.value("id", "")] = c["delta"].dump() + ": " + v;
  }
  return out;
}

// A scripted session's spec: the tiny model, one operating point, three pairs;
// `budget` and `search` are the insides of those sections, `kb` the knowledge base's
// path (none: disabled).
std::string ScriptedSpec(const std::string& name, const std::string& budget, const std::string& search,
                         const std::string& kb) {
  return "name: " + name + R"(
target:
  adapter: llama.cpp
  model: {preset: tiny, seed: 42}
workload: {kind: fixed, isl: 64, osl: 16, concurrency: 1, num_prompts: 4, warmups: 0}
objective: {metric: total_tps_per_gpu}
budget: {)" + budget + R"(}
measurement: {min_pairs: 3, max_pairs: 3, aa_pairs: 2}
search: {)" + search + "}\n" +
         (kb.empty() ? "kb: {enabled: false}\n" : "kb: {path: " + kb + "}\n");
}

class ChaosTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HONE_REQUIRE_LLAMA();  // sessions wire the provisioned engine even when scripted
    auto d = sys::TempDir::Create("hone-chaos");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  fs::path Path(const std::string& n) { return dir_->path() / n; }

  // A scripted session: measurements from a file, stand-in servers, no knowledge base
  // unless `kb` names one.
  std::map<std::string, std::string> Scripted(const std::string& kb = "") {
    EXPECT_OK(sys::WriteFileAtomic(Path("measurements.json"), R"({"base": 100, "noise": 0.01, "seed": 7,
      "trial_ms": 120, "factors": {"threads=1": 0.6, "poll=0": 1.12}})"));
    EXPECT_OK(sys::WriteFileAtomic(Path("scripted.yaml"),
                                   ScriptedSpec("scripted", "wall: 30m, max_cycles: 1", "knobs: [threads, poll]", kb)));
    return {{"HONE_TEST_EXECUTOR", Path("measurements.json").string()}};
  }

  std::unique_ptr<sys::TempDir> dir_;
};

// kill -9 of `hone run` at several moments, each followed by `hone resume`: nothing
// validated is lost, no stand-in server survives its hone, and the final verdicts are
// those of an uninterrupted session on the same measurements.
TEST_F(ChaosTest, KillNineAndResumeLoseNothing) {
  auto env = Scripted();
  auto ref = RunHone({"run", Path("scripted.yaml").string(), "--out", Path("ref").string()}, env);
  ASSERT_EQ(ref.status.code, 0) << ref.output;
  const json want = ReadJson(Path("ref") / "state.json");
  ASSERT_FALSE(Decided(want).empty());

  const fs::path run = Path("killed");
  std::map<std::string, std::string> seen;  // every verdict a saved state ever held
  int kills = 0;
  for (int round = 0; round < 12 && kills < 4; ++round) {
    std::vector<std::string> argv = {Hone()};
    if (round == 0) {
      argv.insert(argv.end(), {"run", Path("scripted.yaml").string(), "--out", run.string()});
    } else {
      argv.insert(argv.end(), {"resume", run.string()});
    }
    const int before = TrialsRun(run);
    ASSERT_OK_AND_ASSIGN(auto hone, sys::ChildProcess::Start({.argv = argv, .env = env}));
    // Moments: one while hone is still wiring (engine, model, probes), the others
    // once the session has moved on since the last kill, a while later.
    if (round % 4 == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300 + (370 * round) % 1200));
    } else {
      WaitForProgress(*hone, run, before);
      std::this_thread::sleep_for(std::chrono::milliseconds((370 * round) % 900));
    }
    if (hone->Poll()) break;  // finished before the kill
    ASSERT_EQ(kill(hone->pid(), SIGKILL), 0);
    ASSERT_OK(hone->WaitFor(10s));
    ++kills;
    EXPECT_TRUE(Survivors(run, 8s).empty()) << "a stand-in server outlived its killed hone";
    for (const auto& [id, v] : Decided(ReadJson(run / "state.json"))) seen[id] = v;
  }
  EXPECT_GE(kills, 2);
  auto done = RunHone({"resume", run.string()}, env);
  ASSERT_EQ(done.status.code, 0) << done.output;
  const json got = ReadJson(run / "state.json");
  EXPECT_EQ(got["phase"], "done");
  const auto final_verdicts = Decided(got);
  for (const auto& [id, v] : seen) EXPECT_EQ(final_verdicts.count(id) ? final_verdicts.at(id) : "lost", v) << id;
  EXPECT_EQ(final_verdicts, Decided(want));
  EXPECT_EQ(got["best"], want["best"]);
  EXPECT_EQ(got["validation_verdict"], want["validation_verdict"]);
  EXPECT_TRUE(Survivors(run, 0ms).empty());
}

// Damage from outside hone: a truncated state.json resumes from the previous save,
// a garbled event line is named and skipped; both loudly, and the session closes.
// With no whole previous save, resume is a clear error.
TEST_F(ChaosTest, DamagedStateAndEventLogAreRecoveredLoudly) {
  auto env = Scripted();
  const fs::path run = Path("damaged");
  ASSERT_OK_AND_ASSIGN(auto hone, sys::ChildProcess::Start(
                                      {.argv = {Hone(), "run", Path("scripted.yaml").string(), "--out", run.string()},
                                       .env = env}));
  WaitForProgress(*hone, run, 12);
  kill(hone->pid(), SIGKILL);
  ASSERT_OK(hone->WaitFor(10s));
  ASSERT_TRUE(sys::FileExists(run / "state.json.prev"));
  auto state = sys::ReadFile(run / "state.json");
  ASSERT_OK(sys::WriteFileAtomic(run / "state.json", state->substr(0, state->size() / 2)));
  auto events = Split(*sys::ReadFile(run / "events.jsonl"), '\n');
  ASSERT_GT(events.size(), 6u);
  events[3] = events[3].substr(0, events[3].size() / 2) + "\x01garbage";
  ASSERT_OK(sys::WriteFileAtomic(run / "events.jsonl", Join(events, "\n")));
  auto resumed = RunHone({"resume", run.string()}, env);
  ASSERT_EQ(resumed.status.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("state.json is damaged"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("events.jsonl: line 4 not a whole event"), std::string::npos) << resumed.output;
  EXPECT_EQ(ReadJson(run / "state.json")["phase"], "done");
  EXPECT_TRUE(sys::FileExists(run / "report.html"));

  ASSERT_OK(sys::WriteFileAtomic(run / "state.json", "{\"version\":"));
  ASSERT_OK(sys::WriteFileAtomic(run / "state.json.prev", "garbage"));
  auto broken = RunHone({"resume", run.string()}, env);
  EXPECT_EQ(broken.status.code, 1);
  EXPECT_NE(broken.output.find("state.json is damaged"), std::string::npos) << broken.output;
  EXPECT_NE(broken.output.find("cannot be resumed"), std::string::npos) << broken.output;
}

// A knowledge base locked by another process for the whole session: the session
// closes, says so, and keeps the recipe beside the run, importable later.
TEST_F(ChaosTest, ALockedKnowledgeBaseKeepsTheRecipe) {
  const std::string kb_path = Path("kb.sqlite").string();
  auto env = Scripted(kb_path);
  ASSERT_OK_AND_ASSIGN(kb::SqliteDb holder, kb::SqliteDb::Open(kb_path, 1000ms));
  ASSERT_OK(holder.Exec("CREATE TABLE IF NOT EXISTS x(a); BEGIN EXCLUSIVE; INSERT INTO x VALUES (1);"));
  auto run = RunHone({"run", Path("scripted.yaml").string(), "--out", Path("locked").string()}, env);
  ASSERT_EQ(run.status.code, 0) << run.output;
  const json state = ReadJson(Path("locked") / "state.json");
  const std::string kb_result = state.value("kb_result", "");
  EXPECT_NE(kb_result.find("knowledge base unavailable"), std::string::npos) << kb_result;
  EXPECT_NE(kb_result.find("kb-pending.jsonl"), std::string::npos) << kb_result;
  ASSERT_TRUE(sys::FileExists(Path("locked") / "kb-pending.jsonl"));
  ASSERT_OK(holder.Exec("COMMIT;"));
  auto imported = RunHone({"kb", "import", (Path("locked") / "kb-pending.jsonl").string(), "--kb", kb_path}, {}, 60s);
  EXPECT_EQ(imported.status.code, 0) << imported.output;
  EXPECT_NE(imported.output.find("1 added"), std::string::npos) << imported.output;
}

// The same when the session admits no recipe and the knowledge base stays locked: the
// stock's record (what it learned) is kept beside the run, importable later.
TEST_F(ChaosTest, ALockedKnowledgeBaseKeepsTheStocksRecordBesideTheRun) {
  const std::string kb_path = Path("kb.sqlite").string();
  ASSERT_OK(sys::WriteFileAtomic(Path("measurements.json"), R"({"base": 100, "noise": 0.01, "seed": 7,
    "trial_ms": 100, "factors": {"threads=1": 0.6}, "launch_failures": {"poll=0": "context_create"}})"));
  ASSERT_OK(sys::WriteFileAtomic(
      Path("stock.yaml"), ScriptedSpec("stock", "wall: 30m, max_cycles: 1, max_trials: 40", "knobs: [threads, poll]", kb_path)));
  ASSERT_OK_AND_ASSIGN(kb::SqliteDb holder, kb::SqliteDb::Open(kb_path, 1000ms));
  ASSERT_OK(holder.Exec("CREATE TABLE IF NOT EXISTS x(a); BEGIN EXCLUSIVE; INSERT INTO x VALUES (1);"));
  auto run = RunHone({"run", Path("stock.yaml").string(), "--out", Path("locked").string()},
                     {{"HONE_TEST_EXECUTOR", Path("measurements.json").string()}});
  ASSERT_EQ(run.status.code, 0) << run.output;
  const json state = ReadJson(Path("locked") / "state.json");
  EXPECT_EQ(state["best"], state["stock"]);
  const std::string kb_result = state.value("kb_result", "");
  EXPECT_TRUE(kb_result.starts_with("nothing to record: the stock configuration won; what it learned is kept in " +
                                    (Path("locked") / "kb-pending.jsonl").string() +
                                    " (the knowledge base was unavailable: "))
      << kb_result;
  ASSERT_OK(holder.Exec("COMMIT;"));
  auto imported = RunHone({"kb", "import", (Path("locked") / "kb-pending.jsonl").string(), "--kb", kb_path}, {}, 60s);
  EXPECT_EQ(imported.status.code, 0) << imported.output;
  auto shown = RunHone({"kb", "show", "1", "--kb", kb_path}, {}, 60s);
  EXPECT_NE(shown.output.find("crashed  poll=0 (context_create"), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find("never replayed"), std::string::npos) << shown.output;
}

// A best the close could not confirm (INCONCLUSIVE: the rules refuse it) with a knowledge
// base that is not there: no recipe is kept beside the run, but what the session learned
// (a value that did not launch) is, as the stock's record, importable later.
TEST_F(ChaosTest, AnUnavailableKnowledgeBaseKeepsTheStocksRecordOfARefusedBest) {
  const std::string junk = Path("junk.sqlite").string();
  ASSERT_OK(sys::WriteFileAtomic(junk, std::string(3000, 'j')));
  // Deterministic measurements (seed 2): threads=1 is kept in the search at +12%, its
  // three pairs at the close at 4% noise do not prove it; poll=0 never launches.
  ASSERT_OK(sys::WriteFileAtomic(Path("measurements.json"), R"({"base": 100, "noise": 0.04, "seed": 2,
    "trial_ms": 50, "factors": {"threads=1": 1.12}, "launch_failures": {"poll=0": "context_create"}})"));
  ASSERT_OK(sys::WriteFileAtomic(
      Path("refused.yaml"), ScriptedSpec("refused", "wall: 30m, max_cycles: 1, max_trials: 60", "knobs: [threads, poll]", junk)));
  const fs::path run_dir = Path("refused");
  auto run = RunHone({"run", Path("refused.yaml").string(), "--out", run_dir.string()},
                     {{"HONE_TEST_EXECUTOR", Path("measurements.json").string()}});
  ASSERT_EQ(run.status.code, 0) << run.output;
  const json state = ReadJson(run_dir / "state.json");
  ASSERT_EQ(state.value("validation_verdict", ""), "INCONCLUSIVE") << state.dump().substr(0, 600);
  const std::string kb_result = state.value("kb_result", "");
  EXPECT_TRUE(kb_result.starts_with("not admitted: verdict is not KEEP (the knowledge base was unavailable anyway: "))
      << kb_result;
  EXPECT_NE(kb_result.find("; what it learned is kept in " + (run_dir / "kb-pending.jsonl").string()), std::string::npos)
      << kb_result;
  const std::string kb_path = Path("kb.sqlite").string();
  auto imported = RunHone({"kb", "import", (run_dir / "kb-pending.jsonl").string(), "--kb", kb_path}, {}, 60s);
  EXPECT_EQ(imported.status.code, 0) << imported.output;
  auto shown = RunHone({"kb", "show", "1", "--kb", kb_path}, {}, 60s);
  EXPECT_NE(shown.output.find("crashed  poll=0 (context_create"), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find("never replayed"), std::string::npos) << shown.output;
}

// A session interrupted (Ctrl-C) after a KEEP closes without re-validating its best, so
// it admits no recipe; what it learned on the way (a value that did not launch) is kept
// all the same, as the stock's record, and the next session holds it against the value.
TEST_F(ChaosTest, AnInterruptedSessionKeepsWhatItLearned) {
  const std::string kb_path = Path("kb.sqlite").string();
  ASSERT_OK(sys::WriteFileAtomic(Path("measurements.json"), R"({"base": 100, "noise": 0.01, "seed": 7,
    "trial_ms": 150, "factors": {"poll=0": 1.3}, "launch_failures": {"threads=1": "context_create"}})"));
  const std::string search = "knobs: [threads, poll, ubatch_size], plateau: 0";
  ASSERT_OK(sys::WriteFileAtomic(Path("interrupted.yaml"),
                                 ScriptedSpec("interrupted", "wall: 30m, max_cycles: 1", search, kb_path)));
  ASSERT_OK(sys::WriteFileAtomic(
      Path("next.yaml"), ScriptedSpec("interrupted", "wall: 30m, max_cycles: 1, max_trials: 40", search, kb_path)));
  const std::map<std::string, std::string> env = {{"HONE_TEST_EXECUTOR", Path("measurements.json").string()}};
  const fs::path run = Path("run");
  ASSERT_OK_AND_ASSIGN(auto hone, sys::ChildProcess::Start(
                                      {.argv = {Hone(), "run", Path("interrupted.yaml").string(), "--out", run.string()},
                                       .env = env}));
  // Interrupted once it kept poll=0 and saw threads=1 fail to launch.
  auto kept_and_failed = [&] {
    std::set<std::string> verdicts;
    for (const auto& [id, decided] : Decided(ReadJson(run / "state.json"))) {
      verdicts.insert(decided.substr(decided.rfind(": ") + 2));
    }
    return verdicts.contains("KEEP") && verdicts.contains("LAUNCH_FAILED");
  };
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while (!hone->Poll() && !kept_and_failed() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_FALSE(hone->Poll()) << "the session closed before it could be interrupted: " << hone->OutputTail(4000);
  ASSERT_EQ(kill(hone->pid(), SIGINT), 0);
  ASSERT_OK(hone->WaitFor(60s));
  json state = ReadJson(run / "state.json");
  ASSERT_TRUE(state.is_object());
  EXPECT_TRUE(state.value("interrupted", false));
  EXPECT_EQ(state.value("phase", ""), "done");
  EXPECT_NE(state["best"], state["stock"]);  // poll=0 was kept, never re-validated
  const std::string kb_result = state.value("kb_result", "");
  EXPECT_TRUE(kb_result.starts_with("not recorded: the best configuration was not re-validated at close; what it "
                                    "learned is kept: new stock record #1 ("))
      << kb_result;
  auto shown = RunHone({"kb", "show", "1", "--kb", kb_path}, {}, 60s);
  ASSERT_EQ(shown.status.code, 0) << shown.output;
  EXPECT_NE(shown.output.find("crashed  threads=1 (context_create"), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find("not recorded: the best configuration was not re-validated at close"), std::string::npos)
      << shown.output;
  auto listed = RunHone({"kb", "list", "--kb", kb_path}, {}, 60s);
  EXPECT_NE(listed.output.find("(the stock's record: "), std::string::npos) << listed.output;
  EXPECT_EQ(listed.output.find(" active "), std::string::npos) << listed.output;  // nothing to replay

  // The next session never launches threads=1 alone.
  auto next = RunHone({"run", Path("next.yaml").string(), "--out", Path("next").string()}, env);
  state = ReadJson(Path("next") / "state.json");
  ASSERT_TRUE(state.is_object()) << next.output;
  for (const auto& c : state["candidates"]) {
    EXPECT_NE(c["delta"], json({{"threads", "1"}})) << c.dump();
  }
  EXPECT_NE(sys::ReadFile(Path("next") / "report.md").value_or("").find("threads=1: knowledge base: did not launch here"),
            std::string::npos);
}

// A real llama-server session whose trials meet faults: the first A/A trial's server
// is SIGKILLed mid-benchmark, the first candidate trial's streams are dropped. Each
// faulted trial is classified, measured again, never used in a verdict; the session
// closes with a report that names the faults, and no server survives.
TEST_F(ChaosTest, ARealSessionMeetsAKilledServerAndDroppedStreams) {
  ASSERT_OK(sys::WriteFileAtomic(Path("plan.json"), R"({"faults": [
    {"role": "aa", "nth": 1, "fault": "kill_server", "at_request": 3},
    {"role": "candidate", "nth": 1, "fault": "drop_mid_stream", "after_events": 2, "count": 2}]})"));
  ASSERT_OK(sys::WriteFileAtomic(Path("real.yaml"), R"(name: chaos
target:
  adapter: llama.cpp
  model: {preset: tiny, seed: 42}
workload: {kind: fixed, isl: 64, osl: 24, concurrency: 2, num_prompts: 16, warmups: 1}
objective: {metric: total_tps_per_gpu}
accuracy: {enabled: false}
budget: {wall: 15m, max_cycles: 1}
measurement: {min_pairs: 2, max_pairs: 2, aa_pairs: 2, screen: false, request_timeout: 10s}
search: {knobs: [poll]}
kb: {enabled: false}
)"));
  auto r = RunHone({"run", Path("real.yaml").string(), "--out", Path("real").string()},
                   {{"HONE_CHAOS_PLAN", Path("plan.json").string()}}, 900s);
  ASSERT_EQ(r.status.code, 0) << r.output;
  const fs::path run = Path("real");
  const json state = ReadJson(run / "state.json");
  EXPECT_EQ(state["phase"], "done");
  std::map<std::string, json> trials;
  for (const auto& e : fs::directory_iterator(run / "trials")) {
    json t = ReadJson(e.path() / "outcome.json");
    if (t.is_object()) trials[t["id"]] = t;
  }
  std::vector<std::string> used;  // every trial a verdict or the baseline used
  for (const char* k : {"baseline_trials", "aa_trials", "validation_trials"}) {
    for (const auto& id : state[k]) used.push_back(id);
  }
  for (const auto& c : state["candidates"]) {
    for (const char* k : {"incumbent_trials", "candidate_trials"}) {
      for (const auto& id : c[k]) used.push_back(id);
    }
  }
  int injected = 0;
  for (const auto& [id, t] : trials) {
    EXPECT_FALSE(Alive(t.value("server_pid", 0))) << id << "'s server survived";
    const std::string what = t.value("injected", "");
    if (what.empty()) continue;
    ++injected;
    const std::string faults = t["faults"].dump();
    if (what.starts_with("kill_server")) {
      EXPECT_TRUE(Contains(faults, "server_exited") || Contains(faults, "connection_")) << id << " " << faults;
    } else {
      EXPECT_TRUE(Contains(faults, "connection_reset")) << id << " " << faults;
    }
    EXPECT_FALSE(t["valid"].get<bool>());
    EXPECT_EQ(std::count(used.begin(), used.end(), id), 0) << id << " was used in a verdict";
    bool retried = false;
    for (const auto& [other, u] : trials) retried = retried || u.value("retry_of", "") == id;
    EXPECT_TRUE(retried) << id << " was not measured again";
  }
  EXPECT_EQ(injected, 2);
  auto report = sys::ReadFile(run / "report.md");
  ASSERT_OK(report);
  EXPECT_NE(report->find("## Faults"), std::string::npos);
  EXPECT_NE(report->find("kill_server x1"), std::string::npos) << *report;
  EXPECT_NE(report->find("drop_mid_stream x"), std::string::npos);
}

}  // namespace
}  // namespace hone
