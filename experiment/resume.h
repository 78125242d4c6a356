#pragma once
/// Resuming an experiment from its results file: the checks before it, opening the file to
/// go on writing it, the trials and clock the run goes on from, and the cause that the event
/// log records.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "io/store.h"

namespace ranktune::experiment {

/// Lines of `a` and `b` that differ, as a short unified-style listing ("- old", "+ new"),
/// from a longest-common-subsequence match of the lines. "" when they are equal.
std::string line_diff(const std::string& a, const std::string& b);

/// Refuses (config::ConfigError at experiment.results) to resume a file that was written for
/// another experiment: its config text or --set overrides differ from `cfg`'s. The message
/// shows the diff and says how to go on anyway (--force) or start afresh.
void check_same_experiment(const config::ExperimentConfig& cfg, const io::StoreMeta& stored, bool force);

/// Brings each unfinished trial's `attempt` and `iterations` (as /trials recorded them) up
/// to what `results` holds for it: the newest attempt with rows, and its last iteration.
/// A commit appends /results rows and rewrites /trials rows in place, and HDF5 writes them
/// to the file in no set order, so after kill -9 during a commit a trial row can be older
/// than its result rows. Controller::resume starts a new attempt only when a trial has
/// iterations past its checkpoint, so a stale count would record an iteration twice.
void catch_up_with_results(std::vector<search::Trial>& trials, const std::vector<io::ResultRow>& results);

/// What a resumed run goes on from.
struct ResumePoint {
  /// The file's trials, with the failures its event log counts (one "error" event per
  /// failure: they are not a column of /trials), caught up with its results, and each one's
  /// last result (Trial::last_metrics: the last /results row of its latest attempt), which a
  /// multi-objective experiment ranks its finished trials by (Controller::rank_pareto).
  std::vector<search::Trial> trials;
  /// The largest time the file holds: times count from the experiment's creation over all
  /// its runs, so a trial's rows stay in time order across a resume.
  double spent = 0;
};
ResumePoint resume_point(const io::ResultsFile& previous);

/// Before a launch: when cfg.results exists and can be read, refuses it if it holds another
/// experiment (check_same_experiment). A damaged file throws io::StoreError.
void check_resumable(const config::ExperimentConfig& cfg, bool force);

/// Opens the existing results file to go on writing it, after read_for_resume found nothing
/// wrong with it (`previous` gets what it read); a file whose writer died is mended by
/// opening it, then read and checked again. `resumed` says whether it was mended.
std::unique_ptr<io::ResultsWriter> open_to_resume(const config::ExperimentConfig& cfg, bool force,
                                                  std::optional<io::ResultsFile>& previous, io::ResumeInfo& resumed);

/// Why this run resumes, for the "resume" event: a mended file after a crash, a Slurm
/// requeue (SLURM_RESTART_COUNT), or a plain restart after a stop.
std::string resume_cause(const io::ResumeInfo& info);

}  // namespace ranktune::experiment
