// ASHA's stopping variant: rungs, cutoffs and saved state (search/asha_scheduler.h: the rule
// and its paper, Li et al., MLSys 2020), and the rung options the promotion variant shares.
#include "search/asha_scheduler.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "search/saved_state.h"

namespace ranktune::search {

std::vector<std::int64_t> asha_milestones(std::int64_t grace, double rf, std::int64_t max_t, int s,
                                          std::size_t limit) {
  // Each step finds the next distinct milestone directly rather than trying every power of
  // rf: a small rf rounds many powers to the same iteration (one rung judges it), and with
  // rf = 1 + 1e-16 there are ~1e16 of them per iteration.
  std::vector<std::int64_t> out;
  const double g = static_cast<double>(grace);
  const double log_rf = std::log(rf);
  while (out.size() <= limit) {
    double at = 0;
    if (out.empty()) {
      at = std::ceil(g * std::pow(rf, s));
    } else if (const auto p = static_cast<double>(out.back()); (rf - 1) * p <= 1) {
      // Powers of rf closer than one iteration here: the first one above p is at most
      // p * rf <= p + 1, so the next milestone is p + 1.
      at = p + 1;
    } else {
      // rf > 1 + 1 / p, so j stays well below 2^53 and ++j is exact.
      double j = std::max(static_cast<double>(s), std::floor(std::log(p / g) / log_rf) - 1);
      while (std::ceil(g * std::pow(rf, j)) <= p) ++j;
      at = std::ceil(g * std::pow(rf, j));
    }
    if (at >= static_cast<double>(max_t)) break;
    out.push_back(static_cast<std::int64_t>(at));
  }
  return out;
}

void require_rung_count(const OptionReader& r, std::size_t rungs, std::int64_t grace, double rf,
                        std::int64_t max_t) {
  if (rungs <= static_cast<std::size_t>(kMaxRungs)) return;
  // More than the limit: say about how many (the powers of rf below max_t / grace; fewer
  // where they round to the same iteration).
  const double powers = std::ceil(std::log(static_cast<double>(max_t) / grace) / std::log(rf));
  const auto about = static_cast<long long>(std::min(powers, static_cast<double>(max_t - grace)));
  char rf_text[32];
  *std::to_chars(rf_text, rf_text + sizeof rf_text - 1, rf).ptr = '\0';
  r.require(false, "reduction_factor",
            std::string("= ") + rf_text + " with grace_period = " + std::to_string(grace) +
                " and max_t = " + std::to_string(max_t) + " makes about " + std::to_string(about) +
                " rungs; at most " + std::to_string(kMaxRungs) +
                " are allowed. Use a larger reduction_factor (2 to 4 are usual)");
}

AshaRungOptions read_asha_rung_options(OptionReader& r, std::int64_t default_max_t) {
  AshaRungOptions o;
  o.max_t = r.integer("max_t", default_max_t);
  r.require(o.max_t >= 1, "max_t", "must be >= 1 iteration (got " + std::to_string(o.max_t) + ")");
  r.at_most("max_t", o.max_t, kMaxIterations);
  o.grace = r.integer("grace_period", 1);
  r.require(o.grace >= 1, "grace_period", "must be >= 1 iteration (got " + std::to_string(o.grace) + ")");
  r.at_most("grace_period", o.grace, kMaxIterations);
  o.reduction_factor = r.number("reduction_factor", 4);
  r.require(std::isfinite(o.reduction_factor) && o.reduction_factor > 1, "reduction_factor",
            "must be > 1 (got " + to_string(Value{o.reduction_factor}) + "); 2 to 4 are usual");
  return o;
}

AshaScheduler::AshaScheduler(SchedulerContext ctx, const Options& options)
    : AshaStoppingBase(options, ctx.max_t), ctx_(std::move(ctx)), scores_(per_rung<RankSplit>()) {}

Decision AshaScheduler::on_trial_result(const Trial& trial) {
  rungs_.add(trial.id);  // its bracket, in the order trials are first seen
  const auto score = latest_score(trial, ctx_);
  if (!score) return Decision::Continue;  // nothing to judge; the rung waits for a score
  const auto at = rungs_.reach(trial);
  if (!at) return Decision::Continue;
  RankSplit& scores = scores_[at->bracket][at->rung];
  Decision d = Decision::Continue;
  if (const std::size_t m = scores.size(); m > 0) {
    scores.split_at(asha_cutoff_index(m, options_.reduction_factor, options_.top_k) + 1);  // moves by at most one since the previous insertion
    if (*score < scores.max_lower()) d = Decision::Stop;
  }
  scores.insert(*score);
  return d;
}

// Layout (version 2; version 1 is the same without the field names): the trials added,
// the bracket and trial counts, then under "milestones" a line per bracket with its rung
// count and milestones (checked on restore), under "scores" a line per rung (bracket by
// bracket) with its score count and scores, and under "records" a line per trial (by id):
// "ID BRACKET NEXT_RUNG".
std::string AshaScheduler::save() const {
  StateWriter w("asha", 2);
  rungs_.write_head(w);
  w.field("scores").line();
  for (const auto& rungs : scores_) {
    for (const RankSplit& scores : rungs) {
      const auto values = scores.values();
      w.integer(static_cast<std::int64_t>(values.size()));
      for (double v : values) w.number(v);
      w.line();
    }
  }
  rungs_.write_records(w);
  return w.str();
}

void AshaScheduler::restore(const std::string& state) {
  StateReader r(state, "asha", 2, "asha", /*named_since=*/2);
  scores_ = read_rungs<RankSplit>(r, "scores", "a rung's scores", [](StateReader& r, RankSplit& scores) {
    const double v = r.number("a rung score");
    r.require(!std::isnan(v), "NaN rung score");
    scores.insert(v);
  });
}

}  // namespace ranktune::search
