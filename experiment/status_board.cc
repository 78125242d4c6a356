// StatusBoard: rank 0's status display, redrawn in place on a terminal or one line per
// interval in a batch log (experiment/status_board.h).
#include "experiment/status_board.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace ranktune::experiment {

using search::TrialStatus;

std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

namespace {

/// Whether to redraw in place. Open MPI gives every rank a pseudo-terminal for stdout even
/// when mpirun's own output goes to a file, so under mpirun isatty() says nothing: the
/// self-launch passes RANKTUNE_STATUS=tty|lines from the terminal it was started on, and
/// an explicit mpirun without it gets batch lines.
bool want_tty(std::FILE* out) {
  if (const char* mode = std::getenv("RANKTUNE_STATUS")) return std::string(mode) == "tty";
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) return false;
  return isatty(fileno(out)) != 0;
}

}  // namespace

StatusBoard::StatusBoard(std::FILE* out, std::string experiment, double interval_s, double budget_s)
    : out_(out),
      experiment_(std::move(experiment)),
      tty_(want_tty(out)),
      interval_s_(interval_s),
      budget_s_(budget_s) {}

void StatusBoard::update(const controller::Controller& c, double now) {
  if (now - last_draw_ < (tty_ ? 0.25 : interval_s_)) return;
  draw(c, now);
}

void StatusBoard::final(const controller::Controller& c, double now) { draw(c, now); }

void StatusBoard::draw(const controller::Controller& c, double now) {
  last_draw_ = now;
  const auto n = c.counts();
  const auto count = [&](TrialStatus s) { return n[static_cast<std::size_t>(s)]; };
  std::int64_t created = 0;
  for (auto v : n) created += v;
  const std::int64_t expected = c.expected_trials();

  std::ostringstream time;
  time << format_duration(now);
  if (budget_s_ > 0) {
    time << " of " << format_duration(budget_s_) << " budget ("
         << static_cast<int>(std::min(100.0, 100.0 * now / budget_s_)) << "%)";
  }
  std::ostringstream best;
  if (const auto* b = c.best()) {
    best << c.options().metric << " = " << b->best << " (trial " << b->id << ", iteration "
         << b->best_iteration << ")";
    std::string params;
    for (const auto& [k, v] : b->config) params += (params.empty() ? "" : ", ") + k + "=" + search::to_string(v);
    if (params.size() > 60) params = params.substr(0, 57) + "...";
    if (tty_) best << "  " << params;
  } else {
    best << "none yet";
  }
  const std::string of = expected >= 0 ? " of " + std::to_string(expected) : "";

  if (!tty_) {
    std::fprintf(out_,
                 "[ranktune %s] %s | trials %lld%s: running %lld, pending %lld, paused %lld, terminated %lld, "
                 "error %lld | best %s\n",
                 experiment_.c_str(), time.str().c_str(), static_cast<long long>(created), of.c_str(),
                 static_cast<long long>(count(TrialStatus::Running)),
                 static_cast<long long>(count(TrialStatus::Pending)),
                 static_cast<long long>(count(TrialStatus::Paused)),
                 static_cast<long long>(count(TrialStatus::Terminated)),
                 static_cast<long long>(count(TrialStatus::Error)), best.str().c_str());
    std::fflush(out_);
    return;
  }
  // Move up over the previous drawing and clear it, then redraw the fixed-width table.
  if (lines_drawn_ > 0) std::fprintf(out_, "\033[%dF\033[J", lines_drawn_);
  std::fprintf(out_, "%-10s %s   elapsed %s\n", "ranktune", experiment_.c_str(), time.str().c_str());
  std::fprintf(out_, "%-10s %lld%s  | %-8s %5lld | %-8s %5lld | %-8s %5lld | %-10s %5lld | %-6s %5lld\n",
               "trials", static_cast<long long>(created), of.c_str(), "PENDING",
               static_cast<long long>(count(TrialStatus::Pending)), "RUNNING",
               static_cast<long long>(count(TrialStatus::Running)), "PAUSED",
               static_cast<long long>(count(TrialStatus::Paused)), "TERMINATED",
               static_cast<long long>(count(TrialStatus::Terminated)), "ERROR",
               static_cast<long long>(count(TrialStatus::Error)));
  std::fprintf(out_, "%-10s %s\n", "best", best.str().c_str());
  std::fflush(out_);
  lines_drawn_ = 3;
}

}  // namespace ranktune::experiment
