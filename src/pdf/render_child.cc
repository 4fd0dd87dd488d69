#include "pdf/render_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <new>

namespace mineru::pdf_internal {
namespace {

std::string Errno(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

// Closes `fd` unless it is -1 (none).
void CloseFd(int fd) {
  if (fd >= 0) ::close(fd);
}

// `fd` moved to a close-on-exec descriptor above 2 (see Spawn); the caller closes what it returns
// when it differs from `fd`. -1 when none is left.
int AboveStdio(int fd) { return fd > 2 ? fd : ::fcntl(fd, F_DUPFD_CLOEXEC, 3); }

// Milliseconds from now to `deadline` for poll(), rounded up (never 0 before the deadline, so the
// wait does not spin), capped at a minute per call.
int MillisUntil(ChildProcess::Clock::time_point deadline) {
  const auto left = std::chrono::duration<double, std::milli>(deadline - ChildProcess::Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min(60000.0, std::ceil(left)));
}

}  // namespace

StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                                            int input_fd) {
  if (argv.empty() || argv[0].empty()) return InvalidArgumentError("no render helper program");
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return UnavailableError(Errno("no pipe for the render helper", errno));
  // The child's 0 and 1 are set by two dup2s in order: a source below 3 (a process started with
  // stdin closed hands 0 to the first descriptor it opens) could be overwritten by the first, so
  // both sources are moved above 2 first. Close-on-exec everywhere else keeps this pipe out of
  // helpers other threads start at the same time (one holding our write end would hide our
  // child's exit from us).
  const int in = AboveStdio(input_fd), out = AboveStdio(p[1]);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attr);
  ::posix_spawn_file_actions_adddup2(&actions, in, 0);
  ::posix_spawn_file_actions_adddup2(&actions, out, 1);
  // The calling thread may block signals (serve waits for SIGINT/SIGTERM on its own thread) or
  // ignore some (SIGPIPE): the helper starts with none blocked and all at their defaults, so
  // SIGXCPU (its CPU limit) ends it.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = (in < 0 || out < 0)
                     ? EMFILE
                     : ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (in != input_fd) CloseFd(in);
  if (out != p[1]) CloseFd(out);
  CloseFd(p[1]);  // the child's copy is the only write end: its exit ends our read
  if (rc != 0) {
    CloseFd(p[0]);
    return UnavailableError(Errno(("cannot start the render helper " + argv[0]).c_str(), rc));
  }
  ::fcntl(p[0], F_SETFL, O_NONBLOCK);
  // A larger pipe (when the system allows) means fewer wake-ups for a page's megabytes; the bytes
  // are the same either way.
  ::fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, p[0]));
}

ChildProcess::~ChildProcess() {
  Kill();
  CloseFd(fd_);
}

bool ChildProcess::WaitReadable(Clock::time_point deadline) const {
  for (;;) {
    const int ms = MillisUntil(deadline);
    if (ms <= 0) return false;
    pollfd pfd{fd_, POLLIN, 0};
    const int n = ::poll(&pfd, 1, ms);
    if (n > 0) return true;                    // readable, or ended (POLLHUP): the next read says which
    if (n < 0 && errno != EINTR) return true;  // let the read report the error
  }
}

Status ChildProcess::Read(void* buf, size_t n, Clock::time_point deadline) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t got = ::read(fd_, p, std::min<size_t>(n, size_t(1) << 30));
    if (got > 0) {
      p += got;
      n -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return DataLossError("the render helper's answer ended early");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return IoError(Errno("reading the render helper's answer", errno));
    if (!WaitReadable(deadline)) return DeadlineExceededError("the render helper did not answer in time");
  }
  return Status::Ok();
}

Status ChildProcess::ReadEnd(Clock::time_point deadline) {
  for (;;) {
    char extra = 0;
    const ssize_t got = ::read(fd_, &extra, 1);
    if (got == 0) return Status::Ok();
    if (got > 0) return DataLossError("the render helper's answer goes on past its end");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return IoError(Errno("reading the render helper's answer", errno));
    if (!WaitReadable(deadline)) return DeadlineExceededError("the render helper did not end in time");
  }
}

