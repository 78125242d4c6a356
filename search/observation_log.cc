// A model-based searcher's pending trials and observations, and their saved state
// (search/observation_log.h).
#include "search/observation_log.h"

#include <cmath>

namespace ranktune::search {

void write_pending(StateWriter& w, const std::map<TrialId, parzen::Point>& pending) {
  w.field("pending").integer(static_cast<std::int64_t>(pending.size())).line();
  for (const auto& [id, point] : pending) {
    w.integer(id);
    parzen::write_point(w, point);
    w.line();
  }
}

std::map<TrialId, parzen::Point> read_pending(StateReader& r, const Space& space) {
  std::map<TrialId, parzen::Point> pending;
  for (std::size_t n = r.count_field("pending"); n > 0; --n) {
    const TrialId id = r.integer("a pending trial id");
    pending[id] = parzen::read_point(r, space);
  }
  return pending;
}

const ObservationLog::Observation* ObservationLog::complete(TrialId id, const Metrics& last, bool error) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return nullptr;  // not ours, or already complete
  Point point = std::move(it->second);
  pending_.erase(it);
  if (error) return nullptr;
  const auto m = last.find(metric_);
  if (m == last.end() || !std::isfinite(m->second)) return nullptr;
  observed_.push_back({id, sign(mode_) * m->second, std::move(point)});
  return &observed_.back();
}

void ObservationLog::write(StateWriter& w) const {
  write_pending(w, pending_);
  w.field("observed").integer(static_cast<std::int64_t>(observed_.size())).line();
  for (const auto& o : observed_) {
    w.integer(o.id).number(sign(mode_) * o.score);
    parzen::write_point(w, o.point);
    w.line();
  }
}

void ObservationLog::read(StateReader& r, const Space& space) {
  std::map<TrialId, Point> pending = read_pending(r, space);
  std::vector<Observation> observed;
  for (std::size_t n = r.count_field("observed"); n > 0; --n) {
    Observation o;
    o.id = r.integer("an observation's id");
    o.score = sign(mode_) * r.finite("an observation's value");
    o.point = parzen::read_point(r, space);
    observed.push_back(std::move(o));
  }
  pending_ = std::move(pending);
  observed_ = std::move(observed);
}

}  // namespace ranktune::search
