#pragma once
/// Bayesian optimization with a Gaussian process and expected improvement (GP-BO): Jones,
/// Schonlau & Welch, "Efficient Global Optimization of Expensive Black-Box Functions", J.
/// Global Optim. 1998, with EI in its logarithmic form, logEI (Ament, Daulton, Eriksson,
/// Balandat & Bakshy, "Unexpected Improvements to Expected Improvement for Bayesian
/// Optimization", NeurIPS 2023), which stays finite and has useful gradients where EI
/// itself underflows to 0. The model is search/gaussian_process.h. Algorithm "gp".
///
/// Space: each parameter is one input dimension. uniform, quniform and randint map
/// linearly onto [0, 1], loguniform on the log scale; randint's integer k is the centre of
/// its cell [k, k + 1) and quniform's values are rounded to q, so integer and quantized
/// dimensions are rounded, as search::sample rounds them. choice and grid values are
/// categorical: one dimension holding the value's index, compared by equality (Optuna's
/// GPSampler's Hamming kernel, not one-hot). Grids are not enumerated: a grid axis is one
/// more categorical parameter, and total() is num_samples, as for TPE.
///
/// Observations: a trial's last reported metric when it completes, as TPE observes
/// (search/tpe_searcher.h). Under ASHA or HyperBand, a trial stopped at a rung therefore
/// counts with its value at that rung; intermediate results are not used. Errored trials
/// and non-finite values are not observations. Scores are sign(mode) * metric
/// (maximized), standardized to mean 0 and variance 1 over the modelled observations.
///
/// A suggestion: the first `n_startup` come at random (search::sample), until that many
/// observations. Then:
///   1. Hyperparameters are refitted (search/gaussian_process.h: maximum a posteriori, warm
///      started from the last fit) when the observations have grown by 10% (at least one)
///      since the last fit, on at most 200 of them (every k-th in completion order).
///      Otherwise the factor of the last fit grows by a row per new observation.
///   2. Pending trials (suggested, not complete) become fantasy observations, so that
///      parallel workers do not pile onto one point: `pending = "kriging_believer"`
///      (the default) gives each the posterior mean at its point (Ginsbourger, Le Riche &
///      Carraro, "Kriging is well-suited to parallelize optimization", 2010), which leaves
///      the mean as it is and shrinks the variance around it; `"constant_liar"` gives each
///      the worst score observed (their CL-min for a maximized score). Fantasies count for
///      the incumbent too, so a believed value above the best observed one leaves no
///      improvement next to its point.
///   3. logEI over the incumbent (the best score, fantasies included) is computed at
///      candidates: half drawn uniformly
///      from the unit box, half around the five best observations (a normal step of 0.1
///      per numeric dimension; each categorical one redrawn with probability 1/d). Their
///      count is n_candidates, cut to max(64, 1e8 / n^2) at n modelled points so an ask
///      stays cheap (benchmarks/README.md: bench_gp).
///   4. The three best candidates are refined by projected L-BFGS on logEI's gradient over
///      the numeric dimensions (search/box_minimizer.h), integer and quantized ones as
///      continuous then rounded; then one coordinate pass tries every other value of each
///      categorical dimension and the neighbouring values of each integer or quantized
///      one. The best point scored is the suggestion, unless a pending trial has exactly
///      that point (a discrete space): then the best one that none has.
///
/// The model keeps at most `max_points` observations (default 2,000): past it, a refit
/// chooses the best half and the most recent ones, so memory (O(n^2)) and time stay bounded.
///
/// Every suggestion draws from its own generator, index_rng(seed, suggestion index), so a
/// suggestion depends only on the seed, its index and the observations, pending trials and
/// hyperparameters before it; save() holds all of them, and a restored searcher rebuilds
/// the same factor and suggests the same points.

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "search/gaussian_process.h"
#include "search/num_samples_searcher.h"
#include "search/observation_log.h"
#include "search/parzen.h"

namespace ranktune::search {

/// The `[search]` options of algorithm "gp".
struct GpOptions {
  enum class Pending { KrigingBeliever, ConstantLiar };
  std::int64_t n_startup = 10;         ///< random suggestions until this many observations (>= 1)
  Pending pending = Pending::KrigingBeliever;
  std::int64_t n_candidates = 2048;    ///< candidates scored per suggestion (1 to kMaxCandidates)
  std::int64_t max_points = 2000;      ///< observations the model keeps (10 to kMaxGpPoints)

