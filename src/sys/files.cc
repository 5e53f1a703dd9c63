#include "sys/files.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hone::sys {
namespace {

bool NoSpaceErrno(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }

Error IoError(const std::string& what, const fs::path& path) {
  const int err = errno;
  Error e{err == ENOENT ? ErrorCode::kNotFound : NoSpaceErrno(err) ? ErrorCode::kResourceExhausted : ErrorCode::kInternal,
          what + " " + path.string() + ": " + strerror(err), {{"path", path.string()}}};
  if (NoSpaceErrno(err)) e.With("no_space", "true");
  return e;
}

Status WriteAll(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      Error e{NoSpaceErrno(err) ? ErrorCode::kResourceExhausted : ErrorCode::kInternal,
              std::string("write: ") + strerror(err), {}};
      if (NoSpaceErrno(err)) e.With("no_space", "true");
      return Fail(std::move(e));
    }
    off += static_cast<size_t>(n);
  }
  return Ok();
}

}  // namespace

Result<std::string> ReadFile(const fs::path& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Fail(IoError("cannot read", path));
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = IoError("cannot read", path);
      close(fd);
      return Fail(std::move(e));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

Status WriteFileAtomic(const fs::path& path, std::string_view data) {
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return Fail(IoError("cannot create temp file in", dir));
  Status w = WriteAll(fd, data);
  if (w && fsync(fd) != 0) w = Fail(IoError("fsync", path));
  close(fd);
  if (!w) {
    unlink(tmpl.c_str());  // the old content stays in place
    Error e = w.error();
    e.message = "cannot write " + path.string() + ": " + e.message;
    e.With("path", path.string());
    return Fail(std::move(e));
  }
  if (rename(tmpl.c_str(), path.c_str()) != 0) {
    Error e = IoError("cannot rename onto", path);
    unlink(tmpl.c_str());
    return Fail(std::move(e));
  }
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);  // make the rename itself durable
    close(dfd);
  }
  return Ok();
}

Status AppendLineSync(const fs::path& path, std::string_view line) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Fail(IoError("cannot append to", path));
  std::string buf(line);
  if (buf.empty() || buf.back() != '\n') buf += '\n';
  const off_t before = lseek(fd, 0, SEEK_END);
  // One write() per line: O_APPEND makes concurrent appenders interleave whole lines.
  Status w = WriteAll(fd, buf);
  if (w && fdatasync(fd) != 0) w = Fail(IoError("fdatasync", path));
  if (!w && before >= 0) {
    // A full disk can take half a line: cut it off, so the log never holds a torn
    // line in its middle (the next append would glue itself onto it).
    (void)ftruncate(fd, before);
  }
  close(fd);
  if (!w) {
    Error e = w.error();
    e.message = "cannot append to " + path.string() + ": " + e.message;
    e.With("path", path.string());
    return Fail(std::move(e));
  }
  return w;
}

Status EnsureDir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    const bool full = NoSpaceErrno(ec.value());
    Error e{full ? ErrorCode::kResourceExhausted : ErrorCode::kInternal,
            "cannot create directory " + dir.string() + ": " + ec.message(), {{"path", dir.string()}}};
    if (full) e.With("no_space", "true");
    return Fail(std::move(e));
  }
  return Ok();
}

bool IsNoSpace(const Error& e) { return e.Get("no_space") == "true"; }

bool FileExists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

Result<uint64_t> FileSize(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) return NotFound("cannot stat " + path.string() + ": " + ec.message());
  return static_cast<uint64_t>(size);
}

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

Result<std::string> Sha256File(const fs::path& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Fail(IoError("cannot read", path));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  char buf[1 << 16];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    EVP_DigestUpdate(ctx, buf, static_cast<size_t>(n));
  }
  close(fd);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

uint64_t RaiseFdLimit() {
  rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  return static_cast<uint64_t>(rl.rlim_cur);
}

fs::path DefaultCacheDir() {
  if (const char* d = getenv("HONE_CACHE_DIR"); d && *d) return d;
  if (const char* x = getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "hone";
  const char* home = getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "hone";
}

Result<std::unique_ptr<FileLock>> FileLock::Acquire(const fs::path& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Fail(IoError("cannot open lock", path));
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      Error e = IoError("cannot lock", path);
      close(fd);
      return Fail(std::move(e));
    }
  }
  return std::unique_ptr<FileLock>(new FileLock(fd));
}

Result<std::unique_ptr<FileLock>> FileLock::TryAcquire(const fs::path& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Fail(IoError("cannot open lock", path));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return Fail(Error{ErrorCode::kUnavailable, "locked by another process: " + path.string(),
                      {{"path", path.string()}}});
  }
  return std::unique_ptr<FileLock>(new FileLock(fd));
}

FileLock::~FileLock() {
  flock(fd_, LOCK_UN);
  close(fd_);
}

Result<std::unique_ptr<TempDir>> TempDir::Create(std::string_view prefix) {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + std::string(prefix) + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) return Internal("mkdtemp: " + std::string(strerror(errno)));
  return std::unique_ptr<TempDir>(new TempDir(tmpl));
}

TempDir::~TempDir() {
  if (released_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace hone::sys
