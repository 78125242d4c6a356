#pragma once
/// The ordered set with ranks that ASHA's promotion variant and PBT keep their scores in.

#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <functional>
#include <utility>

#include "search/types.h"

namespace ranktune::search {

/// (score key, trial id) pairs in order, with the rank of an entry (order_of_key) and the
/// entry at a rank (find_by_order) in O(log n): libstdc++'s policy tree. std::set would
/// walk the set to find a rank, which a choice per result cannot afford on a large rung or
/// population.
using RankedSet = __gnu_pbds::tree<std::pair<double, TrialId>, __gnu_pbds::null_type,
                                   std::less<std::pair<double, TrialId>>, __gnu_pbds::rb_tree_tag,
                                   __gnu_pbds::tree_order_statistics_node_update>;

}  // namespace ranktune::search
