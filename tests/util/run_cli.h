// tests/util/run_cli.h — runs the mineru-cpp binary for end-to-end tests and captures its exit
// status, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "base/mapped_file.h"

namespace mineru::testing {

struct CmdResult {
  int code = -1;
  bool signaled = false;  // killed by a signal (a crash)
  std::string out, err;
};

inline std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline CmdResult RunCli(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string bin = std::string(MINERU_BINARY_DIR) + "/src/cli/mineru-cpp";
  // Unique per process and call: tests of one binary run in parallel processes.
  const std::string errf = std::string(MINERU_BINARY_DIR) + "/cli_stderr_" + std::to_string(::getpid()) +
                           "_" + std::to_string(counter++);
  std::string cmd = Quote(bin);
  for (const auto& a : args) cmd += " " + Quote(a);
  cmd += " </dev/null 2>" + Quote(errf);  // nothing to read: a prompt would end, not wait
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.signaled = WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) >= 128);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  auto err = ReadFileToString(errf);
  r.err = err.ok() ? *err : "";
  std::remove(errf.c_str());
  return r;
}

}  // namespace mineru::testing
