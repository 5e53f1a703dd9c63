// ChildProcess: a supervised child in its own process group.
//
// Start() forks the child into a new process group (pgid = its pid), with stdin from
// /dev/null and stdout+stderr captured by a reader thread into an optional log file
// and an in-memory ring buffer. A small *guard* process is forked beside it: it holds
// the read end of a pipe whose only write end is in hone. If hone dies in any way
// (including SIGKILL) the pipe reaches EOF and the guard sends TERM, then KILL, to the
// child's whole group. A normal Stop() disarms the guard. Nothing is ever killed by
// name: only by this child's process group.
//
// Ownership: ChildProcess owns the child, its group, the guard and the reader thread;
// the destructor stops the group (TERM, grace, KILL) and reaps everything. Not
// copyable or movable (held by unique_ptr). Methods are not thread-safe except
// Output()/OutputTail(), which may be called from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"

namespace hone::sys {

struct ProcessSpec {
  std::vector<std::string> argv;          // argv[0] is resolved on PATH when it has no '/'
  std::map<std::string, std::string> env; // set on top of the inherited environment
  std::vector<std::string> unset_env;     // removed from the inherited environment
  std::string cwd;                        // empty: inherit
  std::string log_path;                   // empty: no log file (ring buffer only)
  std::vector<int> cpus;                  // non-empty: pin the child (and its descendants) to these CPUs
  size_t ring_bytes = 256 * 1024;         // how much recent output to keep in memory
  std::chrono::milliseconds guard_grace{3000};  // guard's TERM -> KILL delay
};

struct ExitStatus {
  int code = -1;   // exit code when the child exited
  int signal = 0;  // terminating signal when it was killed
  bool success() const { return signal == 0 && code == 0; }
  std::string ToString() const;  // "exit 0", "exit 3", "killed by SIGKILL"
};

class ChildProcess {
 public:
  // Fails with kNotFound when the program is not found, kInternal on fork/pipe errors.
  static Result<std::unique_ptr<ChildProcess>> Start(const ProcessSpec& spec);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

  // Reaps the child if it has exited; nullopt while it runs.
  std::optional<ExitStatus> Poll();
  // Waits up to `timeout` for the child to exit; kDeadlineExceeded if it is still
  // running (it is left running). kCancelled when an interrupt was requested.
  Result<ExitStatus> WaitFor(std::chrono::milliseconds timeout, bool honor_interrupt = true);
  // Stops the whole process group: TERM, up to `grace`, then KILL; reaps the child,
  // disarms the guard and finishes capturing output. Idempotent.
  ExitStatus Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

  // Captured output (the ring buffer's content: the last ring_bytes bytes).
  std::string Output() const;
  std::string OutputTail(size_t max_bytes) const;

 private:
  ChildProcess() = default;
  void ReaderLoop(int fd);
  void AfterExit();  // joins the reader (bounded), disarms the guard

  pid_t pid_ = -1;
  pid_t guard_pid_ = -1;
  int guard_fd_ = -1;  // write end of the guard pipe
  std::optional<ExitStatus> exit_;
  std::string log_path_;
  size_t ring_bytes_ = 0;
  mutable std::mutex mu_;
  std::string ring_;  // GUARDED_BY(mu_)
  std::thread reader_;
  std::atomic<bool> stop_reader_{false};
  int log_fd_ = -1;  // owned by the reader thread once it runs
};

struct CommandOutput {
  ExitStatus status;
  std::string output;  // stdout+stderr interleaved (at most ring_bytes, the tail)
};

// Runs a command to completion with a timeout (the group is killed on timeout or
// interrupt: kDeadlineExceeded / kCancelled). A non-zero exit is *not* an error here;
// callers look at status.
Result<CommandOutput> RunCommand(const ProcessSpec& spec, std::chrono::milliseconds timeout);

// The process seam for commands run to completion (a tool, a build step): the real
// runner is RunCommand; tests give a fake that records what ran and answers with
// canned output (src/testing/fake_process_runner.h). Collaborators take one from the
// composition root instead of calling RunCommand deep inside.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // As RunCommand: a non-zero exit is an outcome, not an error.
  virtual Result<CommandOutput> Run(const ProcessSpec& spec, std::chrono::milliseconds timeout) = 0;
};
// The real runner (stateless: sharing it is safe).
ProcessRunner& DefaultProcessRunner();

// Resolves a program name on PATH ("" when not found). Names with '/' are returned
// as-is if executable.
std::string FindOnPath(const std::string& program);

// Sends `signal` to every process of group `pgid` (a ChildProcess's pid is its group).
Status SignalGroup(pid_t pgid, int signal);

// Whether a process of group `pgid` listens on TCP `port` (any address), from Linux's
// /proc/net/tcp{,6} and /proc/<pid>/fd. kUnavailable when /proc cannot tell.
Result<bool> GroupListensOn(pid_t pgid, int port);

}  // namespace hone::sys
