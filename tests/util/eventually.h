// tests/util/eventually.h — waiting for a condition the test cannot be told about: poll it, with a
// deadline (a loaded machine is slow, never wrong). The only pause is the poll's own.
#pragma once

#include <chrono>
#include <thread>

namespace mineru::testing {

// Polls cond (every 20 ms) until it holds or deadline_s passes; true once it holds (it is asked
// once more at the deadline).
template <typename Cond>
bool Eventually(Cond&& cond, double deadline_s = 30) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

}  // namespace mineru::testing
