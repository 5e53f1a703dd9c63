#include "agent/secrets.h"

#include <cstdlib>
#include <regex>

#include "agent/text.h"

namespace hone::agent {

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Result<Secret> SecretFromEnv(const EnvLookup& env, const std::string& var) {
  if (var.empty()) return InvalidArgument("no environment variable named for the API key");
  std::optional<std::string> v = env ? env(var) : std::nullopt;
  if (!v || v->empty()) {
    return FailedPrecondition("the API key variable " + var + " is not set in the environment");
  }
  return Secret(*v);
}

void Redactor::Add(const std::string& secret) {
  if (secret.size() < 6) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : secrets_) {
    if (s == secret) return;
  }
  secrets_.push_back(secret);
}

std::string Redactor::Redact(std::string_view text) const {
  // Everything that leaves the agent layer passes here: make it valid UTF-8 too.
  std::string out = SanitizeUtf8(text);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : secrets_) {
      size_t pos = 0;
      while ((pos = out.find(s, pos)) != std::string::npos) {
        out.replace(pos, s.size(), kMask);
        pos += kMask.size();
      }
    }
  }
  // Key-shaped tokens a server may echo (another key, a masked fragment of ours).
  static const std::regex kKeyLike(R"((sk-(ant-)?[A-Za-z0-9_\-]{12,})|((Bearer|bearer)\s+[A-Za-z0-9_\-\.]{12,}))");
  if (out.find("sk-") != std::string::npos || out.find("earer") != std::string::npos) {
    out = std::regex_replace(out, kKeyLike, std::string(kMask));
  }
  return out;
}

bool Redactor::Leaks(std::string_view text) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : secrets_) {
    if (text.find(s) != std::string_view::npos) return true;
  }
  return false;
}

Error Redactor::Redact(Error e) const {
  e.message = Redact(e.message);
  for (auto& [k, v] : e.context) v = Redact(v);
  return e;
}

}  // namespace hone::agent
