// `ranktune ctl status` (report/live_status.h): the summary of a live or finished results file.
#include "report/live_status.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json.h"
#include "report/grid.h"
#include "search/recommend.h"
#include "sys/printable.h"

namespace ranktune::report {
namespace {

constexpr std::array kStates = {search::TrialStatus::Pending, search::TrialStatus::Running, search::TrialStatus::Paused,
                                search::TrialStatus::Terminated, search::TrialStatus::Error};

struct Status {
  std::map<search::TrialStatus, std::int64_t> counts;
  const search::Trial* best = nullptr;
  std::vector<const search::Trial*> running, paused;
  std::map<search::TrialId, const io::ResultRow*> latest;  // each trial's newest result row
  std::size_t workers = 0, busy = 0;
  double used_s = 0;  // the latest time the file records
  std::int64_t steps = 0;      // results recorded, every attempt's: what max_total_steps counts
  std::int64_t max_steps = 0;  // [stop] max_total_steps (0: none)
  controller::BudgetRules rules;
};

Status gather(const io::ResultsFile& file, const config::ExperimentConfig& cfg) {
  Status s;
  for (const search::TrialStatus st : kStates) s.counts[st] = 0;
  std::vector<const search::Trial*> all;
  for (const search::Trial& t : file.trials) {
    ++s.counts[t.status];
    all.push_back(&t);
    if (t.status == search::TrialStatus::Running) s.running.push_back(&t);
    if (t.status == search::TrialStatus::Paused) s.paused.push_back(&t);
    if (std::isfinite(t.start_time)) s.used_s = std::max(s.used_s, t.start_time);
    if (std::isfinite(t.end_time)) s.used_s = std::max(s.used_s, t.end_time);
  }
  // The leaderboard's rule (search/recommend.h): the best of the deepest trials.
  s.best = search::recommended(all, file.meta.mode);
  for (const io::ResultRow& r : file.results) {
    const io::ResultRow*& l = s.latest[r.trial];
    if (l == nullptr || r.attempt > l->attempt || (r.attempt == l->attempt && r.iteration > l->iteration)) l = &r;
    s.used_s = std::max(s.used_s, r.time);
  }
  for (const io::EventRow& e : file.events) s.used_s = std::max(s.used_s, e.time);
  s.steps = static_cast<std::int64_t>(file.results.size());
  s.workers = file.workers.size();
  std::set<int> busy;
  for (const search::Trial* t : s.running) busy.insert(t->workers.begin(), t->workers.end());  // /trials.workers, as read
  s.busy = busy.size();
  s.rules = effective_rules(file, cfg);
  s.max_steps = cfg.max_total_steps;
  return s;
}

std::string num(double v) { return value_text(v); }

// "12 of 20 (60%)", or "12 (no limit)".
std::string of(double used, double limit, const std::string& unit = "") {
  if (!(limit > 0)) return num(used) + unit + " (no limit)";
  return num(used) + unit + " of " + num(limit) + unit + " (" + std::to_string(static_cast<int>(std::floor(100 * used / limit))) + "%)";
}

std::string metrics_text(const io::ResultsFile& file, const io::ResultRow* r) {
  if (r == nullptr) return "";
  std::string out;
  for (std::size_t i = 0; i < r->values.size() && i < file.schema.metrics.size(); ++i)
    if (std::isfinite(r->values[i])) out += (out.empty() ? "" : " ") + file.schema.metrics[i] + "=" + num(r->values[i]);
  return out;
}

Grid running_grid(const io::ResultsFile& file, const Status& s) {
  Grid g{{"trial_id", "iteration", "attempt", "workers", "best", "latest metrics"}, {}, {true, true, true, false, true, false}};
  for (const search::Trial* t : s.running) {
    const auto it = s.latest.find(t->id);
    const io::ResultRow* r = it == s.latest.end() ? nullptr : it->second;
    std::string workers;
    for (const int w : t->workers) {
      if (!workers.empty()) workers += ',';
      workers += std::to_string(w);  // appended: GCC 12 inlines "," + to_string into a false -Wrestrict
    }
    g.body.push_back({std::to_string(t->id), r != nullptr ? std::to_string(r->iteration) : "0", std::to_string(t->attempt),
                      workers, cell_text(t->best), metrics_text(file, r)});
  }
  return g;
}

std::string counts_text(const Status& s) {
  std::string out;
  for (const search::TrialStatus st : kStates)
    out += (out.empty() ? "" : ", ") + std::string(search::to_string(st)) + " " + std::to_string(s.counts.at(st));
  return out;
}

std::string render_json(const io::ResultsFile& file, const Status& s, bool live) {
  const auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json counts = nlohmann::json::object();
  for (const search::TrialStatus st : kStates) counts[search::to_string(st)] = s.counts.at(st);
  nlohmann::json best = nullptr;
  if (s.best != nullptr)
    best = {{"trial_id", s.best->id}, {"best", finite(s.best->best)}, {"best_iteration", s.best->best_iteration},
            {"iterations", s.best->iterations}, {"status", search::to_string(s.best->status)},
            {"config", io::to_json(s.best->config)}};
  nlohmann::json running = nlohmann::json::array();
  for (const search::Trial* t : s.running) {
    const auto it = s.latest.find(t->id);
    const io::ResultRow* r = it == s.latest.end() ? nullptr : it->second;
    nlohmann::json metrics = nlohmann::json::object();
    if (r != nullptr)
      for (std::size_t i = 0; i < r->values.size() && i < file.schema.metrics.size(); ++i)
        metrics[file.schema.metrics[i]] = finite(r->values[i]);
    running.push_back({{"trial_id", t->id}, {"iteration", r != nullptr ? r->iteration : 0}, {"attempt", t->attempt},
                       {"workers", t->workers}, {"best", finite(t->best)}, {"metrics", metrics}});
  }
  nlohmann::json paused = nlohmann::json::array();
  for (const search::Trial* t : s.paused) paused.push_back({{"trial_id", t->id}, {"iterations", t->iterations}});
  const auto limit = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json doc = {
      {"experiment", file.meta.experiment},
      {"metric", file.meta.metric},
      {"mode", search::to_string(file.meta.mode)},
      {"live", live},
      {"counts", counts},
      {"best", best},
      {"running", running},
      {"paused", paused},
      {"workers", {{"total", s.workers}, {"busy", s.busy}}},
      {"budget",
       {{"time_s", {{"used", s.used_s}, {"limit", limit(s.rules.time_budget_s)}}},
        {"trials", {{"made", file.trials.size()}, {"num_samples", s.rules.num_samples >= 0 ? nlohmann::json(s.rules.num_samples) : nlohmann::json(nullptr)}}},
        {"steps", {{"used", s.steps}, {"limit", limit(static_cast<double>(s.max_steps))}}},
        {"max_t", s.rules.max_t}}}};
  return sys::printable_json(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) + "\n";
}

}  // namespace

controller::BudgetRules effective_rules(const io::ResultsFile& file, const config::ExperimentConfig& cfg) {
  controller::BudgetRules rules{cfg.time_budget_s, cfg.num_samples, cfg.max_t};
  // The answers are in time order; the last applied budget says what holds now.
  for (const io::EventRow& e : file.events)
    if (e.kind == search::EventKind::Control && e.message.find(" applied: ") != std::string::npos)
      if (const auto r = controller::parse_budget_text(e.message)) rules = *r;
  return rules;
}

std::string render_status(const io::ResultsFile& file, const config::ExperimentConfig& cfg, Format format, bool live) {
  if (format == Format::Csv)
    throw std::invalid_argument("ctl status: --format csv does not fit a status (several tables): use table, markdown or json");
  const Status s = gather(file, cfg);
  if (format == Format::Json) return render_json(file, s, live);
  const bool md = format == Format::Markdown;
  std::string out;
  const auto line = [&](const std::string& key, const std::string& value) {
    if (md) {
      out += "- " + key + ": " + markdown_escape(value) + "\n";
    } else {
      std::string k = key;
      k.resize(std::max<std::size_t>(k.size() + 1, 12), ' ');
      out += k + one_line(value) + "\n";
    }
  };
  out += md ? "## Status: " + markdown_escape(file.meta.experiment) + "\n\n" : "experiment  " + one_line(file.meta.experiment) + "\n";
  line("run", live ? "running (the file is being written)" : "not running (finished, stopped or killed)");
  line("metric", file.meta.metric + " (" + search::to_string(file.meta.mode) + ")");
  line("trials", std::to_string(file.trials.size()) + " (" + counts_text(s) + ")");
  if (s.best != nullptr) {
    std::string cfg_text;
    for (const auto& [k, v] : s.best->config) cfg_text += (cfg_text.empty() ? "" : " ") + k + "=" + search::to_string(v);
    line("best", "trial " + std::to_string(s.best->id) + ": " + file.meta.metric + " " + num(s.best->best) +
                     " at iteration " + std::to_string(s.best->best_iteration) + " (" + cfg_text + ")");
  } else {
    line("best", "none yet (no finite " + file.meta.metric + ")");
  }
  line("workers", std::to_string(s.busy) + " of " + std::to_string(s.workers) + " busy" +
                      (s.workers > 0 ? " (" + std::to_string(100 * s.busy / s.workers) + "%)" : std::string()));
  line("time", of(s.used_s, s.rules.time_budget_s, " s"));
  line("samples", s.rules.num_samples >= 0
                      ? std::to_string(file.trials.size()) + " trials made, num_samples " + std::to_string(s.rules.num_samples) +
                            " (trials that ctl add appended count beyond it)"
                      : std::to_string(file.trials.size()) + " trials made (no num_samples limit)");
  line("steps", of(static_cast<double>(s.steps), static_cast<double>(s.max_steps)));
  line("max_t", std::to_string(s.rules.max_t) + " iterations per trial");
  if (!s.paused.empty()) {
    std::string ids;
    for (const search::Trial* t : s.paused)
      ids += (ids.empty() ? "" : ", ") + ("trial " + std::to_string(t->id)) + " (iteration " + std::to_string(t->iterations) + ")";
    line("paused", ids);
  }
  out += md ? "\n### Running\n\n" : "\nrunning\n";
  if (s.running.empty()) {
    out += md ? "none\n" : "  none\n";
  } else {
    const Grid g = running_grid(file, s);
    out += md ? render_markdown_table(g) : render_table(g);
  }
  return out;
}

}  // namespace ranktune::report
