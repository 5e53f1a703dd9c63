#include "roofline/profile.h"

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/strings.h"
#include "spec/yaml.h"

namespace hone::roofline {

using json = nlohmann::json;

namespace {

Status FromRoot(const spec::Field& root, std::vector<std::string>* classes, std::vector<OpClassifier::Rule>* rules) {
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"classes", "rules"}));
  HONE_ASSIGN_OR_RETURN(*classes, root["classes"].StrList());
  if (classes->empty()) return Fail(root["classes"].Err("list the op classes"));
  if (std::find(classes->begin(), classes->end(), "other") == classes->end()) {
    return Fail(root["classes"].Err("the classes must include 'other' (the class of unmatched kernels)"));
  }
  spec::Field list = root["rules"];
  if (!list.is_seq()) return Fail(list.Err("expected a list of rules"));
  for (const spec::Field& r : list.Items()) {
    HONE_TRY(r.CheckKeys({"class", "vendor", "patterns"}));
    OpClassifier::Rule rule;
    HONE_ASSIGN_OR_RETURN(rule.op_class, r["class"].Str());
    if (std::find(classes->begin(), classes->end(), rule.op_class) == classes->end()) {
      return Fail(r["class"].Err("class '" + rule.op_class + "' is not in classes"));
    }
    HONE_ASSIGN_OR_RETURN(rule.vendor, r["vendor"].BoolOr(false));
    HONE_ASSIGN_OR_RETURN(rule.patterns, r["patterns"].StrList());
    if (rule.patterns.empty()) return Fail(r["patterns"].Err("a rule needs at least one pattern"));
    for (auto& p : rule.patterns) p = ToLower(p);
    rules->push_back(std::move(rule));
  }
  return Ok();
}

// Reads a file, inflating it when it is gzip-compressed (by its magic bytes).
Result<std::string> ReadMaybeGzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open trace");
  char magic[2] = {0, 0};
  in.read(magic, 2);
  bool gz = in.gcount() == 2 && static_cast<unsigned char>(magic[0]) == 0x1f &&
            static_cast<unsigned char>(magic[1]) == 0x8b;
  if (!gz) {
    in.seekg(0);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  in.close();
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return NotFound(path + ": cannot open trace");
  std::string out;
  char buf[1 << 16];
  while (true) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      return DataLoss(path + ": corrupt gzip stream (" + msg + ")");
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  gzclose(f);
  return out;
}

bool IsDeviceCategory(const std::string& cat) {
  std::string c = ToLower(cat);
  return c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset";
}

// Total length of the union of [start, end) intervals.
double UnionLength(std::vector<std::pair<double, double>>& spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, cur_start = 0, cur_end = -1;
  bool open = false;
  for (const auto& [s, e] : spans) {
    if (!open || s > cur_end) {
      if (open) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
      open = true;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (open) total += cur_end - cur_start;
  return total;
}

}  // namespace

Result<OpClassifier> OpClassifier::Load(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  OpClassifier c;
  HONE_TRY(FromRoot(root, &c.classes_, &c.rules_));
  return c;
}

Result<OpClassifier> OpClassifier::Parse(const std::string& text, const std::string& source_name) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::Parse(text, source_name));
  OpClassifier c;
  HONE_TRY(FromRoot(root, &c.classes_, &c.rules_));
  return c;
}

OpClassifier::Match OpClassifier::Classify(std::string_view kernel_name) const {
  std::string lower = ToLower(kernel_name);
  for (const Rule& r : rules_) {
    for (const std::string& p : r.patterns) {
      if (Contains(lower, p)) return Match{r.op_class, r.vendor};
    }
  }
  return Match{"other", false};
}

