// Fleets as a user runs them, with real sessions on llama-server:
//  - on the local executor: a real session closes and a broken one is retried once
//    (resumed) and then recorded as failed, with the fleet table written;
//  - through a one-node Slurm cluster with the PostgreSQL knowledge base
//    (scripts/test-services.sh): three tiny workloads of examples/fleet-cpu.yaml,
//    one of whose jobs loses its node mid-run, is requeued by Slurm and resumes its
//    session; every session closes and the fleet report says so.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/strings.h"
#include "fleet/driver.h"
#include "fleet/record.h"
#include "kb/store.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/kb_postgres.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone::fleet {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string Hone() { return (::hone::testing::BinaryDir() / "src/cli/hone").string(); }

nlohmann::json LoadJson(const std::string& path) {
  auto text = sys::ReadFile(path);
  return text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
}

sys::CommandOutput RunCmd(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = 60s) {
  auto out = sys::RunCommand({.argv = argv}, timeout);
  EXPECT_TRUE(out) << out.error().ToString();
  return out ? *out : sys::CommandOutput{};
}

class FleetSlowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-fleet-slow");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  std::string Path(const std::string& n) { return (dir_->path() / n).string(); }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(FleetSlowTest, ALocalFleetRunsUnattendedAndRecordsAFailureAfterItsRetry) {
  HONE_REQUIRE_LLAMA();
  std::string fleet = R"(name: local-test
kb: {path: )" + Path("kb.sqlite") + R"(}
resources: {cpus: 2}
defaults:
  accuracy: {probes: 2, probe_tokens: 4}
  measurement: {min_pairs: 3, max_pairs: 3, aa_pairs: 2}
  search: {knobs: [threads]}
workloads:
  - model: {preset: tiny}
    precision: f16
    workload: {name: fixed, isl: 32, osl: 8, concurrency: 2, num_prompts: 4, warmups: 1}
    budget: 60s
  - name: broken
    model: )" + Path("absent.gguf") + R"(
    budget: 60s
)";
  ASSERT_OK(sys::WriteFileAtomic(Path("fleet.yaml"), fleet));
  std::string out_dir = Path("fleet");
  auto r = RunCmd({Hone(), "fleet", "run", Path("fleet.yaml"), "--out", out_dir}, 600s);
  SCOPED_TRACE(LastLines(r.output, 60));
  EXPECT_EQ(r.status.code, 1);  // a session failed
  EXPECT_TRUE(Contains(r.output, "| # | session | workload | engine | size | precision |")) << r.output;
  nlohmann::json report = LoadJson(out_dir + "/fleet-report.json");
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["summary"]["sessions"], 2);
  EXPECT_EQ(report["summary"]["closed"], 1);
  EXPECT_EQ(report["summary"]["failed"], 1);
  for (const auto& s : report["sessions"]) {
    std::string name = s["session"];
    if (name == "tiny-f16-fixed") {
      EXPECT_EQ(s["status"], "done");
      EXPECT_GT(s["trials"].get<int>(), 3);
      EXPECT_TRUE(s["validated_ratio"].is_number());
      EXPECT_TRUE(fs::exists(out_dir + "/runs/tiny-f16-fixed/report.md"));
      // The job ran pinned to its share of the host.
      auto log = sys::ReadFile(out_dir + "/logs/tiny-f16-fixed.log");
      ASSERT_TRUE(log);
      EXPECT_TRUE(Contains(*log, "hone fleet job: tiny-f16-fixed attempt 1 (run)")) << *log;
    } else {
      EXPECT_EQ(name, "broken-absent-fixed");
      EXPECT_EQ(s["status"], "failed");
      EXPECT_EQ(s["attempts"], 2);  // the first attempt and one retry
      EXPECT_TRUE(Contains(s["reason"].get<std::string>(), "model file not found")) << s["reason"];
    }
  }
  auto status = RunCmd({Hone(), "fleet", "status", out_dir});
  EXPECT_EQ(status.status.code, 0);
  EXPECT_TRUE(Contains(status.output, "1/2 closed, 1 failed")) << status.output;
}

// The services scripts/test-services.sh starts; skips (or fails under
// HONE_REQUIRE_SERVICES=1) without them.
struct Services {
  std::string partition;
  bool ok = false;
};
Services SlurmAndPostgres() {
  Services s;
  const char* conf = std::getenv("SLURM_CONF");
  const char* part = std::getenv("HONE_TEST_SLURM_PARTITION");
  if (conf == nullptr || part == nullptr || kb::testing::PgBaseUrl().empty()) return s;
  s.partition = part;
  s.ok = true;
  return s;
}

