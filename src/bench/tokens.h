// Token-exact payloads: what the load generator must know about the served model's
// tokenizer to send exactly the input lengths a trace records.
//
// A TokenPlan holds a pool of words that are one token each when a space precedes
// them. Text made of n pool words, each with its leading space (" w1 w2 ... wn"), is
// then exactly n tokens wherever it stands after a space, a newline or another pool
// word: SentencePiece and byte-level BPE vocabularies never merge across a word's
// leading space. A 64-token trace block is 64 pool words, chosen by (trace, hash id),
// so blocks shared between turns stay byte-identical. The plan also holds the tokens
// the server adds around the content: per chat message (its role header and end
// markers), once per chat request (BOS, generation prompt), and per completions
// request (BOS). With both, a payload's token count is known before it is sent.
//
// Calibration asks the server itself: candidate words are counted with its tokenizer
// endpoint (/tokenize on llama.cpp, vLLM and SGLang), pre-filtered by the GGUF
// vocabulary when the caller has it (a model hone synthesized, or any local GGUF);
// without a tokenizer endpoint the GGUF vocabulary alone decides. The per-message
// overheads come from the server's own usage.prompt_tokens on a few one-token
// probes. A plan is saved as JSON and reused for the same (server, model, template):
// every trace's payloads are a pure function of the plan, the trace and the seed.
// Plain value types and blocking calls; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/openai.h"
#include "core/error.h"

namespace hone::bench {

struct TokenPlan {
  std::vector<std::string> words;        // each exactly one token after a space
  int64_t chat_base = 0;                 // per chat request (BOS, generation prompt)
  std::map<std::string, int64_t> chat_role;  // per message of a role (header, end marker)
  int64_t completion_base = 0;           // per completions request (BOS)
  std::string source;                    // how the pool was found ("llama.cpp /tokenize", ...)
  std::string key;                       // the (server, model, template) it was made for
  bool usable() const { return words.size() >= 16; }
};

// " w1 w2 ... wn": exactly `tokens` pool words chosen by `seed` (deterministic).
std::string PoolText(const TokenPlan& plan, uint64_t seed, int64_t tokens);
// Tokens a chat request adds to its messages' content, for messages of these roles.
int64_t ChatOverhead(const TokenPlan& plan, const std::vector<std::string>& roles);

struct CalibrationOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  ServerProfile profile;
  // The model's vocabulary pieces (GGUF tokenizer.ggml.tokens) and its tokenizer
  // model ("llama" = SentencePiece, "gpt2" = byte-level BPE); empty when unknown.
  std::vector<std::string> vocab_pieces;
  std::string vocab_model;
  // Where plans are kept ("" = no cache): <dir>/tokens-<key hash>.json.
  std::string cache_dir;
};

// Calibrates a plan against a running server (or loads it from the cache).
Result<TokenPlan> CalibrateTokens(const CalibrationOptions& options);

// The (server, model, template) identity a plan is valid for, read from the server.
Result<std::string> TokenizerKey(const CalibrationOptions& options);

std::string TokenPlanToJson(const TokenPlan& plan);
Result<TokenPlan> TokenPlanFromJson(const std::string& text);

// What the server allows per request: a slot's context (prompt + output), from
// llama.cpp's /props (n_ctx per slot) or the OpenAI /v1/models max_model_len (vLLM,
// SGLang). 0 when the server does not say.
struct ServerLimits {
  int64_t slot_context = 0;
  std::string source;
};
Result<ServerLimits> ProbeServerLimits(const std::string& host, int port, const ServerProfile& profile);

}  // namespace hone::bench
