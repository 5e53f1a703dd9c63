#include "bench/scrape.h"

#include <algorithm>

namespace hone::bench {

std::optional<double> ServerSeries::Delta(const std::string& name) const {
  std::optional<double> first, last;
  for (const auto& s : samples) {
    auto it = s.values.find(name);
    if (it == s.values.end()) continue;
    if (!first) first = it->second;
    last = it->second;
  }
  if (!first || !last) return std::nullopt;
  return *last - *first;
}

std::optional<double> ServerSeries::Max(const std::string& name) const {
  std::optional<double> m;
  for (const auto& s : samples) {
    auto it = s.values.find(name);
    if (it != s.values.end()) m = std::max(m.value_or(it->second), it->second);
  }
  return m;
}

std::optional<double> ServerSeries::Mean(const std::string& name) const {
  double sum = 0;
  int n = 0;
  for (const auto& s : samples) {
    auto it = s.values.find(name);
    if (it != s.values.end()) {
      sum += it->second;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

class ServerScraper::Handler : public net::ResponseHandler {
 public:
  explicit Handler(ServerScraper* owner) : owner_(owner) {}
  void OnHeaders(int status, const net::Headers&, int64_t) override { status_ = status; }
  void OnBody(std::string_view d, int64_t) override { body_.append(d); }
  void OnDone(net::TransportError e, std::string_view, int64_t t) override {
    owner_->OnResponse(status_, body_, t, e == net::TransportError::kNone);
  }

 private:
  ServerScraper* owner_;
  int status_ = 0;
  std::string body_;
};

ServerScraper::ServerScraper(net::HttpLoop& loop, std::string host, int port, net::ServingMetricNames n)
    : loop_(loop), host_(std::move(host)), port_(port) {
  for (const std::string& name : {n.prompt_tokens_total, n.generation_tokens_total, n.cached_prompt_tokens_total,
                                  n.cache_queries_total, n.cache_hits_total, n.requests_running, n.requests_waiting,
                                  n.kv_usage, n.preemptions_total}) {
    if (!name.empty()) names_.push_back(name);
  }
}

ServerScraper::~ServerScraper() = default;

void ServerScraper::ScrapeNow() {
  if (in_flight_ || unsupported_ || names_.empty()) return;
  in_flight_ = std::make_unique<Handler>(this);
  last_start_ns_ = net::HttpLoop::NowNs();
  loop_.Submit({.method = "GET", .host = host_, .port = port_, .path = "/metrics"}, in_flight_.get(),
               {std::chrono::milliseconds(5000), std::chrono::milliseconds(5000)});
}

void ServerScraper::Tick(int64_t now_ns, int64_t interval_ns) {
  if (now_ns - last_start_ns_ >= interval_ns) ScrapeNow();
}

void ServerScraper::OnResponse(int status, const std::string& body, int64_t t_ns, bool ok) {
  // Called from inside the loop while in_flight_ is still the active handler: defer
  // its destruction by moving it out only after reading what we need.
  std::unique_ptr<Handler> done = std::move(in_flight_);
  if (status == 404) {
    unsupported_ = true;  // metrics disabled on this server
    return;
  }
  if (!ok || status != 200) {
    ++series_.scrape_errors;
    return;
  }
  auto parsed = net::ParsePrometheusText(body);
  if (!parsed) {
    ++series_.scrape_errors;
    return;
  }
  ScrapeSample sample;
  sample.t_ns = t_ns;
  for (const std::string& name : names_) {
    if (auto v = parsed->Sum(name)) sample.values[name] = *v;
  }
  series_.samples.push_back(std::move(sample));
  // `done` (the handler whose callback this is) must outlive this call: the loop
  // touches nothing after OnDone, so releasing it at scope end is safe.
}

}  // namespace hone::bench
