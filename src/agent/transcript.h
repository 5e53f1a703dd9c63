// Transcript: the append-only record of every LLM call a session made
// (agent_calls.jsonl in the run directory): role, backend, attempt, outcome, the
// prompt and reply (clipped), usage, rejections and errors. It is the audit trail for
// "what did the agent say and what did hone do with it".
//
// Every string is passed through the Redactor before it is written, so no key can
// reach the file even when a server echoes one. Lines are appended and fsynced
// (sys::AppendLineSync). Thread-safe (one mutex around the append).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "agent/secrets.h"
#include "agent/usage.h"
#include "core/error.h"

namespace hone::agent {

struct TranscriptEntry {
  std::string role;
  std::string backend;
  int attempt = 0;
  std::string outcome;  // ok | error | rejected | refused | disabled
  std::string prompt;   // clipped
  std::string reply;    // clipped
  std::string detail;   // error message, violations or the cap that refused
  Usage usage;
};

class Transcript {
 public:
  Transcript(std::string path, const Redactor& redactor, size_t clip_chars = 4000)
      : path_(std::move(path)), redactor_(redactor), clip_chars_(clip_chars) {}
  Status Append(const TranscriptEntry& entry);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const Redactor& redactor_;
  size_t clip_chars_;
  std::mutex mu_;
};

}  // namespace hone::agent
