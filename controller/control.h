#pragma once
/// Live control of a running experiment (`ranktune ctl`; NSML's live changes): what an
/// operator may ask, and the checks a request's hyperparameters must pass. Pure: the
/// request arrives through a file (io/control_file.h) and the Controller carries it out.

#include <cstdint>
#include <optional>
#include <string>

#include "search/space.h"
#include "search/types.h"

namespace ranktune::controller {

// The controller speaks search/'s vocabulary (trials, configs, metrics, searchers and
// schedulers); its names are used unqualified throughout controller/.
using namespace ranktune::search;
using search::to_string;  // overloaded here too (EndReason, ControlRequest::Kind)

struct ControlRequest {
  enum class Kind {
    Stop,  ///< end `trial` now (TERMINATED; a checkpoint first with [checkpoint] at_end)
    Set,   ///< change some hyperparameters of `trial` (it goes on from its checkpoint)
    Add,   ///< a new trial with `config` (every parameter of the space), or `count` more
           ///< trials from the searcher
    Pause,   ///< `trial` checkpoints and stays PAUSED, its workers free, until Resume
    Resume,  ///< a trial that Pause held goes back to the queue
    Budget,  ///< new stopping rules: `time_budget_s`, `num_samples`, `max_t`
    StopExperiment,  ///< the graceful stop of a SIGTERM to rank 0 (exit 4, resumable)
  };
  Kind kind = Kind::Stop;
  std::string id;           ///< the requester's tag, quoted in the answer
  TrialId trial = 0;        ///< Stop, Set
  Config config;            ///< Set: the values to change; Add: the whole config
  std::int64_t count = 0;   ///< Add without a config: this many more from the searcher
  bool force = false;       ///< accept values outside their domains (types must still match)
  /// Budget: the new `[stop] time_budget_s` (seconds since the experiment was created; 0:
  /// none), `[experiment] num_samples` (trials the search algorithm proposes) and `[stop]
  /// max_t` (iterations per trial); at least one is given.
  std::optional<double> time_budget_s;
  std::optional<std::int64_t> num_samples;
  std::optional<std::int64_t> max_t;
  std::int64_t uid = -1;    ///< the sender's user id (-1: not given); rank 0 obeys only the
                            ///< control file's owner (io/control_file.h)
};

/// The most trials one `add --count` may ask for, and the most that `ranktune ctl` may add
/// to one experiment in all (explicit adds and counts, over resumes). A request is an
/// operator's correction, not a new search: these bound a typo (`--count 1000000000000`
/// made a run that never ends) without getting in the way of real use.
inline constexpr std::int64_t kMaxAddCount = 100000;
inline constexpr std::int64_t kMaxAddedTrials = 1000000;

/// Checks that `n` more trials fit: at most kMaxAddCount at once, at most kMaxAddedTrials
/// added by control in all (`added` so far), and `expected` (the experiment's total, -1
/// when open) + n without overflow. Returns "" when they fit, else one sentence saying why
/// not.
std::string check_added_trials(std::int64_t n, std::int64_t added, std::int64_t expected);

/// "stop", "set", "add", "pause", "resume", "budget" or "stop-experiment".
const char* to_string(ControlRequest::Kind k);

/// What the controller did with a request.
struct ControlOutcome {
  bool applied = false;
  std::string message;  ///< one line: what changed (or will), or why not
  /// Accepted, but it takes effect later (a `set` on a trial that ran: at its next start
  /// from its checkpoint); a second "control" event says when it did.
  bool pending = false;
};

/// Checks `config` against `space`, converting an integer given for a float parameter to a
/// double. Every key must be a parameter of the space; with `complete`, every parameter
/// must be given. Values must have the parameter's type and, unless `force`, lie in its
/// domain (in [low, high], [low, high) for randint, or among a choice's values). Returns ""
/// when it passes, else one sentence naming the parameter and what is valid.
std::string check_control_config(const Space& space, Config& config, bool complete, bool force);

/// For `ctl set` on a trial whose config (with its pending changes) is `current`: "" when the
/// changed values leave every parameter they name active, and give a value to every
/// parameter they turn active, and turn none off (conditional parameters,
/// search/condition.h); else why not.
std::string check_set_conditions(const Space& space, const Config& current, const Config& change);

/// Whether `kind` names a trial (stop, set, pause, resume).
bool names_trial(ControlRequest::Kind kind);

/// The stopping rules in effect, as `ctl budget` left them: the answer of every applied
/// budget request ends with budget_text(), which `ctl status` reads back from the
/// "control" events (parse_budget_text) to show the rules a run goes by.
struct BudgetRules {
  double time_budget_s = 0;      ///< 0: none
  std::int64_t num_samples = -1;  ///< trials the search algorithm proposes; -1: unbounded
  std::int64_t max_t = 1;
};
/// What `ctl budget` changed of the configured stopping rules, kept in the controller's
/// saved state (controller/resume.h) so that a resume goes by them too (nullopt: as
/// configured). `sample_cap` lowers the search algorithm's num_samples (a raise is an
/// extension, Searcher::extend, counted with `add --count`'s).
struct BudgetOverrides {
  std::optional<double> time_budget_s;
  std::optional<std::int64_t> max_t;
  std::optional<std::int64_t> sample_cap;
};

/// "stopping rules now: time_budget_s=120 num_samples=8 max_t=20".
std::string budget_text(const BudgetRules& rules);
/// The rules in the last budget_text() found in `message`; nullopt when it has none.
std::optional<BudgetRules> parse_budget_text(const std::string& message);

}  // namespace ranktune::controller
