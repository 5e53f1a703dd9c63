#include "agent/http_backends.h"

#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace hone::agent {
namespace {

using json = nlohmann::json;

std::string HostOf(const std::string& url) {
  std::string_view t = url;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (t.starts_with(scheme)) t.remove_prefix(scheme.size());
  }
  return std::string(t.substr(0, t.find('/')));
}

std::string Join(const std::string& base, const std::string& path) {
  std::string b = base;
  while (!b.empty() && b.back() == '/') b.pop_back();
  return b + path;
}

// A schema without annotations some APIs refuse ($schema, $id).
json Bare(const JsonSchema& s) {
  json j = s.json();
  if (j.is_object()) {
    j.erase("$schema");
    j.erase("$id");
  }
  return j;
}

Result<json> ParseBody(const std::string& backend, const std::string& body, const Redactor& redactor) {
  auto parsed = TryCatch(ErrorCode::kDataLoss, backend + ": response is not JSON", [&] { return json::parse(body); });
  if (!parsed) {
    // A proxy's HTML error page or a truncated body: worth another attempt.
    return Fail(Classified(redactor.Redact(std::move(parsed).error()), FailureClass::kRetryable)
                    .With("body_head", redactor.Redact(body.substr(0, 200))));
  }
  return parsed;
}

Usage UsageFrom(int64_t in, int64_t out, bool reported, const ChatRequest& request, const std::string& text,
                const HttpBackendOptions& o) {
  Usage u;
  if (reported) {
    u.input_tokens = in;
    u.output_tokens = out;
  } else {
    u.input_tokens = EstimateTokens(request.PromptChars(), o.chars_per_token);
    u.output_tokens = EstimateTokens(text.size(), o.chars_per_token);
    u.estimated = true;
  }
  u.cost_usd = o.price.Cost(u.input_tokens, u.output_tokens);
  return u;
}

int64_t IntOr(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : 0;
}

}  // namespace

Usage WorstCaseOf(const ChatRequest& request, const ModelPrice& price, double chars_per_token) {
  Usage u;
  u.input_tokens = EstimateTokens(request.PromptChars(), chars_per_token);
  u.output_tokens = request.max_output_tokens;
  u.cost_usd = price.Cost(u.input_tokens, u.output_tokens);
  u.estimated = true;
  return u;
}

// ---- OpenAI-compatible ----

std::string OpenAiBackend::name() const { return "openai:" + options_.model + "@" + HostOf(options_.base_url); }

Usage OpenAiBackend::WorstCase(const ChatRequest& request) const {
  return WorstCaseOf(request, options_.price, options_.chars_per_token);
}

std::string OpenAiBackend::RequestBody(const ChatRequest& request) const {
  json messages = json::array();
  std::string system = request.system;
  if (request.schema) {
    // Servers that ignore response_format still see the shape asked for.
    system += "\n\nReply with only a JSON object that matches this JSON schema:\n" + request.schema->json().dump();
  }
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  for (const auto& m : request.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  json body = {{"model", options_.model}, {"messages", messages}, {"temperature", request.temperature},
               {options_.max_tokens_field, request.max_output_tokens}, {"stream", false}};
  if (request.schema) {
    body["response_format"] = {{"type", "json_schema"},
                               {"json_schema", {{"name", request.schema->name()}, {"strict", false},
                                                {"schema", Bare(*request.schema)}}}};
  }
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<ChatReply> OpenAiBackend::Complete(const ChatRequest& request) {
  TransportRequest tr;
  tr.url = Join(options_.base_url, "/chat/completions");
  tr.body = RequestBody(request);
  tr.timeout = options_.timeout;
  tr.headers = {{"Content-Type", "application/json"}};
  if (!options_.key.empty()) tr.headers.emplace_back("Authorization", "Bearer " + options_.key.reveal());
  auto resp = transport_.Post(tr);
  if (!resp) return Fail(TransportFailure(name(), redactor_.Redact(std::move(resp).error())));
  if (resp->status != 200) {
    return Fail(HttpError(name(), resp->status, redactor_.Redact(resp->body), resp->Header("retry-after")));
  }
  HONE_ASSIGN_OR_RETURN(json j, ParseBody(name(), resp->body, redactor_));
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty() ||
      !j["choices"][0].is_object() || !j["choices"][0].contains("message")) {
    return Fail(Classified(Error{ErrorCode::kDataLoss, name() + ": response has no choices[0].message", {}},
                           FailureClass::kRetryable));
  }
  const json& choice = j["choices"][0];
  const json& msg = choice["message"];
  ChatReply reply;
  if (msg.contains("content") && msg["content"].is_string()) reply.text = msg["content"].get<std::string>();
  if (reply.text.empty() && msg.contains("refusal") && msg["refusal"].is_string()) {
    return Fail(Classified(Error{ErrorCode::kFailedPrecondition,
                                 name() + ": the model refused: " + redactor_.Redact(msg["refusal"].get<std::string>()),
                                 {}},
                           FailureClass::kFatal));
  }
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    reply.finish_reason = choice["finish_reason"].get<std::string>();
  }
  if (j.contains("model") && j["model"].is_string()) reply.model = j["model"].get<std::string>();
  bool reported = j.contains("usage") && j["usage"].is_object() && j["usage"].contains("prompt_tokens");
  reply.usage = UsageFrom(reported ? IntOr(j["usage"], "prompt_tokens") : 0,
                          reported ? IntOr(j["usage"], "completion_tokens") : 0, reported, request, reply.text,
                          options_);
  return reply;
}

