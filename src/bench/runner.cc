#include "bench/runner.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>

#include "core/rng.h"
#include "core/strings.h"
#include "sys/files.h"
#include "sys/signals.h"
#include "sys/term.h"

namespace hone::bench {

Result<LoadShape> LoadShape::Parse(std::string_view text, int concurrency) {
  LoadShape s;
  s.concurrency = concurrency;
  std::string t = ToLower(Trim(text));
  if (t.empty() || t == "closed" || t == "inf") {
    s.kind = Kind::kClosedLoop;
    if (concurrency < 1) return InvalidArgument("closed-loop load needs concurrency >= 1");
    return s;
  }
  size_t colon = t.find(':');
  std::string kind = t.substr(0, colon);
  if (colon == std::string::npos || (kind != "poisson" && kind != "constant")) {
    return InvalidArgument("unknown load shape '" + std::string(text) + "' (closed, poisson:RATE, constant:RATE)");
  }
  auto rate = ParseDouble(t.substr(colon + 1));
  if (!rate || *rate <= 0) return InvalidArgument("request rate must be > 0 in '" + std::string(text) + "'");
  s.kind = kind == "poisson" ? Kind::kPoisson : Kind::kConstant;
  s.rate_rps = *rate;
  return s;
}

std::string LoadShape::ToString() const {
  char buf[64];
  if (kind == Kind::kClosedLoop) {
    std::snprintf(buf, sizeof buf, "closed loop, concurrency %d", concurrency);
  } else {
    std::snprintf(buf, sizeof buf, "%s %.3g req/s%s", kind == Kind::kPoisson ? "poisson" : "constant", rate_rps,
                  concurrency > 0 ? (", max concurrency " + std::to_string(concurrency)).c_str() : "");
  }
  return buf;
}

std::vector<double> ArrivalOffsets(const LoadShape& shape, size_t n, uint64_t seed) {
  std::vector<double> out(n, 0.0);
  if (shape.kind == LoadShape::Kind::kClosedLoop || n == 0) return out;
  Rng rng(seed);
  double t = 0;
  for (size_t i = 0; i < n; ++i) {
    out[i] = t;
    t += shape.kind == LoadShape::Kind::kPoisson ? rng.NextExponential(1.0 / shape.rate_rps) : 1.0 / shape.rate_rps;
  }
  return out;
}

namespace {

class Engine {
 public:
  Engine(net::HttpLoop& loop, const RunOptions& o) : loop_(loop), options_(o) {
    if (o.scrape_interval_s > 0) scraper_ = std::make_unique<ServerScraper>(loop, o.host, o.port, o.profile.metrics);
  }

  void Send(const RequestSpec& spec, uint64_t index, double queue_s, int64_t osl_nominal = 0) {
    RequestRecord rec;
    rec.index = index;
    rec.phase = spec.phase;
    rec.session = spec.session;
    rec.turn = spec.turn;
    rec.isl = spec.isl_expected;
    rec.isl_expected = spec.isl_expected;
    rec.osl_expected = spec.max_tokens;
    rec.osl_nominal = osl_nominal;
    rec.client_queue_s = queue_s;
    rec.hit_blocks = spec.hit_blocks;
    rec.total_blocks = spec.total_blocks;
    rec.t_start_ns = net::HttpLoop::NowNs();
    if (spec.phase == Phase::kProfiling && output_.window_start_ns == 0) output_.window_start_ns = rec.t_start_ns;
    auto handler =
        std::make_unique<StreamHandler>(std::move(rec), [this](StreamHandler& h) { OnDone(h); }, options_.slot_context);
    StreamHandler* raw = handler.get();
    in_flight_.push_back(std::move(handler));
    // Submit may finish the request at once (a refused connection): OnDone then runs
    // inside it, and the handler is reaped on the next Pump.
    loop_.Submit({.method = "POST", .host = options_.host, .port = options_.port,
                  .path = std::string(EndpointPath(spec.endpoint)), .body = BuildRequestBody(spec, options_.profile)},
                 raw, options_.limits);
    output_.peak_in_flight = std::max(output_.peak_in_flight, static_cast<int>(loop_.active()));
  }

  void OnDone(StreamHandler& h) {
    RequestRecord& r = h.record();
    if (cutting_ && r.phase == Phase::kProfiling && r.error == ErrorCategory::kCancelled) {
      r.cut = true;
      ++output_.cut;
    }
    if (r.phase == Phase::kProfiling && !r.cut) {
      output_.window_end_ns = std::max(output_.window_end_ns, r.t_end_ns);
      ++profiled_;
      if (!r.ok()) ++errors_;
    }
    output_.records.push_back(std::move(r));
    done_handlers_.push_back(&h);
  }

