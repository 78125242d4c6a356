#pragma once
/// `ranktune slurm status`: Slurm's view of a job joined with the experiment's progress as
/// recorded in its results file. Parsing and rendering are pure; apps/ runs scontrol.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/store.h"

namespace ranktune::slurm {

/// The Key=Value fields of `scontrol show job --oneliner ID`. A value may contain spaces
/// (Reason, Command): a word without '=' belongs to the value before it.
std::map<std::string, std::string> parse_scontrol_job(const std::string& text);

/// What is known about the job: its id, where the id came from, and scontrol's fields
/// (empty when Slurm no longer knows the job; `note` then says why).
struct JobView {
  std::string job_id;   ///< "" when neither the file nor a submit recorded one
  std::string source;   ///< e.g. "results file stack" or "RESULTS.jobid (ranktune slurm submit)"
  std::map<std::string, std::string> fields;
  std::string note;     ///< why `fields` is empty, or other remarks
};

/// The experiment's progress from a results file.
struct Progress {
  std::map<std::string, std::int64_t> trials_by_status;  ///< PENDING, RUNNING, ... -> count
  std::int64_t trials = 0;
  std::int64_t results = 0;
  std::optional<double> best;         ///< best value of the metric over all trials
  std::int64_t best_trial = 0;
  std::optional<std::int64_t> planned_trials;  ///< [experiment] num_samples, when the config parses
  std::string last_event;             ///< "kind: message at T s" of the last event, "" if none
  std::string ended;                  ///< the message of the experiment's last `end` event ("completed", "interrupted", ...), "" when a resume followed it
  std::int64_t requeues = 0;          ///< allocations of a job that ran the experiment before (Slurm requeued it)
  std::vector<std::string> jobs;      ///< the Slurm jobs that ran it, in order (`slurm` events: one per allocation)
  double last_time = 0;               ///< seconds since the start of the last row seen
};

/// Progress of `file` (pure: the config text in the file gives the planned trial count).
Progress progress_of(const io::ResultsFile& file);

/// The status report: job lines (state, reason, run time / limit, nodes, restarts, exit
/// code) then progress lines. `progress` is nullopt when the results file does not exist yet.
std::string render_status(const JobView& job, const std::optional<Progress>& progress,
                          const std::string& results_path, const std::string& metric);

}  // namespace ranktune::slurm
