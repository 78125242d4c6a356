// The columns of the results file's tables and the layouts built from them (see io/schema.h).
#include "io/schema.h"

#include <algorithm>

#include "io/store_detail.h"

namespace ranktune::io {

std::vector<std::string> trial_column_names() {
  std::vector<std::string> names;
  for (const detail::FixedColumn& c : detail::kTrialColumns) names.emplace_back(c.name);
  for (const detail::FixedColumn& c : detail::kTrialOptionalColumns) names.emplace_back(c.name);
  for (const detail::FixedColumn& c : detail::kTrialLegacyColumns) names.emplace_back(c.name);
  return names;
}

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
  std::vector<std::string> seen;
  for (const FixedColumn& f : spec.fixed) seen.emplace_back(f.name);
  for (const FixedColumn& f : spec.optional) seen.emplace_back(f.name);
  for (const FixedColumn& f : spec.legacy) seen.emplace_back(f.name);
  for (const std::string& n : names) {
    if (n.empty() || std::find(seen.begin(), seen.end(), n) != seen.end())
      throw StoreError(std::string(what) + " name '" + n + "' is empty, repeated or clashes " +
                       "with a fixed /" + spec.name + " column");
    seen.push_back(n);
  }
}

Layout trial_layout(const StoreSchema& schema) {
  Layout layout = fixed_layout(kTrials);
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

std::string checkpoint_name(search::TrialId trial, std::int64_t iteration) {
  return trial == 0
             ? "experiment state " + std::to_string(iteration)
             : "checkpoint of trial " + std::to_string(trial) + " at iteration " + std::to_string(iteration);
}

}  // namespace detail
}  // namespace ranktune::io
