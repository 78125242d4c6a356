#pragma once
/// Live control of a running experiment (`ranktune ctl`; NSML's live changes): what an
/// operator may ask, and the checks a request's hyperparameters must pass. Pure: the
/// request arrives through a file (io/control_file.h) and the Controller carries it out.

#include <cstdint>
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
  };
  Kind kind = Kind::Stop;
  std::string id;           ///< the requester's tag, quoted in the answer
  TrialId trial = 0;        ///< Stop, Set
  Config config;            ///< Set: the values to change; Add: the whole config
  std::int64_t count = 0;   ///< Add without a config: this many more from the searcher
  bool force = false;       ///< accept values outside their domains (types must still match)
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

/// "stop", "set" or "add".
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

}  // namespace ranktune::controller
