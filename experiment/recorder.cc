// Recorder: the controller observer that writes trial changes, results and events into the
// results file, deferring progress rows to the flush (experiment/recorder.h).
#include "experiment/recorder.h"

#include <cstdio>
#include <utility>

#include "io/json.h"
#include "sys/printable.h"

namespace ranktune::experiment {

Recorder::Recorder(io::ResultsWriter& writer, const std::vector<std::string>& declared_metrics)
    : writer_(writer), declared_(declared_metrics.begin(), declared_metrics.end()) {}

void Recorder::on_trial_changed(const search::Trial& t) {
  const auto index = static_cast<std::size_t>(t.id - 1);
  if (index >= seen_.size()) {
    seen_.resize(index + 1, {search::TrialStatus::Pending, -1});
    dirty_flag_.resize(index + 1, 0);
  }
  const std::pair now{t.status, t.attempt};
  if (seen_[index] != now) {
    seen_[index] = now;
    writer_.write_trial(t);
    lifecycle_ = true;
  } else if (!std::exchange(dirty_flag_[index], char{1})) {
    dirty_.push_back(t.id);
  }
}

void Recorder::flush(const std::vector<search::Trial>& trials) {
  for (search::TrialId id : dirty_) {
    const auto index = static_cast<std::size_t>(id - 1);
    writer_.write_trial(trials.at(index));
    dirty_flag_[index] = 0;
  }
  dirty_.clear();
  writer_.flush();
}

void Recorder::on_result(const search::Trial& t, std::int64_t iteration, double time,
                         const search::Metrics& metrics) {
  if (mirror_) mirror_->on_result(t, iteration, time, metrics);
  if (writer_.append_result(t.id, t.attempt, iteration, time, metrics) == metrics.size()) return;
  // Once per trial (and name): on rank 0's stderr, where the user looks, and as a "warning"
  // event, which the report lists.
  std::set<std::string>& warned = warned_[t.id];
  std::string names;
  for (const auto& [name, value] : metrics)
    if (declared_.count(name) == 0 && warned.insert(name).second) names += (names.empty() ? "" : ", ") + name;
  if (names.empty()) return;
  const std::string message = "trial " + std::to_string(t.id) + " reported metrics that are not in [trainable] metrics, " +
                              "so they are dropped: " + names + " (add them to metrics = [...] to record them)";
  // The names are the trial's: the event keeps them as sent, the terminal sees their
  // control characters shown, not obeyed.
  warn(time, t.id, t.workers.empty() ? -1 : t.workers.front(), message);
}

void Recorder::warn(double time, search::TrialId trial, int worker, const std::string& message) {
  std::fprintf(stderr, "ranktune: warning: %s\n", sys::printable(message).c_str());
  on_event(time, trial, worker, search::EventKind::Warning, message);
}

void Recorder::on_event(double time, search::TrialId trial, int worker, search::EventKind kind,
                        const std::string& message) {
  writer_.append_event({time, trial, worker, kind, message});
  if (mirror_) mirror_->on_event(time, trial, worker, kind, message);
  if (commits_soon(kind)) lifecycle_ = true;
}

void Recorder::on_exploit(double time, const search::Trial& t, search::TrialId donor, std::int64_t donor_iteration,
                          const search::Config& before) {
  const nlohmann::json lineage = {{"donor", donor},
                                  {"donor_iteration", donor_iteration},
                                  {"iteration", t.iterations},
                                  {"before", io::to_json(before)},
                                  {"after", io::to_json(t.config)}};
  on_event(time, t.id, t.workers.empty() ? -1 : t.workers.front(), search::EventKind::Exploit, lineage.dump());
}

}  // namespace ranktune::experiment
