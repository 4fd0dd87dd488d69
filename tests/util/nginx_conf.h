// tests/util/nginx_conf.h — what the e2e tests need to run the shipped deploy/nginx.conf on loopback:
// the nginx binary, a free port, and the config rewritten for a test directory.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

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

// Replaces the one occurrence of from; false when it is missing or repeated (the template changed).
inline bool ReplaceOnce(std::string* s, const std::string& from, const std::string& to) {
  const size_t at = s->find(from);
  if (at == std::string::npos || s->find(from, at + 1) != std::string::npos) return false;
  s->replace(at, from.size(), to);
  return true;
}

// deploy/nginx.conf (its text in conf) rewritten to run from dir (pid, logs, temp paths), with one
// worker, listening on 127.0.0.1:listen_port, in front of one or two upstream ports (the template's
// two servers; with one port the second is dropped). False with *err naming the line the template
// no longer holds exactly once.
inline bool RewriteNginxConf(std::string* conf, const std::string& dir, const std::vector<int>& upstreams,
                             int listen_port, std::string* err) {
  const std::string second = upstreams.size() > 1 ? "127.0.0.1:" + std::to_string(upstreams[1]) : "";
  std::vector<std::pair<std::string, std::string>> edits = {
      {"worker_processes auto;", "worker_processes 1;"},
      {"pid /run/mineru-nginx.pid;", "pid " + dir + "/nginx.pid;"},
      {"error_log /var/log/nginx/mineru-error.log warn;", "error_log " + dir + "/error.log info;"},
      {"access_log /var/log/nginx/mineru-access.log;",
       "access_log " + dir + "/access.log;\n    client_body_temp_path " + dir +
           "/body;\n    proxy_temp_path " + dir + "/proxy;\n    fastcgi_temp_path " + dir +
           "/fastcgi;\n    uwsgi_temp_path " + dir + "/uwsgi;\n    scgi_temp_path " + dir + "/scgi;"},
      {"127.0.0.1:30001", "127.0.0.1:" + std::to_string(upstreams.at(0))},
      upstreams.size() > 1
          ? std::make_pair(std::string("127.0.0.1:30002"), second)
          : std::make_pair(std::string("        server 127.0.0.1:30002 max_fails=2 fail_timeout=10s;\n"),
                           std::string()),
      {"listen 8080;", "listen 127.0.0.1:" + std::to_string(listen_port) + ";"},
  };
  for (const auto& [from, to] : edits) {
    if (!ReplaceOnce(conf, from, to)) {
      *err = "deploy/nginx.conf no longer contains '" + from + "' exactly once (update this test)";
      return false;
    }
  }
  return true;
}

}  // namespace mineru::testing
