#include "agent/cli_backend.h"

#include <nlohmann/json.hpp>

#include "agent/http_backends.h"
#include "core/strings.h"
#include "sys/files.h"
#include "sys/process.h"

namespace hone::agent {
namespace {

using json = nlohmann::json;

// Arguments longer than this go through a file (Linux limits one argument to 128 KiB).
constexpr size_t kMaxArgBytes = 100 * 1024;

std::optional<json> ParseLine(std::string_view line) {
  line = Trim(line);
  if (line.empty() || line.front() != '{') return std::nullopt;
  auto j = TryCatch(ErrorCode::kInvalidArgument, "", [&] { return json::parse(line); });
  if (!j || !j->is_object()) return std::nullopt;
  return *j;
}

int64_t IntOr(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : 0;
}

std::string StrOr(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

}  // namespace

Usage CliBackend::WorstCase(const ChatRequest& request) const {
  Usage u = WorstCaseOf(request, options_.price, options_.chars_per_token);
  // An agent run reads files and takes many turns: its cost is bounded by the preset.
  u.cost_usd = std::max(u.cost_usd, options_.preset.worst_case_usd);
  return u;
}

std::vector<std::string> CliBackend::Argv(const std::string& prompt, const std::string& prompt_file) const {
  std::vector<std::string> argv;
  for (const auto& a : options_.preset.argv) {
    argv.push_back(ReplaceAll(ReplaceAll(a, "{prompt_file}", prompt_file), "{prompt}", prompt));
  }
  if (!options_.model.empty()) {
    for (const auto& a : options_.preset.model_args) argv.push_back(ReplaceAll(a, "{model}", options_.model));
  }
  return argv;
}

bool CliBackend::CredentialFailure(const std::string& lower_output) const {
  for (const auto& p : options_.preset.credential_patterns) {
    if (!p.empty() && lower_output.find(ToLower(p)) != std::string::npos) return true;
  }
  return false;
}

Result<ChatReply> CliBackend::Complete(const ChatRequest& request) {
  std::string prompt = request.Flatten();
  HONE_ASSIGN_OR_RETURN(auto scratch, sys::TempDir::Create("hone-agent-cli"));
  std::string prompt_file = (scratch->path() / "prompt.md").string();
  bool uses_file = false;
  for (const auto& a : options_.preset.argv) uses_file = uses_file || Contains(a, "{prompt_file}");
  if (uses_file) HONE_TRY(sys::WriteFileAtomic(prompt_file, prompt));
  if (!uses_file && prompt.size() > kMaxArgBytes) {
    return Fail(Classified(Error{ErrorCode::kInvalidArgument,
                                 name() + ": prompt of " + std::to_string(prompt.size()) +
                                     " bytes is too long for an argument; use {prompt_file} in the preset",
                                 {}},
                           FailureClass::kFatal));
  }
  sys::ProcessSpec spec;
  spec.argv = Argv(prompt, prompt_file);
  spec.cwd = request.workdir.empty() ? scratch->path().string() : request.workdir;
  spec.ring_bytes = 4 * 1024 * 1024;
  if (!options_.preset.api_key_env.empty()) {
    auto key = SecretFromEnv(options_.env, options_.preset.api_key_env);
    if (!key) {
      // A missing key is a credential problem: the backend is unusable this session.
      return Fail(Classified(std::move(key).error().Wrap(name()), FailureClass::kCredentials));
    }
    spec.env[options_.preset.api_key_env] = key->reveal();
  }
  auto run = sys::RunCommand(spec, options_.timeout);
  if (!run) {
    Error e = redactor_.Redact(std::move(run).error()).Wrap(name());
    // Not found, timeout, interrupt: none is worth an automatic repeat of an agent run.
    return Fail(Classified(std::move(e), FailureClass::kFatal));
  }
  std::string output = redactor_.Redact(run->output);
  return Parse(output, run->status.success(), run->status.ToString(), request);
}

Result<ChatReply> CliBackend::Parse(const std::string& output, bool exited_ok, const std::string& exit_text,
                                    const ChatRequest& request) const {
  std::string lower = ToLower(output);
  auto failure = [&](const std::string& why) -> Result<ChatReply> {
    FailureClass c = CredentialFailure(lower) ? FailureClass::kCredentials : FailureClass::kFatal;
    Error e{c == FailureClass::kCredentials ? ErrorCode::kPermissionDenied : ErrorCode::kFailedPrecondition,
            name() + ": " + why, {}};
    e.With("output_tail", LastLines(output, 8));
    return Fail(Classified(std::move(e), c));
  };
  ChatReply reply;
  bool reported = false;
  const std::string& mode = options_.preset.output;
  if (mode == "claude_json") {
    std::optional<json> result;
    if (auto whole = ParseLine(output); whole && StrOr(*whole, "type") == "result") result = whole;
    if (!result) {
      auto lines = Split(output, '\n');
      for (auto it = lines.rbegin(); it != lines.rend() && !result; ++it) {
        auto j = ParseLine(*it);
        if (j && StrOr(*j, "type") == "result") result = j;
      }
    }
    if (!result) return failure(exited_ok ? "no result object in the output" : "exited (" + exit_text + ")");
    bool is_error = result->contains("is_error") && (*result)["is_error"].is_boolean() && (*result)["is_error"].get<bool>();
    if (is_error || !exited_ok) return failure("run failed: " + StrOr(*result, "subtype") + " " + StrOr(*result, "result"));
    reply.text = StrOr(*result, "result");
    if (result->contains("usage") && (*result)["usage"].is_object()) {
      const json& u = (*result)["usage"];
      reply.usage.input_tokens = IntOr(u, "input_tokens") + IntOr(u, "cache_creation_input_tokens") +
                                 IntOr(u, "cache_read_input_tokens");
      reply.usage.output_tokens = IntOr(u, "output_tokens");
      reported = true;
    }
    if (result->contains("total_cost_usd") && (*result)["total_cost_usd"].is_number()) {
      reply.usage.cost_usd = (*result)["total_cost_usd"].get<double>();
      return reply;  // the CLI's own cost figure is the best we have
    }
  } else if (mode == "codex_jsonl") {
    std::string failed;
    for (const auto& line : Split(output, '\n')) {
      auto j = ParseLine(line);
      if (!j) continue;
      std::string type = StrOr(*j, "type");
      if (type == "item.completed" && j->contains("item") && StrOr((*j)["item"], "type") == "agent_message") {
        reply.text = StrOr((*j)["item"], "text");
      } else if (type == "turn.completed" && j->contains("usage")) {
        reply.usage.input_tokens += IntOr((*j)["usage"], "input_tokens");
        reply.usage.output_tokens += IntOr((*j)["usage"], "output_tokens");
        reported = true;
      } else if (type == "turn.failed" || type == "error") {
        failed = j->contains("error") && (*j)["error"].is_object() ? StrOr((*j)["error"], "message") : StrOr(*j, "message");
        if (failed.empty()) failed = type;
      }
    }
    if (!failed.empty() || !exited_ok) return failure(failed.empty() ? "exited (" + exit_text + ")" : failed);
  } else {
    if (!exited_ok) return failure("exited (" + exit_text + ")");
    reply.text = std::string(Trim(output));
  }
  if (reported) {
    reply.usage.cost_usd = options_.price.Cost(reply.usage.input_tokens, reply.usage.output_tokens);
  } else {
    // Nothing reported: charge the worst case so the cap still holds.
    reply.usage = WorstCase(request);
  }
  return reply;
}

}  // namespace hone::agent