  /// Reads and range-checks the options; throws OptionError naming the bad or unknown key.
  static GpOptions read(const Options& options);
};

/// The most observations a GP may keep: its factor takes max_points^2 doubles (800 MB).
inline constexpr std::int64_t kMaxGpPoints = 10'000;

namespace gp {

/// log h(z), h(z) = phi(z) + z Phi(z), so that EI = sigma h((mu - best) / sigma): exact
/// where h is representable, and by Ament et al.'s asymptotic forms where it underflows.
double log_h(double z);
/// d log h / dz = Phi(z) / h(z), computed without forming h.
double log_h_slope(double z);
/// log EI of a maximized score at a posterior (mean, sigma > 0) over the incumbent `best`.
double log_ei(double mean, double sigma, double best);

}  // namespace gp

class GpSearcher final : public NumSamplesSearcher {
 public:
  GpSearcher(Space space, SearcherOptions options, GpOptions gp = {});

  Suggestion suggest(TrialId id) override;
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override;
  /// Takes a trial it did not propose as its own (its config joins the model once complete).
  void adopt(TrialId id, const Config& config) override;
  /// Text: the suggestion count, the pending trials' points, the observations in
  /// completion order (id, value, one number per parameter), and the model: the count of
  /// observations at the last fit and the hyperparameters then (exact doubles).
  std::string save() const override;
  void restore(const std::string& state) override;

  std::size_t observations() const { return log_.observed().size(); }
  /// log EI at `config` if it were suggested now (pending trials included): what the
  /// suggestion maximizes. Needs an observation.
  double log_ei_at(const Config& config);
  /// The observations the model holds now (at most about 1.1 max_points).
  std::size_t modelled() const { return model_ ? chosen_.size() + (model_observed_ - fitted_at_) : 0; }
  /// The hyperparameters of the last fit (nothing before the first model suggestion).
  const gp::Hyper* hyper() const { return fitted_at_ > 0 ? &hyper_ : nullptr; }

 private:
  using Point = parzen::Point;

  /// The observations the model holds: those chosen at the last fit, then the newer ones.
  std::vector<std::size_t> model_rows() const;
  /// Brings the GP up to the observations: refits when due, else appends the new ones.
  void update_model();
  /// Sets chosen_: the observations a fit at fitted_at_ models.
  void choose_rows();
  /// Fits the hyperparameters to the observations now, then rebuilds.
  void refit();
  /// Factors chosen_ under hyper_ (a refit, or the first ask after a restore).
  void rebuild();
  /// A point in the model's input space.
  Eigen::VectorXd unit_point(const Point& p) const;
  /// The model ready to score points: fitted, standardized, with the pending trials'
  /// fantasies added (the caller truncates the model to rows.size() afterwards).
  struct Scene {
    std::vector<std::size_t> rows;          ///< the modelled observations
    Eigen::VectorXd y;                      ///< their standardized scores, then the fantasies'
    std::vector<Eigen::VectorXd> pending;   ///< the pending trials' points
    double best = 0;                        ///< the incumbent: the largest of y
  };
  Scene prepare();
  /// log EI at x (model space) and, when asked, its gradient.
  double acquisition(const Scene& scene, const Eigen::VectorXd& x, Eigen::VectorXd* gradient) const;
  /// Rounds the discrete dimensions of u onto their values.
  void snap(Eigen::VectorXd& u) const;
  Point propose(Rng& rng);

  Space full_;   ///< the space as configured
  /// What the model sees: the parameters without a condition (Optuna's GP sampler models the
  /// intersection of the trials' spaces); conditional ones are drawn at random (suggest()).
  Space space_;
  GpOptions gp_;
  std::vector<bool> categorical_;        ///< per parameter
  std::int64_t next_ = 0;                ///< suggestions made so far
  ObservationLog log_;                   ///< pending trials and observations (completion order)
  // The model: hyperparameters fitted when there were fitted_at_ observations (0: never).
  gp::Hyper hyper_;
  std::size_t fitted_at_ = 0;
  std::vector<std::size_t> chosen_;      ///< the observations modelled at the last fit
  std::unique_ptr<gp::GaussianProcess> model_;  ///< rows: chosen_, then the observations from fitted_at_
  std::size_t model_observed_ = 0;       ///< observations taken into model_ so far
};

}  // namespace ranktune::search
