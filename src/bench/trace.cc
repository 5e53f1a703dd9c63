#include "bench/trace.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/strings.h"
#include "sys/files.h"

namespace hone::bench {

using json = nlohmann::json;

size_t Trace::RequestCount() const {
  size_t n = 0;
  for (const auto& item : items) n += item.is_subagent ? item.requests.size() : 1;
  return n;
}

namespace {

struct Where {
  std::string file;
  int line;
};

Error BadField(const Where& w, const std::string& path, const std::string& why) {
  return Error{ErrorCode::kInvalidArgument,
               w.file + ":" + std::to_string(w.line) + ": " + path + ": " + why, {{"file", w.file}, {"field", path}}};
}

Result<double> Number(const json& j, const char* key, const Where& w, const std::string& path, double fallback,
                      bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) return Fail(BadField(w, path + "." + key, "required field is missing"));
    return fallback;
  }
  if (!j[key].is_number()) return Fail(BadField(w, path + "." + key, "expected a number"));
  double v = j[key].get<double>();
  if (v < 0) return Fail(BadField(w, path + "." + key, "must be >= 0"));
  return v;
}

Result<TraceRequest> ParseRequest(const json& j, const Where& w, const std::string& path) {
  if (!j.is_object()) return Fail(BadField(w, path, "expected an object"));
  TraceRequest r;
  HONE_ASSIGN_OR_RETURN(r.t, Number(j, "t", w, path, 0, false));
  HONE_ASSIGN_OR_RETURN(double in, Number(j, "in", w, path, 0, true));
  HONE_ASSIGN_OR_RETURN(double out, Number(j, "out", w, path, 0, true));
  r.in = static_cast<int64_t>(in);
  r.out = static_cast<int64_t>(out);
  HONE_ASSIGN_OR_RETURN(r.api_time, Number(j, "api_time", w, path, 0, false));
  HONE_ASSIGN_OR_RETURN(r.think_time, Number(j, "think_time", w, path, -1, false));
  if (j.contains("type") && j["type"].is_string()) r.type = j["type"].get<std::string>();
  if (j.contains("hash_ids")) {
    if (!j["hash_ids"].is_array()) return Fail(BadField(w, path + ".hash_ids", "expected a list of integers"));
    for (size_t i = 0; i < j["hash_ids"].size(); ++i) {
      const json& h = j["hash_ids"][i];
      if (!h.is_number_integer()) {
        return Fail(BadField(w, path + ".hash_ids[" + std::to_string(i) + "]", "expected an integer"));
      }
      r.hash_ids.push_back(h.get<int64_t>());
    }
  }
  return r;
}

Result<Trace> ParseTrace(const json& j, const Where& w) {
  if (!j.is_object()) return Fail(BadField(w, "(trace)", "expected a JSON object"));
  Trace t;
  if (j.contains("id")) t.id = j["id"].is_string() ? j["id"].get<std::string>() : j["id"].dump();
  if (t.id.empty()) t.id = w.file + ":" + std::to_string(w.line);
  HONE_ASSIGN_OR_RETURN(double bs, Number(j, "block_size", w, "block_size", 64, false));
  if (bs < 1) return Fail(BadField(w, "block_size", "must be >= 1"));
  t.block_size = static_cast<int64_t>(bs);
  HONE_ASSIGN_OR_RETURN(double tool, Number(j, "tool_tokens", w, "", 0, false));
  HONE_ASSIGN_OR_RETURN(double sys, Number(j, "system_tokens", w, "", 0, false));
  t.tool_tokens = static_cast<int64_t>(tool);
  t.system_tokens = static_cast<int64_t>(sys);
  if (!j.contains("requests") || !j["requests"].is_array()) {
    return Fail(BadField(w, "requests", "required list of requests is missing"));
  }
  const json& reqs = j["requests"];
  for (size_t i = 0; i < reqs.size(); ++i) {
    std::string path = "requests[" + std::to_string(i) + "]";
    const json& r = reqs[i];
    TraceItem item;
    if (r.is_object() && r.value("type", "") == "subagent") {
      item.is_subagent = true;
      HONE_ASSIGN_OR_RETURN(item.t, Number(r, "t", w, path, 0, false));
      if (r.contains("agent_id")) item.agent_id = r["agent_id"].is_string() ? r["agent_id"].get<std::string>() : r["agent_id"].dump();
      if (r.contains("subagent_type") && r["subagent_type"].is_string()) item.subagent_type = r["subagent_type"];
      if (!r.contains("requests") || !r["requests"].is_array()) {
        return Fail(BadField(w, path + ".requests", "subagent without a list of requests"));
      }
      for (size_t k = 0; k < r["requests"].size(); ++k) {
        HONE_ASSIGN_OR_RETURN(TraceRequest sr, ParseRequest(r["requests"][k], w, path + ".requests[" + std::to_string(k) + "]"));
        item.requests.push_back(std::move(sr));
      }
    } else {
      HONE_ASSIGN_OR_RETURN(item.request, ParseRequest(r, w, path));
    }
    t.items.push_back(std::move(item));
  }
  return t;
}

