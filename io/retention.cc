// Checkpoint retention's pure parts: the checkpoints a policy drops, the pinned ones, and
// the free list of /checkpoint_data (io/retention.h: the policy).
#include "io/retention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ranktune::io {

std::vector<std::int64_t> checkpoints_to_drop(std::span<const CheckpointScore> live, const RetentionPolicy& policy,
                                              const std::set<std::int64_t>& pinned) {
  if (!policy.enabled() || live.empty()) return {};
  std::vector<CheckpointScore> by_age(live.begin(), live.end());
  std::sort(by_age.begin(), by_age.end(), [](const auto& a, const auto& b) { return a.iteration > b.iteration; });
  std::set<std::int64_t> keep = pinned;
  keep.insert(by_age.front().iteration);  // the newest, whatever the limits say
  for (std::size_t i = 0; i < by_age.size() && static_cast<std::int64_t>(i) < policy.keep_last; ++i)
    keep.insert(by_age[i].iteration);
  if (policy.keep_best > 0) {
    std::vector<CheckpointScore> by_merit;
    for (const auto& c : by_age)
      if (std::isfinite(c.score)) by_merit.push_back(c);
    // Stable on the newest-first order: among equal scores the newer checkpoint wins.
    std::stable_sort(by_merit.begin(), by_merit.end(),
                     [&](const auto& a, const auto& b) { return search::better(a.score, b.score, policy.mode); });
    for (std::size_t i = 0; i < by_merit.size() && static_cast<std::int64_t>(i) < policy.keep_best; ++i)
      keep.insert(by_merit[i].iteration);
  }
  std::vector<std::int64_t> drop;
  for (const auto& c : by_age)
    if (keep.count(c.iteration) == 0) drop.push_back(c.iteration);
  std::sort(drop.begin(), drop.end());
  return drop;
}

std::set<CheckpointKey> pinned_checkpoints(const std::vector<search::Trial>& trials) {
  std::set<CheckpointKey> pinned;
  for (const search::Trial& t : trials)
  {
    if (t.finished()) continue;
    if (t.restore_trial != 0) pinned.insert({t.restore_trial, t.restore_checkpoint});
    // Where it goes back to if its new hyperparameters do not load (Trial::revert).
    if (t.revert && t.revert->restore_trial != 0) pinned.insert({t.revert->restore_trial, t.revert->restore_checkpoint});
  }
  return pinned;
}

FreeSpace FreeSpace::gaps(std::vector<std::pair<std::uint64_t, std::uint64_t>> used, std::uint64_t extent) {
  std::sort(used.begin(), used.end());
  FreeSpace free;
  std::uint64_t cursor = 0;
  for (const auto& [offset, size] : used) {
    if (offset > cursor) free.release(cursor, std::min(offset, extent) - cursor);
    cursor = std::max(cursor, offset + size);
    if (cursor >= extent) break;
  }
  if (cursor < extent) free.release(cursor, extent - cursor);
  return free;
}

void FreeSpace::release(std::uint64_t offset, std::uint64_t size) {
  if (size == 0) return;
  auto next = ranges_.lower_bound(offset);
  if ((next != ranges_.end() && next->first < offset + size) ||
      (next != ranges_.begin() && std::prev(next)->first + std::prev(next)->second > offset))
    throw std::logic_error("FreeSpace: bytes [" + std::to_string(offset) + ", " + std::to_string(offset + size) +
                           ") are freed twice");
  total_ += size;
  if (next != ranges_.end() && next->first == offset + size) {
    size += next->second;
    next = ranges_.erase(next);
  }
  if (next != ranges_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  ranges_.emplace(offset, size);
}

std::uint64_t FreeSpace::allocate(std::uint64_t size, std::uint64_t extent) {
  for (auto it = ranges_.begin(); it != ranges_.end(); ++it) {
    auto [offset, free] = *it;
    const bool tail = offset + free >= extent;
    if (free < size && !tail) continue;
    ranges_.erase(it);
    const std::uint64_t taken = std::min(free, size);
    total_ -= taken;
    if (free > size) ranges_.emplace(offset + size, free - size);
    return offset;
  }
  return extent;
}

}  // namespace ranktune::io
