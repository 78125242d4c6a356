// The leaderboard: trials ranked by their best metric value, with the status counts, the
// stack and the warnings, rendered as a table, CSV, JSON or Markdown (report/leaderboard.h).
#include "report/leaderboard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/json.h"
#include "report/grid.h"
#include "search/recommend.h"
#include "sys/printable.h"

namespace ranktune::report {

std::vector<const search::Trial*> best_first(const io::ResultsFile& file) {
  std::vector<const search::Trial*> order;
  for (const search::Trial& t : file.trials) order.push_back(&t);
  return search::recommendation_order(std::move(order), file.meta.mode);
}

namespace {

struct Ranked {
  std::size_t rank = 0;
  const search::Trial* trial = nullptr;
  double wall_s = NAN;
  const ParetoEntry* pareto = nullptr;  ///< a multi-objective experiment's view of the trial
};

std::vector<Ranked> rank_trials(const io::ResultsFile& file, std::size_t top, const ParetoView* pareto) {
  std::map<search::TrialId, double> last_result_time;
  for (const io::ResultRow& r : file.results) {
    double& t = last_result_time.try_emplace(r.trial, r.time).first->second;
    t = std::max(t, r.time);
  }
  std::vector<Ranked> rows;
  std::vector<const search::Trial*> order;
  if (pareto != nullptr) {
    for (const ParetoEntry& e : pareto->entries) order.push_back(e.trial);
  } else {
    order = best_first(file);
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    const search::Trial& t = *order[i];
    double wall = NAN;
    if (std::isfinite(t.start_time)) {
      if (std::isfinite(t.end_time)) {
        wall = t.end_time - t.start_time;
      } else if (auto it = last_result_time.find(t.id); it != last_result_time.end()) {
        wall = it->second - t.start_time;
      }
    }
    rows.push_back({0, &t, wall, pareto != nullptr ? &pareto->entries[i] : nullptr});
    if (top != 0 && rows.size() == top) break;
  }
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].rank = i + 1;
  return rows;
}

// ---------------------------------------------------------------- header lines

constexpr search::TrialStatus kStatuses[] = {
    search::TrialStatus::Pending, search::TrialStatus::Running, search::TrialStatus::Paused,
    search::TrialStatus::Terminated, search::TrialStatus::Error};

std::map<std::string, std::size_t> count_by_status(const io::ResultsFile& file) {
  std::map<std::string, std::size_t> counts;
  for (const search::Trial& t : file.trials) ++counts[search::to_string(t.status)];
  return counts;
}

std::map<std::string, std::size_t> count_by_end(const io::ResultsFile& file) {
  std::map<std::string, std::size_t> counts;
  for (const search::Trial& t : file.trials)
    if (t.end_reason != search::TrialEnd::None) ++counts[search::to_string(t.end_reason)];
  return counts;
}

// The reasons in the order of search::TrialEnd, which reads from "ran its course" to "failed".
constexpr search::TrialEnd kEnds[] = {search::TrialEnd::MaxT,   search::TrialEnd::Stopped, search::TrialEnd::Done,
                                      search::TrialEnd::Budget, search::TrialEnd::Target,  search::TrialEnd::User,
                                      search::TrialEnd::Error,  search::TrialEnd::Unknown};

}  // namespace

std::string ends_line(const io::ResultsFile& file) {
  const auto counts = count_by_end(file);
  std::vector<std::string> parts;
  for (search::TrialEnd e : kEnds)
    if (auto it = counts.find(search::to_string(e)); it != counts.end())
      parts.push_back(it->first + " " + std::to_string(it->second));
  return join(parts, ", ", as_is);
}

nlohmann::json end_json(search::TrialEnd e) {
  return e == search::TrialEnd::None ? nlohmann::json(nullptr) : nlohmann::json(search::to_string(e));
}