Result<ProfileSummary> SummarizeTrace(std::string_view text, const OpClassifier& classifier,
                                      const std::string& source_name) {
  // Keep only device events while parsing; everything else is discarded on the spot.
  json::parser_callback_t keep = [](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event != json::parse_event_t::object_end || !parsed.is_object()) return true;
    auto ph = parsed.find("ph");
    if (ph == parsed.end()) return true;  // not an event (the root, an args object)
    if (!ph->is_string() || ph->get_ref<const std::string&>() != "X") return false;
    auto cat = parsed.find("cat");
    return cat != parsed.end() && cat->is_string() && IsDeviceCategory(cat->get_ref<const std::string&>());
  };
  json doc = json::parse(text.begin(), text.end(), keep, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return DataLoss(source_name + ": not valid JSON (expected a Chrome trace)");
  const json* events = nullptr;
  if (doc.is_array()) {
    events = &doc;
  } else if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) {
    events = &doc["traceEvents"];
  } else {
    return DataLoss(source_name + ": no traceEvents array (expected a Chrome trace)");
  }

  ProfileSummary s;
  std::map<std::string, KernelStat> by_name;
  std::map<std::string, std::vector<std::pair<double, double>>> spans_by_device;
  double first = 0, last = 0;
  for (const json& e : *events) {
    if (!e.is_object()) continue;
    auto name = e.find("name");
    auto ts = e.find("ts");
    auto dur = e.find("dur");
    if (name == e.end() || !name->is_string() || ts == e.end() || !ts->is_number() || dur == e.end() ||
        !dur->is_number()) {
      return DataLoss(source_name + ": a device event lacks name, ts or dur");
    }
    double start = ts->get<double>();
    double length = std::max(0.0, dur->get<double>());
    std::string device = "0";
    if (auto pid = e.find("pid"); pid != e.end()) device = pid->dump();
    spans_by_device[device].emplace_back(start, start + length);
    if (s.events == 0 || start < first) first = start;
    if (s.events == 0 || start + length > last) last = start + length;
    ++s.events;
    s.gpu_time_us += length;
    const std::string& kernel = name->get_ref<const std::string&>();
    KernelStat& k = by_name[kernel];
    if (k.count == 0) {
      OpClassifier::Match m = classifier.Classify(kernel);
      k.name = kernel;
      k.op_class = m.op_class;
      k.vendor = m.vendor;
    }
    ++k.count;
    k.total_us += length;
  }
  if (s.events == 0) return DataLoss(source_name + ": the trace holds no GPU kernel events");
  s.devices = static_cast<int>(spans_by_device.size());
  s.span_us = last - first;
  double busy = 0;
  for (auto& [device, spans] : spans_by_device) busy += UnionLength(spans);
  s.busy_fraction = s.span_us > 0 ? busy / (s.span_us * s.devices) : 1.0;

  std::map<std::string, ClassStat> by_class;
  for (const std::string& c : classifier.classes()) by_class[c].op_class = c;
  for (auto& [name, k] : by_name) {
    k.share = s.gpu_time_us > 0 ? k.total_us / s.gpu_time_us : 0;
    ClassStat& c = by_class[k.op_class];
    c.op_class = k.op_class;
    c.count += k.count;
    c.total_us += k.total_us;
    s.kernels.push_back(std::move(k));
  }
  for (auto& [name, c] : by_class) {
    c.share = s.gpu_time_us > 0 ? c.total_us / s.gpu_time_us : 0;
    s.classes.push_back(c);
  }
  auto hotter = [](const auto& a, const auto& b) {
    return a.total_us != b.total_us ? a.total_us > b.total_us : a.op_class < b.op_class;
  };
  std::stable_sort(s.kernels.begin(), s.kernels.end(), hotter);
  std::stable_sort(s.classes.begin(), s.classes.end(), hotter);
  return s;
}

Result<ProfileSummary> SummarizeTraceFile(const std::string& path, const OpClassifier& classifier) {
  HONE_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzip(path));
  return SummarizeTrace(text, classifier, path);
}

std::vector<KernelStat> KernelTargets(const ProfileSummary& summary, const TargetOptions& options) {
  std::vector<KernelStat> out;
  for (const KernelStat& k : summary.kernels) {
    if (out.size() >= options.max_targets) break;
    if (k.share < options.min_share) break;  // kernels are sorted: the rest are colder
    if (options.exclude_classes.contains(k.op_class)) continue;
    if (options.exclude_vendor && k.vendor) continue;
    out.push_back(k);
  }
  return out;
}

std::string ShortKernelName(std::string_view name) {
  std::string s(Trim(name));
  if (s.starts_with("void ")) s = s.substr(5);
  s = ReplaceAll(s, "(anonymous namespace)::", "");
  std::string out;
  int depth = 0;
  for (char c : s) {
    if (c == '<') {
      ++depth;
    } else if (c == '>') {
      depth = std::max(0, depth - 1);
    } else if (depth == 0) {
      if (c == '(') break;
      out += c;
    }
  }
  return std::string(Trim(out));
}

}  // namespace hone::roofline
