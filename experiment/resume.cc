// Resuming from a results file: the checks before it (with the line diff of a changed
// config), the trials caught up with their results, the resume point and the event log's
// cause (experiment/resume.h).
#include "experiment/resume.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace ranktune::experiment {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The overrides without `experiment.results=` (what --results adds): the path names the
// file, it is not part of the experiment, so a file copied or moved elsewhere still resumes.
std::string overrides_but_results(const std::string& text) {
  std::string out;
  for (const std::string& line : lines_of(text))
    if (line.rfind("experiment.results=", 0) != 0) out += line + "\n";
  return out;
}

}  // namespace

std::string line_diff(const std::string& a, const std::string& b) {
  const auto x = lines_of(a), y = lines_of(b);
  // Configs are short: the quadratic table costs nothing and gives the minimal diff.
  const std::size_t n = x.size(), m = y.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::string out;
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] == y[j]) {
      ++i, ++j;
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out += "  + " + y[j++] + "\n";
    } else {
      out += "  - " + x[i++] + "\n";
    }
  }
  return out;
}

void check_same_experiment(const config::ExperimentConfig& cfg, const io::StoreMeta& stored, bool force) {
  std::string overrides;
  for (const auto& s : cfg.overrides) overrides += s + "\n";
  const std::string diff = line_diff(stored.config_text, cfg.text) +
                           line_diff(overrides_but_results(stored.overrides), overrides_but_results(overrides));
  if (diff.empty() || force) return;
  cfg.fail("experiment.results",
           "results file " + cfg.results +
               " holds an experiment with another config, so it cannot be resumed with this one "
               "(- in the file, + now):\n" + diff +
               "Run with --force to resume it anyway, or write a new file with --results PATH");
}

void catch_up_with_results(std::vector<search::Trial>& trials, const std::vector<io::ResultRow>& results) {
  for (const io::ResultRow& r : results) {
    if (r.trial < 1 || r.trial > static_cast<search::TrialId>(trials.size())) continue;
    search::Trial& t = trials[static_cast<std::size_t>(r.trial - 1)];
    if (t.finished() || r.attempt < t.attempt) continue;
    // Within an attempt iterations only grow; a later attempt supersedes the count.
    t.iterations = r.attempt > t.attempt ? r.iteration : std::max(t.iterations, r.iteration);
    t.attempt = r.attempt;
  }
}

ResumePoint resume_point(const io::ResultsFile& previous) {
  // (The time the experiment spent stopped is not counted; `created_unix` gives the wall clock.)
  ResumePoint p;
  for (const auto& r : previous.results) p.spent = std::max(p.spent, r.time);
  for (const auto& e : previous.events) p.spent = std::max(p.spent, e.time);
  for (const auto& c : previous.checkpoints) p.spent = std::max(p.spent, c.time);
  for (const auto& t : previous.trials)
    for (const double x : {t.start_time, t.end_time})
      if (std::isfinite(x)) p.spent = std::max(p.spent, x);
  p.trials = previous.trials;
  for (const auto& e : previous.events) {
    if (e.kind == search::EventKind::Error && e.trial >= 1 && e.trial <= static_cast<search::TrialId>(p.trials.size()))
      ++p.trials[static_cast<std::size_t>(e.trial - 1)].failures;
  }
  catch_up_with_results(p.trials, previous.results);
  // Each trial's last result, which /trials does not hold whole: without it a resumed
  // multi-objective run would find every trial of its earlier runs unranked (no objective
  // reported), and rewrite their pareto_rank as -1 and their objectives as NaN.
  std::vector<const io::ResultRow*> last(p.trials.size(), nullptr);
  for (const io::ResultRow& r : previous.results) {
    if (r.trial < 1 || r.trial > static_cast<search::TrialId>(p.trials.size())) continue;
    const io::ResultRow*& at = last[static_cast<std::size_t>(r.trial - 1)];
    if (at == nullptr || r.attempt >= at->attempt) at = &r;
  }
  for (std::size_t i = 0; i < p.trials.size(); ++i) {
    if (last[i] == nullptr) continue;
    search::Metrics& m = p.trials[i].last_metrics;
    m.clear();
    for (std::size_t c = 0; c < last[i]->values.size() && c < previous.schema.metrics.size(); ++c)
      if (!std::isnan(last[i]->values[c])) m[previous.schema.metrics[c]] = last[i]->values[c];
  }
  return p;
}

void check_resumable(const config::ExperimentConfig& cfg, bool force) {
  if (!io::results_file_exists(cfg.results)) return;  // a link there is refused
  const std::optional<io::ResultsFile> previous = io::read_for_resume(cfg.results);
  if (previous) check_same_experiment(cfg, previous->meta, force);
}

std::unique_ptr<io::ResultsWriter> open_to_resume(const config::ExperimentConfig& cfg, bool force,
                                                  std::optional<io::ResultsFile>& previous, io::ResumeInfo& resumed) {
  previous = io::read_for_resume(cfg.results);
  if (previous) check_same_experiment(cfg, previous->meta, force);
  auto writer = std::make_unique<io::ResultsWriter>(cfg.results, resumed);
  if (!previous) {
    writer.reset();
    previous = io::read_for_resume(cfg.results);
    if (!previous)
      throw io::StoreError(cfg.results + ": cannot resume: its HDF5 header still says a writer holds it after mending");
    check_same_experiment(cfg, previous->meta, force);
    io::ResumeInfo again;
    writer = std::make_unique<io::ResultsWriter>(cfg.results, again);
    resumed.mended = resumed.mended || again.mended;  // a killed writer's file often reads without mending
  }
  return writer;
}

std::string resume_cause(const io::ResumeInfo& info) {
  std::string cause = info.mended ? "after a crash (the file's writer died; its status flags were cleared)"
                                  : "the previous run stopped, or was killed";
  if (const char* restarts = std::getenv("SLURM_RESTART_COUNT"); restarts != nullptr && *restarts != '\0')
    cause += "; Slurm restart " + std::string(restarts);
  return cause;
}

}  // namespace ranktune::experiment
