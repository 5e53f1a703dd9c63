#include "bench/tokens.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/rng.h"
#include "core/strings.h"
#include "net/http.h"
#include "sys/files.h"

namespace hone::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

// Common English words: most are single tokens in every modern vocabulary. The
// server's tokenizer decides which ones the pool keeps.
constexpr const char* kCandidates[] = {
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not", "he",
    "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were", "their",
    "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would", "who", "so",
    "no", "she", "other", "its", "may", "these", "what", "them", "than", "some", "him", "time", "into", "only",
    "do", "any", "then", "about", "two", "many", "could", "also", "first", "my", "such", "like", "new", "out",
    "made", "now", "over", "me", "our", "very", "most", "after", "used", "well", "each", "much", "where", "before",
    "through", "should", "your", "being", "years", "how", "between", "same", "because", "both", "those", "under",
    "work", "way", "own", "make", "long", "life", "world", "day", "back", "still", "good", "us", "while", "last",
    "might", "great", "just", "even", "here", "old", "year", "off", "come", "since", "against", "go", "came",
    "right", "take", "three", "state", "himself", "few", "house", "use", "during", "without", "again", "place",
    "around", "however", "home", "small", "found", "thought", "went", "say", "part", "once", "general", "high",
    "upon", "school", "every", "don", "does", "got", "united", "left", "number", "course", "war", "until",
    "always", "away", "something", "fact", "though", "water", "less", "public", "put", "think", "almost", "hand",
    "enough", "far", "took", "head", "yet", "government", "system", "better", "set", "told", "nothing", "night",
    "end", "why", "called", "didn", "eyes", "find", "going", "look", "asked", "later", "knew", "point", "next",
    "program", "city", "business", "give", "group", "toward", "young", "days", "let", "room", "president", "side",
    "social", "present", "given", "several", "order", "national", "second", "possible", "rather", "per", "face",
    "among", "form", "important", "often", "things", "looked", "early", "white", "case", "become", "large", "big",
    "need", "four", "within", "felt", "along", "children", "saw", "best", "church", "ever", "least", "power",
    "development", "light", "thing", "seemed", "family", "interest", "want", "members", "mind", "country", "area",
    "others", "done", "turned", "although", "open", "problem", "sense", "money", "began", "help", "service",
    "certain", "line", "name", "kind", "show", "field", "data", "file", "code", "test", "table", "list", "value",
    "model", "string", "text", "type", "error", "result", "function", "class", "user", "query", "server", "client",
    "request", "index", "path", "build", "run", "check", "read", "write", "call", "return", "start", "stop", "step",
    "task", "job", "note", "plan", "view", "page", "link", "word", "key", "map", "tree", "node", "edge", "graph",
    "cache", "block", "batch", "token", "input", "output", "search", "sort", "merge", "split", "join", "count",
    "size", "rate", "speed", "time", "cost", "price", "market", "sale", "store", "shop", "food", "game", "team",
    "player", "music", "song", "film", "story", "book", "paper", "letter", "market", "river", "lake", "sea",
    "island", "forest", "tree", "stone", "fire", "wind", "rain", "snow", "sun", "moon", "star", "sky", "earth",
    "gold", "silver", "iron", "glass", "wood", "door", "window", "wall", "floor", "road", "street", "bridge",
    "train", "car", "ship", "boat", "plane", "horse", "dog", "cat", "bird", "fish", "tree", "flower", "garden",
    "farm", "village", "town", "king", "queen", "army", "law", "court", "party", "vote", "policy", "health",
    "doctor", "hospital", "student", "teacher", "class", "lesson", "science", "art", "history", "language",
    "english", "french", "german", "north", "south", "east", "west", "red", "blue", "green", "black", "brown",
    "small", "short", "simple", "clear", "free", "full", "real", "true", "strong", "easy", "hard", "fast", "slow",
    "low", "deep", "wide", "hot", "cold", "dark", "late", "near", "close", "ready", "happy", "final", "local",
    "major", "human", "single", "private", "special", "central", "common", "similar", "basic", "recent", "current",
};

