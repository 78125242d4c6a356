// Printing a resolved config as TOML (render_config, `ranktune check`) with TomlWriter,
// which the trainable kinds' options print their own keys with.

#include "config/config.h"

#include "config/config_detail.h"

#include <set>
#include <sstream>

#include "search/scheduler.h"
#include "search/searcher.h"

namespace ranktune::config {

using namespace config_detail;

namespace {

std::string toml_value(const search::Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return toml_float(*d);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return toml_string(std::get<std::string>(v));
}

std::string toml_domain(const search::Domain& d) {
  std::string items;
  auto add = [&](const std::string& s) { items += (items.empty() ? "" : ", ") + s; };
  if (d.is_listed()) {
    for (const auto& v : d.values) add(toml_value(v));
  } else if (d.kind == search::DomainKind::RandInt) {
    add(std::to_string(static_cast<std::int64_t>(d.low)));
    add(std::to_string(static_cast<std::int64_t>(d.high)));
  } else {
    add(toml_float(d.low));
    add(toml_float(d.high));
    if (d.kind == search::DomainKind::QUniform) add(toml_float(d.q));
  }
  return std::string("{ ") + domain_kind_name(d.kind) + " = [" + items + "] }";
}

}  // namespace

void TomlWriter::raw(const std::string& key, const std::string& toml) { out_ += toml_key(key) + " = " + toml + "\n"; }
void TomlWriter::string(const std::string& key, const std::string& value) { raw(key, toml_string(value)); }
void TomlWriter::number(const std::string& key, double value) { raw(key, toml_float(value)); }
void TomlWriter::integer(const std::string& key, std::int64_t value) { raw(key, std::to_string(value)); }
void TomlWriter::boolean(const std::string& key, bool value) { raw(key, value ? "true" : "false"); }
void TomlWriter::comment(const std::string& text) { out_ += "# " + text + "\n"; }
void TomlWriter::line(const std::string& text) { out_ += text + "\n"; }

void TomlWriter::strings(const std::string& key, const std::vector<std::string>& values) {
  std::string out;
  for (const auto& s : values) out += (out.empty() ? "" : ", ") + toml_string(s);
  raw(key, "[" + out + "]");
}

void TomlWriter::table(const std::string& key, const std::map<std::string, std::string>& entries) {
  std::string out;
  for (const auto& [k, v] : entries) out += (out.empty() ? " " : ", ") + toml_key(k) + " = " + toml_string(v);
  raw(key, "{" + out + (out.empty() ? "}" : " }"));
}

std::string render_config(const ExperimentConfig& c) {
  TomlWriter o;
  auto option = [&](const std::string& k, const search::Value& v) {
    if (const auto* d = std::get_if<double>(&v)) return o.number(k, *d);
    if (const auto* i = std::get_if<std::int64_t>(&v)) return o.integer(k, *i);
    o.string(k, std::get<std::string>(v));
  };

  o.comment("Resolved by ranktune: every default filled in, every path absolute.");
  for (const auto& ov : c.overrides) {
    const auto shown = c.shown_overrides.find(ov);
    o.comment(shown != c.shown_overrides.end() ? shown->second : "--set " + ov);
  }
  o.line("\n[experiment]");
  o.string("name", c.name);
  if (c.objectives.metrics.size() > 1) {
    // Several objectives: the lists as given, then what they mean for the algorithms.
    std::string metrics, modes;
    for (std::size_t i = 0; i < c.objectives.metrics.size(); ++i) {
      metrics += (i ? ", " : "") + toml_string(c.objectives.metrics[i]);
      modes += (i ? ", " : "") + toml_string(search::to_string(c.objectives.modes[i]));
    }
    o.raw("metric", "[" + metrics + "]");
    o.raw("mode", "[" + modes + "]");
  } else {
    o.string("metric", c.metric);
    o.string("mode", search::to_string(c.mode));
  }
  if (!c.objectives.constraints.empty()) {
    std::string items;
    for (const search::Constraint& k : c.objectives.constraints) items += (items.empty() ? "" : ", ") + toml_string(k.text());
    o.raw("constraints", "[" + items + "]");
  }
  if (c.objectives.multi())
    o.comment("objectives: " + c.objectives.describe() + " (Pareto ranking: Deb's constrained non-dominated sorting; "
              "the first metric is the reports' primary one)");
  o.raw("seed", std::to_string(c.seed));
  o.integer("num_samples", c.num_samples);
  o.string("results", c.results);
  o.integer("max_failures", c.max_failures);
  o.string("non_finite", c.non_finite);
  o.number("flush_interval_ms", c.flush_interval_ms);
  o.number("status_interval_s", c.status_interval_s);

  // Every option the algorithms run with, defaults too, as their own readers resolve them.
  // The given ones alone when they cannot be built (a config not validated yet: check and
  // run build them before anything is printed).
  auto print_options = [&](const search::Options& given, auto resolve) {
    std::vector<search::ResolvedOption> resolved;
    try {
      resolved = resolve();
    } catch (const std::exception&) {
      resolved.clear();
    }
    std::set<std::string> printed;
    for (const auto& r : resolved) {
      if (r.flag)
        o.boolean(r.key, std::get<std::int64_t>(r.value) != 0);
      else
        option(r.key, r.value);
      printed.insert(r.key);
    }
    for (const auto& [k, v] : given)
      if (!printed.count(k)) option(k, v);
  };

  o.line("\n[search]");
  o.string("algorithm", c.algorithm);
  print_options(c.search_options, [&] {
    search::SearcherOptions options{c.seed, c.num_samples, c.metric, c.mode, c.max_t};
    options.objectives = c.objectives;
    return search::resolved_searcher_options(c.algorithm, c.space, options,
                                             c.search_options);
  });
  if (!c.search_options.contains("max_concurrent")) o.comment("max_concurrent: not set (no limit)");
  if (!c.points_to_evaluate.empty()) {
    std::string points;
    for (const auto& point : c.points_to_evaluate) {
      std::string items;
      // In the space's order, as written there.
      for (const auto& p : c.space.params)
        if (const auto it = point.find(p.name); it != point.end() && !p.fixed)
          items += (items.empty() ? "" : ", ") + toml_key(p.name) + " = " + toml_value(it->second);
      points += (points.empty() ? "" : ", ") + ("{ " + items + " }");
    }
    o.raw("points_to_evaluate", "[" + points + "]");
  }
  if (!c.warm_start.empty()) o.strings("warm_start", c.warm_start);
  o.line("\n[search.space]");
  for (const auto& p : c.space.params) {
    if (p.fixed) {
      o.raw(p.name, toml_value(p.domain.values.front()));
    } else {
      std::string domain = toml_domain(p.domain);
      if (p.conditional()) domain.insert(domain.size() - 2, ", when = " + toml_string(p.when.text));
      o.raw(p.name, domain);
    }
  }

  o.line("\n[scheduler]");
  o.string("kind", c.scheduler);
  if (!c.space.mutable_params.empty()) o.strings("mutable", c.space.mutable_params);
  print_options(c.scheduler_options, [&] {
    return search::resolved_scheduler_options(c.scheduler, scheduler_context(c), c.scheduler_options);
  });

  o.line("\n[trainable]");
  o.string("kind", c.trainable.kind);
  if (c.trainable.options) c.trainable.options->print(o, c.trainable.metrics);

  o.line("\n[stop]");
  o.integer("max_t", c.max_t);
  o.number("time_budget_s", c.time_budget_s);
  o.integer("max_total_steps", c.max_total_steps);
  if (c.target)
    o.number("target", *c.target);
  else
    o.comment("target: not set");

  o.line("\n[checkpoint]");
  o.integer("every", c.checkpoint_every);
  o.boolean("at_end", c.checkpoint_at_end);
  o.integer("keep_last", c.checkpoint_keep_last);
  o.integer("keep_best", c.checkpoint_keep_best);
  o.boolean("fsync", c.checkpoint_fsync);

  o.line("\n[resources]");
  o.integer("ranks_per_trial", c.ranks_per_trial);

  o.line("\n[report]");
  if (!c.report_html.empty())
    o.string("html", c.report_html);
  else
    o.comment("html: not set (no live page)");
  o.number("html_interval_s", c.report_html_interval_s);
  return o.text();
}

}  // namespace ranktune::config
