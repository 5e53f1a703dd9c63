#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/strings.h"
#include "sys/process.h"
#include "sys/signals.h"

extern char** environ;

namespace hone::sys {
namespace {

int64_t NowMillis() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

void SleepMillis(int ms) {
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1'000'000};
  nanosleep(&ts, nullptr);
}

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

ExitStatus FromWaitStatus(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  }
  return s;
}

// Guard body: runs in a forked copy of hone; async-signal-safe calls only.
[[noreturn]] void GuardMain(int read_fd, pid_t pgid, int grace_ms) {
  // Its own process group: whoever kills hone's group (a supervisor sweeping up a
  // dead hone's stragglers, `kill -9 -PGID`) must not take the guard with it, or the
  // child it guards outlives hone.
  setpgid(0, 0);
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  // Keep only the guard pipe; every other inherited fd (other guards' write ends,
  // sockets, log files) must close so that EOF and peer-close semantics hold.
  if (read_fd != 3) {
    dup2(read_fd, 3);
  }
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
  }
  syscall(SYS_close_range, 4U, ~0U, 0U);
  char c = 0;
  ssize_t n;
  do {
    n = read(3, &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 1) _exit(0);  // disarmed: hone stopped the child itself
  // EOF (or error): hone is gone. Take the child's group down.
  kill(-pgid, SIGTERM);
  kill(-pgid, SIGCONT);
  for (int waited = 0; waited < grace_ms; waited += 20) {
    if (kill(-pgid, 0) != 0 && errno == ESRCH) _exit(0);
    SleepMillis(20);
  }
  kill(-pgid, SIGKILL);
  _exit(0);
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (signal != 0) {
    const char* name = sigabbrev_np(signal);
    return std::string("killed by SIG") + (name ? name : std::to_string(signal).c_str());
  }
  if (code < 0) return "not exited";
  return "exit " + std::to_string(code);
}