// "TERMINATED 14, ERROR 2", in lifecycle order rather than alphabetically.
std::string counts_line(const io::ResultsFile& file) {
  const auto counts = count_by_status(file);
  std::vector<std::string> parts;
  for (search::TrialStatus s : kStatuses)
    if (auto it = counts.find(search::to_string(s)); it != counts.end())
      parts.push_back(it->first + " " + std::to_string(it->second));
  return parts.empty() ? "none" : join(parts, ", ", as_is);
}

std::string stack_summary(const io::ResultsFile& file) {
  const auto& stack = file.meta.stack;
  auto get = [&](const char* key) {
    auto it = stack.find(key);
    return it == stack.end() ? std::string() : it->second;
  };
  std::vector<std::string> parts;
  std::string hosts = get("hosts");
  if (hosts.empty()) {
    std::set<std::string> unique;
    for (const io::WorkerInfo& w : file.workers) unique.insert(w.host);
    hosts = join(unique, ",", as_is);
  }
  if (!hosts.empty()) parts.push_back("hosts " + hosts);
  if (std::string mpi = get("mpi_library"); !mpi.empty()) parts.push_back(mpi.substr(0, mpi.find('\n')));
  if (std::string hdf5 = get("hdf5"); !hdf5.empty()) parts.push_back("HDF5 " + hdf5);
  std::size_t gpus = std::count_if(file.workers.begin(), file.workers.end(),
                                   [](const io::WorkerInfo& w) { return w.device != "cpu"; });
  if (!file.workers.empty()) {
    // The recorded mode wins: it says "simulated" for `ranktune simulate`, whose workers
    // are devices of no kind; for real runs it equals what the workers give.
    std::string mode = get("device_mode");
    if (mode.empty()) mode = gpus == 0 ? "cpu" : gpus == file.workers.size() ? "gpu" : "mixed";
    const std::size_t n = file.workers.size();
    parts.push_back(mode + " mode, " + std::to_string(n) + (n == 1 ? " worker" : " workers"));
  } else if (std::string mode = get("device_mode"); !mode.empty()) {
    parts.push_back(mode + " mode");
  }
  return parts.empty() ? "unknown" : join(parts, " | ", as_is);
}

