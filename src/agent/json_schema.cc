#include "agent/json_schema.h"

#include <cmath>
#include <set>

#include "agent/text.h"
#include "sys/files.h"

namespace hone::agent {
namespace {

using json = nlohmann::json;

const std::set<std::string>& Keywords() {
  static const std::set<std::string> k = {
      "type",      "properties", "required", "additionalProperties", "items",    "enum",     "const",
      "minLength", "maxLength",  "minimum",  "maximum",              "minItems", "maxItems",
      // annotations
      "$schema", "$id", "title", "description", "default", "examples"};
  return k;
}

const std::set<std::string>& TypeNames() {
  static const std::set<std::string> t = {"object", "array", "string", "number", "integer", "boolean", "null"};
  return t;
}

std::string Escape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// Checks that a schema node only uses supported keywords with well-formed values.
Status CheckSchema(const json& s, const std::string& where) {
  if (s.is_boolean()) return Ok();
  if (!s.is_object()) return InvalidArgument(where + ": a schema must be an object");
  for (const auto& [key, value] : s.items()) {
    if (!Keywords().contains(key)) {
      return InvalidArgument(where + ": unsupported schema keyword '" + key + "'");
    }
  }
  if (s.contains("type")) {
    const json& t = s["type"];
    std::vector<json> names = t.is_array() ? std::vector<json>(t.begin(), t.end()) : std::vector<json>{t};
    for (const json& n : names) {
      if (!n.is_string() || !TypeNames().contains(n.get<std::string>())) {
        return InvalidArgument(where + ": bad type " + n.dump());
      }
    }
  }
  if (s.contains("properties")) {
    if (!s["properties"].is_object()) return InvalidArgument(where + ": properties must be an object");
    for (const auto& [k, sub] : s["properties"].items()) HONE_TRY(CheckSchema(sub, where + "/properties/" + Escape(k)));
  }
  if (s.contains("required")) {
    if (!s["required"].is_array()) return InvalidArgument(where + ": required must be a list");
    for (const json& r : s["required"]) {
      if (!r.is_string()) return InvalidArgument(where + ": required entries must be strings");
    }
  }
  if (s.contains("additionalProperties")) HONE_TRY(CheckSchema(s["additionalProperties"], where + "/additionalProperties"));
  if (s.contains("items")) HONE_TRY(CheckSchema(s["items"], where + "/items"));
  if (s.contains("enum") && (!s["enum"].is_array() || s["enum"].empty())) {
    return InvalidArgument(where + ": enum must be a non-empty list");
  }
  for (const char* k : {"minLength", "maxLength", "minItems", "maxItems"}) {
    if (s.contains(k) && !(s[k].is_number_unsigned() || (s[k].is_number_integer() && s[k].get<int64_t>() >= 0))) {
      return InvalidArgument(where + ": " + k + " must be a non-negative integer");
    }
  }
  for (const char* k : {"minimum", "maximum"}) {
    if (s.contains(k) && !s[k].is_number()) return InvalidArgument(where + ": " + k + " must be a number");
  }
  return Ok();
}

bool HasType(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (v.is_number_integer()) return true;
    if (v.is_number_float()) {
      double d = v.get<double>();
      return std::isfinite(d) && std::floor(d) == d;
    }
  }
  return false;
}

std::string TypeOf(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::null: return "null";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    default: return "unknown";
  }
}

// Code points in a UTF-8 string (continuation bytes are not counted).
size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Short(const json& v) {
  std::string d = v.dump();
  return d.size() > 40 ? ClipUtf8(d, 37) + "..." : d;
}

class Validator {
 public:
  explicit Validator(size_t max) : max_(max) {}
  std::vector<SchemaViolation> out;