constexpr int64_t kProbeWords = 16;  // content of the overhead probes, in tokens

// Counts tokens of `text` with the server's tokenizer, without special tokens.
class ServerCounter {
 public:
  explicit ServerCounter(const CalibrationOptions& o) : o_(o) {}

  bool Available() const {
    const std::string& f = o_.profile.framework;
    return f == "llama.cpp" || f == "vllm" || f == "sglang";
  }

  Result<int64_t> Count(const std::string& text) {
    json body;
    if (o_.profile.framework == "llama.cpp") {
      body = {{"content", text}, {"add_special", false}};
    } else {
      body = {{"prompt", text}, {"add_special_tokens", false}};
      if (!o_.profile.model_name.empty()) body["model"] = o_.profile.model_name;
    }
    HONE_ASSIGN_OR_RETURN(net::HttpResponse r, net::PostJson(o_.host, o_.port, "/tokenize", body.dump(), 30s));
    if (r.status != 200) return Unavailable("/tokenize: HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 160));
    json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return DataLoss("/tokenize: not a JSON object");
    if (j.contains("count") && j["count"].is_number_integer()) return j["count"].get<int64_t>();
    if (j.contains("tokens") && j["tokens"].is_array()) return static_cast<int64_t>(j["tokens"].size());
    return DataLoss("/tokenize: no tokens in the answer");
  }

  // Tokens of `text` standing after a newline (the anchor's own tokens removed).
  Result<int64_t> CountInContext(const std::string& text) {
    if (anchor_ < 0) {
      HONE_ASSIGN_OR_RETURN(anchor_, Count("\n"));
    }
    HONE_ASSIGN_OR_RETURN(int64_t n, Count("\n" + text));
    return n - anchor_;
  }

 private:
  const CalibrationOptions& o_;
  int64_t anchor_ = -1;
};

// The words whose "space + word" is one piece of the vocabulary.
std::set<std::string> VocabWords(const std::vector<std::string>& pieces, const std::string& model) {
  std::set<std::string> out;
  // SentencePiece marks a leading space with U+2581, byte-level BPE with U+0120.
  const std::string space = model == "gpt2" ? "\xC4\xA0" : "\xE2\x96\x81";
  std::set<std::string> vocab(pieces.begin(), pieces.end());
  for (const char* w : kCandidates) {
    if (vocab.contains(space + w)) out.insert(w);
  }
  return out;
}

// usage.prompt_tokens of a one-token, non-streamed request.
Result<int64_t> PromptTokens(const CalibrationOptions& o, const json& body_in, const std::string& path) {
  json body = body_in;
  if (!o.profile.model_name.empty()) body["model"] = o.profile.model_name;
  body["max_tokens"] = 1;
  body["temperature"] = 0;
  body["stream"] = false;
  HONE_ASSIGN_OR_RETURN(net::HttpResponse r, net::PostJson(o.host, o.port, path, body.dump(), 60s));
  if (r.status != 200) return Unavailable(path + ": HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 160));
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("usage") || !j["usage"].is_object()) {
    return DataLoss(path + ": no usage in the answer");
  }
  return j["usage"].value("prompt_tokens", int64_t{-1});
}

Result<int64_t> ChatProbe(const CalibrationOptions& o, const std::vector<std::pair<std::string, std::string>>& msgs) {
  json messages = json::array();
  for (const auto& [role, content] : msgs) messages.push_back({{"role", role}, {"content", content}});
  return PromptTokens(o, {{"messages", messages}}, "/v1/chat/completions");
}

Status CalibrateOverheads(const CalibrationOptions& o, TokenPlan& plan) {
  const std::string x = PoolText(plan, 0x5eed, kProbeWords);
  HONE_ASSIGN_OR_RETURN(int64_t completion, PromptTokens(o, {{"prompt", x}}, "/v1/completions"));
  plan.completion_base = completion - kProbeWords;
  HONE_ASSIGN_OR_RETURN(int64_t u, ChatProbe(o, {{"user", x}}));
  HONE_ASSIGN_OR_RETURN(int64_t su, ChatProbe(o, {{"system", x}, {"user", x}}));
  HONE_ASSIGN_OR_RETURN(int64_t uau, ChatProbe(o, {{"user", x}, {"assistant", x}, {"user", x}}));
  // Two user messages in a row separate the per-request base from a user message's
  // own overhead; templates that insist on alternating roles refuse it, and then the
  // user and assistant headers are taken as equal.
  auto uu = ChatProbe(o, {{"user", x}, {"user", x}});
  int64_t user = uu ? *uu - u - kProbeWords : (uau - u - 2 * kProbeWords) / 2;
  plan.chat_role["user"] = user;
  plan.chat_role["system"] = su - u - kProbeWords;
  plan.chat_role["assistant"] = uau - u - 2 * kProbeWords - user;
  plan.chat_base = u - kProbeWords - user;
  return Ok();
}

}  // namespace

