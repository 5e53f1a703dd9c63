#include "sys/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/strings.h"
#include "sys/files.h"

namespace hone::sys {
namespace {

using namespace std::chrono_literals;

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

// True once `pid` is gone (or a zombie not ours: kill(…,0) fails with ESRCH only after
// reaping, so poll /proc state as well).
bool GoneWithin(pid_t pid, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!Alive(pid)) return true;
    auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    if (stat && Contains(*stat, ") Z ")) return true;  // zombie: dead, awaiting its reaper
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

std::vector<pid_t> ReadPids(ChildProcess& child, size_t count) {
  std::vector<pid_t> pids;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    pids.clear();
    for (const auto& line : Split(child.Output(), '\n')) {
      if (auto v = ParseInt(line)) pids.push_back(static_cast<pid_t>(*v));
    }
    if (pids.size() >= count) return pids;
    std::this_thread::sleep_for(10ms);
  }
  return pids;
}

TEST(ProcessTest, CapturesOutputAndExitCode) {
  auto out = RunCommand({.argv = {"sh", "-c", "echo hello; echo err >&2; exit 3"}}, 5s);
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->status.code, 3);
  EXPECT_FALSE(out->status.success());
  EXPECT_NE(out->output.find("hello"), std::string::npos);
  EXPECT_NE(out->output.find("err"), std::string::npos);
  EXPECT_EQ(out->status.ToString(), "exit 3");
}

TEST(ProcessTest, MissingProgramIsNotFound) {
  auto child = ChildProcess::Start({.argv = {"hone-no-such-program-xyz"}});
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(child.error().message, "hone-no-such-program-xyz: command not found");
}

TEST(ProcessTest, NonExecutableFileFailsToStart) {
  auto dir = TempDir::Create("hone-proc");
  ASSERT_TRUE(dir);
  auto script = (*dir)->path() / "x.sh";
  ASSERT_TRUE(WriteFileAtomic(script, "#!/bin/sh\necho hi\n"));
  chmod(script.c_str(), 0755);
  ASSERT_TRUE(RunCommand({.argv = {script.string()}}, 5s));
  chmod(script.c_str(), 0644);
  EXPECT_FALSE(ChildProcess::Start({.argv = {script.string()}}));
}

TEST(ProcessTest, EnvironmentAndWorkingDirectory) {
  setenv("HONE_TEST_DROP", "1", 1);
  auto out = RunCommand({.argv = {"sh", "-c", "echo A=$HONE_A D=${HONE_TEST_DROP:-none}; pwd"},
                         .env = {{"HONE_A", "x y"}},
                         .unset_env = {"HONE_TEST_DROP"},
                         .cwd = "/"},
                        5s);
  ASSERT_TRUE(out);
  EXPECT_NE(out->output.find("A=x y D=none"), std::string::npos) << out->output;
  EXPECT_NE(out->output.find("\n/\n"), std::string::npos) << out->output;
}

TEST(ProcessTest, LogFileReceivesOutput) {
  auto dir = TempDir::Create("hone-proc");
  ASSERT_TRUE(dir);
  auto log = (*dir)->path() / "child.log";
  auto out = RunCommand({.argv = {"sh", "-c", "for i in 1 2 3; do echo line$i; done"}, .log_path = log}, 5s);
  ASSERT_TRUE(out);
  EXPECT_EQ(*ReadFile(log), "line1\nline2\nline3\n");
}

TEST(ProcessTest, RingBufferKeepsTheTail) {
  auto out = RunCommand({.argv = {"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done"},
                         .ring_bytes = 100},
                        10s);
  ASSERT_TRUE(out);
  EXPECT_LE(out->output.size(), 100u);
  EXPECT_NE(out->output.find("line1999"), std::string::npos);
  EXPECT_EQ(out->output.find("line0\n"), std::string::npos);
}

