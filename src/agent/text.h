// Text hygiene for model output: everything an LLM (or a coding-agent CLI, or a file
// shown to one) produces is arbitrary bytes until proven otherwise, and it ends up in
// JSON (requests, transcripts, state.json, events). These helpers make it valid UTF-8
// and cut it only at code-point boundaries, so no serializer downstream can throw on
// it. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace hone::agent {

// `s` with every invalid UTF-8 sequence replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view s);
// The longest prefix of valid UTF-8 `s` of at most `max_bytes` bytes that ends on a
// code-point boundary.
std::string ClipUtf8(std::string_view s, size_t max_bytes);
// One line (newlines and tabs become spaces), valid UTF-8, at most `max_bytes`
// ("..." marks a cut).
std::string OneLine(std::string_view s, size_t max_bytes);

}  // namespace hone::agent
