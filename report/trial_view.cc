// One trial whole, for `ranktune report --trial T` (report/trial_view.h).
#include "report/trial_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json.h"
#include "report/grid.h"
#include "report/leaderboard.h"
#include "sys/printable.h"

namespace ranktune::report {
namespace {

nlohmann::json json_num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::vector<const io::ResultRow*> history_of(const io::ResultsFile& file, search::TrialId id) {
  std::vector<const io::ResultRow*> rows;
  for (const io::ResultRow& r : file.results)
    if (r.trial == id) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) {
    return a->attempt != b->attempt ? a->attempt < b->attempt : a->iteration < b->iteration;
  });
  return rows;
}

Grid history_grid(const io::ResultsFile& file, const std::vector<const io::ResultRow*>& rows) {
  Grid g{{"attempt", "iteration", "time_s"}, {}, {true, true, true}};
  for (const std::string& m : file.schema.metrics) {
    g.head.push_back(m);
    g.numeric.push_back(true);
  }
  for (const io::ResultRow* r : rows) {
    std::vector<std::string> row{std::to_string(r->attempt), std::to_string(r->iteration), cell_text(r->time)};
    for (std::size_t i = 0; i < file.schema.metrics.size(); ++i) row.push_back(i < r->values.size() ? cell_text(r->values[i]) : "");
    g.body.push_back(std::move(row));
  }
  return g;
}

Grid events_grid(const io::ResultsFile& file, search::TrialId id) {
  Grid g{{"time_s", "worker", "kind", "message"}, {}, {true, true, false, false}};
  for (const io::EventRow& e : file.events)
    if (e.trial == id) g.body.push_back({cell_text(e.time), e.worker >= 0 ? std::to_string(e.worker) : "", e.kind_name(), e.message});
  return g;
}

Grid checkpoints_grid(const io::ResultsFile& file, search::TrialId id) {
  Grid g{{"attempt", "iteration", "time_s", "bytes", "score", "state"}, {}, {true, true, true, true, true, false}};
  for (const io::CheckpointRow& c : file.checkpoints)
    if (c.trial == id)
      g.body.push_back({std::to_string(c.attempt), std::to_string(c.iteration), cell_text(c.time), std::to_string(c.size), cell_text(c.score),
                        c.dropped ? "dropped" : (c.offset < 0 ? "bytes compacted away" : "live")});
  return g;
}

}  // namespace

