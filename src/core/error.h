// hone::Error and hone::Result<T>: how every expected failure travels in hone.
//
// A function that can fail returns Result<T> (std::expected<T, Error>) or Status
// (Result<void>). Success carries no allocation; an Error carries a canonical code,
// a one-line human message that names the cause, and structured context
// (key/value pairs such as the file, the port or the log excerpt) that reports and
// events can show without parsing prose. No exception crosses a layer boundary:
// third-party code that throws is wrapped where it is called (see TryCatch).
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hone {

enum class ErrorCode {
  kInvalidArgument,    // bad user input: a flag, a spec field, a malformed file
  kNotFound,           // a file, binary, recipe or key that is not there
  kAlreadyExists,
  kUnavailable,        // a server or port that cannot be reached now
  kDeadlineExceeded,   // a timeout
  kFailedPrecondition, // the world is not in the state the call needs
  kPermissionDenied,   // the policy gate or the OS said no
  kCancelled,          // SIGINT/SIGTERM or an explicit cancel
  kResourceExhausted,  // out of memory, disk, budget
  kDataLoss,           // a corrupt file
  kInternal,           // a bug or an unexpected third-party failure
};

std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::vector<std::pair<std::string, std::string>> context;

  // Adds a key/value context entry; returns *this for chaining.
  Error& With(std::string key, std::string value) &;
  Error&& With(std::string key, std::string value) &&;
  // Prefixes the message ("reading spec: <message>"), keeping code and context.
  Error&& Wrap(std::string_view prefix) &&;
  // Looks up a context value; empty when absent.
  std::string_view Get(std::string_view key) const;
  // "message" or "message [key=value, ...]" on one line.
  std::string ToString() const;
};

template <class T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> MakeError(ErrorCode code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message), {}});
}
inline std::unexpected<Error> InvalidArgument(std::string m) { return MakeError(ErrorCode::kInvalidArgument, std::move(m)); }
inline std::unexpected<Error> NotFound(std::string m) { return MakeError(ErrorCode::kNotFound, std::move(m)); }
inline std::unexpected<Error> Unavailable(std::string m) { return MakeError(ErrorCode::kUnavailable, std::move(m)); }
inline std::unexpected<Error> DeadlineExceeded(std::string m) { return MakeError(ErrorCode::kDeadlineExceeded, std::move(m)); }
inline std::unexpected<Error> FailedPrecondition(std::string m) { return MakeError(ErrorCode::kFailedPrecondition, std::move(m)); }
inline std::unexpected<Error> PermissionDenied(std::string m) { return MakeError(ErrorCode::kPermissionDenied, std::move(m)); }
inline std::unexpected<Error> Cancelled(std::string m) { return MakeError(ErrorCode::kCancelled, std::move(m)); }
inline std::unexpected<Error> ResourceExhausted(std::string m) { return MakeError(ErrorCode::kResourceExhausted, std::move(m)); }
inline std::unexpected<Error> DataLoss(std::string m) { return MakeError(ErrorCode::kDataLoss, std::move(m)); }
inline std::unexpected<Error> Internal(std::string m) { return MakeError(ErrorCode::kInternal, std::move(m)); }
inline std::unexpected<Error> Fail(Error e) { return std::unexpected<Error>(std::move(e)); }

inline Status Ok() { return {}; }

// Runs f() and converts any escaping exception into an Error with the given code.
// For wrapping third-party calls that throw (nlohmann::json, yaml-cpp, std::sto*).
template <class F>
auto TryCatch(ErrorCode code, std::string_view what, F&& f) -> Result<decltype(f())> {
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      return {};
    } else {
      return f();
    }
  } catch (const std::exception& e) {
    return MakeError(code, std::string(what) + ": " + e.what());
  }
}

}  // namespace hone

// Propagates a failed Status/Result from the enclosing function.
#define HONE_TRY(expr)                                            \
  do {                                                            \
    auto&& hone_try_result_ = (expr);                             \
    if (!hone_try_result_) {                                      \
      return std::unexpected<::hone::Error>(                      \
          std::move(hone_try_result_).error());                   \
    }                                                             \
  } while (0)

#define HONE_CONCAT_INNER_(a, b) a##b
#define HONE_CONCAT_(a, b) HONE_CONCAT_INNER_(a, b)
// HONE_ASSIGN_OR_RETURN(auto x, Foo()); declares/assigns x or returns the error.
#define HONE_ASSIGN_OR_RETURN(lhs, expr) \
  HONE_ASSIGN_OR_RETURN_IMPL_(HONE_CONCAT_(hone_aor_, __LINE__), lhs, expr)
#define HONE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)                     \
  auto tmp = (expr);                                                    \
  if (!tmp) return std::unexpected<::hone::Error>(std::move(tmp).error()); \
  lhs = std::move(*tmp)
