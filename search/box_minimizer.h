#pragma once
/// Minimizes a smooth function over a box [lower, upper]: a projected limited-memory
/// quasi-Newton method. The direction is L-BFGS's (Nocedal, "Updating quasi-Newton matrices
/// with limited storage", Math. Comp. 1980; the two-loop recursion of Nocedal & Wright,
/// "Numerical Optimization", 2nd ed. 2006, algorithm 7.4) restricted to the coordinates not
/// held at a bound, and each step is projected back into the box with a backtracking
/// (Armijo) search along the projected path (Bertsekas, "Projected Newton methods for
/// optimization problems with simple constraints", SIAM J. Control Optim. 1982; Kim, Sra &
/// Dhillon, "Tackling box-constrained optimization via a new projected quasi-Newton
/// approach", SIAM J. Sci. Comput. 2010).
///
/// A coordinate is held when it sits on a bound and the gradient pushes it outwards; the
/// others are free. It stops when the projected gradient is below `gradient_tolerance`
/// (sup norm), when a step gains less than `relative_tolerance` of |f|, when no step of the
/// line search decreases f, or after `max_iterations` iterations or `max_evaluations` calls of f. Deterministic: the same function and
/// start give the same answer. Used by the GP's marginal-likelihood fit (in log space) and
/// by the GP searcher's acquisition refinement (search/gaussian_process.h,
/// search/gp_searcher.h).

#include <functional>

#include <Eigen/Core>

namespace ranktune::search {

struct BoxMinimizerOptions {
  int max_iterations = 100;
  int max_evaluations = 1000;        ///< of f, line searches included
  int memory = 8;                    ///< (s, y) pairs kept
  double gradient_tolerance = 1e-6;  ///< on the projected gradient, sup norm
  double relative_tolerance = 1e-10;
};

struct BoxMinimum {
  Eigen::VectorXd x;
  double f = 0;
  int evaluations = 0;
};

/// f(x, gradient) returns f at x and writes its gradient (same size as x). A non-finite
/// value counts as worse than any finite one (the line search backs off from it).
using BoxObjective = std::function<double(const Eigen::VectorXd& x, Eigen::VectorXd& gradient)>;

/// The minimum found from `start` (clamped into the box first). lower <= upper elementwise;
/// a coordinate with lower == upper stays put.
BoxMinimum minimize_in_box(const BoxObjective& f, Eigen::VectorXd start, const Eigen::VectorXd& lower,
                           const Eigen::VectorXd& upper, const BoxMinimizerOptions& options = {});

}  // namespace ranktune::search
