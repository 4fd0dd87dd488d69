// tests/server/server_harness.h — starts the real `mineru-cpp serve` on a free loopback port and
// stops it; a tiny HTTP client on top of cpp-httplib, and the values of its /metrics.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../util/files.h"
#include "base/mapped_file.h"

namespace mineru::testing {

inline const std::string kBin = std::string(MINERU_BINARY_DIR) + "/src/cli/mineru-cpp";

// A "<field>: N kB" line of /proc/<pid>/status (VmRSS, VmSize, ...); -1 if unreadable.
inline long ProcStatusKb(pid_t pid, const std::string& field) {
  auto s = ReadFileToString("/proc/" + std::to_string(pid) + "/status");
  if (!s.ok()) return -1;
  const size_t at = s->find(field + ":");
  return at == std::string::npos ? -1 : std::atol(s->c_str() + at + field.size() + 1);
}

class ServerProcess {
 public:
  // args: extra flags after `serve`. Waits until /health answers ready_status (200: the model is
  // loaded; 503: e.g. it failed to load) or the deadline passes; health_body() is that answer.
  bool Start(const std::vector<std::string>& args, const std::string& log_path, double deadline_s = 60,
             int ready_status = 200) {
    log_ = log_path;
    port_ = 0;  // a restarted server listens on a new port
    std::remove(log_.c_str());
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
      ::dup2(fd, 1);
      if (child_setup) child_setup();  // e.g. limits or another user, before exec
      std::vector<std::string> all = {kBin, "serve", "--host", "127.0.0.1", "--port", "0"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(kBin.c_str(), argv.data());
      ::_exit(127);
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
    while (std::chrono::steady_clock::now() < end) {
      if (port_ == 0) {
        auto log = ReadFileToString(log_);
        const std::string key = "listening on http://127.0.0.1:";
        if (log.ok()) {
          const size_t at = log->find(key);
          if (at != std::string::npos) port_ = std::atoi(log->c_str() + at + key.size());
        }
      }
      if (port_ != 0) {
        httplib::Client c("127.0.0.1", port_);
        auto r = c.Get("/health");
        if (r && r->status == ready_status &&
            (ready_status == 200 || r->body.find("loading") == std::string::npos)) {
          health_body_ = r->body;
          return true;
        }
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = status;
        return false;  // the server exited
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a condition, with a deadline
    }
    return false;
  }
  // Runs in the child between fork and exec (async-signal-safe calls only).
  std::function<void()> child_setup;
  int port() const { return port_; }
  // The wait status of a server that exited during Start() (-1: it did not).
  int exit_status() const { return exit_status_; }
  pid_t pid() const { return pid_; }
  const std::string& health_body() const { return health_body_; }
  std::string log() const { return ReadFileToString(log_).ok() ? *ReadFileToString(log_) : ""; }
  // Sends sig and waits for exit; returns the exit status (or -1).
  int Stop(int sig = SIGTERM) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  // A failed test shows the end of the server's log: why a request got no answer (a crash, a
  // sanitizer report) is there, not in the client's view.
  ~ServerProcess() {
    if (pid_ > 0) Stop(SIGKILL);
    if (!log_.empty() && ::testing::Test::HasFailure()) {
      const std::string text = log();
      const size_t keep = 8000;
      std::fprintf(stderr, "--- end of the server log %s ---\n%s\n---\n", log_.c_str(),
                   text.size() > keep ? text.substr(text.size() - keep).c_str() : text.c_str());
    }
  }
  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120, 0);
    c.set_connection_timeout(5, 0);
    return c;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_status_ = -1;
  std::string log_;
  std::string health_body_;
};

// The value of one Prometheus series (e.g. `name{label="x"}`) in a /metrics text that starts with a
// newline, 0 when absent (counters appear at their first increment).
inline double Metric(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? 0 : std::atof(text.c_str() + at + series.size() + 2);
}

// The series' value on the server's /metrics now: -1 when it does not answer.
inline double Metric(const ServerProcess& srv, const std::string& series) {
  auto m = srv.Client().Get("/metrics");
  return m ? Metric("\n" + m->body, series) : -1;
}

}  // namespace mineru::testing