std::string PoolText(const TokenPlan& plan, uint64_t seed, int64_t tokens) {
  std::string out;
  if (plan.words.empty() || tokens <= 0) return out;
  Rng rng(seed);
  const auto n = static_cast<int64_t>(plan.words.size());
  out.reserve(static_cast<size_t>(tokens) * 7);
  for (int64_t i = 0; i < tokens; ++i) {
    out += ' ';
    out += plan.words[static_cast<size_t>(rng.Uniform(0, n - 1))];
  }
  return out;
}

int64_t ChatOverhead(const TokenPlan& plan, const std::vector<std::string>& roles) {
  int64_t total = plan.chat_base;
  for (const std::string& r : roles) {
    auto it = plan.chat_role.find(r);
    total += it != plan.chat_role.end() ? it->second : plan.chat_role.contains("user") ? plan.chat_role.at("user") : 0;
  }
  return total;
}

Result<std::string> TokenizerKey(const CalibrationOptions& o) {
  std::string identity = o.profile.framework + "|" + o.profile.model_name;
  if (o.profile.framework == "llama.cpp") {
    HONE_ASSIGN_OR_RETURN(net::HttpResponse r, net::Get(o.host, o.port, "/props", 10s));
    if (r.status != 200) return Unavailable("/props: HTTP " + std::to_string(r.status));
    json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded()) return DataLoss("/props: not JSON");
    identity += "|" + j.value("model_path", "") + "|" + j.value("chat_template", "");
  } else {
    auto r = net::Get(o.host, o.port, "/v1/models", 10s);
    if (r && r->status == 200) identity += "|" + r->body;
  }
  return StableHash(identity).substr(0, 16);
}

