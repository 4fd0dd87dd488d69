#include "server/metrics.h"

#include <cstdio>
#include <sstream>

namespace mineru::server {

const std::vector<double>& Metrics::Buckets() {
  static const std::vector<double> b = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
  return b;
}

void Metrics::Inc(const std::string& name, const std::string& labels, double by) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_[name][labels] += by;
}

void Metrics::Observe(const std::string& name, double seconds, const std::string& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Histogram& h = histograms_[name][labels];
  if (h.counts.empty()) h.counts.assign(Buckets().size(), 0);
  for (size_t i = 0; i < Buckets().size(); ++i) {
    if (seconds <= Buckets()[i]) {
      h.counts[i] += 1;
      break;
    }
  }
  h.sum += seconds;
  h.count += 1;
}

std::string Metrics::Render(const std::vector<std::pair<std::string, double>>& gauges) const {
  std::ostringstream o;
  std::lock_guard<std::mutex> lock(mu_);
  auto label = [](const std::string& l, const std::string& extra = "") {
    std::string all = l;
    if (!extra.empty()) all += (all.empty() ? "" : ",") + extra;
    return all.empty() ? std::string() : "{" + all + "}";
  };
  for (const auto& [name, series] : counters_) {
    o << "# TYPE " << name << " counter\n";
    for (const auto& [l, v] : series) o << name << label(l) << " " << v << "\n";
  }
  for (const auto& [name, series] : histograms_) {
    o << "# TYPE " << name << " histogram\n";
    for (const auto& [l, h] : series) {
      double cum = 0;
      for (size_t i = 0; i < Buckets().size(); ++i) {
        cum += h.counts[i];
        char le[32];
        std::snprintf(le, sizeof(le), "le=\"%g\"", Buckets()[i]);
        o << name << "_bucket" << label(l, le) << " " << cum << "\n";
      }
      o << name << "_bucket" << label(l, "le=\"+Inf\"") << " " << h.count << "\n";
      o << name << "_sum" << label(l) << " " << h.sum << "\n";
      o << name << "_count" << label(l) << " " << h.count << "\n";
    }
  }
  for (const auto& [name, v] : gauges) {
    o << "# TYPE " << name << " gauge\n" << name << " " << v << "\n";
  }
  return o.str();
}

}  // namespace mineru::server