  // Frees handlers whose requests finished (never from inside their own callback).
  void Reap() {
    if (done_handlers_.empty()) return;
    for (StreamHandler* h : done_handlers_) {
      auto it = std::find_if(in_flight_.begin(), in_flight_.end(), [h](const auto& p) { return p.get() == h; });
      if (it != in_flight_.end()) in_flight_.erase(it);
    }
    done_handlers_.clear();
  }

  void Pump(int max_wait_ms) {
    loop_.RunOnce(max_wait_ms);
    Reap();
    if (scraper_) scraper_->Tick(net::HttpLoop::NowNs(), static_cast<int64_t>(options_.scrape_interval_s * 1e9));
  }

  bool TooManyErrors() const {
    return profiled_ >= 20 && static_cast<double>(errors_) > options_.max_error_rate * static_cast<double>(profiled_);
  }

  // Cancels every request in flight as the window's end (their records are `cut`).
  void CutAll(net::HttpLoop& loop, int64_t window_end_ns) {
    cutting_ = true;
    loop.CancelAll();
    Reap();
    output_.window_end_ns = window_end_ns;
    cutting_ = false;
  }

  size_t in_flight() const { return in_flight_.size(); }
  RunOutput& output() { return output_; }
  ServerScraper* scraper() { return scraper_.get(); }
  int profiled() const { return profiled_; }
  int errors() const { return errors_; }

