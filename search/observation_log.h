#pragma once
/// What a searcher that models completed trials keeps of its trials ("tpe", "gp"): the
/// point of each trial it suggested that has not completed (pending), and the completed
/// ones' scores in completion order (observed), with their saved-state form.
///
/// An observation is a trial's last reported value of the experiment metric when it
/// completes, as score = sign(mode) * metric (bigger is better). Errored trials, missing
/// and non-finite values, trials it did not suggest and a second completion are not
/// observations.

#include <map>
#include <string>
#include <vector>

#include "search/parzen.h"
#include "search/saved_state.h"

namespace ranktune::search {

/// The field "pending": a row "ID POINT" per trial suggested (or adopted) and not yet
/// complete. ObservationLog writes it, and the nsga2 searcher, whose completed trials are a
/// population instead of observations.
void write_pending(StateWriter& w, const std::map<TrialId, parzen::Point>& pending);
/// Reads what write_pending wrote; the reader throws naming the field on damage.
std::map<TrialId, parzen::Point> read_pending(StateReader& r, const Space& space);

class ObservationLog {
 public:
  using Point = parzen::Point;
  struct Observation {
    TrialId id = 0;
    double score = 0;  ///< sign(mode) * metric: bigger is better
    Point point;
  };

  ObservationLog(std::string metric, Mode mode) : metric_(std::move(metric)), mode_(mode) {}

  /// Trial `id` was suggested at `point`.
  void suggest(TrialId id, Point point) { pending_[id] = std::move(point); }
  /// Trial `id` completed: its observation, or nullptr when it is none (see above).
  const Observation* complete(TrialId id, const Metrics& last, bool error);

  const std::map<TrialId, Point>& pending() const { return pending_; }
  const std::vector<Observation>& observed() const { return observed_; }

  /// Writes the fields "pending" (a row "ID POINT" per trial) and "observed" (a row "ID
  /// VALUE POINT" per observation, the metric as reported so the text reads like the results).
  void write(StateWriter& w) const;
  /// Reads what write() wrote; the reader throws naming the field on damage. A restore
  /// reads into a fresh log and takes it once the whole state is read.
  void read(StateReader& r, const Space& space);

 private:
  std::string metric_;
  Mode mode_;
  std::map<TrialId, Point> pending_;
  std::vector<Observation> observed_;
};

}  // namespace ranktune::search
