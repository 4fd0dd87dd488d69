#include "server/metrics.h"

#include <cstdio>
#include <sstream>

namespace mineru::server {

namespace {

bool IsHexId(const std::string& s) {
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// path below "/tasks/" -> its template, or nullptr.
const char* TaskRoute(const std::string& rest) {
  const size_t slash = rest.find('/');
  if (!IsHexId(rest.substr(0, slash))) return nullptr;
  if (slash == std::string::npos) return "/tasks/{id}";
  const std::string tail = rest.substr(slash + 1);
  if (tail == "result") return "/tasks/{id}/result";
  if (tail.rfind("pages/", 0) == 0 && tail.size() > 6 &&
      tail.find_first_not_of("0123456789", 6) == std::string::npos) {
    return "/tasks/{id}/pages/{n}";
  }
  if (tail.rfind("files/", 0) == 0 && tail.size() > 6 && tail.find('/', 6) == std::string::npos) {
    return "/tasks/{id}/files/{name}";
  }
  return nullptr;
}

// path below "/v1/tasks/" -> its template, or nullptr (MinerU 4's Tasks API).
const char* TaskRouteV4(const std::string& rest) {
  const size_t slash = rest.find('/');
  const std::string id = rest.substr(0, slash);
  if (id.size() != 37 || id.rfind("task_", 0) != 0 || !IsHexId(id.substr(5))) return nullptr;
  if (slash == std::string::npos) return "/v1/tasks/{task_id}";
  const std::string tail = rest.substr(slash + 1);
  if (tail == "cancel") return "/v1/tasks/{task_id}/cancel";
  if (tail.rfind("uploads/", 0) == 0) return "/v1/tasks/{task_id}/uploads/{file_id}";
  if (tail.rfind("files/", 0) == 0) return "/v1/tasks/{task_id}/files/{file_id}/result";
  return nullptr;
}

}  // namespace

const char* RouteLabel(const std::string& path) {
  static const char* const kExact[] = {"/",
                                       "/health",
                                       "/metrics",
                                       "/v1/models",
                                       "/v1/chat/completions",
                                       "/v1/completions",
                                       "/file_parse",
                                       "/tasks",
                                       "/v1/file_parse",
                                       "/v1/health",
                                       "/v1/tiers",
                                       "/v1/tasks"};
  for (const char* r : kExact) {
    if (path == r) return r;
  }
  if (path.rfind("/tasks/", 0) == 0) {
    if (const char* r = TaskRoute(path.substr(7))) return r;
  }
  if (path.rfind("/v1/tasks/", 0) == 0) {
    if (const char* r = TaskRouteV4(path.substr(10))) return r;
  }
  return "other";
}

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
