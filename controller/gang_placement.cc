// Which idle workers a gang gets: one node by best fit, else the fewest nodes, else none
// (controller/gang_placement.h: the policy and why).
#include "controller/gang_placement.h"

#include <algorithm>
#include <map>

namespace ranktune::controller {

std::optional<std::vector<int>> choose_gang(const std::deque<int>& idle, int size, std::span<const int> node_of) {
  if (size < 1 || idle.size() < static_cast<std::size_t>(size)) return std::nullopt;
  if (size == 1) return std::vector<int>{idle.front()};

  auto node = [&](int worker) {
    return worker >= 0 && static_cast<std::size_t>(worker) < node_of.size() ? node_of[static_cast<std::size_t>(worker)] : 0;
  };
  // Idle workers by node, each list longest-waiting first; `first_seen` orders the nodes
  // by their longest-waiting worker.
  std::map<int, std::vector<int>> by_node;
  std::vector<int> first_seen;
  for (const int w : idle) {
    auto& list = by_node[node(w)];
    if (list.empty()) first_seen.push_back(node(w));
    list.push_back(w);
  }

  const std::vector<int>* best = nullptr;
  for (const int n : first_seen) {  // strict < keeps the longest-waiting node among ties
    const auto& list = by_node[n];
    if (list.size() >= static_cast<std::size_t>(size) && (best == nullptr || list.size() < best->size())) best = &list;
  }
  if (best != nullptr) return std::vector<int>(best->begin(), best->begin() + size);

  // Spanning nodes: the fullest nodes first (stable, so ties keep the waiting order).
  std::stable_sort(first_seen.begin(), first_seen.end(),
                   [&](int a, int b) { return by_node[a].size() > by_node[b].size(); });
  std::vector<int> gang;
  for (const int n : first_seen) {
    for (const int w : by_node[n]) {
      gang.push_back(w);
      if (gang.size() == static_cast<std::size_t>(size)) return gang;
    }
  }
  return gang;  // unreachable: idle.size() >= size
}

}  // namespace ranktune::controller
