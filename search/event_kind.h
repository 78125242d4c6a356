#pragma once
/// The kinds of the rows of a results file's /events log (docs/guide/results-file.md): the one
/// place that names them. The controller, the recorder and the driver write them; the reader,
/// the reports, resume, `ctl` and `slurm status` look for them. The names are what every
/// results file holds in /events.kind, so they never change: files of earlier versions read
/// with the same table. Here, below every layer that writes or reads an event, as the names
/// of TrialStatus and TrialEnd are (search/trial.h).

#include <optional>
#include <string_view>

namespace ranktune::search {

enum class EventKind {
  Start,       ///< "start": an attempt started (message: "attempt N" after the first)
  Placement,   ///< "placement": where it runs, as JSON (path, threads, ranks, hosts, collective)
  Unpause,     ///< "unpause": a paused trial runs again from its checkpoint
  Pause,       ///< "pause": the scheduler paused it at a rung
  EarlyStop,   ///< "early_stop": the scheduler stopped it before max_t
  BudgetStop,  ///< "budget_stop": [stop] max_total_steps had no iteration left for it
  Error,       ///< "error": an attempt failed (one per failure; resume counts them)
  Retry,       ///< "retry": a failed attempt runs again
  Target,      ///< "target": it reached [stop] target
  End,         ///< "end": the experiment ended (no trial) or a paused trial was never resumed
  Resume,      ///< "resume": the experiment resumed, and why
  Warning,     ///< "warning": something the report lists at its end
  Revert,      ///< "revert": a restore with changed hyperparameters failed; old values back
  Control,     ///< "control": the answer to a `ranktune ctl` request ("#ID applied: ...")
  Exploit,     ///< "exploit": PBT's lineage, as JSON
  Checkpoint,  ///< "checkpoint": one stored, its size and streaming time
  Driver,      ///< "driver": rank 0's peak RSS
  LivePage,    ///< "live_page": what the `[report] html` pages cost
  Slurm,       ///< "slurm": the allocation that runs the experiment
  Continued,   ///< "continued": the rest of the row before's message (io::kMaxEventMessage)
  WarmStart,   ///< "warm_start": an earlier experiment's trials the searcher started from
};

/// The name written to /events.kind.
const char* to_string(EventKind k);
/// The kind a name of to_string() stands for; nullopt for any other name (a file written by a
/// later ranktune, or by hand), which readers keep as it is (io::EventRow::other_kind).
std::optional<EventKind> parse_event_kind(std::string_view name);

}  // namespace ranktune::search
