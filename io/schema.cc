// The columns of the results file's tables and the layouts built from them (see io/schema.h).
#include "io/schema.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "io/store_detail.h"
#include "sys/text.h"

namespace ranktune::io {

std::vector<std::string> trial_column_names() {
  std::vector<std::string> names;
  for (const detail::FixedColumn& c : detail::kTrialColumns) names.emplace_back(c.name);
  for (const detail::FixedColumn& c : detail::kTrialOptionalColumns) names.emplace_back(c.name);
  for (const detail::FixedColumn& c : detail::kTrialLegacyColumns) names.emplace_back(c.name);
  names.emplace_back(detail::kParetoRankName);
  return names;
}

namespace {

// Per column: its name, its NUL, and at most this many bytes of offset and type.
constexpr std::size_t kColumnTypeBytes = 24;
// The row type message's own header.
constexpr std::size_t kRowTypeHeaderBytes = 16;

std::size_t row_type_bytes(const detail::TableSpec& spec, const std::vector<std::string>& extra) {
  std::size_t bytes = kRowTypeHeaderBytes;
  for (const auto* some : {&spec.fixed, &spec.optional})
    for (const detail::FixedColumn& c : *some) bytes += std::string_view(c.name).size() + 1 + kColumnTypeBytes;
  for (const std::string& name : extra) bytes += name.size() + 1 + kColumnTypeBytes;
  return bytes;
}

}  // namespace

std::size_t trial_row_type_bytes(const std::vector<std::string>& params) { return row_type_bytes(detail::kTrials, params); }
std::size_t result_row_type_bytes(const std::vector<std::string>& metrics) { return row_type_bytes(detail::kResults, metrics); }

StoreSchema StoreSchema::from(const search::Space& space, std::vector<std::string> metrics) {
  StoreSchema schema;
  schema.metrics = std::move(metrics);
  for (const search::Param& p : space.params) {
    ParamColumn column{p.name, p.domain.type(), 0};
    if (column.type == search::ValueType::String) {
      column.length = 8;
      for (const search::Value& v : p.domain.values)
        if (const auto* s = std::get_if<std::string>(&v)) column.length = std::max(column.length, s->size());
    }
    schema.params.push_back(std::move(column));
  }
  return schema;
}

namespace detail {

Kind kind_of(search::ValueType t) {
  switch (t) {
    case search::ValueType::Float: return Kind::F64;
    case search::ValueType::Int: return Kind::I64;
    case search::ValueType::String: return Kind::Str;
  }
  return Kind::F64;
}

void check_extra_names(const TableSpec& spec, const std::vector<std::string>& names, const char* what) {
  // A set, not a scan of a list per name: 100,000 names took rank 0 minutes.
  std::unordered_set<std::string_view> seen;
  for (const auto* some : {&spec.fixed, &spec.optional, &spec.legacy})
    for (const FixedColumn& f : *some) seen.insert(f.name);
  for (const std::string& n : names) {
    if (n.empty() || !seen.insert(n).second)
      throw StoreError(std::string(what) + " name '" + sys::excerpt(n) + "' is empty, repeated or clashes " +
                       "with a fixed /" + spec.name + " column");
  }
}

Layout trial_layout(const StoreSchema& schema) {
  Layout layout = fixed_layout(kTrials);
  if (!schema.objectives.empty()) {
    layout.add(kParetoRankName, Kind::I32);
    for (const std::string& m : schema.objectives) layout.add(std::string(kObjectivePrefix) + m, Kind::F64);
    layout.set_first_free(layout.size());
  }
  for (const ParamColumn& p : schema.params) layout.add(p.name, kind_of(p.type), p.length);
  return layout;
}

Layout result_layout(const StoreSchema& schema) {
  Layout layout = fixed_layout(kResults);
  for (const std::string& m : schema.metrics) layout.add(m, Kind::F64);
  return layout;
}

Layout checkpoint_layout() {
  Layout layout = fixed_layout(kCheckpoints);
  layout.add(kCkScoreName, Kind::F64);
  layout.add(kCkDroppedName, Kind::I32);
  return layout;
}

std::vector<ParamColumn> params_of(const Layout& trials) {
  // Columns past the fixed ones are read as I64, F64 or Str (layout_from_file).
  std::vector<ParamColumn> params;
  for (std::size_t c = trials.first_free(); c < trials.size(); ++c) {
    const Column& col = trials[c];
    const auto type = col.kind == Kind::Str   ? search::ValueType::String
                      : col.kind == Kind::I64 ? search::ValueType::Int
                                              : search::ValueType::Float;
    params.push_back({col.name, type, col.kind == Kind::Str ? col.size : 0});
  }
  return params;
}

std::vector<std::string> metrics_of(const Layout& results) {
  std::vector<std::string> metrics;
  for (std::size_t c = results.first_free(); c < results.size(); ++c) metrics.push_back(results[c].name);
  return metrics;
}

std::vector<std::string> objectives_of(const Layout& trials) {
  std::vector<std::string> objectives;
  for (std::size_t c = 0; c < trials.first_free(); ++c)
    if (trials[c].name.starts_with(kObjectivePrefix)) objectives.push_back(trials[c].name.substr(kObjectivePrefix.size()));
  return objectives;
}

std::string checkpoint_name(search::TrialId trial, std::int64_t iteration) {
  return trial == 0
             ? "experiment state " + std::to_string(iteration)
             : "checkpoint of trial " + std::to_string(trial) + " at iteration " + std::to_string(iteration);
}

}  // namespace detail
}  // namespace ranktune::io
