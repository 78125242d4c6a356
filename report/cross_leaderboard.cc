// The leaderboard across experiments (report/cross_leaderboard.h).
#include "report/cross_leaderboard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json.h"
#include "report/grid.h"
#include "sys/printable.h"

namespace ranktune::report {
namespace {

struct Entry {
  const io::ResultsFile* file = nullptr;
  const search::Trial* trial = nullptr;
  double best = NAN;
  std::int64_t best_iteration = 0;
  bool shallow = false;  ///< stopped short of its file's deepest trials (search/recommend.h)
};

std::string describe(const io::ResultsFile& f) {
  return f.path + " (" + f.meta.experiment + ": " + f.meta.metric + ", " + search::to_string(f.meta.mode) + ")";
}

// The mode to rank `name` in: `given`, else the one of the files whose experiment metric
// `name` is. Throws when they disagree or none says.
search::Mode mode_of(const std::vector<io::ResultsFile>& files, const std::string& name, std::optional<search::Mode> given) {
  if (given) return *given;
  const io::ResultsFile* first = nullptr;
  for (const io::ResultsFile& f : files) {
    if (f.meta.metric != name) continue;
    if (first == nullptr) {
      first = &f;
    } else if (f.meta.mode != first->meta.mode) {
      throw std::invalid_argument("leaderboard: " + describe(*first) + " and " + describe(f) +
                                  " rank " + name + " in opposite directions: compare experiments of one mode, or "
                                  "give --mode min or --mode max to rank every file one way");
    }
  }
  if (first != nullptr) return first->meta.mode;
  std::string theirs;
  for (const io::ResultsFile& f : files) theirs += (theirs.empty() ? "" : ", ") + describe(f);
  throw std::invalid_argument("leaderboard: --metric " + name + " is not the metric of any of these experiments (" +
                              theirs + "), so their mode does not say whether a bigger or a smaller " + name +
                              " is better: give --mode min or --mode max");
}

}  // namespace

std::string render_cross_leaderboard(const std::vector<io::ResultsFile>& files, const std::string& metric,
                                     std::optional<search::Mode> given_mode, std::size_t top, Format format) {
  if (files.empty()) throw std::invalid_argument("leaderboard: give at least one results file");
  const std::string name = metric.empty() ? files.front().meta.metric : metric;
  for (const io::ResultsFile& f : files) {
    if (metric.empty() && f.meta.metric != name)
      throw std::invalid_argument("leaderboard: " + describe(files.front()) + " and " + describe(f) +
                                  " rank different metrics: give --metric NAME to rank both by one they share");
    if (!metric.empty() && std::find(f.schema.metrics.begin(), f.schema.metrics.end(), metric) == f.schema.metrics.end())
      throw std::invalid_argument("leaderboard: " + f.path + " has no metric '" + metric + "' (it has " +
                                  join(f.schema.metrics, ", ", as_is) + ")");
  }
  const search::Mode mode = mode_of(files, name, given_mode);
  std::vector<Entry> entries;
  for (const io::ResultsFile& f : files) {
    std::map<search::TrialId, Entry> by_id;
    for (const search::Trial& t : f.trials) by_id[t.id] = {&f, &t, NAN, 0};
    // The file's own best holds for its own metric in its own mode; any other is worked out
    // from its results.
    if (name == f.meta.metric && mode == f.meta.mode) {
      for (auto& [id, e] : by_id) e.best = e.trial->best, e.best_iteration = e.trial->best_iteration;
    } else {
      const auto at = static_cast<std::size_t>(std::find(f.schema.metrics.begin(), f.schema.metrics.end(), name) -
                                               f.schema.metrics.begin());
      for (const io::ResultRow& r : f.results) {
        const auto it = by_id.find(r.trial);
        if (it == by_id.end() || at >= r.values.size() || !std::isfinite(r.values[at])) continue;
        if (search::better(r.values[at], it->second.best, mode)) it->second.best = r.values[at], it->second.best_iteration = r.iteration;
      }
    }
    // Within a file, the trials that reached the most iterations come first, as one file's
    // leaderboard ranks them (search/recommend.h): a value after a few iterations does not
    // compete with values at max_t.
    std::int64_t deepest = 0;
    for (const auto& [id, e] : by_id)
      if (e.trial->status != search::TrialStatus::Error && std::isfinite(e.best))
        deepest = std::max(deepest, e.trial->iterations);
    for (auto& [id, e] : by_id) {
      e.shallow = e.trial->iterations < deepest;
      entries.push_back(e);
    }
  }
  // The deepest trials of each file, best first; then the others, best first; no value
  // next; trials that ended in ERROR last (as one file's leaderboard ranks them); ties by
  // file order, then trial id (stable over the files).
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
    const bool ea = a.trial->status == search::TrialStatus::Error, eb = b.trial->status == search::TrialStatus::Error;
    if (ea != eb) return eb;
    const bool fa = std::isfinite(a.best), fb = std::isfinite(b.best);
    if (fa != fb) return fa;
    if (fa && a.shallow != b.shallow) return b.shallow;
    return fa && search::better(a.best, b.best, mode);
  });
  if (top != 0 && entries.size() > top) entries.resize(top);

  if (format == Format::Json) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      rows.push_back({{"rank", i + 1},
                      {"experiment", e.file->meta.experiment},
                      {"file", e.file->path},
                      {"trial_id", e.trial->id},
                      {"status", search::to_string(e.trial->status)},
                      {"end_reason", end_json(e.trial->end_reason)},
                      {"best", std::isfinite(e.best) ? nlohmann::json(e.best) : nlohmann::json(nullptr)},
                      {"best_iteration", std::isfinite(e.best) ? nlohmann::json(e.best_iteration) : nlohmann::json(nullptr)},
                      {"iterations", e.trial->iterations},
                      {"config", io::to_json(e.trial->config)}});
    }
    nlohmann::json paths = nlohmann::json::array();
    for (const io::ResultsFile& f : files) paths.push_back(f.path);
    const nlohmann::json doc = {{"metric", name}, {"mode", search::to_string(mode)}, {"files", paths}, {"trials", rows}};
    return sys::printable_json(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) + "\n";
  }
  Grid g{{"rank", "experiment", "file", "trial_id", "status", "end_reason", "best", "best_iteration", "iterations", "config"},
         {},
         {true, false, false, true, false, false, true, true, true, false}};
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    g.body.push_back({std::to_string(i + 1), e.file->meta.experiment, e.file->path, std::to_string(e.trial->id),
                      search::to_string(e.trial->status), search::to_string(e.trial->end_reason), cell_text(e.best),
                      std::isfinite(e.best) ? std::to_string(e.best_iteration) : "", std::to_string(e.trial->iterations),
                      join(e.trial->config, ", ", [](const auto& kv) { return kv.first + "=" + search::to_string(kv.second); })});
  }
  if (format == Format::Csv) return render_csv(g);
  std::size_t total = 0;
  for (const io::ResultsFile& f : files) total += f.trials.size();
  const std::string head = std::to_string(files.size()) + " experiments, " + std::to_string(total) + " trials, ranked by " +
                           one_line(name) + " (" + search::to_string(mode) + ")" +
                           (entries.size() < total ? ", showing the top " + std::to_string(entries.size()) : "") + "\n\n";
  return format == Format::Markdown ? head + render_markdown_table(g) : head + render_table(g);
}

}  // namespace ranktune::report
