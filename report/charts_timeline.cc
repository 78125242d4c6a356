// The run's charts of the HTML report: the workers' timeline with their utilization, and
// PBT's lineage (report/charts.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "report/charts.h"
#include "report/grid.h"
#include "report/svg_canvas.h"

namespace ranktune::report {
namespace {

constexpr std::size_t kMaxRows = 48, kMaxBars = 20000;

/// One attempt of a trial on its ranks: from its start event to its last result, or to
/// the event that ended it, whichever is later.
struct Bar {
  search::TrialId trial = 0;
  double start = 0, end = 0;
  std::vector<int> ranks;
  std::optional<search::EventKind> ended;  ///< the kind of the event that ended it, nullopt when it ran out
};

bool ends_attempt(const std::optional<search::EventKind>& kind) {
  using search::EventKind;
  return kind == EventKind::EarlyStop || kind == EventKind::Error || kind == EventKind::Retry || kind == EventKind::End ||
         kind == EventKind::Pause;
}

std::vector<Bar> bars_of(const io::ResultsFile& file) {
  std::map<search::TrialId, std::vector<const io::EventRow*>> events;
  for (const io::EventRow& e : file.events)
    if (e.trial > 0) events[e.trial].push_back(&e);
  std::map<search::TrialId, std::vector<double>> times;
  for (const io::ResultRow& r : file.results) times[r.trial].push_back(r.time);
  for (auto& [id, t] : times) std::sort(t.begin(), t.end());
  std::vector<Bar> bars;
  for (auto& [id, list] : events) {
    std::vector<std::size_t> starts;
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i]->kind == search::EventKind::Start) starts.push_back(i);
    const std::vector<double>& results = times[id];
    for (std::size_t k = 0; k < starts.size(); ++k) {
      const std::size_t from = starts[k], to = k + 1 < starts.size() ? starts[k + 1] : list.size();
      const double begin = list[from]->time;
      const double window_end = to < list.size() ? list[to]->time : INFINITY;
      Bar b{id, begin, begin, {list[from]->worker}, std::nullopt};
      for (std::size_t i = from + 1; i < to; ++i) {
        const io::EventRow& e = *list[i];
        if (ends_attempt(e.kind)) {
          b.end = std::max(b.end, e.time);
          b.ended = e.kind;
        }
        if (e.kind == search::EventKind::Placement) {
          try {
            const auto ranks = nlohmann::json::parse(e.message).at("ranks").get<std::vector<int>>();
            if (!ranks.empty()) b.ranks = ranks;
          } catch (const nlohmann::json::exception&) {  // a foreign file: the leader's row only
          }
        }
      }
      // The last result of the attempt: the first one at or after the next start is not.
      const auto last = std::lower_bound(results.begin(), results.end(), window_end);
      if (last != results.begin() && *(last - 1) >= begin) b.end = std::max(b.end, *(last - 1));
      bars.push_back(std::move(b));
    }
  }
  return bars;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * share);
  return buf;
}

}  // namespace

Utilization utilization(const ChartData& d) {
  Utilization u;
  double first = INFINITY, last = -INFINITY;
  for (const Bar& b : bars_of(*d.file)) {
    first = std::min(first, b.start);
    last = std::max(last, b.end);
    for (const int r : b.ranks) u.busy_by_rank[r] += b.end - b.start;
  }
  for (const auto& [rank, busy] : u.busy_by_rank) u.busy += busy;
  u.span = last > first ? last - first : 0;
  u.workers = std::max(u.busy_by_rank.size(), d.file->workers.size());
  return u;
}

std::string timeline_chart(const ChartData& d, const Utilization& u) {
  const io::ResultsFile& file = *d.file;
  const std::vector<Bar> bars = bars_of(file);
  std::vector<int> ranks;
  for (const auto& [rank, busy] : u.busy_by_rank) ranks.push_back(rank);
  const std::size_t shown = std::min(kMaxRows, ranks.size());
  std::map<int, std::size_t> row;
  for (std::size_t i = 0; i < shown; ++i) row[ranks[i]] = i;
  const double row_h = 16, left = 70, width = 720;
  const double H = 40 + row_h * static_cast<double>(std::max<std::size_t>(shown, 1)) + 60;
  SvgCanvas svg(left + width + 70, H);
  double first = INFINITY, last = -INFINITY;
  for (const Bar& b : bars) {
    first = std::min(first, b.start);
    last = std::max(last, b.end);
  }
  if (!(last > first)) first = 0, last = 1;
  Panel p{left, 30, width, row_h * static_cast<double>(std::max<std::size_t>(shown, 1)), linear_scale(first, last),
          linear_scale(0, 1)};
  p.xs.lo = first;
  svg.text(left, 18, "a row per worker rank, a bar per trial attempt; busy share at the right", 13, "start", 0, "bold");
  svg.rect(p.x, p.y, p.w, p.h, {"#ccc"});
  for (const double t : p.xs.ticks(6)) {
    svg.line(p.px(t), p.y + p.h, p.px(t), p.y + p.h + 4, {"#444"});
    svg.text(p.px(t), p.y + p.h + 15, p.xs.label(t), 10, "middle");
  }
  svg.text(p.x + p.w / 2, p.y + p.h + 30, "time (s)", 11, "middle");
  for (std::size_t i = 0; i < shown; ++i) {
    const double y = p.y + row_h * static_cast<double>(i);
    svg.text(left - 6, y + row_h - 4, "rank " + std::to_string(ranks[i]), 10, "end");
    const double share = u.span > 0 ? u.busy_by_rank.at(ranks[i]) / u.span : 0;
    svg.text(left + width + 6, y + row_h - 4, percent(share), 10);
  }
  std::size_t drawn = 0;
  for (const Bar& b : bars) {
    for (const int r : b.ranks) {
      const auto at = row.find(r);
      if (at == row.end() || drawn >= kMaxBars) continue;
      ++drawn;
      using search::EventKind;
      const char* color = b.ended == EventKind::EarlyStop                          ? "#9a9a9a"
                          : (b.ended == EventKind::Error || b.ended == EventKind::Retry) ? "#d62728"
                          : b.ended == EventKind::Pause                              ? "#ff7f0e"
                                                                                     : "#1f77b4";
      const double x0 = p.px(b.start), x1 = std::max(p.px(b.end), x0 + 1);
      svg.rect(x0, p.y + row_h * static_cast<double>(at->second) + 2, x1 - x0, row_h - 4, {"", color},
               "trial " + std::to_string(b.trial) + " on rank " + std::to_string(r) + ": " + seconds(b.start) + " to " +
                   seconds(b.end) + (b.ended ? " (" + std::string(search::to_string(*b.ended)) + ")" : ""));
    }
  }
  std::string note = "blue: ran out or finished; grey: stopped by the scheduler; orange: paused; red: failed. Utilization " +
                     percent(u.share()) + " of " + std::to_string(u.workers) + " workers over " + seconds(u.span);
  if (ranks.size() > shown) note += "; " + std::to_string(ranks.size() - shown) + " more ranks not drawn";
  if (drawn >= kMaxBars) note += "; the first " + std::to_string(kMaxBars) + " bars drawn";
  svg.text(left, H - 12, note, 11);
  if (bars.empty()) svg.text(p.x + p.w / 2, p.y + p.h / 2, "no trial started yet", 12, "middle");
  return svg.str("timeline of the workers");
}