TEST(ProcessTest, TimeoutKillsTheGroup) {
  auto start = std::chrono::steady_clock::now();
  auto out = RunCommand({.argv = {"sleep", "30"}}, 200ms);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(ProcessTest, StopEscalatesWhenTermIsIgnored) {
  auto child = ChildProcess::Start({.argv = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"}});
  ASSERT_TRUE(child);
  // Wait until the trap is installed.
  for (int i = 0; i < 200 && (*child)->Output().find("ready") == std::string::npos; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  auto start = std::chrono::steady_clock::now();
  ExitStatus s = (*child)->Stop(300ms);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.signal, SIGKILL);
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 5s);
  EXPECT_FALSE(Alive((*child)->pid()));
}

TEST(ProcessTest, StopKillsGrandchildren) {
  auto child = ChildProcess::Start({.argv = {"sh", "-c", "sleep 300 & echo $!; sleep 300 & echo $!; wait"}});
  ASSERT_TRUE(child);
  auto pids = ReadPids(**child, 2);
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t p : pids) EXPECT_TRUE(Alive(p));
  (*child)->Stop(2s);
  for (pid_t p : pids) EXPECT_TRUE(GoneWithin(p, 3s)) << p;
}

// A leader that exits by itself leaves a straggler in its group: Poll reports the exit
// with the leader's status and takes the straggler down (signalled while the exited
// leader is still unreaped, so the group's id cannot have been reused).
TEST(ProcessTest, ALeaderThatExitsTakesItsGroupWithIt) {
  auto child = ChildProcess::Start({.argv = {"sh", "-c", "sleep 300 & echo $!; exit 3"}});
  ASSERT_TRUE(child);
  auto pids = ReadPids(**child, 1);
  ASSERT_EQ(pids.size(), 1u);
  auto status = (*child)->WaitFor(5s);
  ASSERT_TRUE(status) << status.error().ToString();
  EXPECT_EQ(status->code, 3);
  EXPECT_TRUE(GoneWithin(pids[0], 3s)) << pids[0];
  EXPECT_EQ((*child)->Stop(1s).code, 3);  // already reaped: the same status
}

TEST(ProcessTest, WaitForReportsDeadlineAndLeavesChildRunning) {
  auto child = ChildProcess::Start({.argv = {"sleep", "30"}});
  ASSERT_TRUE(child);
  auto r = (*child)->WaitFor(50ms);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_FALSE((*child)->Poll().has_value());
  EXPECT_EQ((*child)->Stop(2s).signal, SIGTERM);
}

TEST(ProcessTest, DestructorStopsTheChild) {
  pid_t pid;
  {
    auto child = ChildProcess::Start({.argv = {"sleep", "30"}});
    ASSERT_TRUE(child);
    pid = (*child)->pid();
  }
  EXPECT_FALSE(Alive(pid));
}

// A forked "supervisor" (a stand-in hone) that starts `script` under a guard, reports
// the child's pid and the pid the script echoes, and waits to be killed. With
// `own_group` the supervisor leads a process group of its own.
struct Supervised {
  pid_t supervisor = 0;
  pid_t child = 0;
  pid_t grandchild = 0;
};
void StartSupervisor(const std::string& script, bool own_group, Supervised* out) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t supervisor = fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) {
    if (own_group) setpgid(0, 0);
    close(report[0]);
    auto child = ChildProcess::Start({.argv = {"sh", "-c", script}, .guard_grace = std::chrono::milliseconds(300)});
    if (!child) _exit(2);
    auto pids = ReadPids(**child, 1);
    if (pids.empty()) _exit(3);
    pid_t pair[2] = {(*child)->pid(), pids[0]};
    (void)!write(report[1], pair, sizeof pair);
    pause();  // until SIGKILLed
    _exit(0);
  }
  if (own_group) setpgid(supervisor, supervisor);
  close(report[1]);
  pid_t pair[2] = {0, 0};
  ASSERT_EQ(read(report[0], pair, sizeof pair), static_cast<ssize_t>(sizeof pair));
  close(report[0]);
  *out = {supervisor, pair[0], pair[1]};
}

// A supervisor killed with SIGKILL (no destructor, no handler runs) must not orphan
// its child's group: the guard process notices the pipe EOF and kills the group.
TEST(ProcessTest, GuardKillsGroupWhenSupervisorIsKilled) {
  Supervised s;
  ASSERT_NO_FATAL_FAILURE(StartSupervisor("trap '' TERM; sleep 300 & echo $!; wait", false, &s));
  EXPECT_TRUE(Alive(s.child));
  EXPECT_TRUE(Alive(s.grandchild));
  kill(s.supervisor, SIGKILL);
  int status;
  waitpid(s.supervisor, &status, 0);
  // The shell ignores TERM, so this also proves the guard escalates to KILL.
  EXPECT_TRUE(GoneWithin(s.child, 5s));
  EXPECT_TRUE(GoneWithin(s.grandchild, 5s));
}

// The same when the supervisor's whole process group is SIGKILLed (`kill -9 -PGID`,
// or a parent sweeping up a dead supervisor's stragglers): the guard lives in a group
// of its own, so it survives to take the child's group down.
TEST(ProcessTest, GuardOutlivesAKillOfTheSupervisorsGroup) {
  Supervised s;
  ASSERT_NO_FATAL_FAILURE(StartSupervisor("sleep 300 & echo $!; wait", true, &s));
  EXPECT_TRUE(Alive(s.grandchild));
  kill(-s.supervisor, SIGKILL);
  int status;
  waitpid(s.supervisor, &status, 0);
  EXPECT_TRUE(GoneWithin(s.child, 5s));
  EXPECT_TRUE(GoneWithin(s.grandchild, 5s));
}

}  // namespace
}  // namespace hone::sys
