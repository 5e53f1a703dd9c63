// Small string helpers used across layers: splitting, trimming, strict number
// parsing (whole string must parse; errors name the text), human-readable sizes,
// and shell quoting for printing command lines a user can paste.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace hone {

std::vector<std::string> Split(std::string_view s, char sep);
std::string_view Trim(std::string_view s);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
std::string ToLower(std::string_view s);
bool Contains(std::string_view haystack, std::string_view needle);
std::string ReplaceAll(std::string s, std::string_view from, std::string_view to);

// Strict parsers: the whole (trimmed) text must be a number in range.
Result<int64_t> ParseInt(std::string_view text);
Result<double> ParseDouble(std::string_view text);
Result<bool> ParseBool(std::string_view text);  // true/false/on/off/yes/no/1/0

std::string HumanBytes(uint64_t bytes);        // "297.7 MiB"
std::string HumanSeconds(double seconds);      // "1m 12s", "850 ms"
std::string ShellQuote(std::string_view arg);  // 'it'\''s' when needed
std::string ShellJoin(const std::vector<std::string>& argv);

// The last `max_lines` lines of text (for log excerpts in errors).
std::string LastLines(std::string_view text, size_t max_lines);

// 64-bit FNV-1a, hex encoded; stable across runs and machines.
std::string StableHash(std::string_view data);

}  // namespace hone