// ---- Anthropic Messages ----

std::string AnthropicBackend::name() const { return "anthropic:" + options_.model; }

Usage AnthropicBackend::WorstCase(const ChatRequest& request) const {
  return WorstCaseOf(request, options_.price, options_.chars_per_token);
}

std::string AnthropicBackend::RequestBody(const ChatRequest& request) const {
  json messages = json::array();
  for (const auto& m : request.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  json body = {{"model", options_.model}, {"max_tokens", request.max_output_tokens},
               {"temperature", request.temperature}, {"messages", messages}};
  if (!request.system.empty()) body["system"] = request.system;
  if (request.schema) {
    std::string tool = request.schema->name();
    body["tools"] = json::array({{{"name", tool},
                                  {"description", "Submit the reply. Its input is the whole answer."},
                                  {"input_schema", Bare(*request.schema)}}});
    body["tool_choice"] = {{"type", "tool"}, {"name", tool}};
  }
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<ChatReply> AnthropicBackend::Complete(const ChatRequest& request) {
  TransportRequest tr;
  tr.url = Join(options_.base_url, "/v1/messages");
  tr.body = RequestBody(request);
  tr.timeout = options_.timeout;
  tr.headers = {{"Content-Type", "application/json"}, {"anthropic-version", options_.anthropic_version}};
  if (!options_.key.empty()) tr.headers.emplace_back("x-api-key", options_.key.reveal());
  auto resp = transport_.Post(tr);
  if (!resp) return Fail(TransportFailure(name(), redactor_.Redact(std::move(resp).error())));
  if (resp->status != 200) {
    return Fail(HttpError(name(), resp->status, redactor_.Redact(resp->body), resp->Header("retry-after")));
  }
  HONE_ASSIGN_OR_RETURN(json j, ParseBody(name(), resp->body, redactor_));
  if (!j.is_object() || !j.contains("content") || !j["content"].is_array()) {
    return Fail(Classified(Error{ErrorCode::kDataLoss, name() + ": response has no content list", {}},
                           FailureClass::kRetryable));
  }
  ChatReply reply;
  for (const json& block : j["content"]) {
    if (!block.is_object() || !block.contains("type")) continue;
    if (block["type"] == "tool_use" && block.contains("input")) {
      reply.text = block["input"].dump();  // the forced tool's input is the structured reply
      break;
    }
    if (block["type"] == "text" && block.contains("text") && block["text"].is_string()) {
      reply.text += block["text"].get<std::string>();
    }
  }
  if (j.contains("stop_reason") && j["stop_reason"].is_string()) reply.finish_reason = j["stop_reason"].get<std::string>();
  if (j.contains("model") && j["model"].is_string()) reply.model = j["model"].get<std::string>();
  bool reported = j.contains("usage") && j["usage"].is_object() && j["usage"].contains("input_tokens");
  int64_t in = reported ? IntOr(j["usage"], "input_tokens") + IntOr(j["usage"], "cache_creation_input_tokens") +
                              IntOr(j["usage"], "cache_read_input_tokens")
                        : 0;
  reply.usage = UsageFrom(in, reported ? IntOr(j["usage"], "output_tokens") : 0, reported, request, reply.text,
                          options_);
  return reply;
}

}  // namespace hone::agent