std::string FindOnPath(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) return IsExecutable(program) ? program : "";
  const char* path = getenv("PATH");
  for (const std::string& dir : Split(path ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (IsExecutable(candidate)) return candidate;
  }
  return "";
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return InvalidArgument("empty command line");
  std::string exe = FindOnPath(spec.argv[0]);
  if (exe.empty()) {
    return Fail(Error{ErrorCode::kNotFound, spec.argv[0] + ": command not found", {}});
  }
  if (!spec.cwd.empty() && access(spec.cwd.c_str(), X_OK) != 0) {
    return NotFound("working directory not found: " + spec.cwd);
  }

  // Everything the child needs is prepared before fork(): after fork only
  // async-signal-safe calls are allowed (hone is multi-threaded).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    std::string key(kv.substr(0, kv.find('=')));
    bool drop = spec.env.contains(key);
    for (const auto& u : spec.unset_env) drop = drop || u == key;
    if (!drop) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = spec.argv;
  std::vector<char*> argv;
  for (auto& a : argv_copy) argv.push_back(a.data());
  argv.push_back(nullptr);

  int log_fd = -1;
  if (!spec.log_path.empty()) {
    log_fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      return Fail(Error{ErrorCode::kInternal, "cannot open log file: " + std::string(strerror(errno)),
                        {{"path", spec.log_path}}});
    }
  }
  int out_pipe[2], err_pipe[2], guard_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Internal("pipe: " + std::string(strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Internal("pipe: " + std::string(strerror(errno)));
  }
  if (pipe2(guard_pipe, O_CLOEXEC) != 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return Internal("pipe: " + std::string(strerror(errno)));
  }
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  for (int cpu : spec.cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &affinity);
  }
  const bool pin = !spec.cpus.empty();

  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], guard_pipe[0], guard_pipe[1]}) close(fd);
    if (log_fd >= 0) close(log_fd);
    return Internal("fork: " + std::string(strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);
    // Restore default dispositions: the child must die from TERM/INT like a normal
    // program, whatever hone does with them.
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(out_pipe[1], 2);
    if (cwd && chdir(cwd) != 0) {
      int e = errno;
      (void)!write(err_pipe[1], &e, sizeof e);
      _exit(127);
    }
    // Pinned children (and everything they start) run on their CPUs only.
    if (pin && sched_setaffinity(0, sizeof affinity, &affinity) != 0) {
      int e = errno;
      (void)!write(err_pipe[1], &e, sizeof e);
      _exit(127);
    }
    execve(exe.c_str(), argv.data(), envp.data());
    int e = errno;
    (void)!write(err_pipe[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so the group exists before we might kill it
  close(out_pipe[1]);
  close(err_pipe[1]);

  // Did exec succeed? The CLOEXEC error pipe reads EOF on success.
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(err_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int status;
    waitpid(pid, &status, 0);
    close(out_pipe[0]);
    close(guard_pipe[0]);
    close(guard_pipe[1]);
    if (log_fd >= 0) close(log_fd);
    return Fail(Error{ErrorCode::kFailedPrecondition,
                      "cannot start " + spec.argv[0] + ": " + strerror(child_errno), {}});
  }

  pid_t guard = fork();
  if (guard == 0) {
    GuardMain(guard_pipe[0], pid, static_cast<int>(spec.guard_grace.count()));
  }
  if (guard > 0) setpgid(guard, guard);  // as for the child: the group exists on return
  close(guard_pipe[0]);
  if (guard < 0) {
    // No guard: still usable, but a SIGKILL of hone could orphan the child.
    close(guard_pipe[1]);
    guard_pipe[1] = -1;
  }

  auto child = std::unique_ptr<ChildProcess>(new ChildProcess());
  child->pid_ = pid;
  child->guard_pid_ = guard;
  child->guard_fd_ = guard_pipe[1];
  child->log_path_ = spec.log_path;
  child->log_fd_ = log_fd;
  child->ring_bytes_ = spec.ring_bytes;
  int read_fd = out_pipe[0];
  child->reader_ = std::thread([c = child.get(), read_fd] { c->ReaderLoop(read_fd); });
  return child;
}

void ChildProcess::ReaderLoop(int fd) {
  char buf[16384];
  while (true) {
    pollfd pfd{fd, POLLIN, 0};
    int r = poll(&pfd, 1, 100);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) {
      // Bounded drain: once the child is reaped, stragglers that escaped the group
      // must not keep us waiting for EOF forever.
      if (stop_reader_.load()) break;
      continue;
    }
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: every writer closed
    if (log_fd_ >= 0) {
      ssize_t off = 0;
      while (off < n) {
        ssize_t w = write(log_fd_, buf + off, static_cast<size_t>(n - off));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += w;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    ring_.append(buf, static_cast<size_t>(n));
    if (ring_.size() > 2 * ring_bytes_) ring_.erase(0, ring_.size() - ring_bytes_);
  }
  close(fd);
  if (log_fd_ >= 0) {
    fsync(log_fd_);
    close(log_fd_);
    log_fd_ = -1;
  }
}

void ChildProcess::AfterExit() {
  if (reader_.joinable()) {
    stop_reader_.store(true);
    reader_.join();
  }
  if (guard_fd_ >= 0) {
    char d = 'd';
    (void)!write(guard_fd_, &d, 1);
    close(guard_fd_);
    guard_fd_ = -1;
  }
  if (guard_pid_ > 0) {
    int status;
    while (waitpid(guard_pid_, &status, 0) < 0 && errno == EINTR) {
    }
    guard_pid_ = -1;
  }
}

namespace {

// Whether the leader `pid` has exited, leaving it unreaped (WNOWAIT): a zombie keeps its
// pid, and so its group's id, from being reused. `block` waits for the exit.
bool LeaderExited(pid_t pid, bool block) {
  siginfo_t info{};
  int r;
  do {
    r = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
  } while (r < 0 && errno == EINTR);
  return r == 0 && info.si_pid == pid;
}

// Takes the stragglers of an exited leader's group down, then reaps the leader: in this
// order the group id cannot have passed to a new process group when the signal is sent.
int ReapGroup(pid_t pid) {
  kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

std::optional<ExitStatus> ChildProcess::Poll() {
  if (exit_) return exit_;
  if (LeaderExited(pid_, /*block=*/false)) {
    exit_ = FromWaitStatus(ReapGroup(pid_));
    AfterExit();
  }
  return exit_;
}

Result<ExitStatus> ChildProcess::WaitFor(std::chrono::milliseconds timeout, bool honor_interrupt) {
  int64_t deadline = NowMillis() + timeout.count();
  while (true) {
    if (auto s = Poll()) return *s;
    if (honor_interrupt && InterruptRequested()) return Cancelled("interrupted");
    if (NowMillis() >= deadline) {
      return DeadlineExceeded("process " + std::to_string(pid_) + " still running after " +
                              std::to_string(timeout.count()) + " ms");
    }
    SleepMillis(5);
  }
}

ExitStatus ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (exit_) return *exit_;
  if (auto s = Poll()) return *s;
  kill(-pid_, SIGTERM);
  kill(-pid_, SIGCONT);  // a stopped (hung) process handles its TERM only once continued
  int64_t deadline = NowMillis() + grace.count();
  while (NowMillis() < deadline) {
    if (auto s = Poll()) return *s;
    SleepMillis(5);
  }
  kill(-pid_, SIGKILL);
  LeaderExited(pid_, /*block=*/true);
  exit_ = FromWaitStatus(ReapGroup(pid_));
  AfterExit();
  return *exit_;
}

ChildProcess::~ChildProcess() { Stop(); }

std::string ChildProcess::Output() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (ring_.size() > ring_bytes_) return ring_.substr(ring_.size() - ring_bytes_);
  return ring_;
}

std::string ChildProcess::OutputTail(size_t max_bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = std::min(max_bytes, ring_.size());
  return ring_.substr(ring_.size() - n);
}

namespace {

class RealProcessRunner final : public ProcessRunner {
 public:
  Result<CommandOutput> Run(const ProcessSpec& spec, std::chrono::milliseconds timeout) override {
    return RunCommand(spec, timeout);
  }
};

}  // namespace

ProcessRunner& DefaultProcessRunner() {
  static RealProcessRunner runner;
  return runner;
}

Result<CommandOutput> RunCommand(const ProcessSpec& spec, std::chrono::milliseconds timeout) {
  HONE_ASSIGN_OR_RETURN(auto child, ChildProcess::Start(spec));
  auto status = child->WaitFor(timeout);
  if (!status) {
    child->Stop(std::chrono::milliseconds(2000));
    Error e = status.error();
    e.With("command", ShellJoin(spec.argv)).With("output_tail", LastLines(child->OutputTail(2000), 5));
    return Fail(std::move(e));
  }
  return CommandOutput{*status, child->Output()};
}

Status SignalGroup(pid_t pgid, int signal) {
  if (pgid <= 1) return InvalidArgument("not a process group: " + std::to_string(pgid));
  if (kill(-pgid, signal) != 0) return Unavailable("kill(-" + std::to_string(pgid) + "): " + strerror(errno));
  return Ok();
}

namespace {

// Inodes of the sockets listening on `port` (any address), IPv4 and IPv6.
std::vector<std::string> ListeningInodes(int port, bool* readable) {
  std::vector<std::string> out;
  *readable = false;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::FILE* f = std::fopen(table, "r");
    if (!f) continue;
    *readable = true;
    char line[512];
    bool header = true;
    while (std::fgets(line, sizeof line, f)) {
      if (header) {
        header = false;
        continue;
      }
      // "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ..."
      auto fields = Split(Trim(line), ' ');
      std::vector<std::string> cols;
      for (const auto& c : fields) {
        if (!c.empty()) cols.push_back(c);
      }
      if (cols.size() < 10 || cols[3] != "0A") continue;  // 0A = LISTEN
      size_t colon = cols[1].rfind(':');
      if (colon == std::string::npos) continue;
      if (std::strtol(cols[1].c_str() + colon + 1, nullptr, 16) != port) continue;
      out.push_back(cols[9]);
    }
    std::fclose(f);
  }
  return out;
}

}  // namespace

Result<bool> GroupListensOn(pid_t pgid, int port) {
  bool readable = false;
  std::vector<std::string> inodes = ListeningInodes(port, &readable);
  if (!readable) return Unavailable("/proc/net/tcp is not readable");
  if (inodes.empty()) return false;
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = proc.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    // Field 5 of /proc/<pid>/stat is the process group (after the parenthesized name).
    std::FILE* f = std::fopen((proc.path() / "stat").c_str(), "r");
    if (!f) continue;
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    const char* close_paren = std::strrchr(buf, ')');
    if (!close_paren) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(close_paren + 1, " %c %d %d", &state, &ppid, &pgrp) != 3 || pgrp != pgid) continue;
    for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", ec)) {
      std::error_code lec;
      std::string target = std::filesystem::read_symlink(fd.path(), lec).string();
      if (lec || !target.starts_with("socket:[")) continue;
      std::string inode = target.substr(8, target.size() - 9);
      if (std::find(inodes.begin(), inodes.end(), inode) != inodes.end()) return true;
    }
  }
  return false;
}

}  // namespace hone::sys