namespace {

// ---------------------------------------------------------------- cells

struct Cell {
  std::string text;
  bool numeric = false;
};

std::string number(double v, int digits) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::vector<std::string> header(const io::ResultsFile& file, const ParetoView* pareto) {
  std::vector<std::string> h = {"rank", "trial_id", "status", "end_reason"};
  if (pareto != nullptr) {
    h.insert(h.end(), {"pareto_rank", "crowding"});
    h.insert(h.end(), pareto->objectives.metrics.begin(), pareto->objectives.metrics.end());
    if (!pareto->objectives.constraints.empty()) h.push_back("feasible");
  }
  h.insert(h.end(), {"best", "best_iteration", "iterations", "wall_s"});
  for (const io::ParamColumn& p : file.schema.params) h.push_back(p.name);
  return h;
}

// One row as text, with `digits` significant digits for floating-point values.
std::vector<Cell> cells(const Ranked& r, const io::ResultsFile& file, int digits) {
  const search::Trial& t = *r.trial;
  std::vector<Cell> row = {{std::to_string(r.rank), true},
                           {std::to_string(t.id), true},
                           {search::to_string(t.status), false},
                           {search::to_string(t.end_reason), false}};
  if (const ParetoEntry* e = r.pareto) {
    const bool ranked = e->rank >= 0;
    row.push_back({ranked ? std::to_string(e->rank) : "", true});
    row.push_back({ranked ? number(e->crowding, digits) : "", true});
    for (const double v : e->values) row.push_back({number(v, digits), true});
    if (!e->constrained.empty()) row.push_back({ranked ? (e->feasible() ? "yes" : "no") : "", false});
  }
  row.insert(row.end(), {{number(t.best, digits), true},
                         {std::isfinite(t.best) ? std::to_string(t.best_iteration) : "", true},
                         {std::to_string(t.iterations), true},
                         {number(r.wall_s, digits), true}});
  for (const io::ParamColumn& p : file.schema.params) {
    auto it = t.config.find(p.name);
    if (it == t.config.end()) {
      row.push_back({"", false});
    } else if (const auto* d = std::get_if<double>(&it->second)) {
      row.push_back({number(*d, digits), true});
    } else if (const auto* i = std::get_if<std::int64_t>(&it->second)) {
      row.push_back({std::to_string(*i), true});
    } else {
      row.push_back({std::get<std::string>(it->second), false});
    }
  }
  return row;
}

// The rows as text, and which columns hold only numbers (those are right-aligned).
Grid grid(const io::ResultsFile& file, const std::vector<Ranked>& rows, int digits, const ParetoView* pareto) {
  Grid g{header(file, pareto), {}, {}};
  g.numeric.assign(g.head.size(), true);
  for (const Ranked& r : rows) {
    std::vector<std::string>& texts = g.body.emplace_back();
    std::vector<Cell> row = cells(r, file, digits);
    for (std::size_t c = 0; c < row.size(); ++c) {
      g.numeric[c] = g.numeric[c] && (row[c].numeric || row[c].text.empty());
      texts.push_back(std::move(row[c].text));
    }
  }
  return g;
}

// The warnings to show under the leaderboard: a `ctl set` never applied, metrics dropped,
// a trial sent back to its old values, a missing end checkpoint. The last kMaxWarnings.
constexpr std::size_t kMaxWarnings = 20;

std::vector<const io::EventRow*> warning_events(const io::ResultsFile& file) {
  std::vector<const io::EventRow*> out;
  for (const io::EventRow& e : file.events)
    if (e.kind == search::EventKind::Warning || e.kind == search::EventKind::Revert) out.push_back(&e);
  return out;
}

std::string warnings_text(const io::ResultsFile& file, bool markdown) {
  const auto all = warning_events(file);
  if (all.empty()) return "";
  std::string out = markdown ? "\n### Warnings\n\n" : "\nwarnings    " + std::to_string(all.size());
  if (!markdown && all.size() > kMaxWarnings) out += " (the last " + std::to_string(kMaxWarnings) + "; every one is in /events)";
  if (!markdown) out += "\n";
  for (std::size_t i = all.size() > kMaxWarnings ? all.size() - kMaxWarnings : 0; i < all.size(); ++i) {
    const io::EventRow& e = *all[i];
    const std::string line = (e.trial > 0 ? "trial " + std::to_string(e.trial) + ", " : std::string()) + e.kind_name() + ": " +
                             one_line(e.message);
    out += markdown ? "- " + markdown_escape(line) + "\n" : "  " + line + "\n";
  }
  return out;
}

// Where the searcher's warm start came from (the "warm_start" events): one line per file.
std::string warm_text(const io::ResultsFile& file, bool markdown) {
  std::string out;
  for (const io::EventRow& e : file.events)
    if (e.kind == search::EventKind::WarmStart)
      out += markdown ? "- warm start: " + markdown_escape(one_line(e.message)) + "\n" : "warm start  " + one_line(e.message) + "\n";
  return out;
}

nlohmann::json num_json(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// A trial's Pareto fields in the JSON leaderboard.
void put_pareto(nlohmann::json& row, const ParetoView& pareto, const ParetoEntry& e) {
  const bool ranked = e.rank >= 0;
  row["pareto_rank"] = ranked ? nlohmann::json(e.rank) : nlohmann::json(nullptr);
  row["crowding"] = ranked ? num_json(e.crowding) : nlohmann::json(nullptr);
  nlohmann::json values = nlohmann::json::object();
  for (std::size_t i = 0; i < e.values.size(); ++i) values[pareto.objectives.metrics[i]] = num_json(e.values[i]);
  row["objectives"] = std::move(values);
  row["feasible"] = ranked ? nlohmann::json(e.feasible()) : nlohmann::json(nullptr);
}

// The experiment's objectives, constraints and front in the JSON leaderboard.
void put_pareto(nlohmann::json& doc, const ParetoView& pareto) {
  doc["objectives"] = nlohmann::json::array();
  for (std::size_t i = 0; i < pareto.objectives.metrics.size(); ++i)
    doc["objectives"].push_back({{"metric", pareto.objectives.metrics[i]}, {"mode", search::to_string(pareto.objectives.modes[i])}});
  doc["constraints"] = nlohmann::json::array();
  for (const search::Constraint& c : pareto.objectives.constraints)
    doc["constraints"].push_back({{"metric", c.metric}, {"op", c.at_most ? "<=" : ">="}, {"bound", c.bound}});
  nlohmann::json front = nlohmann::json::array();
  for (std::size_t i = 0; i < pareto.front; ++i) front.push_back(pareto.entries[i].trial->id);
  doc["pareto"] = {{"front", std::move(front)},
                   {"hypervolume", num_json(pareto.hypervolume)},
                   {"hypervolume_note", pareto.hypervolume_note},
                   {"reference", pareto.reference.empty() ? nlohmann::json(nullptr) : nlohmann::json(pareto.reference)},
                   {"reference_given", pareto.reference_given},
                   {"reference_rule", pareto.reference_text()}};
}

std::string render_json(const io::ResultsFile& file, const std::vector<Ranked>& rows, const ParetoView* pareto) {
  auto num = num_json;
  nlohmann::json trials = nlohmann::json::array();
  for (const Ranked& r : rows) {
    const search::Trial& t = *r.trial;
    trials.push_back({{"rank", r.rank},
                      {"trial_id", t.id},
                      {"status", search::to_string(t.status)},
                      {"end_reason", end_json(t.end_reason)},
                      {"best", num(t.best)},
                      {"best_iteration", std::isfinite(t.best) ? nlohmann::json(t.best_iteration) : nlohmann::json(nullptr)},
                      {"iterations", t.iterations},
                      {"wall_s", num(r.wall_s)},
                      {"config", io::to_json(t.config)}});
    if (r.pareto != nullptr) put_pareto(trials.back(), *pareto, *r.pareto);
  }
  nlohmann::json doc = {{"experiment", file.meta.experiment},
                        {"metric", file.meta.metric},
                        {"mode", search::to_string(file.meta.mode)},
                        {"counts", count_by_status(file)},
                        {"end_reasons", count_by_end(file)},
                        {"trials", std::move(trials)}};
  if (pareto != nullptr) put_pareto(doc, *pareto);
  // The recommended config's trial and the depth that chose it (search/recommend.h).
  std::vector<const search::Trial*> all;
  for (const search::Trial& t : file.trials) all.push_back(&t);
  const search::Trial* rec = search::recommended(all, file.meta.mode);
  doc["recommended"] = rec != nullptr ? nlohmann::json(rec->id) : nlohmann::json(nullptr);
  doc["deepest_iterations"] = search::deepest_iterations(all);
  if (const auto warnings = warning_events(file); !warnings.empty()) {
    doc["warnings"] = nlohmann::json::array();
    for (const io::EventRow* e : warnings)
      doc["warnings"].push_back({{"time", e->time}, {"trial_id", e->trial}, {"kind", e->kind_name()}, {"message", e->message}});
  }
  // Strings come from the file and may not be valid UTF-8; replace rather than throw.
  return sys::printable_json(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) + "\n";
}

// The ended trials by why they ended: a leader cut short by the budget is told from one
// that ran its course at a glance.
std::string ended_line(const io::ResultsFile& file, bool markdown) {
  const std::string ends = ends_line(file);
  if (ends.empty()) return "";
  return markdown ? "- ended: " + ends + "\n" : "ended       " + ends + "\n";
}

std::string trials_line(const io::ResultsFile& file, const std::vector<Ranked>& rows) {
  std::string line = std::to_string(file.trials.size()) + " (" + counts_line(file) + ")";
  if (rows.size() < file.trials.size()) line += ", showing the top " + std::to_string(rows.size());
  return line;
}

}  // namespace

Grid leaderboard_grid(const io::ResultsFile& file, std::size_t top, int digits, const ParetoView* pareto) {
  return grid(file, rank_trials(file, top, pareto), digits, pareto);
}

Grid pareto_front_grid(const ParetoView& pareto, std::size_t top, int digits) {
  const search::Objectives& o = pareto.objectives;
  Grid g{{"trial_id"}, {}, {}};
  g.head.insert(g.head.end(), o.metrics.begin(), o.metrics.end());
  // Each constrained metric once, unless it is an objective (its column is there already).
  std::vector<std::size_t> shown;
  for (std::size_t k = 0; k < o.constraints.size(); ++k)
    if (std::find(g.head.begin(), g.head.end(), o.constraints[k].metric) == g.head.end()) {
      g.head.push_back(o.constraints[k].metric);
      shown.push_back(k);
    }
  if (!o.constraints.empty()) g.head.push_back("feasible");
  g.head.push_back("crowding");
  g.numeric.assign(g.head.size(), true);
  if (!o.constraints.empty()) g.numeric[g.head.size() - 2] = false;
  const std::size_t n = top == 0 ? pareto.front : std::min(top, pareto.front);
  for (std::size_t i = 0; i < n; ++i) {
    const ParetoEntry& e = pareto.entries[i];
    std::vector<std::string>& row = g.body.emplace_back();
    row.push_back(std::to_string(e.trial->id));
    for (const double v : e.values) row.push_back(number(v, digits));
    for (const std::size_t k : shown) row.push_back(number(e.constrained[k], digits));
    if (!o.constraints.empty()) row.push_back(e.feasible() ? "yes" : "no");
    row.push_back(number(e.crowding, digits));
  }
  return g;
}

std::string pareto_summary(const ParetoView& p) {
  std::string out = std::to_string(p.front) + (p.front == 1 ? " trial" : " trials") + " on the front (pareto_rank 0) of " +
                    std::to_string(p.ranked) + " ranked";
  const std::size_t feasible = static_cast<std::size_t>(std::count_if(
      p.entries.begin(), p.entries.begin() + static_cast<std::ptrdiff_t>(p.front), [](const ParetoEntry& e) { return e.feasible(); }));
  if (feasible < p.front) out += ", " + std::to_string(feasible) + " of them feasible";
  out += "; hypervolume ";
  out += std::isfinite(p.hypervolume) ? number(p.hypervolume, 6) + " against the reference point " + p.reference_text()
                                      : "not computed: " + p.hypervolume_note;
  return out;
}

std::optional<Format> parse_format(const std::string& name) {
  if (name == "table") return Format::Table;
  if (name == "csv") return Format::Csv;
  if (name == "json") return Format::Json;
  if (name == "markdown" || name == "md") return Format::Markdown;
  return std::nullopt;
}

namespace {

// How the rows are ranked (search/recommend.h), said only when the rule changes the order:
// when some trials with a value stopped short of the deepest ones.
std::string ranking_text(const io::ResultsFile& file) {
  std::vector<const search::Trial*> all;
  for (const search::Trial& t : file.trials) all.push_back(&t);
  const std::int64_t deepest = search::deepest_iterations(all);
  std::int64_t at = 0, short_of = 0;
  for (const search::Trial* t : all) {
    if (t->status == search::TrialStatus::Error || !std::isfinite(t->best)) continue;
    ++(t->iterations >= deepest ? at : short_of);
  }
  if (short_of == 0) return "";
  return "the " + std::to_string(at) + " trial" + (at == 1 ? "" : "s") + " that reached iteration " +
         std::to_string(deepest) + " first (rank 1 is the recommended config), then the " +
         std::to_string(short_of) + " stopped sooner";
}

// How a multi-objective leaderboard is ranked: always said, as the order is not by one column.
std::string pareto_ranking_text(const ParetoView& p) {
  std::string out = "by Pareto rank (0: the front), then crowding distance (the most isolated first), then trial id";
  const std::size_t unranked = p.entries.size() - p.ranked;
  if (unranked > 0)
    out += "; then the " + std::to_string(unranked) + " trial" + (unranked == 1 ? "" : "s") +
           " without a rank (not finished, failed, or no objective reported)";
  return out;
}

// Rows of the front shown above a leaderboard of --top N (at least this many).
constexpr std::size_t kFrontRows = 50;

}  // namespace

std::string render_leaderboard(const io::ResultsFile& file, const LeaderboardOptions& opt) {
  const ParetoView* pareto = opt.pareto;
  const std::vector<Ranked> rows = rank_trials(file, opt.top, pareto);
  const std::string metric = file.meta.metric + " (" + search::to_string(file.meta.mode) + ")";
  const std::string ranking = pareto != nullptr ? pareto_ranking_text(*pareto) : ranking_text(file);
  // A multi-objective experiment names its objectives (and constraints) where another names its metric.
  const std::string constraints = pareto != nullptr ? pareto->constraints_text() : "";
  const auto what = [&](bool markdown) -> std::string {
    if (pareto == nullptr)
      return markdown ? "- metric: " + markdown_escape(metric) + "\n" : "metric      " + one_line(metric) + "\n";
    if (markdown)
      return "- objectives: " + markdown_escape(pareto->objectives_text()) + "\n" +
             (constraints.empty() ? "" : "- constraints: " + markdown_escape(constraints) + "\n");
    return "objectives  " + one_line(pareto->objectives_text()) + "\n" +
           (constraints.empty() ? "" : "constraints " + one_line(constraints) + "\n");
  };
  // The front before the leaderboard: its trials with each objective, and its hypervolume.
  const std::size_t front_rows = opt.top == 0 ? 0 : std::max<std::size_t>(opt.top, kFrontRows);
  const auto front = [&](bool markdown) -> std::string {
    if (pareto == nullptr) return "";
    const Grid g = pareto_front_grid(*pareto, front_rows, 6);
    const std::string more = g.body.size() < pareto->front ? "the first " + std::to_string(g.body.size()) +
                                 " by crowding distance; --top 0 or --format csv shows them all" : "";
    if (markdown)
      return "### Pareto front\n\n" + markdown_escape(pareto_summary(*pareto)) + "\n\n" + render_markdown_table(g) +
             (more.empty() ? "" : "\n(" + more + ")\n") + "\n### Leaderboard (by Pareto rank, then crowding distance)\n\n";
    return "Pareto front: " + one_line(pareto_summary(*pareto)) + "\n" + render_table(g) +
           (more.empty() ? "" : "(" + more + ")\n") + "\n";
  };
  switch (opt.format) {
    case Format::Csv: return render_csv(grid(file, rows, 10, pareto));
    case Format::Json: return render_json(file, rows, pareto);
    case Format::Markdown:
      return "## Leaderboard: " + markdown_escape(file.meta.experiment) + "\n\n" + what(true) +
             "- trials: " + trials_line(file, rows) + "\n" + ended_line(file, true) +
             (ranking.empty() ? "" : "- ranked: " + ranking + "\n") + warm_text(file, true) +
             "- stack: " + markdown_escape(stack_summary(file)) + "\n\n" + front(true) +
             render_markdown_table(grid(file, rows, 6, pareto)) + warnings_text(file, true);
    case Format::Table:
      break;
  }
  return "experiment  " + one_line(file.meta.experiment) + "\n" + what(false) +
         "trials      " + trials_line(file, rows) + "\n" + ended_line(file, false) +
         (ranking.empty() ? "" : "ranked      " + ranking + "\n") + warm_text(file, false) +
         "stack       " + one_line(stack_summary(file)) + "\n\n" + front(false) +
         render_table(grid(file, rows, 6, pareto)) + warnings_text(file, false);
}

}  // namespace ranktune::report
