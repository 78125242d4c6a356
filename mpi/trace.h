#pragma once
/// Phase timestamps for the overhead split (benchmarks/README.md, "Dispatch
/// overhead": where the time goes). With RANKTUNE_TRACE set, each call prints one line to stderr:
///   ranktune-trace RANK SECONDS PHASE
/// RANK is OMPI_COMM_WORLD_RANK (-1 in the self-launcher), SECONDS the wall clock
/// (CLOCK_REALTIME, comparable between the ranks of one machine). The first call also
/// prints the process's exec time (from /proc, 10 ms resolution), so that the loader's and
/// static constructors' share shows, and registers an "exit" stamp for after MPI_Finalize.
/// Unset, a call costs one load of a cached flag.

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ranktune::mpi {

namespace trace_detail {

inline double realtime() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline int rank() {
  const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
  return r != nullptr ? std::atoi(r) : -1;
}

inline void print(double t, const char* phase) {
  std::fprintf(stderr, "ranktune-trace %d %.6f %s\n", rank(), t, phase);
}

inline void print(double t, const char* phase, long long trial) {
  std::fprintf(stderr, "ranktune-trace %d %.6f %s %lld\n", rank(), t, phase, trial);
}

/// When this process was exec'ed: field 22 of /proc/self/stat (clock ticks since boot),
/// moved onto the wall clock through CLOCK_BOOTTIME. 0 when unreadable.
inline double exec_time() {
  char buf[1024] = {};
  std::FILE* f = std::fopen("/proc/self/stat", "r");
  if (f == nullptr) return 0;
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  if (p == nullptr) return 0;
  // Fields after the name start at 3 (state); starttime is field 22.
  for (int field = 2; field < 22 && p != nullptr; ++field) p = std::strchr(p + 1, ' ');
  if (p == nullptr) return 0;
  const double start_since_boot = std::strtod(p + 1, nullptr) / static_cast<double>(sysconf(_SC_CLK_TCK));
  timespec boot{};
  clock_gettime(CLOCK_BOOTTIME, &boot);
  const double now_since_boot = static_cast<double>(boot.tv_sec) + static_cast<double>(boot.tv_nsec) * 1e-9;
  return realtime() - (now_since_boot - start_since_boot);
}

inline bool enabled() {
  static const bool on = [] {
    if (std::getenv("RANKTUNE_TRACE") == nullptr) return false;
    if (const double t = exec_time(); t > 0) print(t, "exec");
    std::atexit([] { print(realtime(), "exit"); });
    return true;
  }();
  return on;
}

}  // namespace trace_detail

/// Prints a phase timestamp when RANKTUNE_TRACE is set.
inline void trace(const char* phase) {
  if (trace_detail::enabled()) trace_detail::print(trace_detail::realtime(), phase);
}

/// The same for one trial's round trip (`phase` of trial `trial`), with RANKTUNE_TRACE=trials
/// only: about five lines per trial (benchmarks/trace_split.py --trials).
inline void trace_trial(const char* phase, long long trial) {
  static const bool on = [] {
    const char* v = std::getenv("RANKTUNE_TRACE");
    return v != nullptr && std::strcmp(v, "trials") == 0;
  }();
  if (on && trace_detail::enabled()) trace_detail::print(trace_detail::realtime(), phase, trial);
}

}  // namespace ranktune::mpi
