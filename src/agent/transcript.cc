#include "agent/transcript.h"

#include <nlohmann/json.hpp>

#include "agent/text.h"
#include "sys/files.h"

namespace hone::agent {

Status Transcript::Append(const TranscriptEntry& e) {
  auto clip = [&](const std::string& s) {
    std::string r = redactor_.Redact(s);
    if (r.size() > clip_chars_) r = ClipUtf8(r, clip_chars_) + "...[" + std::to_string(r.size() - clip_chars_) + " more]";
    return r;
  };
  nlohmann::json j = {{"role", e.role},
                      {"backend", redactor_.Redact(e.backend)},
                      {"attempt", e.attempt},
                      {"outcome", e.outcome},
                      {"prompt", clip(e.prompt)},
                      {"reply", clip(e.reply)},
                      {"detail", clip(e.detail)},
                      {"input_tokens", e.usage.input_tokens},
                      {"output_tokens", e.usage.output_tokens},
                      {"cost_usd", e.usage.cost_usd},
                      {"usage_estimated", e.usage.estimated}};
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mu_);
  return sys::AppendLineSync(path_, line);
}

}  // namespace hone::agent