Result<TokenPlan> CalibrateTokens(const CalibrationOptions& o) {
  HONE_ASSIGN_OR_RETURN(std::string key, TokenizerKey(o));
  fs::path cached = o.cache_dir.empty() ? fs::path() : fs::path(o.cache_dir) / ("tokens-" + key + ".json");
  if (!cached.empty() && sys::FileExists(cached)) {
    if (auto text = sys::ReadFile(cached)) {
      if (auto plan = TokenPlanFromJson(*text); plan && plan->key == key && plan->usable()) return plan;
    }
  }
  TokenPlan plan;
  plan.key = key;
  std::set<std::string> vocab = o.vocab_pieces.empty() ? std::set<std::string>{} : VocabWords(o.vocab_pieces, o.vocab_model);
  ServerCounter counter(o);
  std::set<std::string> seen;
  bool server_ok = counter.Available();
  if (server_ok) {
    for (const char* w : kCandidates) {
      if (!seen.insert(w).second) continue;
      if (!vocab.empty() && !vocab.contains(w)) continue;  // the vocabulary rules it out already
      auto n = counter.CountInContext(std::string(" ") + w);
      if (!n) {
        if (!plan.words.empty()) return Fail(n.error());
        server_ok = false;  // no tokenizer endpoint: fall back to the vocabulary
        break;
      }
      if (*n == 1) plan.words.push_back(w);
    }
  }
  if (server_ok) {
    plan.source = o.profile.framework + " /tokenize";
    if (!plan.usable()) return FailedPrecondition("the server's tokenizer splits almost every common word");
    // The pool must add up: a long text of pool words is exactly that many tokens.
    const int64_t n = 256;
    HONE_ASSIGN_OR_RETURN(int64_t got, counter.CountInContext(PoolText(plan, 0xadd, n)));
    if (got != n) {
      return FailedPrecondition("pool words do not add up under this tokenizer (" + std::to_string(n) + " words -> " +
                                std::to_string(got) + " tokens)");
    }
  } else if (!vocab.empty()) {
    plan.words.assign(vocab.begin(), vocab.end());
    plan.source = "GGUF vocabulary (" + o.vocab_model + ")";
  } else {
    return Unavailable("no tokenizer: the server has no /tokenize endpoint and no vocabulary was given");
  }
  if (!plan.usable()) return FailedPrecondition("too few single-token words (" + std::to_string(plan.words.size()) + ")");
  HONE_TRY(CalibrateOverheads(o, plan));
  if (!cached.empty()) {
    HONE_TRY(sys::EnsureDir(cached.parent_path()));
    HONE_TRY(sys::WriteFileAtomic(cached, TokenPlanToJson(plan)));
  }
  return plan;
}

std::string TokenPlanToJson(const TokenPlan& p) {
  json j = {{"schema", "hone-tokens/1"}, {"key", p.key},          {"source", p.source},
            {"chat_base", p.chat_base},  {"chat_role", p.chat_role}, {"completion_base", p.completion_base},
            {"words", p.words}};
  return j.dump(1) + "\n";
}

Result<TokenPlan> TokenPlanFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("schema", "") != "hone-tokens/1") {
    return DataLoss("not a hone token plan");
  }
  TokenPlan p;
  try {
    p.key = j.value("key", "");
    p.source = j.value("source", "");
    p.chat_base = j.value("chat_base", int64_t{0});
    p.completion_base = j.value("completion_base", int64_t{0});
    p.chat_role = j.value("chat_role", std::map<std::string, int64_t>{});
    p.words = j.value("words", std::vector<std::string>{});
  } catch (const json::exception& e) {
    return DataLoss(std::string("token plan: ") + e.what());
  }
  return p;
}

Result<ServerLimits> ProbeServerLimits(const std::string& host, int port, const ServerProfile& profile) {
  ServerLimits out;
  if (profile.framework == "llama.cpp") {
    HONE_ASSIGN_OR_RETURN(net::HttpResponse r, net::Get(host, port, "/props", 10s));
    if (r.status != 200) return Unavailable("/props: HTTP " + std::to_string(r.status));
    json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return DataLoss("/props: not JSON");
    if (j.contains("default_generation_settings") && j["default_generation_settings"].is_object()) {
      out.slot_context = j["default_generation_settings"].value("n_ctx", int64_t{0});
    }
    if (out.slot_context == 0) out.slot_context = j.value("n_ctx", int64_t{0});
    out.source = "llama.cpp /props n_ctx per slot";
    return out;
  }
  auto r = net::Get(host, port, "/v1/models", 10s);
  if (!r || r->status != 200) return out;
  json j = json::parse(r->body, nullptr, false);
  if (!j.is_discarded() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].is_object()) {
    out.slot_context = j["data"][0].value("max_model_len", int64_t{0});
    if (out.slot_context > 0) out.source = "/v1/models max_model_len";
  }
  return out;
}

}  // namespace hone::bench
