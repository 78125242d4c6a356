// `ranktune compare`: evaluations of the same models under different stacks, matched,
// measured against the first, and their differing stack fields (report/compare.h).
#include "report/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "report/grid.h"
#include "sys/printable.h"

namespace ranktune::report {
namespace {

using nlohmann::json;

// What identifies the model and its results file in a trial's manifest entry: matched on
// (config, checkpoint) or different by nature between two files, never stack fields.
const std::set<std::string> kModelKeys = {"results", "experiment", "metric", "mode", "trial", "leaderboard_rank",
                                          "best", "best_iteration", "config", "checkpoint"};

std::string scalar_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void flatten(const std::string& key, const json& v, std::map<std::string, std::string>& out) {
  if (v.is_object()) {
    for (const auto& [k, sub] : v.items()) flatten(key.empty() ? k : key + "." + k, sub, out);
  } else if (v.is_array() && std::any_of(v.begin(), v.end(), [](const json& e) { return e.is_structured(); })) {
    for (std::size_t i = 0; i < v.size(); ++i) flatten(key + "." + std::to_string(i), v[i], out);
  } else {
    out[key] = scalar_text(v);
  }
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string evaluation_name(const std::string& what, const io::Evaluation& ev) {
  return what + " (evaluation " + std::to_string(ev.id) + ")";
}

// One input's models, keyed by (config, crc, k-th occurrence) in its manifest's order.
struct Keyed {
  std::string config, crc32c;
  ModelResult result;
};

std::vector<Keyed> models_of(std::size_t input, const std::string& label, const io::Evaluation& ev) {
  const std::string where = evaluation_name(label, ev);
  json manifest;
  try {
    manifest = json::parse(ev.manifest);
  } catch (const json::exception& e) {
    throw std::invalid_argument(where + ": its manifest is not JSON (" + e.what() +
                                "); evaluate again with `ranktune eval` to compare it");
  }
  if (!manifest.is_object() || !manifest.contains("evaluations") || !manifest["evaluations"].is_array())
    throw std::invalid_argument(where + ": its manifest lists no evaluated trials (no \"evaluations\" array); "
                                "evaluate again with `ranktune eval` to compare it");
  std::vector<Keyed> out;
  for (const json& e : manifest["evaluations"]) {
    const bool has_trial = e.is_object() && e.contains("trial") && e["trial"].is_number_integer();
    const std::int64_t trial = has_trial ? e["trial"].get<std::int64_t>() : 0;
    const std::string which = where + ": its manifest's entry" + (has_trial ? " for trial " + std::to_string(trial) : "");
    const json* ck = has_trial && e.contains("checkpoint") && e["checkpoint"].is_object() ? &e["checkpoint"] : nullptr;
    if (!has_trial || !e.contains("config") || !ck || !ck->contains("crc32c") || !(*ck)["crc32c"].is_string() ||
        !ck->contains("iteration") || !(*ck)["iteration"].is_number_integer())
      throw std::invalid_argument(which + " lacks trial, config, checkpoint.iteration or checkpoint.crc32c, "
                                  "by which models are matched; evaluate again with `ranktune eval` to compare it");
    Keyed k;
    k.config = e["config"].dump();
    k.crc32c = (*ck)["crc32c"].get<std::string>();
    k.result.input = input;
    k.result.trial = trial;
    k.result.iteration = (*ck)["iteration"].get<std::int64_t>();
    for (const io::EvalMetricRow& m : ev.metrics)
      if (m.trial == k.result.trial && m.iteration == k.result.iteration) k.result.metrics[m.metric] = m.value;
    for (const io::EvalLatencyRow& l : ev.latency)
      if (l.trial == k.result.trial && l.iteration == k.result.iteration) k.result.latency[l.batch_size] = l;
    out.push_back(std::move(k));
  }
  return out;
}

std::string input_name(std::size_t i) { return "[" + std::to_string(i + 1) + "]"; }

std::string threads_text(int n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); }

// The inputs, one line each.
std::vector<std::string> input_lines(const Comparison& c) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < c.labels.size(); ++i) {
    const io::Evaluation& ev = c.evaluations[i];
    out.push_back(input_name(i) + " " + one_line(c.labels[i]) + ": evaluation " + std::to_string(ev.id) + ", " +
                  one_line(ev.created) + ", " + one_line(ev.device) + ", " + threads_text(ev.threads) +
                  (i == 0 ? " (baseline)" : ""));
  }
  return out;
}