  void Check(const json& s, const json& v, const std::string& path) {
    if (out.size() >= max_) return;
    if (s.is_boolean()) {
      if (!s.get<bool>()) Add(path, "no value is allowed here");
      return;
    }
    if (s.contains("type")) {
      const json& t = s["type"];
      bool ok = false;
      std::string want;
      if (t.is_array()) {
        for (const json& n : t) {
          ok = ok || HasType(v, n.get<std::string>());
          want += (want.empty() ? "" : "|") + n.get<std::string>();
        }
      } else {
        ok = HasType(v, t.get<std::string>());
        want = t.get<std::string>();
      }
      if (!ok) {
        Add(path, "expected " + want + ", got " + TypeOf(v));
        return;  // the remaining keywords assume the type
      }
    }
    if (s.contains("const") && v != s["const"]) Add(path, "must be " + Short(s["const"]));
    if (s.contains("enum")) {
      bool found = false;
      for (const json& e : s["enum"]) found = found || e == v;
      if (!found) Add(path, Short(v) + " is not one of " + Short(s["enum"]));
    }
    if (v.is_string()) {
      size_t n = CodePoints(v.get_ref<const std::string&>());
      if (s.contains("minLength") && n < s["minLength"].get<size_t>()) {
        Add(path, "string shorter than " + std::to_string(s["minLength"].get<size_t>()));
      }
      if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) {
        Add(path, "string longer than " + std::to_string(s["maxLength"].get<size_t>()));
      }
    }
    if (v.is_number()) {
      double d = v.get<double>();
      if (s.contains("minimum") && d < s["minimum"].get<double>()) Add(path, Short(v) + " < minimum " + Short(s["minimum"]));
      if (s.contains("maximum") && d > s["maximum"].get<double>()) Add(path, Short(v) + " > maximum " + Short(s["maximum"]));
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) {
        Add(path, "fewer than " + std::to_string(s["minItems"].get<size_t>()) + " items");
      }
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) {
        Add(path, "more than " + std::to_string(s["maxItems"].get<size_t>()) + " items");
      }
      if (s.contains("items")) {
        for (size_t i = 0; i < v.size(); ++i) Check(s["items"], v[i], path + "/" + std::to_string(i));
      }
    }
    if (v.is_object()) {
      if (s.contains("required")) {
        for (const json& r : s["required"]) {
          if (!v.contains(r.get<std::string>())) Add(path, "missing required property '" + r.get<std::string>() + "'");
        }
      }
      const json* props = s.contains("properties") ? &s["properties"] : nullptr;
      for (const auto& [k, sub] : v.items()) {
        std::string p = path + "/" + Escape(k);
        if (props && props->contains(k)) {
          Check((*props)[k], sub, p);
        } else if (s.contains("additionalProperties")) {
          const json& ap = s["additionalProperties"];
          if (ap.is_boolean() && !ap.get<bool>()) {
            Add(path, "unexpected property '" + k + "'");
          } else {
            Check(ap, sub, p);
          }
        }
      }
    }
  }

 private:
  void Add(const std::string& path, std::string message) {
    if (out.size() < max_) out.push_back({path, std::move(message)});
  }
  size_t max_;
};

}  // namespace

Result<JsonSchema> JsonSchema::FromJson(nlohmann::json schema, const std::string& source_name) {
  HONE_TRY(CheckSchema(schema, source_name));
  return JsonSchema(std::move(schema));
}

Result<JsonSchema> JsonSchema::Parse(const std::string& text, const std::string& source_name) {
  auto parsed = TryCatch(ErrorCode::kInvalidArgument, source_name + ": not JSON",
                         [&] { return nlohmann::json::parse(text); });
  if (!parsed) return Fail(std::move(parsed).error());
  return FromJson(std::move(*parsed), source_name);
}

Result<JsonSchema> JsonSchema::Load(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  return Parse(text, path);
}

std::vector<SchemaViolation> JsonSchema::Validate(const nlohmann::json& value, size_t max_violations) const {
  Validator v(max_violations == 0 ? 1 : max_violations);
  v.Check(schema_, value, "");
  return std::move(v.out);
}

std::string JsonSchema::name() const {
  if (schema_.is_object() && schema_.contains("title") && schema_["title"].is_string()) {
    return schema_["title"].get<std::string>();
  }
  return "reply";
}

std::string JoinViolations(const std::vector<SchemaViolation>& v, size_t max) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max; ++i) out += (i ? "; " : "") + v[i].ToString();
  if (v.size() > max) out += "; ... (" + std::to_string(v.size() - max) + " more)";
  return out;
}

}  // namespace hone::agent
