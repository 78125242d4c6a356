#pragma once
/// Population Based Bandits (PB2): Parker-Holder, Nguyen & Roberts, "Provably Efficient
/// Online Hyperparameter Optimization with Population-Based Bandits", NeurIPS 2020.
/// Scheduler "pb2".
///
/// PB2 is PBT (search/pbt_scheduler.h, which it derives from, with the same options and
/// decisions) with the random explore of the numeric hyperparameters replaced by a choice
/// from a model. PBT's exploit step stays: every `perturbation_interval` iterations the
/// trials are ranked by their latest score, and one in the bottom `quantile_fraction`
/// restarts from the checkpoint of a trial drawn from the top `quantile_fraction`. Its new
/// uniform, loguniform, quniform and randint values are then chosen by time-varying GP-UCB:
///
/// - Data. Each interval a trial completes between two of its perturbation points gives
///   one observation: the input is the interval's start (iterations / max_t) and the
///   hyperparameters it ran with (each scaled to [0, 1] within its explore bounds,
///   loguniform on the log scale), the target the change of its score (sign(mode) *
///   metric) per iteration over the interval. After an exploit the interval starts from
///   the donor's score, whose checkpoint the trial goes on from. The newest 128
///   observations are kept.
/// - Model. The Gaussian process of search/gaussian_process.h on the standardized changes,
///   its hyperparameters refitted (warm started) at every choice. Time is one more input
///   dimension with its own fitted lengthscale, so old observations count for less the
///   further away in time they are: the role of the paper's time-varying kernel factor
///   (1 - omega)^(|t - t'| / 2), whose forgetting rate omega the lengthscale takes.
/// - Choice. The hyperparameters x maximizing mu(t, x) + kappa sigma(t, x) at the
///   exploiting trial's time t, where sigma comes from the model with the other live
///   trials' running intervals (the newest 128) added as if observed (GP-BUCB: Desautels,
///   Krause & Burdick, JMLR 2014), so that trials exploring at the same time spread out; kappa^2 = 0.2 D
///   log(2 n) with D input dimensions and n observations (Kandasamy, Schneider & Poczos,
///   ICML 2015, after Srinivas et al. 2010). Maximized over 256 random points and 64 near
///   the donor's values, the best two refined by gradient (search/box_minimizer.h); integers
///   and quantized values rounded. With fewer than 3 observations, a uniform draw within
///   the bounds.
///
/// choice and grid parameters are explored as PBT explores them (PB2 models continuous
/// hyperparameters; resample_probability applies to those only). Options: PBT's
/// (`perturbation_interval`, `quantile_fraction`, `resample_probability`, `bounds.NAME`).
///
/// Deterministic for a sequence of results: draws come from index_rng(seed, choice count),
/// and the fit starts from the last fit's values, which save() keeps with the data.

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "search/gaussian_process.h"
#include "search/pbt_scheduler.h"

namespace ranktune::search {

class Pb2Scheduler final : public PbtScheduler {
 public:
  /// Reads PBT's options (errors name "pb2"); std::invalid_argument when ctx.space is missing.
  Pb2Scheduler(SchedulerContext ctx, const Options& options);

  /// Text: the choice count, the last fit's hyperparameters, each live trial's running
  /// interval (start, score then, hyperparameters), the latest scores, the observations,
  /// then PBT's state.
  std::string save() const override;
  void restore(const std::string& state) override;

  /// Observations kept (at most 128).
  std::size_t observations() const { return data_.size(); }
  /// The upper confidence bound that a choice for `trial` at its iteration `iterations`
  /// maximizes, at the numeric values of `config`, under the last fit (no refit): what the
  /// model expects of them plus kappa times its uncertainty given the other running
  /// intervals. Needs a fitted model.
  double acquisition(TrialId trial, std::int64_t iterations, const Config& config) const;

 private:
  /// A stretch of iterations one trial runs with one set of hyperparameters.
  struct Interval {
    double start = 0;            ///< iteration it started at
    double score = 0;            ///< the score it started from (-inf: unknown)
    std::vector<double> x;       ///< the numeric hyperparameters, in [0, 1] within the bounds
  };
  struct Observation {
    double start = 0;            ///< iteration the interval started at
    double change = 0;           ///< score change per iteration over it
    std::vector<double> x;
  };

  /// The models of a choice for `trial`: `mean` on the observations, `spread` with the
  /// other running intervals added too (GP-BUCB), under hyper_.
  struct Models {
    gp::GaussianProcess mean, spread;
    double kappa = 0;
  };
  /// The observations' inputs and their standardized changes.
  void training_data(Eigen::MatrixXd& points, Eigen::VectorXd& y) const;
  Models models(TrialId trial) const;
  static double ucb(const Models& m, const Eigen::VectorXd& x, Eigen::VectorXd* gradient);
  /// The model's input of an interval starting at iteration `start` with values `x`.
  Eigen::VectorXd input(double start, const std::vector<double>& x) const;
  std::vector<double> unit_values(const Config& config) const;
  // PBT's hooks: the observations, the model's choice as the explore step, and the running
  // interval of a trial that ends.
  void at_perturbation_point(const Trial& trial, double score) override;
  Config explore_for(const Trial& trial, TrialId donor, const Config& donor_config, std::uint64_t index) override;
  void forget(TrialId id) override;
  /// Chooses the numeric hyperparameters for `trial`, which goes on from its iteration
  /// `time`, with draw `index`; writes them into `config`.
  void choose(TrialId trial, double time, const std::vector<double>& donor, Config& config, std::uint64_t index);

  std::vector<const Param*> numeric_;   ///< the parameters PB2 chooses
  std::vector<Domain> bounded_;         ///< their domains within the explore bounds
  std::map<TrialId, Interval> running_; ///< each live trial's interval in progress
  std::deque<Observation> data_;        ///< the newest observations, oldest first
  gp::Hyper hyper_;
  bool fitted_ = false;
  std::uint64_t choices_ = 0;
};

}  // namespace ranktune::search