int64_t Lcp(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

json RequestJson(const TraceRequest& r) {
  json j = {{"t", r.t}, {"type", r.type}, {"in", r.in}, {"out", r.out}, {"hash_ids", r.hash_ids}, {"api_time", r.api_time}};
  if (r.think_time >= 0) j["think_time"] = r.think_time;
  return j;
}

}  // namespace

Result<std::vector<Trace>> LoadTraces(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  std::vector<Trace> out;
  std::string_view body = Trim(text);
  if (body.empty()) return InvalidArgument(path + ": empty trace file");
  // One JSON document (object or array) or JSON lines.
  json whole = json::parse(body, nullptr, false);
  if (!whole.is_discarded()) {
    if (whole.is_array()) {
      for (size_t i = 0; i < whole.size(); ++i) {
        HONE_ASSIGN_OR_RETURN(Trace t, ParseTrace(whole[i], Where{path + "[" + std::to_string(i) + "]", 1}));
        out.push_back(std::move(t));
      }
    } else {
      HONE_ASSIGN_OR_RETURN(Trace t, ParseTrace(whole, Where{path, 1}));
      out.push_back(std::move(t));
    }
    return out;
  }
  int line_no = 0;
  for (const std::string& line : Split(text, '\n')) {
    ++line_no;
    if (Trim(line).empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      return InvalidArgument(path + ":" + std::to_string(line_no) + ": not valid JSON");
    }
    HONE_ASSIGN_OR_RETURN(Trace t, ParseTrace(j, Where{path, line_no}));
    out.push_back(std::move(t));
  }
  return out;
}

std::string TraceToJson(const Trace& t) {
  json reqs = json::array();
  for (const auto& item : t.items) {
    if (!item.is_subagent) {
      reqs.push_back(RequestJson(item.request));
      continue;
    }
    json sub = {{"type", "subagent"}, {"t", item.t}, {"agent_id", item.agent_id},
                {"subagent_type", item.subagent_type}, {"requests", json::array()}};
    for (const auto& r : item.requests) sub["requests"].push_back(RequestJson(r));
    reqs.push_back(std::move(sub));
  }
  json j = {{"id", t.id}, {"block_size", t.block_size}, {"hash_id_scope", "local"},
            {"tool_tokens", t.tool_tokens}, {"system_tokens", t.system_tokens}, {"requests", reqs}};
  return j.dump();
}

Status WriteTraces(const std::string& path, const std::vector<Trace>& traces) {
  std::string out;
  for (const auto& t : traces) out += TraceToJson(t) + "\n";
  return sys::WriteFileAtomic(path, out);
}