 private:
  net::HttpLoop& loop_;
  const RunOptions& options_;
  std::unique_ptr<ServerScraper> scraper_;
  std::deque<std::unique_ptr<StreamHandler>> in_flight_;
  std::vector<StreamHandler*> done_handlers_;
  RunOutput output_;
  int profiled_ = 0;
  int errors_ = 0;
  bool cutting_ = false;
};

}  // namespace

Result<RunOutput> RunRequests(const std::vector<RequestSpec>& requests, const RunOptions& options) {
  sys::RaiseFdLimit();
  HONE_ASSIGN_OR_RETURN(auto loop, net::HttpLoop::Create());
  Engine engine(*loop, options);
  std::vector<size_t> warmups, measured;
  for (size_t i = 0; i < requests.size(); ++i) {
    (requests[i].phase == Phase::kWarmup ? warmups : measured).push_back(i);
  }
  const LoadShape& shape = options.shape;
  const size_t cap = shape.concurrency > 0 ? static_cast<size_t>(shape.concurrency) : SIZE_MAX;
  std::unique_ptr<sys::Progress> progress;
  if (options.progress) progress = std::make_unique<sys::Progress>("bench");
  int64_t last_progress = 0;
  auto report = [&](bool force) {
    if (!progress) return;
    int64_t now = net::HttpLoop::NowNs();
    if (!force && now - last_progress < 250'000'000) return;
    last_progress = now;
    char buf[128];
    std::snprintf(buf, sizeof buf, "%d/%zu requests, %zu in flight, %d errors", engine.profiled(), measured.size(),
                  engine.in_flight(), engine.errors());
    progress->Update(measured.empty() ? 1.0 : static_cast<double>(engine.profiled()) / static_cast<double>(measured.size()),
                     buf);
  };

  if (engine.scraper()) engine.scraper()->ScrapeNow();
  // Warm-ups: closed loop under the same concurrency cap, drained before measuring.
  size_t next = 0;
  while ((next < warmups.size() || engine.in_flight() > 0) && !sys::InterruptRequested()) {
    while (next < warmups.size() && engine.in_flight() < std::min<size_t>(cap, std::max(1, shape.concurrency))) {
      engine.Send(requests[warmups[next]], warmups[next], 0);
      ++next;
    }
    engine.Pump(20);
  }

  const int64_t start_ns = net::HttpLoop::NowNs();
  const bool windowed = options.cut_at_window_end && options.duration_s > 0;
  const int64_t ramp_ns = windowed ? static_cast<int64_t>(std::max(0.0, options.ramp_s) * 1e9) : 0;
  const int64_t end_ns =
      options.duration_s > 0 ? start_ns + ramp_ns + static_cast<int64_t>(options.duration_s * 1e9) : INT64_MAX;
  std::vector<double> arrivals = ArrivalOffsets(shape, measured.size(), options.seed);
  std::deque<std::pair<size_t, int64_t>> queued;  // open loop: (request, arrival ns) waiting for a slot
  // A closed loop with a ramp staggers its first wave: request k of the first N asks for
  // (k+1)/N of its output tokens. Without it every request starts, prefills and ends
  // together and so do all that follow: at N slots the load beats with one request's
  // life as its period (a 1024-token decode at 64 slots outlasts ramp + window, and the
  // window saw decode only, never a prefill). Staggered, completions and the prefills
  // that follow them spread over one request's life, and the window samples the steady
  // state. The first wave is cut or ends during the ramp, where nothing is counted but
  // its tokens streamed inside the window.
  const bool stagger = windowed && ramp_ns > 0 && shape.kind == LoadShape::Kind::kClosedLoop && cap > 1 &&
                       cap != SIZE_MAX;
  size_t first_wave = 0;
  next = 0;
  bool aborted = false;
  while (!sys::InterruptRequested()) {
    int64_t now = net::HttpLoop::NowNs();
    bool accepting = now < end_ns && !aborted;
    if (shape.kind == LoadShape::Kind::kClosedLoop) {
      while (accepting && next < measured.size() && engine.in_flight() < cap) {
        if (stagger && first_wave < cap) {
          RequestSpec spec = requests[measured[next]];
          const int64_t nominal = spec.max_tokens;
          if (spec.max_tokens > 1) {
            spec.max_tokens = std::max<int64_t>(
                1, spec.max_tokens * static_cast<int64_t>(first_wave + 1) / static_cast<int64_t>(cap));
          }
          ++first_wave;
          engine.Send(spec, measured[next], 0, nominal);
        } else {
          engine.Send(requests[measured[next]], measured[next], 0);
        }
        ++next;
      }
    } else {
      while (accepting && next < measured.size() && start_ns + static_cast<int64_t>(arrivals[next] * 1e9) <= now) {
        queued.emplace_back(measured[next], start_ns + static_cast<int64_t>(arrivals[next] * 1e9));
        ++next;
      }
      while (!queued.empty() && engine.in_flight() < cap) {
        double wait_s = static_cast<double>(now - queued.front().second) * 1e-9;
        engine.Send(requests[queued.front().first], queued.front().first, std::max(0.0, wait_s));
        queued.pop_front();
      }
    }
    bool more_to_send = accepting && (next < measured.size() || !queued.empty());
    if (!more_to_send && engine.in_flight() == 0) break;
    if (windowed && now >= end_ns) {
      engine.CutAll(*loop, end_ns);
      break;
    }
    int wait_ms = 20;
    if (shape.kind != LoadShape::Kind::kClosedLoop && next < measured.size()) {
      int64_t due = start_ns + static_cast<int64_t>(arrivals[next] * 1e9) - now;
      wait_ms = static_cast<int>(std::clamp<int64_t>(due / 1'000'000, 0, 20));
    }
    engine.Pump(wait_ms);
    report(false);
    if (!aborted && engine.TooManyErrors()) {
      aborted = true;
      char buf[128];
      std::snprintf(buf, sizeof buf, "error rate above %.0f%% (%d of %d requests): run aborted",
                    options.max_error_rate * 100, engine.errors(), engine.profiled());
      engine.output().invalid_reasons.push_back(buf);
    }
  }
  if (sys::InterruptRequested()) {
    engine.output().interrupted = true;
    engine.output().invalid_reasons.push_back("interrupted before the run completed");
  }
  // Drain anything still in flight (interrupts: cancel it, keeping the records).
  while (engine.in_flight() > 0) {
    if (sys::InterruptRequested()) {
      loop->CancelAll();
      engine.Pump(0);
      break;
    }
    engine.Pump(20);
  }
  if (engine.scraper() && !sys::InterruptRequested()) {
    engine.scraper()->ScrapeNow();
    int64_t deadline = net::HttpLoop::NowNs() + 3'000'000'000LL;
    while (engine.scraper()->busy() && net::HttpLoop::NowNs() < deadline) loop->RunOnce(20);
    engine.output().series = engine.scraper()->series();
  }
  loop->CancelAll();  // a scrape still in flight must end while the scraper lives
  if (windowed) {
    engine.output().windowed = true;
    if (ramp_ns > 0) engine.output().window_start_ns = start_ns + ramp_ns;
  }
  report(true);
  if (progress) progress->Done(engine.output().invalid_reasons.empty() ? "done" : "ended early");
  RunOutput out = std::move(engine.output());
  return out;
}

}  // namespace hone::bench
