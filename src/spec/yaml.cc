#include "spec/yaml.h"

#include <fstream>
#include <sstream>

#include "core/strings.h"

namespace hone::spec {

Result<Field> Field::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Fail(Error{ErrorCode::kNotFound, path + ": cannot open file", {{"path", path}}});
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

Result<Field> Field::Parse(const std::string& text, const std::string& source_name) {
  auto source = std::make_shared<const std::string>(source_name);
  try {
    YAML::Node root = YAML::Load(text);
    return Field(source, root, root.Mark(), "");
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source_name + ":" + std::to_string(e.mark.line + 1) + ":" +
                           std::to_string(e.mark.column + 1) + ": syntax error: " + e.msg);
  }
}

Error Field::Err(const std::string& message) const {
  std::string where = *source_;
  if (!mark_.is_null()) {
    where += ":" + std::to_string(mark_.line + 1) + ":" + std::to_string(mark_.column + 1);
  }
  std::string text = where + ": " + (path_.empty() ? "" : path_ + ": ") + message;
  return Error{ErrorCode::kInvalidArgument, text, {{"file", *source_}, {"field", path_}}};
}

Field Field::operator[](const std::string& key) const {
  std::string child_path = path_.empty() ? key : path_ + "." + key;
  if (!node_.IsMap()) return Field(source_, YAML::Node(YAML::NodeType::Undefined), mark_, child_path);
  // Look the key up without inserting (yaml-cpp's non-const operator[] would).
  const YAML::Node& cnode = node_;
  YAML::Node child = cnode[key];
  if (!child.IsDefined()) return Field(source_, YAML::Node(YAML::NodeType::Undefined), mark_, child_path);
  return Field(source_, child, child.Mark(), child_path);
}

std::vector<Field> Field::Items() const {
  std::vector<Field> out;
  if (!node_.IsSequence()) return out;
  for (size_t i = 0; i < node_.size(); ++i) {
    YAML::Node child = node_[i];
    out.push_back(Field(source_, child, child.Mark(), path_ + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::vector<std::string> Field::Keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (const auto& kv : node_) out.push_back(kv.first.as<std::string>(""));
  return out;
}

std::vector<std::pair<std::string, Field>> Field::Entries() const {
  std::vector<std::pair<std::string, Field>> out;
  if (!node_.IsMap()) return out;
  for (const auto& kv : node_) {
    std::string key = kv.first.as<std::string>("");
    out.emplace_back(key, Field(source_, kv.second, kv.second.Mark(), path_.empty() ? key : path_ + "." + key));
  }
  return out;
}

Result<std::string> Field::Str() const {
  if (!defined()) return Fail(Err("required field is missing"));
  if (!node_.IsScalar()) return Fail(Err("expected a scalar value"));
  return node_.Scalar();
}

Result<int64_t> Field::Int(int64_t min, int64_t max) const {
  HONE_ASSIGN_OR_RETURN(std::string text, Str());
  auto v = ParseInt(text);
  if (!v) return Fail(Err("expected an integer (got '" + text + "')"));
  if (*v < min) return Fail(Err("must be >= " + std::to_string(min) + " (got " + text + ")"));
  if (*v > max) return Fail(Err("must be <= " + std::to_string(max) + " (got " + text + ")"));
  return *v;
}

Result<double> Field::Double(double min, double max) const {
  HONE_ASSIGN_OR_RETURN(std::string text, Str());
  auto v = ParseDouble(text);
  if (!v) return Fail(Err("expected a number (got '" + text + "')"));
  if (*v < min || *v > max) {
    std::ostringstream os;
    os << "must be in [" << min << ", " << max << "] (got " << text << ")";
    return Fail(Err(os.str()));
  }
  return *v;
}

Result<bool> Field::Bool() const {
  HONE_ASSIGN_OR_RETURN(std::string text, Str());
  auto v = ParseBool(text);
  if (!v) return Fail(Err("expected true or false (got '" + text + "')"));
  return *v;
}

Result<std::vector<std::string>> Field::StrList() const {
  std::vector<std::string> out;
  if (!defined()) return out;
  if (node_.IsScalar()) {
    out.push_back(node_.Scalar());
    return out;
  }
  if (!node_.IsSequence()) return Fail(Err("expected a list"));
  for (const Field& item : Items()) {
    HONE_ASSIGN_OR_RETURN(std::string s, item.Str());
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<int64_t>> Field::IntList(int64_t min, int64_t max) const {
  std::vector<int64_t> out;
  if (!defined()) return out;
  if (node_.IsScalar()) {
    HONE_ASSIGN_OR_RETURN(int64_t v, Int(min, max));
    out.push_back(v);
    return out;
  }
  if (!node_.IsSequence()) return Fail(Err("expected a list of integers"));
  for (const Field& item : Items()) {
    HONE_ASSIGN_OR_RETURN(int64_t v, item.Int(min, max));
    out.push_back(v);
  }
  return out;
}

Result<std::string> Field::StrOr(std::string fallback) const {
  if (!defined()) return fallback;
  return Str();
}
Result<int64_t> Field::IntOr(int64_t fallback, int64_t min, int64_t max) const {
  if (!defined()) return fallback;
  return Int(min, max);
}
Result<double> Field::DoubleOr(double fallback, double min, double max) const {
  if (!defined()) return fallback;
  return Double(min, max);
}
Result<bool> Field::BoolOr(bool fallback) const {
  if (!defined()) return fallback;
  return Bool();
}

Status Field::RequireMap() const {
  if (!defined()) return Fail(Err("required section is missing"));
  if (!node_.IsMap()) return Fail(Err("expected a mapping"));
  return Ok();
}

Status Field::CheckKeys(std::initializer_list<const char*> allowed) const {
  for (const auto& [key, child] : Entries()) {
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) {
      std::vector<std::string> names(allowed.begin(), allowed.end());
      return Fail(child.Err("unknown field (expected one of: " + Join(names, ", ") + ")"));
    }
  }
  return Ok();
}

}  // namespace hone::spec