ReplaySession BuildSession(const Trace& trace) {
  ReplaySession s;
  s.trace_id = trace.id;
  s.block_size = trace.block_size;
  s.system_blocks = (trace.tool_tokens + trace.system_tokens + trace.block_size - 1) / trace.block_size;

  auto add_node = [&](const TraceRequest& r, int stream) {
    ReplayNode n;
    n.id = static_cast<int>(s.nodes.size());
    n.stream = stream;
    n.t = r.t;
    n.isl = r.in;
    n.osl = r.out;
    n.hash_ids = r.hash_ids;
    n.api_time = r.api_time;
    n.gap_s = r.think_time;  // resolved below when absent
    s.nodes.push_back(std::move(n));
    return static_cast<int>(s.nodes.size()) - 1;
  };

  // Lay out nodes; remember each subagent's node range and its anchors.
  struct Sub {
    int stream;
    std::vector<int> nodes;
    int spawn = -1;  // root node before it
    int join = -1;   // root node after it
  };
  std::vector<Sub> subs;
  std::vector<int> root_nodes;
  int last_root = -1;
  int stream_count = 0;
  for (const TraceItem& item : trace.items) {
    if (!item.is_subagent) {
      last_root = add_node(item.request, 0);
      root_nodes.push_back(last_root);
      for (Sub& sub : subs) {
        if (sub.join < 0 && sub.spawn >= 0) sub.join = last_root;
      }
      continue;
    }
    if (last_root < 0 || item.requests.empty()) {
      ++s.dropped_subagents;  // nothing spawned it
      continue;
    }
    Sub sub;
    sub.stream = ++stream_count;
    sub.spawn = last_root;
    for (const TraceRequest& r : item.requests) sub.nodes.push_back(add_node(r, sub.stream));
    subs.push_back(std::move(sub));
  }
  s.root_requests = static_cast<int>(root_nodes.size());

  // Stream order and the predecessor frontier.
  auto link_stream = [&](const std::vector<int>& ids) {
    for (size_t k = 0; k < ids.size(); ++k) {
      ReplayNode& n = s.nodes[static_cast<size_t>(ids[k])];
      n.first_in_stream = k == 0;
      if (k > 0) {
        n.prev_in_stream = ids[k - 1];
        n.prev_out = s.nodes[static_cast<size_t>(ids[k - 1])].osl;
      }
      double latest_end = -1;
      for (size_t p = 0; p < k; ++p) {
        const ReplayNode& prev = s.nodes[static_cast<size_t>(ids[p])];
        double end = prev.t + prev.api_time;
        // Waits for predecessors that ended before it started; the immediately
        // preceding request is always a dependency unless the two overlapped.
        if (end <= n.t + 1e-9 || (p + 1 == k && prev.api_time <= 0)) {
          n.deps.push_back(prev.id);
          latest_end = std::max(latest_end, end);
        }
      }
      if (n.gap_s < 0) n.gap_s = latest_end >= 0 ? std::max(0.0, n.t - latest_end) : 0.0;
    }
  };
  link_stream(root_nodes);
  for (Sub& sub : subs) {
    link_stream(sub.nodes);
    // Spawn: the subagent's first request waits for the root request before it.
    ReplayNode& first = s.nodes[static_cast<size_t>(sub.nodes.front())];
    first.deps.push_back(sub.spawn);
    const ReplayNode& spawn = s.nodes[static_cast<size_t>(sub.spawn)];
    if (first.gap_s <= 0) first.gap_s = std::max(0.0, first.t - (spawn.t + spawn.api_time));
    if (sub.join >= 0) {
      for (int id : sub.nodes) s.nodes[static_cast<size_t>(sub.join)].deps.push_back(id);
    } else {
      for (int id : sub.nodes) s.nodes[static_cast<size_t>(id)].background = true;
    }
  }
  // Theoretical prefix-cache hits against earlier requests of the same tree.
  std::vector<int> by_time(s.nodes.size());
  for (size_t i = 0; i < by_time.size(); ++i) by_time[i] = static_cast<int>(i);
  std::stable_sort(by_time.begin(), by_time.end(), [&](int a, int b) { return s.nodes[a].t < s.nodes[b].t; });
  for (size_t i = 0; i < by_time.size(); ++i) {
    ReplayNode& n = s.nodes[static_cast<size_t>(by_time[i])];
    n.total_blocks = static_cast<int64_t>(n.hash_ids.size());
    for (size_t k = 0; k < i; ++k) {
      n.hit_blocks = std::max(n.hit_blocks, Lcp(s.nodes[static_cast<size_t>(by_time[k])].hash_ids, n.hash_ids));
    }
  }
  return s;
}

}  // namespace hone::bench
