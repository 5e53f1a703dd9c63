#include "bench/selfcheck.h"

#include <time.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "bench/runner.h"
#include "core/stats.h"
#include "core/strings.h"
#include "net/raw_server.h"
#include "sys/process.h"

namespace hone::bench {

namespace {

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Emitter state shared with the server threads.
struct Emitter {
  std::mutex mu;
  std::unordered_map<int, std::vector<int64_t>> send_ns;  // stream id -> send stamps (timing mode)
};

int StreamId(const std::string& body) {
  size_t p = body.find("sc-");
  if (p == std::string::npos) return -1;
  return static_cast<int>(ParseInt(body.substr(p + 3, body.find('"', p) - p - 3)).value_or(-1));
}

int MaxTokens(const std::string& body) {
  size_t p = body.find("\"max_tokens\":");
  if (p == std::string::npos) return 1;
  size_t e = body.find_first_of(",}", p);
  return static_cast<int>(ParseInt(body.substr(p + 13, e - p - 13)).value_or(1));
}

const char* kHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
const char* kEvent = "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"tok\",\"finish_reason\":null}]}\n\n";

std::string Tail(int n) {
  return "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":" + std::to_string(n) +
         ",\"total_tokens\":" + std::to_string(n + 4) + "}}\n\ndata: [DONE]\n\n";
}

void BusyWaitUntil(int64_t t_ns) {
  while (net::HttpLoop::NowNs() < t_ns) {
  }
}

}  // namespace

std::string SelfCheckReport::ToText() const {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "client throughput: %.0f chunks in %.2f s = %.0f chunks/s (wall), %.0f chunks per CPU-second, "
                "%.2f us CPU per chunk\n"
                "timestamp error (client vs emitter gaps, %d samples): p50 %.1f us, p99 %.1f us; "
                "send->receive delay p50 %.1f us, p99 %.1f us\n",
                chunks, wall_s, chunks_per_s, chunks_per_cpu_s, cpu_us_per_chunk, timing_samples, gap_error_p50_us,
                gap_error_p99_us, delay_p50_us, delay_p99_us);
  std::string out = buf;
  if (python_chunks_per_s > 0) {
    std::snprintf(buf, sizeof buf, "python asyncio reference: %.0f chunks/s; hone/python = %.1fx\n",
                  python_chunks_per_s, ratio_vs_python);
    out += buf;
  } else if (!python_error.empty()) {
    out += "python reference not run: " + python_error + "\n";
  }
  return out;
}