TEST_F(FleetSlowTest, ThreeWorkloadsThroughSlurmWithThePostgresKbSurviveANodeFailure) {
  HONE_REQUIRE_LLAMA();
  Services svc = SlurmAndPostgres();
  if (!svc.ok) {
    if (std::getenv("HONE_REQUIRE_SERVICES")) FAIL() << "SLURM_CONF / HONE_TEST_PG_URL not set";
    GTEST_SKIP() << "no Slurm cluster or PostgreSQL (scripts/test-services.sh)";
  }
  auto db = kb::testing::PgTestDb::Create();
  ASSERT_TRUE(db);
  std::string fleet_dir = Path("fleet");
  const std::string only = "tiny-f16-fixed,tiny-q8_0-fixed,tiny-f16-agentic";
  sys::ProcessSpec ps;
  ps.argv = {Hone(), "fleet", "run", (::hone::testing::SourceDir() / "examples/fleet-cpu.yaml").string(),
             "--executor", "slurm", "--partition", svc.partition, "--kb", db->url(), "--only", only,
             "--budget", "75s", "--out", fleet_dir};
  ps.log_path = Path("driver.log");
  auto driver = sys::ChildProcess::Start(ps);
  ASSERT_TRUE(driver) << driver.error().ToString();
  // Whatever happens below, no job of this fleet outlives the test.
  struct CancelAtEnd {
    std::string dir;
    ~CancelAtEnd() {
      if (fs::exists(dir + "/fleet.json")) (void)sys::RunCommand({.argv = {Hone(), "fleet", "cancel", dir}}, 60s);
    }
  } cancel_at_end{fleet_dir};

  // Wait for a session to be well into its run, then take its node down.
  std::string victim, job, node;
  for (int i = 0; i < 600 && victim.empty(); ++i) {
    ASSERT_FALSE((*driver)->Poll()) << "the driver ended early:\n" << LastLines((*driver)->Output(), 40);
    auto state = ReadFleetState(fleet_dir);
    if (state) {
      for (const SessionEntry& s : state->sessions) {
        if (s.status != "running" || s.job_ids.empty()) continue;
        auto run = ReadRunOutcome(RunDir(fleet_dir, s.name));
        if (run && run->has_state && run->trials_run >= 3 && run->phase != "done") {
          victim = s.name;
          job = s.job_ids.back();
          node = s.node;
        }
      }
    }
    if (victim.empty()) std::this_thread::sleep_for(1s);
  }
  ASSERT_FALSE(victim.empty()) << "no session got going:\n" << LastLines((*driver)->Output(), 40);
  ASSERT_FALSE(node.empty());
  auto down = RunCmd({"scontrol", "update", "NodeName=" + node, "State=DOWN", "Reason=hone-test-node-failure"});
  ASSERT_EQ(down.status.code, 0) << down.output;
  // Slurm requeues the job (--requeue); bring the node back and skip the requeue delay.
  bool requeued = false;
  for (int i = 0; i < 120 && !requeued; ++i) {
    auto q = RunCmd({"scontrol", "show", "job", job});
    requeued = Contains(q.output, "Restarts=1") || Contains(q.output, "Restarts=2");
    if (!requeued) std::this_thread::sleep_for(500ms);
  }
  ASSERT_TRUE(requeued) << RunCmd({"scontrol", "show", "job", job}).output;
  // Let the killed attempt end first (its job records the end): a job started again
  // while the node still finishes the old one fails to launch ("Duplicate jobid": the
  // node is drained and the job held).
  for (int i = 0; i < 120; ++i) {
    auto rec = ReadJobRecord(JobRecordPath(fleet_dir, victim));
    if (rec && !rec->attempts.empty() && rec->attempts.back().finished_unix_us > 0) break;
    std::this_thread::sleep_for(500ms);
  }
  std::this_thread::sleep_for(3s);
  (void)RunCmd({"scontrol", "update", "NodeName=" + node, "State=RESUME"});  // may already be back
  (void)RunCmd({"scontrol", "update", "JobId=" + job, "StartTime=now"});

  auto ended = (*driver)->WaitFor(900s, false);
  ASSERT_TRUE(ended) << "the fleet did not finish:\n" << LastLines((*driver)->Output(), 40);
  std::string out = (*driver)->Output();
  SCOPED_TRACE(LastLines(out, 80));
  EXPECT_EQ(ended->code, 0) << ended->ToString();
  EXPECT_TRUE(Contains(out, "| # | session | workload | engine | size | precision |")) << out;

  // The fleet report: three sessions, all closed.
  nlohmann::json report = LoadJson(fleet_dir + "/fleet-report.json");
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["executor"], "slurm");
  EXPECT_TRUE(Contains(report["kb"].get<std::string>(), "postgresql://")) << report["kb"];
  EXPECT_EQ(report["summary"]["sessions"], 3);
  EXPECT_EQ(report["summary"]["closed"], 3);
  EXPECT_EQ(report["summary"]["failed"], 0);
  // A median exactly when some session measured its baseline (a loaded host may end a
  // 75-second session before that).
  EXPECT_EQ(report["summary"]["median_validated_ratio"].is_number(),
            report["summary"]["closed"].get<int>() > report["summary"]["unmeasured"].get<int>());
  EXPECT_TRUE(fs::exists(fleet_dir + "/fleet-report.md"));
  EXPECT_TRUE(fs::exists(fleet_dir + "/fleet-report.html"));

  // The victim was requeued by Slurm (the same job, not a driver retry) and its job ran
  // `hone resume`. Slurm's SIGTERM closed the session as "interrupted" first; the resume
  // reopened it in the phase it stopped, and it closed for real (budget, convergence).
  ASSERT_OK_AND_ASSIGN(FleetState state, ReadFleetState(fleet_dir));
  int admitted = 0;
  for (const SessionEntry& s : state.sessions) {
    EXPECT_EQ(s.status, "done") << s.name << ": " << s.reason;
    ASSERT_OK_AND_ASSIGN(RunOutcome run, ReadRunOutcome(RunDir(fleet_dir, s.name)));
    EXPECT_TRUE(run.Closed()) << s.name;
    EXPECT_FALSE(run.kb_result.empty()) << s.name;  // it wrote to the knowledge base, or said why not
    if (run.kb_result.starts_with("new recipe #") || run.kb_result.starts_with("updated recipe #")) {
      ++admitted;
      EXPECT_TRUE(Contains(run.kb_result, "postgresql://")) << run.kb_result;
    }
    if (s.name != victim) continue;
    EXPECT_EQ(s.job_ids.size(), 1u) << Join(s.job_ids, ",");
    ASSERT_OK_AND_ASSIGN(JobRecord rec, ReadJobRecord(JobRecordPath(fleet_dir, s.name)));
    ASSERT_GE(rec.attempts.size(), 2u);
    EXPECT_EQ(rec.attempts.front().mode, "run");
    EXPECT_EQ(rec.attempts.back().mode, "resume");
    EXPECT_GE(rec.attempts.back().restart, 1);
    EXPECT_EQ(rec.attempts.back().exit_code, 0);
    EXPECT_NE(run.stop_reason, "interrupted") << "the requeued session was reopened and closed for real";
  }
  // Waves: the q8_0 session followed its f16 neighbour (afterany on wave 0).
  const SessionEntry* q8 = nullptr;
  for (const SessionEntry& s : state.sessions) {
    if (s.name == "tiny-q8_0-fixed") q8 = &s;
  }
  ASSERT_NE(q8, nullptr);
  EXPECT_EQ(q8->wave, 1);
  EXPECT_EQ(q8->parent, "tiny-f16-fixed");
  ASSERT_OK_AND_ASSIGN(JobRecord parent, ReadJobRecord(JobRecordPath(fleet_dir, "tiny-f16-fixed")));
  ASSERT_OK_AND_ASSIGN(JobRecord child, ReadJobRecord(JobRecordPath(fleet_dir, "tiny-q8_0-fixed")));
  EXPECT_GE(child.attempts.front().started_unix_us, parent.attempts.back().finished_unix_us);
  // Wave 1 (two sessions) went out as one job array (batch-1.sh is wave 0's one job).
  auto batch = sys::ReadFile(fleet_dir + "/slurm/batch-2.sh");
  ASSERT_TRUE(batch);
  EXPECT_TRUE(Contains(*batch, "#SBATCH --array=0-1")) << *batch;
  EXPECT_TRUE(Contains(*batch, "#SBATCH --requeue")) << *batch;
  // Every recipe the sessions admitted is in PostgreSQL, once.
  auto rules = kb::LoadKbRules(::hone::testing::SourceDir().string());
  ASSERT_TRUE(rules);
  ASSERT_OK_AND_ASSIGN(auto store, kb::RecipeStore::OpenAt(db->url(), *rules));
  ASSERT_OK_AND_ASSIGN(std::vector<kb::Recipe> recipes, store->List());
  std::erase_if(recipes, [](const kb::Recipe& r) { return r.IsStockRecord(); });  // a session whose stock won
  EXPECT_EQ(static_cast<int>(recipes.size()), admitted);
  std::printf("fleet through Slurm: %s requeued and resumed; %d recipe(s) in PostgreSQL; %s\n", victim.c_str(),
              admitted, report["summary"].dump().c_str());
}

}  // namespace
}  // namespace hone::fleet
