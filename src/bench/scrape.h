// ServerScraper: polls a server's Prometheus /metrics during a run, on the benchmark's
// own event loop (no extra thread), and keeps the time series of the quantities named
// in a ServingMetricNames. Counters are read as deltas between the first and last
// scrape, gauges as max/mean. A server without /metrics (404) simply yields no series.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/http.h"
#include "net/prometheus.h"

namespace hone::bench {

struct ScrapeSample {
  int64_t t_ns = 0;
  std::map<std::string, double> values;  // metric name -> sum over label sets
};

struct ServerSeries {
  std::vector<ScrapeSample> samples;
  int scrape_errors = 0;
  // Last minus first value of a counter; nullopt without two samples holding it.
  std::optional<double> Delta(const std::string& name) const;
  std::optional<double> Max(const std::string& name) const;
  std::optional<double> Mean(const std::string& name) const;
};

class ServerScraper {
 public:
  ServerScraper(net::HttpLoop& loop, std::string host, int port, net::ServingMetricNames names);
  ~ServerScraper();
  // Starts a scrape if none is in flight and the interval elapsed (call often).
  void Tick(int64_t now_ns, int64_t interval_ns);
  // Starts a scrape now regardless of the interval (first and last sample).
  void ScrapeNow();
  bool busy() const { return in_flight_ != nullptr; }
  const ServerSeries& series() const { return series_; }

 private:
  class Handler;
  void OnResponse(int status, const std::string& body, int64_t t_ns, bool ok);

  net::HttpLoop& loop_;
  std::string host_;
  int port_;
  std::vector<std::string> names_;
  ServerSeries series_;
  std::unique_ptr<Handler> in_flight_;
  int64_t last_start_ns_ = 0;
  bool unsupported_ = false;
};

}  // namespace hone::bench
