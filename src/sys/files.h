// Files: whole-file reads, crash-safe writes and small file-system helpers.
//
// WriteFileAtomic writes a temp file in the same directory, fsyncs it, renames it over
// the target and fsyncs the directory: after a crash the file holds either the old or
// the new content, never a torn mix. AppendLineSync appends one line and fsyncs (for
// append-only logs such as events.jsonl). FileLock is an flock(2) held for the object's
// lifetime. TempDir removes its tree on destruction unless released.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"

namespace hone::sys {

namespace fs = std::filesystem;

Result<std::string> ReadFile(const fs::path& path);
Status WriteFileAtomic(const fs::path& path, std::string_view data);
Status AppendLineSync(const fs::path& path, std::string_view line);
Status EnsureDir(const fs::path& dir);
bool FileExists(const fs::path& path);
// True for a write that failed because the disk (or a quota, or a file-size limit) is
// full: code kResourceExhausted with context "no_space". Such an error must stop a
// session (to be resumed once there is room), never be taken for a failed trial.
bool IsNoSpace(const Error& e);
Result<uint64_t> FileSize(const fs::path& path);

// Hex SHA-256 of a file's content (OpenSSL).
Result<std::string> Sha256File(const fs::path& path);
std::string Sha256Hex(std::string_view data);

// Raises the soft open-file limit to the hard limit (many concurrent streams need
// many sockets); returns the new soft limit.
uint64_t RaiseFdLimit();

// The user's cache root: $HONE_CACHE_DIR, else $XDG_CACHE_HOME/hone, else ~/.cache/hone.
fs::path DefaultCacheDir();

class FileLock {
 public:
  // Blocks until the exclusive lock on `path` (created if missing) is held.
  static Result<std::unique_ptr<FileLock>> Acquire(const fs::path& path);
  // Returns kUnavailable at once if another holder has it.
  static Result<std::unique_ptr<FileLock>> TryAcquire(const fs::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

class TempDir {
 public:
  // Creates a fresh directory under $TMPDIR (or /tmp) named prefix-XXXXXX.
  static Result<std::unique_ptr<TempDir>> Create(std::string_view prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  // Keeps the directory on destruction (for post-mortems).
  void Release() { released_ = true; }

 private:
  explicit TempDir(fs::path p) : path_(std::move(p)) {}
  fs::path path_;
  bool released_ = false;
};

}  // namespace hone::sys
