#include "patch/git.h"

#include <sys/stat.h>
#include <unistd.h>

#include "core/strings.h"
#include "sys/files.h"

namespace hone::patch {

Result<sys::CommandOutput> RunGit(const fs::path& dir, const std::vector<std::string>& args,
                                  std::chrono::milliseconds timeout) {
  sys::ProcessSpec spec;
  spec.argv = {
      "git",       "-c", "core.hooksPath=/dev/null",  "-c", "core.fsmonitor=false", "-c", "core.autocrlf=false", "-c",
      "gc.auto=0", "-c", "advice.detachedHead=false", "-c", "commit.gpgsign=false"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.cwd = dir.string();
  spec.env = {{"GIT_CONFIG_NOSYSTEM", "1"},
              {"GIT_CONFIG_GLOBAL", "/dev/null"},
              {"GIT_TERMINAL_PROMPT", "0"},
              {"GIT_OPTIONAL_LOCKS", "0"},
              {"LC_ALL", "C"},
              {"GIT_AUTHOR_NAME", "hone"},
              {"GIT_AUTHOR_EMAIL", "hone@localhost"},
              {"GIT_COMMITTER_NAME", "hone"},
              {"GIT_COMMITTER_EMAIL", "hone@localhost"}};
  spec.unset_env = {"GIT_DIR",        "GIT_WORK_TREE",           "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                    "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES", "GIT_NAMESPACE"};
  spec.ring_bytes = 64u << 20;  // ls-files of a large tree must not be truncated
  spec.guard_grace = std::chrono::milliseconds(1000);
  return sys::RunCommand(spec, timeout);
}

Result<std::string> GitOut(const fs::path& dir, const std::vector<std::string>& args,
                           std::chrono::milliseconds timeout) {
  HONE_ASSIGN_OR_RETURN(sys::CommandOutput out, RunGit(dir, args, timeout));
  if (!out.status.success()) {
    std::string shown = args.empty() ? "" : args[0] + (args.size() > 1 ? " " + args[1] : "");
    Error e{ErrorCode::kFailedPrecondition,
            "git " + shown + " failed (" + out.status.ToString() + "): " + std::string(Trim(LastLines(out.output, 1))),
            {}};
    e.With("output_tail", LastLines(out.output, 10)).With("command", "git " + ShellJoin(args));
    return Fail(std::move(e));
  }
  std::string s = std::move(out.output);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

Result<std::unique_ptr<Worktree>> Worktree::Create(const fs::path& repo, const fs::path& path,
                                                   const std::string& branch, const std::string& base) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (ec) return InvalidArgument("worktree path " + path.string() + ": " + ec.message());
  // A checkout left by a crash (its directory may be gone while git still lists it):
  // unregister it and delete what is left on disk. Fails harmlessly when there is none.
  // (No global `worktree prune`: it could drop other tools' worktrees on unmounted disks.)
  (void)RunGit(repo, {"worktree", "remove", "--force", "--force", abs.string()});
  if (fs::exists(abs, ec) || fs::is_symlink(abs, ec)) {
    fs::remove_all(abs, ec);
    if (ec) return FailedPrecondition("cannot remove the stale worktree " + abs.string() + ": " + ec.message());
  }
  fs::create_directories(abs.parent_path(), ec);
  HONE_TRY(GitOut(repo, {"worktree", "add", "--force", "-B", branch, abs.string(), base}));
  return std::unique_ptr<Worktree>(new Worktree(repo, abs, branch));
}

Status Worktree::Remove() {
  if (removed_) return Ok();
  removed_ = true;
  auto r = GitOut(repo_, {"worktree", "remove", "--force", "--force", path_.string()});
  std::error_code ec;
  if (!r) {
    // Rare (e.g. a file in it was not removable): delete what is left and let git
    // forget checkouts whose directories are gone.
    fs::remove_all(path_, ec);
    (void)RunGit(repo_, {"worktree", "prune"});
  }
  auto b = GitOut(repo_, {"branch", "-D", branch_});
  if (!r && fs::exists(path_, ec)) return Fail(std::move(r).error().Wrap("removing worktree " + path_.string()));
  if (!b) return Fail(std::move(b).error().Wrap("deleting branch " + branch_));
  return Ok();
}

Worktree::~Worktree() {
  if (!released_) (void)Remove();
}

Result<std::string> TreeFingerprint(const fs::path& repo) {
  // toplevel, HEAD's commit and HEAD's symbolic name ("refs/heads/main", or "HEAD"
  // when detached).
  HONE_ASSIGN_OR_RETURN(std::string heads,
                        GitOut(repo, {"rev-parse", "--show-toplevel", "HEAD", "--symbolic-full-name", "HEAD"}));
  std::vector<std::string> head_lines = Split(heads, '\n');
  const std::string top = head_lines.empty() ? repo.string() : head_lines[0];
  std::string acc = "head " + heads + "\n";
  HONE_ASSIGN_OR_RETURN(std::string index, GitOut(repo, {"ls-files", "-s", "-z"}));
  acc += "index " + sys::Sha256Hex(index) + "\n";
  HONE_ASSIGN_OR_RETURN(std::string stash, GitOut(repo, {"stash", "list"}));
  acc += "stash " + sys::Sha256Hex(stash) + "\n";
  HONE_ASSIGN_OR_RETURN(std::string files, GitOut(repo, {"ls-files", "-z", "-c", "-o", "--exclude-standard"}));
  for (const std::string& name : Split(files, '\0')) {
    if (name.empty()) continue;
    fs::path p = fs::path(top) / name;
    struct stat st;
    acc += name + "\t";
    if (lstat(p.c_str(), &st) != 0) {
      acc += "missing\n";
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t n = readlink(p.c_str(), target, sizeof target);
      acc += "link " + std::string(target, n > 0 ? static_cast<size_t>(n) : 0) + "\n";
    } else if (S_ISREG(st.st_mode)) {
      HONE_ASSIGN_OR_RETURN(std::string sha, sys::Sha256File(p));
      acc += ((st.st_mode & S_IXUSR) ? "exec " : "file ") + sha + "\n";
    } else {
      acc += "other " + std::to_string(st.st_mode & S_IFMT) + "\n";
    }
  }
  return sys::Sha256Hex(acc);
}

}  // namespace hone::patch
