// Credentials for LLM backends: read from the environment only, and kept out of
// everything hone writes.
//
// A Secret holds an API key read from the environment variable a backend names. It has
// no printing or serialization of its own; reveal() is called only where the key goes
// onto the wire (an HTTP header) or into a child's environment. Every text that leaves
// the agent layer for a log, a transcript, an error message, state or a report passes
// through a Redactor, which replaces every registered secret (and anything shaped like
// a well-known API key) with "[redacted]". The environment is read through an
// EnvLookup so tests can inject one; ProcessEnv() reads the real one.
//
// Secret is a value type. Redactor is thread-safe and shared (by reference) by every
// backend, client and transcript of a session.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace hone::agent {

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// Reads the process environment (getenv).
EnvLookup ProcessEnv();

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  bool empty() const { return value_.empty(); }
  // The key itself: only for the request header or a child's environment.
  const std::string& reveal() const { return value_; }

 private:
  std::string value_;
};

// Reads a key from `var`. kFailedPrecondition naming the variable (never a value) when
// it is unset or empty.
Result<Secret> SecretFromEnv(const EnvLookup& env, const std::string& var);

class Redactor {
 public:
  static constexpr std::string_view kMask = "[redacted]";
  // Registers a secret to be masked (values shorter than 6 characters are ignored:
  // masking them would shred ordinary text).
  void Add(const std::string& secret);
  void Add(const Secret& secret) { Add(secret.reveal()); }
  // `text` as valid UTF-8 (agent/text.h) with every registered secret and every
  // key-shaped token ("sk-...", "sk-ant-...", "Bearer ...") masked.
  std::string Redact(std::string_view text) const;
  // Whether `text` contains a registered secret.
  bool Leaks(std::string_view text) const;
  // An Error with its message and context values redacted.
  Error Redact(Error e) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> secrets_;  // GUARDED_BY(mu_)
};

}  // namespace hone::agent
