// Field: a YAML (or JSON) node together with where it came from, so that every error
// about user input names the file, the line, the column and the field path:
//   "session.yaml:12:5: workload.concurrency: must be >= 1 (got 0)".
//
// Typed getters convert and validate; unknown keys are rejected by CheckKeys with the
// list of known ones. yaml-cpp exceptions never escape this layer. A Field is a cheap
// value (it shares the parsed document).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace hone::spec {

class Field {
 public:
  // Parses a file (YAML; JSON is valid YAML). Syntax errors name line and column.
  static Result<Field> LoadFile(const std::string& path);
  static Result<Field> Parse(const std::string& text, const std::string& source_name);

  Field(const Field&) = default;
  // Assignment is deleted: yaml-cpp nodes assign *through* to the parsed document,
  // which would silently rewrite it.
  Field& operator=(const Field&) = delete;

  bool defined() const { return node_.IsDefined() && !node_.IsNull(); }
  bool is_map() const { return node_.IsMap(); }
  bool is_seq() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }

  // Child of a map (undefined Field when absent; errors then point at the parent).
  Field operator[](const std::string& key) const;
  // Elements of a sequence (empty when not a sequence).
  std::vector<Field> Items() const;
  // Keys of a map, in document order.
  std::vector<std::string> Keys() const;
  // (key, value) pairs of a map.
  std::vector<std::pair<std::string, Field>> Entries() const;

  Result<std::string> Str() const;
  Result<int64_t> Int(int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  Result<double> Double(double min = -1e300, double max = 1e300) const;
  Result<bool> Bool() const;
  Result<std::vector<std::string>> StrList() const;  // a scalar or a sequence of scalars
  Result<std::vector<int64_t>> IntList(int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;

  // Defaults when the field is absent (still validated when present).
  Result<std::string> StrOr(std::string fallback) const;
  Result<int64_t> IntOr(int64_t fallback, int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  Result<double> DoubleOr(double fallback, double min = -1e300, double max = 1e300) const;
  Result<bool> BoolOr(bool fallback) const;

  // A required map/sequence.
  Status RequireMap() const;
  // Rejects keys not in `allowed`.
  Status CheckKeys(std::initializer_list<const char*> allowed) const;

  // An error located at this field: "file:line:col: path: message".
  Error Err(const std::string& message) const;

  // The parsed node itself, for callers that build documents from parts of this one
  // (a fleet's session specs). Read it only: yaml-cpp nodes share the document.
  const YAML::Node& node() const { return node_; }

 private:
  Field(std::shared_ptr<const std::string> source, YAML::Node node, YAML::Mark mark, std::string path)
      : source_(std::move(source)), node_(std::move(node)), mark_(mark), path_(std::move(path)) {}

  std::shared_ptr<const std::string> source_;
  YAML::Node node_;
  YAML::Mark mark_;  // the node's own mark, or its parent's when absent
  std::string path_;
};

}  // namespace hone::spec
