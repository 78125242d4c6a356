#pragma once
/// Metrics: the values one training iteration reports, by name.
///
/// A flat vector of (name, value) pairs kept sorted by name, with the part of std::map's
/// interface that callers use. An iteration reports a handful of metrics, and one result
/// per message crosses the driver's hot path (wire → controller → scheduler → results
/// file): a contiguous vector costs one allocation to build and one to free, where a
/// std::map costs one per metric, and a lookup is a short scan over adjacent strings
/// instead of a pointer chase. Iteration order is by name, as with std::map.

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ranktune::search {

class Metrics {
 public:
  using value_type = std::pair<std::string, double>;
  using container = std::vector<value_type>;
  using iterator = container::iterator;
  using const_iterator = container::const_iterator;
  using size_type = std::size_t;

  Metrics() = default;
  /// Later duplicates of a name replace earlier ones, as repeated assignment would.
  Metrics(std::initializer_list<value_type> init) {
    items_.reserve(init.size());
    for (const auto& [name, value] : init) (*this)[name] = value;
  }

  size_type size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }
  void reserve(size_type n) { items_.reserve(n); }

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

  const_iterator find(std::string_view name) const { return items_.begin() + index(name); }
  iterator find(std::string_view name) { return items_.begin() + index(name); }
  bool contains(std::string_view name) const { return index(name) != items_.size(); }
  size_type count(std::string_view name) const { return contains(name) ? 1 : 0; }

  /// The value of `name`. Throws std::out_of_range when it is absent.
  double at(std::string_view name) const {
    const size_type i = index(name);
    if (i == items_.size()) throw std::out_of_range("no metric '" + std::string(name) + "'");
    return items_[i].second;
  }
  /// The value of `name`, inserted as 0 when absent.
  double& operator[](std::string_view name) {
    auto it = std::lower_bound(items_.begin(), items_.end(), name,
                               [](const value_type& a, std::string_view b) { return a.first < b; });
    if (it == items_.end() || it->first != name) it = items_.emplace(it, std::string(name), 0.0);
    return it->second;
  }

  friend bool operator==(const Metrics&, const Metrics&) = default;

  /// Boost.Serialization (mpi/wire.h includes the vector and pair support).
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & items_;
  }

 private:
  // A linear scan: shorter than a binary search for the few metrics an iteration has, and
  // it compares lengths before bytes.
  size_type index(std::string_view name) const {
    for (size_type i = 0; i < items_.size(); ++i)
      if (items_[i].first == name) return i;
    return items_.size();
  }

  container items_;  // sorted by name, names unique
};

}  // namespace ranktune::search
