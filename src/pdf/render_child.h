// pdf/render_child.h — the process side of a page render in a child process (internal to the pdf
// layer): starting the render helper, the framing of its answer (both sides), reading that answer
// against a deadline, killing and reaping the helper. What the helper renders is pdf.cc's.
//
// Why a child process: poppler has no way to abort a render, so a render past its deadline can
// only be stopped by ending the process it runs in. The helper is a fresh program (posix_spawn:
// the server is multi-threaded, and a forked copy of it that went on running C++ could deadlock on
// a lock another thread held at the fork), so SIGKILL at the deadline stops the work at once and
// frees everything it held.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "image/image.h"

namespace mineru::pdf_internal {

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts argv[0] (a path: no PATH search) with argv and this process's environment; its stdin is
  // `input_fd` (the PDF), its stdout a pipe read here, its stderr this process's. No other
  // descriptor of this process reaches it (everything opened here is close-on-exec; the helper
  // closes the rest itself), signals start unblocked and at their defaults. Unavailable when the
  // program cannot be started.
  static StatusOr<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv, int input_fd);
  // Kills (SIGKILL) the child unless it was reaped, and reaps it: no child outlives its owner,
  // none is left a zombie.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads exactly n bytes of the child's output by `deadline`. DeadlineExceeded past it (the
  // child is left running: call Kill), DataLoss when the output ends first, IoError when reading
  // fails. Never buffers beyond `buf`.
  Status Read(void* buf, size_t n, Clock::time_point deadline);
  // Waits for the end of the output by `deadline`: DataLoss when more bytes come (an answer with
  // something after it is not trusted), DeadlineExceeded past the deadline.
  Status ReadEnd(Clock::time_point deadline);
  // After the output ended: waits for the child's exit, at most until `deadline` (then kills it),
  // and returns its waitpid status (-1 when it could not be had: reaped elsewhere).
  int Wait(Clock::time_point deadline);
  // SIGKILL (unless it has ended) and reap; returns the waitpid status (-1 as above). Idempotent.
  int Kill();
  // True when Kill ended the child (it had not ended on its own).
  bool stopped() const { return stopped_; }

  pid_t pid() const { return pid_; }

 private:
  ChildProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  // Waits for the output to be readable by `deadline`; false past it.
  bool WaitReadable(Clock::time_point deadline) const;
  // waitpid without WNOHANG when `block`; true once reaped (or found reaped elsewhere).
  bool Reap(bool block);

  pid_t pid_ = -1;
  int fd_ = -1;  // read end of the child's stdout, non-blocking
  bool reaped_ = false, stopped_ = false;
  int status_ = -1;
};

// The helper's answer on its stdout: this header, then `message_bytes` bytes of message (code is
// not 0: the render failed with that StatusCode) or width * height * 3 bytes of RGB pixels (code
// 0). Native byte order: the helper is built from these sources for this machine.
struct AnswerHeader {
  char magic[8];
  int32_t code;
  int32_t width, height;
  uint32_t message_bytes;
};
static_assert(sizeof(AnswerHeader) == 24, "AnswerHeader is written and read as raw bytes");
constexpr char kAnswerMagic[8] = {'M', 'R', 'P', 'A', 'G', 'E', '0', '1'};
constexpr uint32_t kMaxAnswerMessage = 4096;

// Child side: writes the answer for `status` (with `image`, which must be set, when it is OK) to
// `fd`, a blocking descriptor. False when the write fails.
bool WriteAnswer(int fd, const Status& status, const RgbImage* image);

// What the helper answered: its verdict, and the page when that is OK.
struct Answer {
  Status status;
  RgbImage image;
};
// Parent side: reads a whole answer and the end of the output after it, by `deadline`. The
// answer's own errors: DeadlineExceeded past the deadline; DataLoss for an answer cut short,
// malformed, followed by more bytes or with more than max_pixels pixels (checked before anything
// is allocated); OutOfMemory when the pixels' buffer cannot be had. A helper's verdict keeps its
// code only where a render can fail that way (DataLoss, OutOfMemory, Unimplemented,
// InvalidArgument); any other becomes DataLoss.
StatusOr<Answer> ReadAnswer(ChildProcess& child, double max_pixels, ChildProcess::Clock::time_point deadline);

// "exited with status 3", "killed by signal 9 (Killed)": a waitpid status for messages.
std::string DescribeWaitStatus(int status);

}  // namespace mineru::pdf_internal
