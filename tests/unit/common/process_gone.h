#pragma once
// Whether a process has ended, for the unit tests that start programs (trainable_test,
// sys_process_test).

#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

/// True once `pid` is gone or a zombie (an orphan waits for init to reap it), polling for up
/// to `within_s` seconds.
inline bool process_gone(pid_t pid, double within_s = 3.0) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    if (!stat || text.empty()) return true;
    const auto paren = text.rfind(')');
    if (paren != std::string::npos && paren + 2 < text.size()) {
      const char state = text[paren + 2];
      if (state == 'Z' || state == 'X') return true;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > within_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}
