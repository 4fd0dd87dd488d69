// tests/util/process.h — child processes of a test: start one with its output in a log file (as
// another user if asked), wait for it, stop it with a deadline, and ask whether it still runs.
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace mineru::testing {

// Starts args (args[0]: the executable's path) with stdout/stderr appended to log, as uid/gid (-1:
// unchanged), in cwd (empty: unchanged). Returns the pid.
inline pid_t Spawn(const std::vector<std::string>& args, const std::string& log,
                   uid_t uid = static_cast<uid_t>(-1), gid_t gid = static_cast<gid_t>(-1),
                   const std::string& cwd = "") {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (gid != static_cast<gid_t>(-1)) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0) ::_exit(126);
    }
    if (uid != static_cast<uid_t>(-1) && ::setuid(uid) != 0) ::_exit(126);
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for the child to end; its wait status.
inline int WaitExit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// Sends sig, waits up to deadline_s for the exit, then SIGKILL.
inline void StopProcess(pid_t pid, int sig, double deadline_s) {
  if (pid <= 0) return;
  ::kill(pid, sig);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the exit, with a deadline
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
}

// Whether the child still runs: false once it has exited, even before it is reaped (it stays a
// zombie, which kill(pid, 0) would still find). Leaves the exit status to whoever waits for it.
inline bool Alive(pid_t pid) {
  if (pid <= 0) return false;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == 0;  // no state change to report: still running
}

}  // namespace mineru::testing
