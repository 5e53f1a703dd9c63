// JsonSchema: a small JSON Schema validator for the subset hone's agent schemas use.
//
// Every LLM reply is parsed and checked against its role's schema
// (data/agent/*.schema.json) before anything reads it. Supported keywords: type (one
// name or a list), properties, required, additionalProperties (bool or schema), items,
// enum, const, minLength/maxLength (in Unicode code points), minimum/maximum,
// minItems/maxItems; annotations ($schema, $id, title, description, default,
// examples) are ignored. Parse() rejects a schema using any other keyword, so a
// constraint is never silently skipped. Debian ships no C++ JSON Schema validator
// (nlohmann's json-schema-validator is not packaged), hence this one.
//
// Validate() returns every violation (up to a limit) with a JSON-pointer path, or an
// empty list. Immutable after Parse; safe to share across threads.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"

namespace hone::agent {

struct SchemaViolation {
  std::string path;     // JSON pointer of the offending value ("/ideas/0/delta"; "" = root)
  std::string message;  // one line
  std::string ToString() const { return (path.empty() ? "/" : path) + ": " + message; }
};

class JsonSchema {
 public:
  JsonSchema() = default;
  // Parses and checks a schema document; `source_name` names it in errors.
  static Result<JsonSchema> Parse(const std::string& text, const std::string& source_name);
  static Result<JsonSchema> FromJson(nlohmann::json schema, const std::string& source_name);
  static Result<JsonSchema> Load(const std::string& path);

  // Empty when `value` conforms. At most `max_violations` are reported.
  std::vector<SchemaViolation> Validate(const nlohmann::json& value, size_t max_violations = 16) const;

  const nlohmann::json& json() const { return schema_; }
  // The schema's title (used as the structured-output name), or "reply".
  std::string name() const;

 private:
  explicit JsonSchema(nlohmann::json s) : schema_(std::move(s)) {}
  nlohmann::json schema_;
};

// "a; b; c" of the first few violations, for a re-ask message or an error.
std::string JoinViolations(const std::vector<SchemaViolation>& v, size_t max = 5);

}  // namespace hone::agent
