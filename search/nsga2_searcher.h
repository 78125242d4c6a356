#pragma once
/// NSGA-II (K. Deb, A. Pratap, S. Agarwal and T. Meyarivan, "A fast and elitist multiobjective
/// genetic algorithm: NSGA-II", IEEE Transactions on Evolutionary Computation 6(2), 2002) as an
/// asynchronous, steady-state searcher: `[search] algorithm = "nsga2"`.
///
/// The paper's NSGA-II is generational: N parents breed N children, and the best N of the 2N
/// by non-domination rank, then crowding distance (pareto.h), are the next parents. Trials on
/// an MPI farm end one at a time, so waiting for a whole generation would leave workers idle.
/// Here every suggestion breeds one child from the population as it is at that moment, and
/// every completed trial joins the population at once (the (mu + 1) steady-state form of the
/// same elitist selection):
///
/// - Population. The completed trials, at most `population_size` of them. A trial that
///   completes joins it; when that makes one too many, the last by pareto.h's selection order
///   (constrained non-domination rank, then crowding distance descending, then the order the
///   trials joined) leaves for good. So the population is always the best `population_size`
///   of the previous population and the newcomer: the paper's truncation of parents and
///   children, done one child at a time. Running trials are not in it.
/// - Start. Until `population_size` trials have completed (failed ones included), every
///   suggestion is drawn at random from the space, as Optuna's first generation is.
/// - Parents. Two binary tournaments (the paper's crowded-comparison tournament): draw two
///   members uniformly, with replacement, and take the one earlier in the selection order (a
///   total order, so there are no ties). The second parent's tournament leaves out the first
///   parent, as Optuna's does. Members whose result failed (an error, a NaN or an infinite
///   objective: pareto.h's failed points) take part only while every member failed; while
///   every member failed, the suggestion is random instead.
/// - Child. With probability `crossover_prob`, uniform crossover (Syswerda 1989): each parameter
///   comes from the second parent with probability `swapping_prob`, else from the first. Else
///   the child is a copy of the first parent. Then each parameter is mutated with probability
///   `mutation_prob`: drawn afresh from its domain (its prior), as Optuna's NSGAIISampler
///   samples a mutated parameter with its random sampler. Every value is a parent's or a draw
///   from the domain, so it lies in the domain for every kind (uniform, loguniform, quniform,
///   randint, choice, grid): no clipping or repair is needed.
/// - Conditional parameters (search/condition.h). A parameter that its chosen parent lacks
///   (inactive there) comes from the other parent, and from its domain when neither has it;
///   then the parameters inactive under the child's own values are dropped, so a child's
///   config holds exactly its active parameters. (Optuna samples such parameters at random,
///   outside its intersection search space; inheriting them where a parent has them keeps
///   what the population learnt about them.)
/// - Grid axes are not enumerated: a grid axis is one more listed parameter, as in TPE, and
///   total() is num_samples.
///
/// Defaults are Optuna 3.x's NSGAIISampler's (optuna/samplers/nsgaii/_sampler.py): population
/// 50, UniformCrossover with swapping_prob 0.5, crossover_prob 0.9, and mutation_prob None,
/// which there means 1 / (number of the child's parameters): here 1 / (number of parameters of
/// the space that can take more than one value), counted once for the space. Two differences
/// from Optuna besides the steady state: Optuna's tournament compares by domination only
/// (crowding is a TODO there) where ours uses the paper's crowded comparison, and when
/// Optuna does not cross over it copies a parent drawn uniformly, where ours copies the first
/// tournament winner, as the paper's mating pool does.
///
/// Objectives. SearcherOptions::objectives when it holds any (several, or constraints);
/// otherwise the one objective {metric, mode}, and NSGA-II is a steady-state genetic
/// algorithm on it (one objective's fronts are its equal values). A trial's point is
/// Objectives::point of its last result (under a multi-fidelity scheduler, a trial stopped
/// early counts with its value at the rung where it stopped); an errored trial is a failed
/// point. Constraints are Deb's constrained domination (pareto.h).
///
/// Determinism. Suggestion k draws from index_rng(seed, k), so a suggestion depends only on
/// the seed, its index and the population at that moment; the saved state holds the
/// suggestion count, the running trials' configs and the population, so a restored searcher
/// suggests what the original would have.
///
/// Cost. A suggestion and a completion each rank the population: O(P log P) for P members of
/// 2 objectives, at most O(M P^2) from 3 on (P = 50: microseconds). Memory: the population and the running
/// trials, one point each.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "search/num_samples_searcher.h"
#include "search/objectives.h"
#include "search/pareto.h"
#include "search/parzen.h"

namespace ranktune::search {

/// The largest `population_size`: each suggestion ranks the population, O(P^2).
inline constexpr std::int64_t kMaxPopulation = 10'000;

/// The `[search]` options of algorithm "nsga2", with Optuna's defaults.
struct Nsga2Options {
  std::int64_t population_size = 50;  ///< completed trials kept as parents, 2 to kMaxPopulation
  double crossover_prob = 0.9;        ///< chance a child is a crossover, not a parent's copy; [0, 1]
  double swapping_prob = 0.5;         ///< chance each parameter comes from the second parent; [0, 1]
  /// Chance each parameter is drawn afresh, in [0, 1]. Below 0 (the default here): Optuna's
  /// None, 1 / max(1, varying_params(space)), which the searcher and read() fill in.
  double mutation_prob = -1;

  /// Reads and range-checks the options for a space with `varying` parameters that can take
  /// more than one value (mutation_prob's default is 1 / max(1, varying)); throws OptionError
  /// naming the key for a bad or unknown one.
  static Nsga2Options read(const Options& options, std::size_t varying);
  /// The parameters of `space` that can take more than one value (not a one-value choice).
  static std::size_t varying_params(const Space& space);
};

class Nsga2Searcher final : public NumSamplesSearcher {
 public:
  /// Throws std::invalid_argument for bad objectives (Objectives::check).
  Nsga2Searcher(Space space, SearcherOptions options, Nsga2Options nsga2 = {});

  Suggestion suggest(TrialId id) override;
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override;
  /// A trial it did not propose (points_to_evaluate, warm start) joins the population when it
  /// completes, as its own do.
  void adopt(TrialId id, const Config& config) override;
  /// Text: the objectives (checked on restore), the suggestion count, the running trials'
  /// points and the population (id, violation, objectives, point), in the order it joined.
  std::string save() const override;
  /// Throws std::invalid_argument on a damaged state or one saved with other objectives, and
  /// then keeps the current state. A state with more members than population_size (the option
  /// was lowered for the resume) keeps the best population_size.
  void restore(const std::string& state) override;

  /// The population's trial ids, best first (pareto.h's selection order).
  std::vector<TrialId> population() const;
  const Objectives& objectives() const { return objectives_; }

 private:
  using Point = parzen::Point;
  struct Member {
    TrialId id = 0;
    ParetoPoint value;
    Point point;
  };

  /// The population's ranks, crowding distances and selection order (indices into population_).
  ParetoSelection ranked() const;
  /// Drops the last members by selection order until at most population_size are left.
  void truncate();
  /// The child of the current population (which is full and has a member that did not fail).
  Point breed(Rng& rng) const;

  Space space_;
  Nsga2Options nsga2_;
  Objectives objectives_;
  std::int64_t next_ = 0;              ///< suggestions made so far
  std::map<TrialId, Point> pending_;   ///< suggested or adopted, not yet complete
  std::vector<Member> population_;     ///< in the order the members joined
};

}  // namespace ranktune::search
