// tests/util/nginx_conf.h — what the e2e tests need to run the shipped deploy/nginx.conf on loopback:
// the nginx binary, a free port, the config rewritten for a test directory, and nginx started from
// it in front of the test's servers (Nginx; its includer defines MINERU_SOURCE_DIR).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/mapped_file.h"
#include "process.h"

namespace mineru::testing {

// $MINERU_NGINX (if executable) or the usual install paths; "" when there is none.
inline std::string FindNginx() {
  const char* env = std::getenv("MINERU_NGINX");
  if (env && *env) return ::access(env, X_OK) == 0 ? env : "";
  for (const char* p :
       {"/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx", "/usr/local/bin/nginx"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

// A loopback port that was free a moment ago (bound to port 0, then released); -1 on failure.
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  return ok ? ntohs(a.sin_port) : -1;
}

// Replaces every occurrence of from; false unless there were exactly `times` (the template changed).
inline bool ReplaceTimes(std::string* s, const std::string& from, const std::string& to, int times) {
  int n = 0;
  for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at + to.size()), ++n)
    s->replace(at, from.size(), to);
  return n == times;
}

// deploy/nginx.conf (its text in conf) rewritten to run from dir (pid, logs, temp paths), with one
// worker, listening on 127.0.0.1:listen_port, in front of one or two upstream ports (the template's
// two servers, listed in both of its upstream blocks; with one port the second is dropped). False
// with *err naming the line the template no longer holds as often as expected.
inline bool RewriteNginxConf(std::string* conf, const std::string& dir, const std::vector<int>& upstreams,
                             int listen_port, std::string* err) {
  struct Edit {
    std::string from, to;
    int times;
  };
  const std::string second = upstreams.size() > 1 ? "127.0.0.1:" + std::to_string(upstreams[1]) : "";
  const std::vector<Edit> edits = {
      {"worker_processes auto;", "worker_processes 1;", 1},
      {"pid /run/mineru-nginx.pid;", "pid " + dir + "/nginx.pid;", 1},
      {"error_log /var/log/nginx/mineru-error.log warn;", "error_log " + dir + "/error.log info;", 1},
      {"access_log /var/log/nginx/mineru-access.log;",
       "access_log " + dir + "/access.log;\n    client_body_temp_path " + dir +
           "/body;\n    proxy_temp_path " + dir + "/proxy;\n    fastcgi_temp_path " + dir +
           "/fastcgi;\n    uwsgi_temp_path " + dir + "/uwsgi;\n    scgi_temp_path " + dir + "/scgi;",
       1},
      {"127.0.0.1:30001", "127.0.0.1:" + std::to_string(upstreams.at(0)), 2},
      upstreams.size() > 1 ? Edit{"127.0.0.1:30002", second, 2}
                           : Edit{"        server 127.0.0.1:30002 max_fails=2 fail_timeout=10s;\n", "", 2},
      {"listen 8080;", "listen 127.0.0.1:" + std::to_string(listen_port) + ";", 1},
  };
  for (const auto& e : edits) {
    if (!ReplaceTimes(conf, e.from, e.to, e.times)) {
      *err = "deploy/nginx.conf no longer contains '" + e.from + "' " + std::to_string(e.times) +
             " time(s) (update this test)";
      return false;
    }
  }
  return true;
}

// nginx from deploy/nginx.conf, in front of one or two upstream ports on loopback, listening on a
// free port; stopped (SIGQUIT, then SIGKILL after 10 s) when it goes.
class Nginx {
 public:
  bool Start(const std::string& dir, int upstream, std::string* err) { return Launch(dir, {upstream}, err); }
  bool Start(const std::string& dir, int upstream_a, int upstream_b, std::string* err) {
    return Launch(dir, {upstream_a, upstream_b}, err);
  }
  int port() const { return port_; }
  // What nginx wrote to stdout/stderr.
  std::string Log() const { return ReadFileToString(log_).ok() ? *ReadFileToString(log_) : ""; }
  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    c.set_connection_timeout(5, 0);
    return c;
  }
  // A failed test shows nginx's error log: why a request got a 502 is there.
  ~Nginx() {
    StopProcess(pid_, SIGQUIT, 10);
    if (!dir_.empty() && ::testing::Test::HasFailure()) {
      auto text = ReadFileToString(dir_ + "/error.log");
      std::fprintf(stderr, "--- nginx's error log %s/error.log ---\n%s\n---\n", dir_.c_str(),
                   text.ok() ? text->c_str() : "(unreadable)");
    }
  }

 private:
  // Writes dir/nginx.conf, checks it (nginx -t), starts nginx and waits (up to 30 s) until /health
  // answers through it. False with *err saying why.
  bool Launch(const std::string& dir, const std::vector<int>& upstreams, std::string* err) {
    dir_ = dir;
    const std::string bin = FindNginx();
    if (bin.empty()) {
      *err = "nginx not found (install Debian's nginx: scripts/setup.sh; or set MINERU_NGINX)";
      return false;
    }
    auto tmpl = ReadFileToString(std::string(MINERU_SOURCE_DIR) + "/deploy/nginx.conf");
    if (!tmpl.ok()) {
      *err = "cannot read deploy/nginx.conf";
      return false;
    }
    std::string conf = *tmpl;
    port_ = FreePort();
    if (!RewriteNginxConf(&conf, dir, upstreams, port_, err)) return false;
    const std::string path = dir + "/nginx.conf";
    if (!WriteStringToFile(path, conf).ok()) {
      *err = "cannot write " + path;
      return false;
    }
    log_ = dir + "/nginx.out";
    const int t = WaitExit(Spawn({bin, "-t", "-p", dir + "/", "-c", path}, log_));
    if (!WIFEXITED(t) || WEXITSTATUS(t) != 0) {
      *err = "nginx -t rejected the configuration: " + Log();
      return false;
    }
    pid_ = Spawn({bin, "-p", dir + "/", "-c", path, "-g", "daemon off;"}, log_);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < end) {
      httplib::Client c("127.0.0.1", port_);
      c.set_connection_timeout(1, 0);
      auto r = c.Get("/health");
      if (r && r->status == 200) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        auto error_log = ReadFileToString(dir + "/error.log");
        *err = "nginx exited: " + Log() + (error_log.ok() ? *error_log : "");
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition, with a deadline
    }
    *err = "nginx did not answer /health within 30 s: " + Log();
    return false;
  }

  int port_ = 0;
  pid_t pid_ = -1;
  std::string dir_, log_;
};

}  // namespace mineru::testing
