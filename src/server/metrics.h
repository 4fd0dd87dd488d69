// server/metrics.h — counters and latency histograms rendered in the Prometheus text format.
// Thread-safe. Gauges (queue depth, KV blocks, caches) are read from the engine at scrape time.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace mineru::server {

// The route template a request path belongs to, as a label value: one of a fixed set
// ("/health", "/tasks/{id}/pages/{n}", ...), "other" for every path no route serves. Never the raw
// path: a client could otherwise forge series (quotes, newlines) or add one per distinct path.
const char* RouteLabel(const std::string& path);

class Metrics {
 public:
  // Counter `name` with one label set, e.g. Inc("mineru_requests_total",
  // "route=\"/v1/chat/completions\",code=\"200\"").
  void Inc(const std::string& name, const std::string& labels = "", double by = 1);
  // Observation into histogram `name` (seconds).
  void Observe(const std::string& name, double seconds, const std::string& labels = "");
  // Renders all counters/histograms plus the given gauges (name -> value).
  std::string Render(const std::vector<std::pair<std::string, double>>& gauges) const;

 private:
  struct Histogram {
    std::vector<double> counts;  // per bucket (cumulative computed at render)
    double sum = 0;
    uint64_t count = 0;
  };
  static const std::vector<double>& Buckets();
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, double>> counters_;
  std::map<std::string, std::map<std::string, Histogram>> histograms_;
};

}  // namespace mineru::server
