// download/progress.cc — a one-line terminal progress bar for downloads (stderr, tty only).
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>

#include "download/download.h"

namespace mineru {
namespace {

using Clock = std::chrono::steady_clock;

std::string Bytes(double n) {
  char buf[32];
  if (n >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GB", n / (1024.0 * 1024 * 1024));
  else if (n >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MB", n / (1024.0 * 1024));
  else if (n >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.0f KB", n / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", n);
  return buf;
}

std::string Duration(double s) {
  if (s < 0 || s > 99 * 3600) return "--:--";
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

class Bar {
 public:
  void Update(const DownloadProgress& p) {
    using E = DownloadProgress::Event;
    const Clock::time_point now = Clock::now();
    if (p.event == E::kFinished) {
      if (drawn_) std::fputs("\r\x1b[K", stderr);
      drawn_ = false;
      std::fflush(stderr);
      return;
    }
    if (p.event == E::kListing) {
      Draw("listing files ...");
      return;
    }
    // Rate over the last few seconds of bytes received from the network.
    samples_.emplace_back(now, p.bytes_received);
    while (samples_.size() > 2 && now - samples_.front().first > std::chrono::seconds(5))
      samples_.pop_front();
    const bool force = p.event != E::kBytes;
    if (!force && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;

    double rate = 0;
    if (samples_.size() >= 2) {
      const double dt = std::chrono::duration<double>(samples_.back().first - samples_.front().first).count();
      if (dt > 0.2) rate = double(samples_.back().second - samples_.front().second) / dt;
    }
    std::string line =
        "[" + std::to_string(p.file_index) + "/" + std::to_string(p.file_count) + "] " + p.file;
    if (p.event == E::kVerifying) line += " (verifying)";
    if (p.event == E::kSkipped) line += " (present)";
    std::string stats;
    double frac = -1;
    if (p.bytes_total > 0) {
      frac = std::min(1.0, double(p.bytes_done) / double(p.bytes_total));
      char pct[16];
      std::snprintf(pct, sizeof pct, "%3.0f%% ", frac * 100);
      stats = pct + Bytes(double(p.bytes_done)) + "/" + Bytes(double(p.bytes_total));
    } else {
      stats = Bytes(double(p.bytes_done));
    }
    if (rate > 0) {
      stats += "  " + Bytes(rate) + "/s";
      if (p.bytes_total > p.bytes_done)
        stats += "  ETA " + Duration(double(p.bytes_total - p.bytes_done) / rate);
    }
    // Fit one terminal line: a 10..30-cell bar by terminal width, then the name shortened if needed.
    const int cols = Columns() - 1;
    std::string bar;
    if (frac >= 0) {
      const int bar_w = std::max(10, std::min(30, cols - 72));  // steady width for a given terminal
      const int fill = static_cast<int>(frac * bar_w);
      bar = "[" + std::string(fill, '#') + std::string(bar_w - fill, '.') + "] ";
    }
    const int room = cols - static_cast<int>(bar.size() + stats.size()) - 2;
    if (room < static_cast<int>(line.size()))
      line = room > 8 ? line.substr(0, room - 3) + "..." : line.substr(0, 8);
    bar += stats;
    Draw(line + "  " + bar);
  }

 private:
  void Draw(const std::string& s) {
    std::fprintf(stderr, "\r%s\x1b[K", s.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }
  static int Columns() {
    struct winsize w;
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
    return 80;
  }

  std::deque<std::pair<Clock::time_point, uint64_t>> samples_;
  Clock::time_point last_draw_;
  bool drawn_ = false;
};

}  // namespace

ProgressFn MakeTerminalProgress(bool quiet) {
  if (quiet || !::isatty(STDERR_FILENO)) return [](const DownloadProgress&) {};
  auto bar = std::make_shared<Bar>();
  return [bar](const DownloadProgress& p) { bar->Update(p); };
}

}  // namespace mineru