std::string sparkline(const std::vector<double>& values, std::size_t width) {
  static const char* kBlocks[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  std::vector<double> v = values;
  if (width > 0 && v.size() > width) {
    std::vector<double> b(width, 0.0);
    for (std::size_t i = 0; i < width; ++i) {
      const std::size_t from = i * values.size() / width, to = (i + 1) * values.size() / width;
      double sum = 0;
      std::size_t n = 0;
      for (std::size_t k = from; k < to; ++k)
        if (std::isfinite(values[k])) sum += values[k], ++n;
      b[i] = n ? sum / static_cast<double>(n) : NAN;
    }
    v = std::move(b);
  }
  double lo = INFINITY, hi = -INFINITY;
  for (const double x : v)
    if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  std::string out;
  for (const double x : v) {
    if (!std::isfinite(x)) {
      out += ' ';
      continue;
    }
    const double t = hi > lo ? (x - lo) / (hi - lo) : 0.5;
    out += kBlocks[std::min<std::size_t>(7, static_cast<std::size_t>(t * 8))];
  }
  return out;
}

std::string render_trial(const io::ResultsFile& file, search::TrialId id, Format format, bool utf8_sparkline) {
  const search::Trial* t = file.trial(id);
  if (t == nullptr)
    throw std::invalid_argument("no trial " + std::to_string(id) + " in " + file.path + " (it has " +
                                std::to_string(file.trials.size()) + " trials)");
  const std::vector<const io::ResultRow*> history = history_of(file, id);
  const bool stopped = t->end_reason == search::TrialEnd::Stopped;
  const auto& metrics = file.schema.metrics;
  const auto metric_at = static_cast<std::size_t>(std::find(metrics.begin(), metrics.end(), file.meta.metric) - metrics.begin());

  if (format == Format::Csv) return render_csv(history_grid(file, history));
  if (format == Format::Json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const io::ResultRow* r : history) {
      nlohmann::json m = nlohmann::json::object();
      for (std::size_t i = 0; i < metrics.size() && i < r->values.size(); ++i) m[metrics[i]] = json_num(r->values[i]);
      rows.push_back({{"attempt", r->attempt}, {"iteration", r->iteration}, {"time", r->time}, {"metrics", m}});
    }
    nlohmann::json events = nlohmann::json::array();
    for (const io::EventRow& e : file.events)
      if (e.trial == id) events.push_back({{"time", e.time}, {"worker", e.worker}, {"kind", e.kind_name()}, {"message", e.message}});
    nlohmann::json checkpoints = nlohmann::json::array();
    for (const io::CheckpointRow& c : file.checkpoints)
      if (c.trial == id)
        checkpoints.push_back({{"attempt", c.attempt}, {"iteration", c.iteration}, {"time", c.time}, {"bytes", c.size},
                               {"score", json_num(c.score)}, {"dropped", c.dropped}});
    const nlohmann::json doc = {{"experiment", file.meta.experiment},
                                {"metric", file.meta.metric},
                                {"mode", search::to_string(file.meta.mode)},
                                {"trial", t->id},
                                {"status", search::to_string(t->status)},
                                {"end_reason", end_json(t->end_reason)},
                                {"stopped_by_scheduler", stopped},
                                {"attempt", t->attempt},
                                {"failures", t->failures},
                                {"iterations", t->iterations},
                                {"best", json_num(t->best)},
                                {"best_iteration", std::isfinite(t->best) ? nlohmann::json(t->best_iteration) : nlohmann::json(nullptr)},
                                {"start_time", json_num(t->start_time)},
                                {"end_time", json_num(t->end_time)},
                                {"ranks", t->ran_on},
                                {"hosts", t->hosts},
                                {"config", io::to_json(t->config)},
                                {"history", rows},
                                {"events", events},
                                {"checkpoints", checkpoints},
                                {"error", t->error},
                                {"log_tail", t->log_tail}};
    return sys::printable_json(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) + "\n";
  }

  const bool md = format == Format::Markdown;
  const auto table = [&](const Grid& g) { return md ? render_markdown_table(g) : render_table(g); };
  const auto heading = [&](const std::string& s) { return md ? "\n## " + s + "\n\n" : "\n" + s + "\n"; };
  // Why it ended, in words: "budget" alone would not say that its best is of fewer iterations.
  const std::string ended = t->end_reason == search::TrialEnd::None
                                ? std::string()
                                : std::string(", ") + search::to_string(t->end_reason) + ": " + search::describe(t->end_reason);
  std::string out = (md ? "# " : "") + std::string("trial ") + std::to_string(t->id) + " of " + file.meta.experiment + " (" +
                    search::to_string(t->status) + ended + ")\n";
  if (md) out += "\n";
  out += (md ? "- " : "") + std::string("best ") + file.meta.metric + " (" + search::to_string(file.meta.mode) + ") " +
         (std::isfinite(t->best) ? cell_text(t->best) + " at iteration " + std::to_string(t->best_iteration) : "none yet") + "; " +
         std::to_string(t->iterations) + " iterations in attempt " + std::to_string(t->attempt) + "; " +
         std::to_string(t->failures) + " failed attempts\n";
  if (std::isfinite(t->start_time))
    out += (md ? "- " : "") + std::string("started at ") + cell_text(t->start_time) + " s" +
           (std::isfinite(t->end_time) ? ", ended at " + cell_text(t->end_time) + " s (" + cell_text(t->end_time - t->start_time) + " s)" : "") +
           "\n";
  if (!t->ran_on.empty())
    out += (md ? "- " : "") + std::string("ran on rank") + (t->ran_on.size() > 1 ? "s " : " ") +
           join(t->ran_on, ", ", [](int r) { return std::to_string(r); }) +
           (t->hosts.empty() ? "" : " (" + one_line(join(t->hosts, ", ", as_is)) + ")") + "\n";

  Grid config{{"hyperparameter", "value"}, {}, {false, false}};
  for (const auto& [k, v] : t->config) config.body.push_back({k, search::to_string(v)});
  out += heading("config") + table(config);

  std::vector<double> curve;
  for (const io::ResultRow* r : history)
    if (r->attempt == t->attempt && metric_at < r->values.size()) curve.push_back(r->values[metric_at]);
  out += heading("history (" + std::to_string(history.size()) + " results)");
  if (utf8_sparkline && !curve.empty() && !md) {
    double lo = INFINITY, hi = -INFINITY;
    for (const double v : curve)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    out += one_line(file.meta.metric) + " " + sparkline(curve) + "  " + cell_text(lo) + " .. " + cell_text(hi) + "\n";
  }
  out += history.empty() ? std::string("no results\n") : table(history_grid(file, history));
  const Grid events = events_grid(file, id);
  if (!events.body.empty()) out += heading("events") + table(events);
  const Grid checkpoints = checkpoints_grid(file, id);
  if (!checkpoints.body.empty()) out += heading("checkpoints") + table(checkpoints);
  // The trial's own words: its lines kept, its escape sequences shown, not obeyed.
  const std::string error = sys::printable(t->error, sys::Lines::Keep);
  const std::string log_tail = sys::printable(t->log_tail, sys::Lines::Keep);
  if (!error.empty()) out += heading("error") + (md ? "```\n" + error + "\n```\n" : error + "\n");
  if (!log_tail.empty()) out += heading("log tail") + (md ? "```\n" + log_tail + "\n```\n" : log_tail + (log_tail.back() == '\n' ? "" : "\n"));
  return out;
}

}  // namespace ranktune::report