Result<SelfCheckReport> RunSelfCheck(const SelfCheckOptions& o) {
  SelfCheckReport report;
  Emitter emitter;
  std::atomic<bool> timing_mode{false};
  const int interval_us = o.timing_interval_us;
  auto server = net::RawServer::Start([&](const net::RawRequest& req, net::RawWriter& w) {
    int n = MaxTokens(req.body);
    if (!w.Write(kHead)) return;
    if (!timing_mode) {
      // As fast as the socket allows: 64 events per write.
      std::string batch;
      for (int i = 0; i < 64; ++i) batch += kEvent;
      int sent = 0;
      while (sent + 64 <= n) {
        if (!w.Write(batch)) return;
        sent += 64;
      }
      std::string rest;
      for (; sent < n; ++sent) rest += kEvent;
      w.Write(rest + Tail(n));
      return;
    }
    int id = StreamId(req.body);
    std::vector<int64_t> stamps;
    stamps.reserve(static_cast<size_t>(n));
    int64_t next = net::HttpLoop::NowNs();
    for (int i = 0; i < n; ++i) {
      BusyWaitUntil(next);
      stamps.push_back(net::HttpLoop::NowNs());
      if (!w.Write(kEvent)) break;
      next += static_cast<int64_t>(interval_us) * 1000;
    }
    w.Write(Tail(n));
    std::lock_guard<std::mutex> lock(emitter.mu);
    emitter.send_ns[id] = std::move(stamps);
  });
  if (!server) return Fail(server.error());

  RunOptions run;
  run.port = (*server)->port();
  run.scrape_interval_s = 0;
  run.progress = false;
  run.profile.exact_length_fields.clear();

  // Throughput.
  {
    std::vector<RequestSpec> reqs(static_cast<size_t>(o.streams));
    for (int i = 0; i < o.streams; ++i) {
      reqs[static_cast<size_t>(i)].prompt_text = "sc-" + std::to_string(i);
      reqs[static_cast<size_t>(i)].max_tokens = o.chunks_per_stream;
    }
    run.shape.concurrency = o.streams;
    double cpu0 = ThreadCpuSeconds();
    int64_t t0 = net::HttpLoop::NowNs();
    HONE_ASSIGN_OR_RETURN(RunOutput out, RunRequests(reqs, run));
    report.wall_s = static_cast<double>(net::HttpLoop::NowNs() - t0) * 1e-9;
    report.client_cpu_s = ThreadCpuSeconds() - cpu0;
    for (const auto& r : out.records) {
      if (!r.ok()) return Internal("self-check request failed: " + std::string(ErrorCategoryName(r.error)) + " " + r.error_detail);
      report.chunks += static_cast<double>(r.chunk_ns.size());
    }
    report.chunks_per_s = report.chunks / report.wall_s;
    report.chunks_per_cpu_s = report.chunks / report.client_cpu_s;
    report.cpu_us_per_chunk = report.client_cpu_s * 1e6 / report.chunks;
  }
  // Timing.
  {
    timing_mode = true;
    std::vector<RequestSpec> reqs(static_cast<size_t>(o.timing_streams));
    for (int i = 0; i < o.timing_streams; ++i) {
      reqs[static_cast<size_t>(i)].prompt_text = "sc-" + std::to_string(i);
      reqs[static_cast<size_t>(i)].max_tokens = o.timing_chunks;
    }
    run.shape.concurrency = o.timing_streams;
    HONE_ASSIGN_OR_RETURN(RunOutput out, RunRequests(reqs, run));
    std::vector<double> gap_err, delay;
    std::lock_guard<std::mutex> lock(emitter.mu);
    for (size_t k = 0; k < out.records.size(); ++k) {
      const auto& rec = out.records[k];
      // Records come back in completion order; the request index names the stream.
      auto it = emitter.send_ns.find(static_cast<int>(rec.index));
      if (it == emitter.send_ns.end()) continue;
      const auto& sent = it->second;
      size_t n = std::min(sent.size(), rec.chunk_ns.size());
      for (size_t i = 0; i < n; ++i) {
        delay.push_back(static_cast<double>(rec.chunk_ns[i] - sent[i]) * 1e-3);
        if (i > 0) {
          double dc = static_cast<double>(rec.chunk_ns[i] - rec.chunk_ns[i - 1]);
          double de = static_cast<double>(sent[i] - sent[i - 1]);
          gap_err.push_back(std::abs(dc - de) * 1e-3);
        }
      }
    }
    report.timing_samples = static_cast<int>(gap_err.size());
    report.gap_error_p50_us = Percentile(gap_err, 50);
    report.gap_error_p99_us = Percentile(gap_err, 99);
    report.delay_p50_us = Percentile(delay, 50);
    report.delay_p99_us = Percentile(delay, 99);
    timing_mode = false;
  }
  // Python reference on the throughput job.
  if (!o.python_client.empty()) {
    auto res = sys::RunCommand({.argv = {o.python, o.python_client, "--port", std::to_string((*server)->port()),
                                         "--streams", std::to_string(o.streams), "--chunks",
                                         std::to_string(o.chunks_per_stream)}},
                               std::chrono::minutes(10));
    if (!res) {
      report.python_error = res.error().message;
    } else if (!res->status.success()) {
      report.python_error = res->status.ToString() + ": " + LastLines(res->output, 2);
    } else {
      for (const std::string& line : Split(res->output, '\n')) {
        if (line.starts_with("chunks_per_s ")) report.python_chunks_per_s = ParseDouble(line.substr(13)).value_or(0);
      }
      if (report.python_chunks_per_s > 0) report.ratio_vs_python = report.chunks_per_s / report.python_chunks_per_s;
      if (report.python_chunks_per_s <= 0) report.python_error = "no figure in its output: " + LastLines(res->output, 2);
    }
  }
  return report;
}

}  // namespace hone::bench
