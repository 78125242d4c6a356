// Which trials `ranktune eval` evaluates, in leaderboard order, and which live checkpoint
// stands for each (eval/leaders.h).
#include "eval/leaders.h"

#include <cmath>
#include <map>
#include <stdexcept>

#include "report/leaderboard.h"

namespace ranktune::eval {
namespace {

// The live checkpoint that stands for a trial, or nullptr when it has none.
const io::CheckpointRow* pick(const std::vector<const io::CheckpointRow*>& rows, CheckpointChoice choice,
                              search::Mode mode) {
  const io::CheckpointRow* latest = nullptr;
  const io::CheckpointRow* best = nullptr;
  const double sign = search::sign(mode);
  for (const io::CheckpointRow* r : rows) {
    if (r->dropped) continue;
    if (latest == nullptr || r->iteration >= latest->iteration) latest = r;
    if (std::isfinite(r->score) &&
        (best == nullptr || sign * r->score > sign * best->score ||
         (r->score == best->score && r->iteration > best->iteration)))
      best = r;
  }
  return choice == CheckpointChoice::Best && best != nullptr ? best : latest;
}

std::string describe(const std::vector<const io::CheckpointRow*>& rows) {
  if (rows.empty()) return "none stored (they are stored with [checkpoint] every or at_end, on a pause, and for PBT)";
  return "its checkpoints: " + checkpoint_list(rows);
}

}  // namespace

std::string checkpoint_list(const std::vector<const io::CheckpointRow*>& rows) {
  std::string live, dropped;
  for (const auto* r : rows) {
    std::string& list = r->dropped ? dropped : live;
    list += (list.empty() ? "" : ", ") + std::to_string(r->iteration);
  }
  return (live.empty() ? "none" : live) + (dropped.empty() ? "" : " (dropped: " + dropped + ")");
}

CheckpointChoice parse_checkpoint_choice(const std::string& name) {
  if (name == "best") return CheckpointChoice::Best;
  if (name == "latest") return CheckpointChoice::Latest;
  throw std::invalid_argument("--checkpoint: '" + name + "' is not a choice; valid: best, latest");
}

LeaderChoice choose_leaders(const io::ResultsFile& file, std::size_t top, const std::vector<search::TrialId>& trials,
                            CheckpointChoice choice, const report::ParetoView* pareto) {
  std::map<search::TrialId, std::vector<const io::CheckpointRow*>> by_trial;
  for (const io::CheckpointRow& r : file.checkpoints)
    if (r.trial > 0) by_trial[r.trial].push_back(&r);
  // The leaderboard the report shows: Pareto rank, then crowding, for several objectives
  // (the ranked trials lead, the others follow in best_first's order); best_first for one.
  // `eligible`: how many places can hold a leader, the ranked trials (one without a complete
  // result has no Pareto rank) or those with a finite best value (best_first puts them first).
  std::vector<const search::Trial*> order;
  std::size_t eligible = 0;
  if (pareto != nullptr) {
    for (const report::ParetoEntry& e : pareto->entries) order.push_back(e.trial);
    eligible = pareto->ranked;
  } else {
    order = report::best_first(file);
    eligible = order.size();
    while (eligible > 0 && !std::isfinite(order[eligible - 1]->best)) --eligible;
  }
  std::map<search::TrialId, std::size_t> rank_of;
  for (std::size_t i = 0; i < order.size(); ++i) rank_of[order[i]->id] = i + 1;

  LeaderChoice out;
  if (!trials.empty()) {
    for (const search::TrialId id : trials) {
      const auto r = rank_of.find(id);
      if (r == rank_of.end())
        throw std::invalid_argument(file.path + ": no trial " + std::to_string(id) + " (the file has " +
                                    std::to_string(file.trials.size()) + " trials)");
      const auto& rows = by_trial[id];
      const io::CheckpointRow* c = pick(rows, choice, file.meta.mode);
      if (c == nullptr)
        throw std::invalid_argument(file.path + ": trial " + std::to_string(id) +
                                    " has no checkpoint to evaluate: " + describe(rows));
      out.leaders.push_back({order[r->second - 1], c, r->second});
    }
    return out;
  }
  for (std::size_t i = 0; i < eligible && out.leaders.size() < top; ++i) {
    const search::Trial* t = order[i];
    // A trial that ended in an error is no leader, whatever it reported before it failed.
    if (t->status == search::TrialStatus::Error) {
      out.skipped.push_back("trial " + std::to_string(t->id) + " (rank " + std::to_string(i + 1) + "): it ended in ERROR");
      continue;
    }
    const auto& rows = by_trial[t->id];
    if (const io::CheckpointRow* c = pick(rows, choice, file.meta.mode)) {
      out.leaders.push_back({t, c, i + 1});
    } else {
      out.skipped.push_back("trial " + std::to_string(t->id) + " (rank " + std::to_string(i + 1) +
                            "): no checkpoint to evaluate: " + describe(rows));
    }
  }
  return out;
}

LeaderChoice choose_front(const io::ResultsFile& file, const report::ParetoView& pareto, CheckpointChoice choice) {
  std::map<search::TrialId, std::vector<const io::CheckpointRow*>> by_trial;
  for (const io::CheckpointRow& r : file.checkpoints)
    if (r.trial > 0) by_trial[r.trial].push_back(&r);
  LeaderChoice out;
  for (std::size_t i = 0; i < pareto.front; ++i) {
    const search::Trial* t = pareto.entries[i].trial;
    const auto& rows = by_trial[t->id];
    if (const io::CheckpointRow* c = pick(rows, choice, file.meta.mode)) {
      out.leaders.push_back({t, c, i + 1});
    } else {
      out.skipped.push_back("trial " + std::to_string(t->id) + " (on the front): no checkpoint to evaluate: " + describe(rows));
    }
  }
  return out;
}

}  // namespace ranktune::eval
