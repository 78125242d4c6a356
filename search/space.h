#pragma once
/// Search spaces: the domain of each hyperparameter and how to draw from it.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "search/condition.h"
#include "search/types.h"

namespace ranktune::search {

/// The random engine every search algorithm takes by injection, so runs are reproducible.
using Rng = std::mt19937_64;

enum class DomainKind { Uniform, LogUniform, QUniform, RandInt, Choice, Grid };

const char* to_string(DomainKind k);

/// One parameter's domain. Invariants (enforced by make_* and by config validation):
/// - Uniform, QUniform: low < high; QUniform also q > 0. Values are doubles in [low, high].
/// - LogUniform: 0 < low < high; drawn uniformly in log space.
/// - RandInt: integers in [low, high), so low < high. (Python's randrange convention.)
/// - Choice, Grid: a non-empty list of values of one type (numbers, or strings).
///   Choice is sampled uniformly; Grid axes are enumerated and crossed with each other.
struct Domain {
  DomainKind kind = DomainKind::Uniform;
  double low = 0.0;
  double high = 0.0;
  double q = 0.0;
  std::vector<Value> values;

  /// The type of the values this domain produces.
  ValueType type() const;
  /// True for Choice and Grid, whose values are listed.
  bool is_listed() const { return kind == DomainKind::Choice || kind == DomainKind::Grid; }
};

/// A named parameter.
struct Param {
  std::string name;
  Domain domain;
  /// `when`: active only where it holds (search/condition.h); an empty text: always active.
  Condition when;
  /// Written as a plain value (`epochs = 20`): a choice of that one value, in every config.
  bool fixed = false;

  bool conditional() const { return !when.text.empty(); }
};

/// The search space: parameters in the order they were declared.
struct Space {
  std::vector<Param> params;
  /// `[scheduler] mutable`: the parameters that may change during a trial's life (PBT's and
  /// PB2's explore, `ranktune ctl set`), as Ray Tune's hyperparam_mutations. Empty: all.
  std::vector<std::string> mutable_params;

  const Param* find(const std::string& name) const;
  /// Whether any parameter has a condition.
  bool conditional() const;
  /// Whether `name` may change during a trial's life (`mutable_params`).
  bool may_mutate(const std::string& name) const;
  /// Number of points of the grid axes crossed (1 when there is no Grid domain).
  std::size_t grid_size() const;
};

/// Returns an empty string when `d` satisfies its invariants, else a sentence saying why not.
std::string check_domain(const Domain& d);

/// The generator of the `index`-th suggestion of a searcher seeded with `seed`. Each
/// suggestion gets its own stream, so it depends only on (seed, index) and resume need only
/// remember the index.
Rng index_rng(std::uint64_t seed, std::uint64_t index);

/// Rounds `x` in [low, high] to the nearest multiple of q (a QUniform domain's), stepping
/// back inside [low, high] when rounding leaves it.
double quantize(const Domain& d, double x);

/// The model coordinate of a point coordinate (parzen::Point's: the raw value, or a listed
/// value's index), for the Gaussian-process models: uniform and quniform map [low, high]
/// linearly onto [0, 1], loguniform on the log scale, randint's integer k to the centre of
/// its cell [k, k + 1) out of [low, high); listed values keep their index (categorical).
double to_unit(const Domain& d, double raw);
/// The inverse of to_unit for any u: a valid point coordinate, clamped into the domain and
/// rounded where it is discrete (quniform to q, randint down to its cell, an index to the
/// nearest).
double from_unit(const Domain& d, double u);
/// Whether a numeric domain takes discrete values (randint, quniform).
inline bool is_discrete(const Domain& d) { return d.kind == DomainKind::RandInt || d.kind == DomainKind::QUniform; }

/// Draws one value from a non-grid domain. For a Grid domain it draws uniformly from its
/// values (callers that enumerate grids never ask).
Value sample(const Domain& d, Rng& rng);

/// "" when `v` is a value `d` can produce (a listed value, or a number in the range, an
/// integer for randint), else a sentence saying why not.
std::string outside_domain(const Domain& d, const Value& v);

/// After a change to some of `config`'s values (PBT's explore, `ctl set`), which may turn
/// conditions on or off: draws a value for every parameter that is absent (inactive before),
/// then drops those inactive now (search/condition.h). Does nothing without conditions.
void settle_conditions(const Space& space, Config& config, Rng& rng);

/// The `index`-th point of the crossed grid axes of `space`, as a partial config with one
/// value per Grid parameter. The first declared axis varies slowest. `index < grid_size()`.
Config grid_point(const Space& space, std::size_t index);

}  // namespace ranktune::search