Grid fields_grid(const Comparison& c, const std::vector<FieldValues>& fields) {
  Grid g{{"field"}, {}, {false}};
  for (std::size_t i = 0; i < c.labels.size(); ++i) {
    g.head.push_back(input_name(i));
    g.numeric.push_back(false);
  }
  for (const FieldValues& f : fields) {
    std::vector<std::string>& row = g.body.emplace_back();
    row.push_back(f.key);
    for (const auto& v : f.values) row.push_back(v ? *v : "(absent)");
  }
  return g;
}

Grid models_grid(const Comparison& c) {
  Grid g{{"model", "checkpoint_crc32c"}, {}, {true, false}};
  for (std::size_t i = 0; i < c.labels.size(); ++i) {
    g.head.push_back(input_name(i) + " trial@iteration");
    g.numeric.push_back(false);
  }
  g.head.push_back("config");
  g.numeric.push_back(false);
  const auto add = [&](const ComparedModel& m, const std::string& name) {
    std::vector<std::string>& row = g.body.emplace_back();
    row.push_back(name);
    row.push_back(m.crc32c);
    for (std::size_t i = 0; i < c.labels.size(); ++i) {
      const auto r = std::find_if(m.results.begin(), m.results.end(), [&](const ModelResult& x) { return x.input == i; });
      row.push_back(r == m.results.end() ? "-" : std::to_string(r->trial) + "@" + std::to_string(r->iteration));
    }
    row.push_back(m.config);
  };
  for (std::size_t k = 0; k < c.matched.size(); ++k) add(c.matched[k], std::to_string(k + 1));
  for (const ComparedModel& m : c.unmatched) add(m, "unmatched");
  return g;
}