std::string lineage_chart(const ChartData& d) {
  const io::ResultsFile& file = *d.file;
  struct Exploit {
    search::TrialId trial, donor;
    std::int64_t iteration, donor_iteration;
  };
  std::vector<Exploit> exploits;
  for (const io::EventRow& e : file.events) {
    if (e.kind != search::EventKind::Exploit) continue;
    try {
      const auto j = nlohmann::json::parse(e.message);
      exploits.push_back({e.trial, j.at("donor").get<search::TrialId>(), j.at("iteration").get<std::int64_t>(),
                          j.at("donor_iteration").get<std::int64_t>()});
    } catch (const nlohmann::json::exception&) {  // report/schedule.cc says why, in its section
    }
  }
  if (exploits.empty()) return "";
  std::vector<const search::Trial*> rows;
  for (const search::Trial& t : file.trials) rows.push_back(&t);
  std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->id < b->id; });
  const std::size_t shown = std::min<std::size_t>(rows.size(), 64);
  std::map<search::TrialId, std::size_t> row;
  std::int64_t max_it = 1;
  for (std::size_t i = 0; i < shown; ++i) {
    row[rows[i]->id] = i;
    max_it = std::max(max_it, rows[i]->iterations);
  }
  const double row_h = 14, left = 80, width = 700;
  const double H = 40 + row_h * static_cast<double>(shown) + 50;
  SvgCanvas svg(left + width + 30, H);
  Panel p{left, 30, width, row_h * static_cast<double>(shown), linear_scale(0, static_cast<double>(max_it)), linear_scale(0, 1)};
  p.xs.lo = 0;
  svg.text(left, 18, "PBT lineage: a row per trial, a line from donor to receiver at each exploit", 13, "start", 0, "bold");
  for (std::size_t i = 0; i < shown; ++i) {
    const double y = p.y + row_h * (static_cast<double>(i) + 0.5);
    svg.text(left - 6, y + 3.5, "trial " + std::to_string(rows[i]->id), 10, "end");
    svg.line(p.px(0), y, p.px(static_cast<double>(rows[i]->iterations)), y, {"#cfcfcf", "none", 3});
  }
  for (const double t : p.xs.ticks(6)) {
    svg.line(p.px(t), p.y + p.h, p.px(t), p.y + p.h + 4, {"#444"});
    svg.text(p.px(t), p.y + p.h + 15, p.xs.label(t), 10, "middle");
  }
  svg.text(p.x + p.w / 2, p.y + p.h + 30, "iteration", 11, "middle");
  for (const Exploit& x : exploits) {
    const auto to = row.find(x.trial), from = row.find(x.donor);
    if (to == row.end() || from == row.end()) continue;
    const double y0 = p.y + row_h * (static_cast<double>(from->second) + 0.5);
    const double y1 = p.y + row_h * (static_cast<double>(to->second) + 0.5);
    const std::string title = "iteration " + std::to_string(x.iteration) + ": trial " + std::to_string(x.trial) +
                              " took trial " + std::to_string(x.donor) + "'s checkpoint of iteration " +
                              std::to_string(x.donor_iteration);
    const char* color = palette(static_cast<std::size_t>(x.donor));
    svg.line(p.px(static_cast<double>(x.donor_iteration)), y0, p.px(static_cast<double>(x.iteration)), y1,
             {color, "none", 1.3, 0.9}, title);
    svg.circle(p.px(static_cast<double>(x.iteration)), y1, 3, {"", color}, title);
  }
  svg.text(left, H - 10,
           std::to_string(exploits.size()) + " exploits" +
               (rows.size() > shown ? "; the first " + std::to_string(shown) + " of " + std::to_string(rows.size()) + " trials drawn" : ""),
           11);
  return svg.str("PBT lineage");
}

}  // namespace ranktune::report
