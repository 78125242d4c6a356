#pragma once
/// Which idle workers a trial of several ranks (a gang) gets.
///
/// Policy, for gangs of `size` ranks (every trial of an experiment has the same size):
///   1. One node if possible: among the nodes with at least `size` idle workers, the one
///      with the fewest (best fit, so nodes with many idle workers stay whole for the next
///      gangs), ties going to the node whose idle worker has waited longest. Its longest-
///      waiting workers are taken. Data-parallel training allreduces every batch, and within
///      a node that goes over shared memory or NVLink instead of the network.
///   2. Else, if enough workers are idle in all, the gang spans nodes: the fewest nodes
///      (those with the most idle workers first).
///   3. Else nothing: the trial waits for more workers to free up.
/// Since all gangs have the same size, no trial of another size can starve: waiting in 3
/// only ever waits for the workers that the next gang needs. Single-rank trials (size 1)
/// take the longest-waiting worker, as they always did.
///
/// Pure: no MPI; nodes are small integers (the driver numbers the distinct host names).

#include <deque>
#include <optional>
#include <span>
#include <vector>

namespace ranktune::controller {

/// The members of a gang of `size` chosen from `idle` (worker ids, longest-waiting first),
/// the leader first, or nullopt when fewer than `size` are idle. `node_of` maps a worker id
/// to its node; ids past its end (or an empty span) count as node 0.
std::optional<std::vector<int>> choose_gang(const std::deque<int>& idle, int size, std::span<const int> node_of);

}  // namespace ranktune::controller