double metric_of(const ModelResult& r, const std::string& name) {
  const auto it = r.metrics.find(name);
  return it == r.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

const io::EvalLatencyRow* latency_of(const ModelResult& r, std::int64_t batch) {
  const auto it = r.latency.find(batch);
  return it == r.latency.end() ? nullptr : &it->second;
}

Grid metrics_grid(const Comparison& c) {
  Grid g{{"model", "metric", "input", "value", "difference"}, {}, {true, false, false, true, true}};
  for (std::size_t k = 0; k < c.matched.size(); ++k)
    for (const std::string& name : c.metrics) {
      const double base = metric_of(c.matched[k].results[0], name);
      for (const ModelResult& r : c.matched[k].results) {
        const double v = metric_of(r, name);
        g.body.push_back({std::to_string(k + 1), name, input_name(r.input), fixed(v, 4),
                          r.input == 0 ? "" : cell_text(v - base)});  // 6 digits: a 1e-7 change shows
      }
    }
  return g;
}

// The latency measures, their names in the texts and how to read each from a row.
struct Measure {
  const char* name;
  double io::EvalLatencyRow::*field;
  int digits;
};
constexpr Measure kMeasures[] = {{"p50_ms", &io::EvalLatencyRow::p50_ms, 3},
                                 {"p99_ms", &io::EvalLatencyRow::p99_ms, 3},
                                 {"mean_ms", &io::EvalLatencyRow::mean_ms, 3},
                                 {"samples_per_s", &io::EvalLatencyRow::samples_per_s, 0}};

Grid latency_grid(const Comparison& c) {
  Grid g{{"model", "batch_size", "input"}, {}, {true, true, false}};
  for (const Measure& m : kMeasures) g.head.push_back(m.name);
  for (const Measure& m : kMeasures) g.head.push_back(std::string(m.name) + " ratio");
  g.numeric.resize(g.head.size(), true);
  for (std::size_t k = 0; k < c.matched.size(); ++k)
    for (const std::int64_t b : c.batch_sizes) {
      const io::EvalLatencyRow* base = latency_of(c.matched[k].results[0], b);
      for (const ModelResult& r : c.matched[k].results) {
        const io::EvalLatencyRow* l = latency_of(r, b);
        if (l == nullptr) continue;
        std::vector<std::string>& row = g.body.emplace_back();
        row.insert(row.end(), {std::to_string(k + 1), std::to_string(b), input_name(r.input)});
        for (const Measure& m : kMeasures) row.push_back(fixed(l->*m.field, m.digits));
        for (const Measure& m : kMeasures)
          row.push_back(r.input == 0 || base == nullptr ? "" : fixed(ratio(l->*m.field, base->*m.field), 3));
      }
    }
  return g;
}

// Every measurement in one tidy table: a row per model, input and measure.
Grid tidy_grid(const Comparison& c) {
  Grid g{{"model", "input", "label", "trial_id", "iteration", "measure", "batch_size", "value", "baseline", "difference",
          "ratio"},
         {},
         {true, true, false, true, true, false, true, true, true, true, true}};
  const auto cell = [](double v) { return std::isfinite(v) ? value_text(v) : std::string(); };
  for (std::size_t k = 0; k < c.matched.size(); ++k) {
    const ModelResult& base = c.matched[k].results[0];
    for (const ModelResult& r : c.matched[k].results) {
      const auto add = [&](const std::string& measure, const std::string& batch, double v, double b) {
        g.body.push_back({std::to_string(k + 1), std::to_string(r.input + 1), c.labels[r.input], std::to_string(r.trial),
                          std::to_string(r.iteration), measure, batch, cell(v), cell(b), cell(v - b), cell(ratio(v, b))});
      };
      for (const std::string& name : c.metrics) add(name, "", metric_of(r, name), metric_of(base, name));
      for (const std::int64_t b : c.batch_sizes) {
        const io::EvalLatencyRow* l = latency_of(r, b);
        const io::EvalLatencyRow* bl = latency_of(base, b);
        if (l == nullptr) continue;
        for (const Measure& m : kMeasures)
          add(m.name, std::to_string(b), l->*m.field, bl ? bl->*m.field : std::numeric_limits<double>::quiet_NaN());
      }
    }
  }
  return g;
}

json fields_json(const std::vector<FieldValues>& fields) {
  json out = json::array();
  for (const FieldValues& f : fields) {
    json values = json::array();
    for (const auto& v : f.values) values.push_back(v ? json(*v) : json(nullptr));
    out.push_back({{"key", f.key}, {"values", std::move(values)}});
  }
  return out;
}

json model_json(const Comparison& c, const ComparedModel& m, bool matched) {
  json config;
  try {
    config = json::parse(m.config);
  } catch (const json::exception&) {
    config = m.config;
  }
  json inputs = json::array();
  for (const ModelResult& r : m.results) inputs.push_back({{"input", r.input + 1}, {"trial", r.trial}, {"iteration", r.iteration}});
  json out = {{"config", std::move(config)}, {"checkpoint_crc32c", m.crc32c}, {"inputs", std::move(inputs)}};
  if (!matched) return out;
  const ModelResult& base = m.results[0];
  json metrics = json::object();
  for (const std::string& name : c.metrics) {
    json values = json::array(), diff = json::array();
    for (const ModelResult& r : m.results) {
      values.push_back(num(metric_of(r, name)));
      diff.push_back(num(metric_of(r, name) - metric_of(base, name)));
    }
    metrics[name] = {{"values", std::move(values)}, {"difference", std::move(diff)}};
  }
  json latency = json::array();
  for (const std::int64_t b : c.batch_sizes) {
    json entry = {{"batch_size", b}};
    json ratios = json::object();
    const io::EvalLatencyRow* bl = latency_of(base, b);
    for (const Measure& ms : kMeasures) {
      json values = json::array(), rs = json::array();
      for (const ModelResult& r : m.results) {
        const io::EvalLatencyRow* l = latency_of(r, b);
        values.push_back(l ? num(l->*ms.field) : json(nullptr));
        rs.push_back(l && bl ? num(ratio(l->*ms.field, bl->*ms.field)) : json(nullptr));
      }
      entry[ms.name] = std::move(values);
      ratios[ms.name] = std::move(rs);
    }
    entry["ratio"] = std::move(ratios);
    latency.push_back(std::move(entry));
  }
  out["metrics"] = std::move(metrics);
  out["latency"] = std::move(latency);
  return out;
}

std::string per_run_note(const Comparison& c) {
  if (c.per_run.empty()) return "";
  return "not counted (they name the run, not its stack): " +
         join(c.per_run, ", ", [](const FieldValues& f) { return f.key; });
}

constexpr const char* kReading =
    "difference: input - baseline; ratio: input / baseline (a latency ratio below 1 and a samples_per_s ratio "
    "above 1 are faster than the baseline)";

}  // namespace

