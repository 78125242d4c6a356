#pragma once
/// Shadow features for a noise floor of importance: a copy of a hyperparameter whose column
/// is randomly permuted across the trials keeps the parameter's values (its distribution,
/// its domain, its ties) but has no relation left to the loss, so whatever share a method
/// gives it is what a parameter with no effect gets on this data. The permutation idea is
/// Breiman's ("Random Forests", Machine Learning 2001, permutation importance); scoring
/// permuted copies beside the real features is the "shadow" of Kursa & Rudnicki ("Feature
/// Selection with the Boruta Package", J. Stat. Software 2010), and judging an importance
/// against the distribution such copies get is the "null importance" of Altmann, Tolosi,
/// Sander & Lengauer ("Permutation importance: a corrected feature importance measure",
/// Bioinformatics 2010). Pure: no I/O.

#include <cstddef>
#include <vector>

#include "analysis/importance.h"

namespace ranktune::analysis {

/// The rows `sample` of `obs` (indices, repeats allowed: a bootstrap sample; every row
/// when empty), with one shadow feature appended per index in `shadowed`: the same
/// Feature (named "shadow:" + its name) whose column is the sampled column permuted by
/// `rng`. The real features keep their places 0..d-1; shadow j is feature d + j.
Observations with_shadows(const Observations& obs, const std::vector<std::size_t>& sample,
                          const std::vector<std::size_t>& shadowed, Rng& rng);

}  // namespace ranktune::analysis