bool ChildProcess::Reap(bool block) {
  if (reaped_) return true;
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, block ? 0 : WNOHANG);
    if (r == pid_) {
      status_ = st;
      break;
    }
    if (r == 0) return false;
    if (errno == EINTR) continue;
    status_ = -1;  // ECHILD: someone else reaped it (this process never ignores SIGCHLD)
    break;
  }
  reaped_ = true;
  return true;
}

int ChildProcess::Wait(Clock::time_point deadline) {
  // The output ends when the helper exits (it closes nothing early), so the first or second look
  // normally finds it gone; the bound is for a helper that closed its output and went on.
  while (!Reap(/*block=*/false)) {
    if (Clock::now() >= deadline) return Kill();
    ::poll(nullptr, 0, 1);
  }
  return status_;
}

int ChildProcess::Kill() {
  if (Reap(/*block=*/false)) return status_;
  // Not reaped, so the pid is still this child's (a zombie at worst) and cannot name another
  // process. SIGKILL cannot be caught or blocked; the wait after it is short. (A child already
  // exiting keeps its own status.)
  ::kill(pid_, SIGKILL);
  stopped_ = true;
  Reap(/*block=*/true);
  return status_;
}

bool WriteAnswer(int fd, const Status& status, const RgbImage* image) {
  AnswerHeader h{};
  std::memcpy(h.magic, kAnswerMagic, sizeof(h.magic));
  h.code = static_cast<int32_t>(status.code());
  const std::string message = status.message().substr(0, kMaxAnswerMessage);
  const char* body = message.data();
  size_t body_bytes = message.size();
  if (status.ok()) {
    h.width = image->width;
    h.height = image->height;
    body = reinterpret_cast<const char*>(image->pixels.data());
    body_bytes = image->pixels.size();
  } else {
    h.message_bytes = static_cast<uint32_t>(message.size());
  }
  auto write_all = [fd](const char* p, size_t n) {
    while (n > 0) {
      const ssize_t put = ::write(fd, p, std::min<size_t>(n, size_t(1) << 30));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) return false;
      p += put;
      n -= static_cast<size_t>(put);
    }
    return true;
  };
  return write_all(reinterpret_cast<const char*>(&h), sizeof(h)) && write_all(body, body_bytes);
}

namespace {

// The helper's verdict: codes a render can end with keep theirs; anything else is not trusted.
StatusCode HelperCode(int32_t code) {
  switch (static_cast<StatusCode>(code)) {
    case StatusCode::kDataLoss:
    case StatusCode::kOutOfMemory:
    case StatusCode::kUnimplemented:
    case StatusCode::kInvalidArgument:
      return static_cast<StatusCode>(code);
    default:
      return StatusCode::kDataLoss;
  }
}

}  // namespace

StatusOr<Answer> ReadAnswer(ChildProcess& child, double max_pixels,
                            ChildProcess::Clock::time_point deadline) {
  AnswerHeader h{};
  MINERU_RETURN_IF_ERROR(child.Read(&h, sizeof(h), deadline));
  if (std::memcmp(h.magic, kAnswerMagic, sizeof(h.magic)) != 0) {
    return DataLossError("the render helper's answer does not start like one");
  }
  Answer a;
  if (h.code != 0) {
    if (h.message_bytes > kMaxAnswerMessage) return DataLossError("the render helper's message is too long");
    std::string message(h.message_bytes, '\0');
    MINERU_RETURN_IF_ERROR(child.Read(message.data(), message.size(), deadline));
    a.status = Status(HelperCode(h.code), std::move(message));
  } else {
    if (h.width <= 0 || h.height <= 0 || static_cast<double>(h.width) * h.height > max_pixels) {
      return DataLossError("the render helper answered a page of " + std::to_string(h.width) + " x " +
                           std::to_string(h.height) + " pixels, outside what was asked");
    }
    a.image.width = h.width;
    a.image.height = h.height;
    try {
      a.image.pixels.resize(static_cast<size_t>(h.width) * static_cast<size_t>(h.height) * 3);
    } catch (const std::bad_alloc&) {
      return OutOfMemoryError("receiving a rendered page");
    }
    MINERU_RETURN_IF_ERROR(child.Read(a.image.pixels.data(), a.image.pixels.size(), deadline));
  }
  MINERU_RETURN_IF_ERROR(child.ReadEnd(deadline));
  return a;
}

std::string DescribeWaitStatus(int status) {
  if (status == -1) return "ended (status unknown)";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
  }
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace mineru::pdf_internal