InputSpec parse_input_spec(const std::string& spec) {
  const std::size_t at = spec.rfind('@');
  if (at == std::string::npos || at + 1 == spec.size() || at == 0) return {spec, std::nullopt};
  const std::string tail = spec.substr(at + 1);
  if (tail.size() > 18 || !std::all_of(tail.begin(), tail.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return {spec, std::nullopt};
  return {spec.substr(0, at), std::stoll(tail)};
}

const io::Evaluation& pick_evaluation(const std::string& label, const std::vector<io::Evaluation>& evaluations,
                                      std::optional<std::int64_t> id) {
  const std::string shown = sys::printable(label);
  if (evaluations.empty())
    throw std::invalid_argument(shown + ": no evaluation is recorded in it (no /evaluations); run `ranktune eval " +
                                shown + "` first");
  if (!id)
    return *std::max_element(evaluations.begin(), evaluations.end(),
                             [](const io::Evaluation& a, const io::Evaluation& b) { return a.id < b.id; });
  for (const io::Evaluation& ev : evaluations)
    if (ev.id == *id) return ev;
  throw std::invalid_argument(shown + ": no evaluation " + std::to_string(*id) + "; it has evaluation" +
                              (evaluations.size() == 1 ? " " : "s ") +
                              join(evaluations, ", ", [](const io::Evaluation& e) { return std::to_string(e.id); }) +
                              " (FILE@ID picks one; without @ID the newest)");
}

std::map<std::string, std::string> stack_fields(const json& manifest) {
  if (!manifest.is_object()) throw std::invalid_argument("the manifest is not a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : manifest.items())
    if (k != "evaluations" && k != "command_line") flatten(k, v, out);
  // Per trial: the distinct values of each field over the trials, in the order seen.
  std::map<std::string, std::vector<std::string>> per_trial;
  if (manifest.contains("evaluations") && manifest["evaluations"].is_array())
    for (const json& e : manifest["evaluations"]) {
      if (!e.is_object()) continue;
      std::map<std::string, std::string> fields;
      for (const auto& [k, v] : e.items())
        if (!kModelKeys.contains(k)) flatten(k, v, fields);
      for (auto& [k, v] : fields) {
        auto& seen = per_trial[k];
        if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(std::move(v));
      }
    }
  for (const auto& [k, values] : per_trial) {
    const std::string joined = join(values, " | ", as_is);
    // A top-level key of the same name (none today) keeps its value; the trials' goes beside it.
    out[out.contains(k) ? "evaluations." + k : k] = joined;
  }
  return out;
}

bool is_per_run_field(const std::string& key) {
  static const std::set<std::string> kLast = {"created", "timestamp", "time", "date", "pid"};
  static const std::set<std::string> kKeys = {"stack.slurm_job_id", "stack.slurm_restart_count"};
  const std::size_t dot = key.rfind('.');
  return kKeys.contains(key) || kLast.contains(dot == std::string::npos ? key : key.substr(dot + 1));
}

double ratio(double value, double baseline) {
  if (!std::isfinite(value) || !std::isfinite(baseline) || baseline <= 0) return std::numeric_limits<double>::quiet_NaN();
  return value / baseline;
}

Comparison compare_evaluations(const std::vector<CompareInput>& inputs) {
  if (inputs.size() < 2)
    throw std::invalid_argument("compare needs 2 or more evaluations (FILE or FILE@ID each); got " +
                                std::to_string(inputs.size()));
  Comparison c;
  std::vector<std::vector<Keyed>> models;
  std::vector<std::map<std::string, std::string>> fields;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    c.labels.push_back(inputs[i].label);
    io::Evaluation head = inputs[i].evaluation;
    head.metrics.clear();
    head.latency.clear();
    head.manifest.clear();
    c.evaluations.push_back(std::move(head));
    models.push_back(models_of(i, inputs[i].label, inputs[i].evaluation));
    fields.push_back(stack_fields(json::parse(inputs[i].evaluation.manifest)));  // parsed by models_of already
    for (const io::EvalMetricRow& m : inputs[i].evaluation.metrics)
      if (std::find(c.metrics.begin(), c.metrics.end(), m.metric) == c.metrics.end()) c.metrics.push_back(m.metric);
    for (const io::EvalLatencyRow& l : inputs[i].evaluation.latency)
      if (std::find(c.batch_sizes.begin(), c.batch_sizes.end(), l.batch_size) == c.batch_sizes.end())
        c.batch_sizes.push_back(l.batch_size);
  }

  // Matching: the k-th model with a (config, crc) in one input is the k-th with it in each.
  std::vector<std::vector<bool>> used(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) used[i].assign(models[i].size(), false);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    for (std::size_t j = 0; j < models[i].size(); ++j) {
      if (used[i][j]) continue;
      const Keyed& key = models[i][j];
      ComparedModel m{key.config, key.crc32c, {}};
      for (std::size_t other = 0; other < inputs.size(); ++other) {
        if (other < i) continue;  // an earlier input had it, it would have been taken there
        for (std::size_t n = 0; n < models[other].size(); ++n)
          if (!used[other][n] && models[other][n].config == key.config && models[other][n].crc32c == key.crc32c) {
            used[other][n] = true;
            m.results.push_back(models[other][n].result);
            break;
          }
      }
      (m.results.size() == inputs.size() ? c.matched : c.unmatched).push_back(std::move(m));
    }
  if (c.matched.empty()) {
    std::string held;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      held += "; " + sys::printable(inputs[i].label) + " evaluated " +
              (models[i].empty() ? std::string("no trial")
                                 : "trials " + join(models[i], ", ", [](const Keyed& k) {
                                     return std::to_string(k.result.trial) + " (checkpoint " + k.crc32c + ")";
                                   }));
    throw std::invalid_argument("no model was evaluated in every input (models are matched by their trial's config and "
                                "checkpoint CRC-32C)" + held +
                                ". Compare evaluations of the same checkpoints: the same results file, or a copy of it");
  }

  std::set<std::string> keys;
  for (const auto& f : fields)
    for (const auto& [k, v] : f) keys.insert(k);
  for (const std::string& k : keys) {
    FieldValues fv{k, {}};
    for (const auto& f : fields) fv.values.push_back(f.contains(k) ? std::optional<std::string>(f.at(k)) : std::nullopt);
    if (std::all_of(fv.values.begin(), fv.values.end(), [&](const auto& v) { return v == fv.values[0]; })) continue;
    (is_per_run_field(k) ? c.per_run : c.differing).push_back(std::move(fv));
  }
  return c;
}

std::string render_comparison(const Comparison& c, Format format) {
  switch (format) {
    case Format::Csv: return render_csv(tidy_grid(c));
    case Format::Json: {
      json inputs = json::array();
      for (std::size_t i = 0; i < c.labels.size(); ++i) {
        const io::Evaluation& ev = c.evaluations[i];
        inputs.push_back({{"input", i + 1}, {"label", c.labels[i]}, {"evaluation", ev.id}, {"created", ev.created},
                          {"device", ev.device}, {"threads", ev.threads}});
      }
      json matched = json::array(), unmatched = json::array();
      for (const ComparedModel& m : c.matched) matched.push_back(model_json(c, m, true));
      for (const ComparedModel& m : c.unmatched) unmatched.push_back(model_json(c, m, false));
      const json doc = {{"baseline", 1},
                        {"inputs", std::move(inputs)},
                        {"differing_fields", fields_json(c.differing)},
                        {"per_run_fields", fields_json(c.per_run)},
                        {"models", std::move(matched)},
                        {"unmatched", std::move(unmatched)}};
      return sys::printable_json(doc.dump(2, ' ', false, json::error_handler_t::replace)) + "\n";
    }
    case Format::Markdown: {
      std::string out = "### Comparison of " + std::to_string(c.labels.size()) + " evaluations\n\n";
      for (const std::string& line : input_lines(c)) out += "- " + markdown_escape(line) + "\n";
      out += "\n#### Stack fields that differ (" + std::to_string(c.differing.size()) + ")\n\n" +
             (c.differing.empty() ? std::string("none\n") : render_markdown_table(fields_grid(c, c.differing)));
      if (!c.per_run.empty()) out += "\n" + markdown_escape(per_run_note(c)) + "\n";
      out += "\n#### Models (matched by trial config and checkpoint CRC-32C)\n\n" + render_markdown_table(models_grid(c));
      out += "\n" + std::string(kReading) + "\n\n#### Held-out metrics\n\n" + render_markdown_table(metrics_grid(c));
      if (!c.batch_sizes.empty()) out += "\n#### Latency and throughput\n\n" + render_markdown_table(latency_grid(c));
      return out;
    }
    case Format::Table: break;
  }
  std::string out = "comparison of " + std::to_string(c.labels.size()) + " evaluations\n";
  for (const std::string& line : input_lines(c)) out += "  " + line + "\n";
  out += "\nstack fields that differ: " + std::to_string(c.differing.size()) + "\n";
  if (!c.differing.empty()) out += render_table(fields_grid(c, c.differing));
  if (!c.per_run.empty()) out += one_line(per_run_note(c)) + "\n";
  out += "\nmodels: " + std::to_string(c.matched.size()) + " matched by trial config and checkpoint CRC-32C, " +
         std::to_string(c.unmatched.size()) + " unmatched (in some inputs only)\n" + render_table(models_grid(c));
  out += "\n" + std::string(kReading) + "\n\nheld-out metrics\n" + render_table(metrics_grid(c));
  if (!c.batch_sizes.empty()) out += "\nlatency and throughput\n" + render_table(latency_grid(c));
  return out;
}

std::string comparison_html_section(const Comparison& c) {
  std::string out = "<h2>Comparison of evaluations (ranktune compare)</h2>\n<ul>\n";
  for (const std::string& line : input_lines(c)) out += "<li>" + html_escape(line) + "</li>\n";
  out += "</ul>\n<h3>Stack fields that differ (" + std::to_string(c.differing.size()) + ")</h3>\n" +
         (c.differing.empty() ? std::string("<p>none</p>\n") : render_html_table(fields_grid(c, c.differing)));
  if (!c.per_run.empty()) out += "<p class=\"note\">" + html_escape(per_run_note(c)) + "</p>\n";
  out += "<h3>Models (matched by trial config and checkpoint CRC-32C)</h3>\n" + render_html_table(models_grid(c));
  out += "<p class=\"note\">" + html_escape(kReading) + "</p>\n<h3>Held-out metrics</h3>\n" +
         render_html_table(metrics_grid(c));
  if (!c.batch_sizes.empty()) out += "<h3>Latency and throughput</h3>\n" + render_html_table(latency_grid(c));
  return out;
}

}  // namespace ranktune::report
