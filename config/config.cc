// The experiment config (config/config.h): the sections, read with the validating reader
// (config_parser.h) from the TOML that config_toml.cc prepared, and the entry points
// parse_config and load_config. The [trainable] kind's own keys are train/'s to read
// (train/registry.h); here they are kept, with where each came from, in TrainableKeys.

#include "config/config.h"
#include "io/schema.h"

#include "config/config_parser.h"
#include "search/default_searcher.h"
#include "search/options.h"
#include "search/scheduler.h"
#include "search/searcher.h"
#include "sys/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <toml.hpp>

namespace ranktune::config {
namespace {

namespace fs = std::filesystem;

// Columns of /trials in the results file; a parameter of the same name would collide.
const std::vector<std::string> kReservedColumns = io::trial_column_names();

// The experiment's name names the results file, and files beside it add to it (".logs",
// ".control", compact's ".NAME.compact-PID.tmp"): keep all of them under the 255 bytes a
// file name may have.
constexpr std::size_t kMaxNameLength = 128;
constexpr std::size_t kMaxResultsFileName = 200;
constexpr std::size_t kMaxResultsPath = 4000;  // of PATH_MAX = 4096, with room for the same

struct KindInfo {
  const char* name;
  search::DomainKind kind;
  std::size_t arity;  // 0: a list of values
  const char* hint;
};

const KindInfo kKinds[] = {
    {"uniform", search::DomainKind::Uniform, 2, "Write uniform = [low, high] with low < high."},
    {"loguniform", search::DomainKind::LogUniform, 2,
     "Use a positive lower bound such as 1e-6, below the upper bound."},
    {"quniform", search::DomainKind::QUniform, 3,
     "Write quniform = [low, high, q] with low < high and q > 0."},
    {"randint", search::DomainKind::RandInt, 2,
     "Write randint = [low, high] with integers low < high (high is excluded)."},
    {"choice", search::DomainKind::Choice, 0,
     "List at least one value: all numbers or all strings."},
    {"grid", search::DomainKind::Grid, 0, "List at least one value: all numbers or all strings."},
};

const KindInfo& kind_info(search::DomainKind k) {
  for (const auto& info : kKinds)
    if (info.kind == k) return info;
  throw std::logic_error("unknown DomainKind");
}
}  // namespace

namespace config_detail {

const char* domain_kind_name(search::DomainKind k) { return kind_info(k).name; }

// The results file and the files beside it must be creatable: a name too long for the
// file system failed only at `run`, with "File name too long".
void Parser::check_results_path(const toml::value* at, const std::string& key, const std::string& path) const {
  const auto too_long = [&](const std::string& what, std::size_t size, std::size_t max) {
    fail(at, key,
         what + " is " + std::to_string(size) + " characters long; at most " + std::to_string(max) +
             " are allowed (got \"" + sys::excerpt(path) +
             "\"). It and the files beside it must fit the file system's limits; use a shorter one");
  };
  if (path.size() > kMaxResultsPath) too_long("the results path", path.size(), kMaxResultsPath);
  const fs::path p(path);
  if (p.filename().string().size() > kMaxResultsFileName)
    too_long("the results file's name", p.filename().string().size(), kMaxResultsFileName);
  for (const auto& part : p)
    if (part.string().size() > NAME_MAX) too_long("a folder of the results path", part.string().size(), NAME_MAX);
}

// The trials the experiment plans, counted before any searcher is built: num_samples x the
// grid x repeat wrapped around int64 (10^24 became 2003764205206896640), and a grid of 10^6
// points with num_samples = 2^63 - 1 started no trial at all.
void Parser::check_trial_count(const Table& e, const Table& s, const ExperimentConfig& cfg) const {
  const bool crossed = cfg.algorithm == "random" || cfg.algorithm == "grid";
  double points = 1;  // a double: the product of many axes overflows any integer
  for (const auto& p : cfg.space.params)
    if (crossed && (p.domain.kind == search::DomainKind::Grid ||
                    (cfg.algorithm == "grid" && p.domain.kind == search::DomainKind::Choice)))
      points *= static_cast<double>(p.domain.values.size());
  const auto max = static_cast<double>(search::kMaxTrials);
  if (points > max)
    fail(find(s, "space"), s.key("space"),
         "the grid has " + human(points) + " points (the product of the sizes of its axes); at most " +
             human(max) + " are allowed (configs/README.md, \"Limits\"). Use fewer values");
  double repeat = 1;
  if (const auto it = cfg.search_options.find("repeat"); it != cfg.search_options.end())
    if (const auto* r = std::get_if<std::int64_t>(&it->second); r && *r >= 1 && *r <= search::kMaxRepeat)
      repeat = static_cast<double>(*r);
  const double trials = static_cast<double>(cfg.num_samples) * points * repeat;
  if (trials > max)
    fail(find(e, "num_samples") ? find(e, "num_samples") : e.v, e.key("num_samples"),
         "num_samples (" + std::to_string(cfg.num_samples) + ") x grid points (" + human(points) +
             ") x repeat (" + human(repeat) + ") makes " + human(trials) + " trials; at most " + human(max) +
             " are allowed (configs/README.md, \"Limits\"). Lower num_samples");
}

search::Domain Parser::domain(const toml::value& v, const std::string& path) const {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& info : kKinds) n.push_back(info.name);
    return n;
  }();
  const std::string example = "Write e.g. " + path.substr(path.rfind('.') + 1) +
                              " = { uniform = [0.0, 1.0] }; kinds: " + quoted_list(names);
  if (!v.is_table()) wrong_type(v, path, "an inline table naming one domain", example);
  const auto& table = v.as_table();
  if (table.size() != 1)
    fail(&v, path,
         "a domain names exactly one kind (got " + std::to_string(table.size()) + "). " + example);
  const auto& [name, arr] = *table.begin();
  const auto info = std::find_if(std::begin(kKinds), std::end(kKinds),
                                 [&](const KindInfo& i) { return name == i.name; });
  if (info == std::end(kKinds)) {
    const auto s = did_you_mean(name, names);
    fail(&arr, path,
         "unknown domain kind '" + name + "'. " +
             (s.empty() ? example : "Did you mean '" + s + "'?"));
  }
  if (!arr.is_array()) wrong_type(arr, path, std::string("an array after ") + info->name);
  const auto& items = arr.as_array();

  search::Domain d;
  d.kind = info->kind;
  if (info->arity != 0) {
    if (items.size() != info->arity)
      fail(&arr, path,
           std::string(info->name) + " takes " + std::to_string(info->arity) + " numbers (got " +
               std::to_string(items.size()) + "). " + info->hint);
    double nums[3] = {0, 0, 0};
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (d.kind == search::DomainKind::RandInt && !items[i].is_integer())
        fail(&arr, path, "randint bounds must be integers (got " + human(arr) + "). " + info->hint);
      convert(items[i], path, nums[i]);
    }
    d.low = nums[0];
    d.high = nums[1];
    d.q = nums[2];
  } else {
    // Numbers and strings cannot share a column; ints mixed with floats become floats.
    bool any_float = false, any_number = false, any_string = false;
    for (const auto& e : items) {
      check_fits(e, path);
      if (e.is_floating()) {
        any_float = true;
        double x;
        convert(e, path, x);  // rejects nan/inf
      }
      if (!e.is_integer() && !e.is_floating() && !e.is_string())
        fail(&e, path,
             std::string(info->name) + " values must be numbers or strings (got " + type_name(e) +
                 "). " + info->hint);
      (e.is_string() ? any_string : any_number) = true;
    }
    if (any_number && any_string)
      fail(&arr, path,
           std::string(info->name) + " values mix numbers and strings (got " + human(arr) + "). " +
               info->hint);
    for (const auto& e : items) {
      if (e.is_string())
        d.values.emplace_back(e.as_string().str);
      else if (any_float)
        d.values.emplace_back(e.is_integer() ? double(e.as_integer()) : e.as_floating());
      else
        d.values.emplace_back(e.as_integer());
    }
  }
  // The numeric invariants live in search::check_domain; only the wording of the hint is ours.
  if (std::string problem = search::check_domain(d); !problem.empty()) {
    while (!problem.empty() && (problem.back() == '.' || problem.back() == ' ')) problem.pop_back();
    if (problem.find("(got") == std::string::npos) problem += " (got " + human(arr) + ")";
    fail(&arr, path, problem + ". " + info->hint);
  }
  return d;
}

void Parser::read_space(const Table& t, search::Space& space) const {
  const auto params = entries(t);
  if (params.empty())
    fail(t.v, t.path, "no parameters. Add at least one, e.g. x = { uniform = [0.0, 1.0] }");
  // Each parameter is a column of the results file's /trials (io/schema.h, the limits): said
  // here, at once, rather than by HDF5 once the run has started.
  if (params.size() > io::kMaxParams)
    fail(t.v, t.path,
         std::to_string(params.size()) + " parameters; at most " + std::to_string(io::kMaxParams) +
             " are allowed (configs/README.md, \"Limits\"): each is a column of the results file. Search fewer at once");
  std::size_t row_bytes = 0;
  const std::size_t fixed_header = io::trial_row_type_bytes({});
  std::size_t header = fixed_header;
  for (const auto& [name, v] : params) {
    const std::string path = t.key(*name);
    const bool ident = !name->empty() && !std::isdigit(static_cast<unsigned char>(name->front())) &&
                       name->front() != '.' &&
                       std::all_of(name->begin(), name->end(), [](unsigned char c) {
                         return std::isalnum(c) || c == '_' || c == '.';
                       });
    if (!ident)
      fail(v, path,
           "parameter name \"" + sys::excerpt(*name) +
               "\" is not an identifier. Use letters, digits, "
               "'_' and '.', starting with a letter or '_'");
    if (contains(kReservedColumns, *name))
      fail(v, path,
           "parameter name \"" + *name +
               "\" is reserved for a results column. "
               "Rename it (reserved: " +
               quoted_list(kReservedColumns) + ")");
    space.params.push_back(param(*name, *v, path));
    // Its column's bytes in each /trials row, as StoreSchema::from sizes it.
    std::size_t width = 8;
    for (const auto& value : space.params.back().domain.values)
      if (const auto* s = std::get_if<std::string>(&value)) width = std::max(width, s->size());
    if (width > io::kMaxParamRowBytes)
      fail(v, path,
           "a listed value is " + std::to_string(width) + " bytes long; at most " + std::to_string(io::kMaxParamRowBytes) +
               " are allowed (configs/README.md, \"Limits\"): the results file keeps it in a column of that width");
    row_bytes += width;
    if (row_bytes > io::kMaxParamRowBytes)
      fail(v, path,
           "the parameters up to this one take " + std::to_string(row_bytes) + " bytes of each row of the results file "
           "(8 a number, the longest listed value a string); at most " + std::to_string(io::kMaxParamRowBytes) +
           " are allowed (configs/README.md, \"Limits\"). Shorten the listed strings");
    header += io::trial_row_type_bytes({*name}) - fixed_header;
    if (header > io::kMaxRowTypeBytes)
      fail(v, path,
           "the names of the parameters up to this one take about " + std::to_string(header) +
               " bytes of the results file's /trials header (each name and 25 bytes); at most " +
               std::to_string(io::kMaxRowTypeBytes) + " fit (configs/README.md, \"Limits\"). Use shorter names or fewer parameters");
  }
  check_conditions(t, space);
}

// A parameter as written: a plain value (fixed: a choice of that one value), or a domain
// with an optional `when` condition.
search::Param Parser::param(const std::string& name, const toml::value& v, const std::string& path) const {
  if (v.is_integer() || v.is_floating() || v.is_string()) {
    search::Domain d;
    d.kind = search::DomainKind::Choice;
    if (v.is_string()) {
      d.values.emplace_back(v.as_string().str);
    } else if (v.is_integer()) {
      check_fits(v, path);
      d.values.emplace_back(static_cast<std::int64_t>(v.as_integer()));
    } else {
      double x = 0;
      convert(v, path, x);
      d.values.emplace_back(x);
    }
    return {name, std::move(d), {}, /*fixed=*/true};
  }
  if (v.is_boolean())
    fail(&v, path,
         "a fixed value must be a number or a string (got " + human(v) + "); write " + name + " = " +
             (v.as_boolean() ? "1" : "0") + " or " + name + " = \"" + (v.as_boolean() ? "true" : "false") + "\"");
  const toml::value* when = v.is_table() ? find(Table{&v, path}, "when") : nullptr;
  if (when == nullptr) return {name, domain(v, path)};
  toml::value rest = v;
  rest.as_table().erase("when");
  if (rest.as_table().empty())
    fail(&v, path, "a condition needs a domain beside it, e.g. " + name + " = { uniform = [0.0, 1.0], when = \"a == 1\" }");
  search::Param p{name, domain(rest, path)};
  std::string text, why;
  convert(*when, path + ".when", text);
  if (!search::parse_condition(text, p.when, why))
    fail(when, path + ".when", "bad condition \"" + sys::excerpt(text) + "\": " + why +
                                   ". The language: comparisons (==, !=, <, <=, >, >=), in [...], not in [...], and, or, "
                                   "parentheses; strings in quotes (configs/README.md, \"Conditional parameters\")");
  return p;
}

// Each condition names other parameters of the space, with values of their type, and none
// depends on itself: said at the `when` that is wrong.
void Parser::check_conditions(const Table& t, const search::Space& space) const {
  const auto when_of = [&](const std::string& name) { return find(Table{find(t, name), t.key(name)}, "when"); };
  for (const search::Param& p : space.params) {
    if (!p.conditional()) continue;
    if (const std::string why = search::check_condition(p.when, space, p.name); !why.empty())
      fail(when_of(p.name), t.key(p.name) + ".when", "in \"" + sys::excerpt(p.when.text) + "\": " + why);
  }
  if (const std::string cycle = search::check_condition_cycles(space); !cycle.empty()) {
    const std::string first = cycle.substr(0, cycle.find(' '));
    fail(when_of(first), t.key(first) + ".when",
         "the conditions depend on each other in a cycle (" + cycle + "), so none can be decided. Break the cycle");
  }
}

// `[search] points_to_evaluate = [ { lr = 0.01, ... }, ... ]`: each a complete config of the
// space (fixed values may be left out), its values in their domains, and no value for a
// parameter whose condition fails there.
void Parser::read_points(const Table& s, ExperimentConfig& cfg) const {
  const toml::value* v = find(s, "points_to_evaluate");
  if (v == nullptr) return;
  const std::string key = s.key("points_to_evaluate");
  const std::string example = "Write e.g. points_to_evaluate = [ { lr = 0.01 }, { lr = 0.1 } ]";
  if (!v->is_array()) wrong_type(*v, key, "an array of inline tables", example);
  const auto& items = v->as_array();
  if (items.size() > static_cast<std::size_t>(search::kMaxTrials))
    fail(v, key, std::to_string(items.size()) + " points; at most " + std::to_string(search::kMaxTrials) + " are allowed");
  for (std::size_t i = 0; i < items.size(); ++i) {
    const toml::value& point = items[i];
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!point.is_table()) wrong_type(point, at, "an inline table of parameter values", example);
    search::Config config;
    for (const auto& [name, value] : entries(Table{&point, at})) {
      const std::string where = at + "." + *name;
      const search::Param* p = cfg.space.find(*name);
      if (p == nullptr) {
        std::vector<std::string> all;
        for (const auto& q : cfg.space.params) all.push_back(q.name);
        const std::string near = did_you_mean(*name, all);
        fail(value, where, "'" + sys::excerpt(*name) + "' is not a parameter of the search space" +
                               (near.empty() ? "; valid: " + quoted_list(all) : ". Did you mean '" + near + "'?"));
      }
      search::Value x;
      const search::ValueType type = p->domain.type();
      if (type == search::ValueType::String) {
        std::string text;
        convert(*value, where, text);
        x = text;
      } else if (type == search::ValueType::Int) {
        std::int64_t n = 0;
        convert(*value, where, n);
        x = n;
      } else {
        double d = 0;
        convert(*value, where, d);
        x = d;
      }
      if (const std::string why = search::outside_domain(p->domain, x); !why.empty())
        fail(value, where, why + (p->fixed ? " (a fixed value); leave it out" : ""));
      config[*name] = std::move(x);
    }
    for (const auto& p : cfg.space.params)
      if (p.fixed && !config.contains(p.name)) config[p.name] = p.domain.values.front();
    search::Config active = config;
    search::drop_inactive(cfg.space, active);
    for (const auto& p : cfg.space.params) {
      if (config.contains(p.name) && !active.contains(p.name))
        fail(&point, at + "." + p.name,
             "'" + p.name + "' is inactive in this point (its condition \"" + sys::excerpt(p.when.text) +
                 "\" does not hold): leave it out");
      if (!config.contains(p.name) && (!p.conditional() || search::holds(p.when, active)))
        fail(&point, at, "gives no value for '" + p.name + "'; a point needs every active parameter");
    }
    cfg.points_to_evaluate.push_back(std::move(active));
  }
}

// `[scheduler] mutable`: the parameters PBT's explore and `ctl set` may change (the trainable
// refuses its shape-changing ones, train::validate).
void Parser::read_mutable(const Table& sch, ExperimentConfig& cfg) const {
  const toml::value* v = find(sch, "mutable");
  if (v == nullptr) return;
  const std::string key = sch.key("mutable");
  std::vector<std::string> names;
  convert(*v, key, names);
  if (names.empty())
    fail(v, key, "is empty: name the parameters that may change, e.g. mutable = [\"lr\"], or omit it to let all change");
  std::vector<std::string> all;
  for (const auto& p : cfg.space.params) all.push_back(p.name);
  for (const std::string& n : names) {
    const search::Param* p = cfg.space.find(n);
    if (p == nullptr) {
      const std::string near = did_you_mean(n, all);
      fail(v, key, "'" + sys::excerpt(n) + "' is not a parameter of the search space" +
                       (near.empty() ? "; valid: " + quoted_list(all) : ". Did you mean '" + near + "'?"));
    }
    if (p->fixed) fail(v, key, "'" + n + "' is a fixed value ([search.space]): it never changes. Remove it from the list");
    if (std::count(names.begin(), names.end(), n) > 1) fail(v, key, "names '" + n + "' twice");
  }
  cfg.space.mutable_params = std::move(names);
}

namespace {

/// One `constraints` entry, "METRIC <= BOUND" or "METRIC >= BOUND"; nullopt when it is not of
/// that form. The metric is a name (letters, digits, '_', '.', '-', '/'), the bound a number.
std::optional<search::Constraint> parse_constraint(const std::string& text) {
  const auto op = text.find_first_of("<>");
  if (op == std::string::npos || op + 1 >= text.size() || text[op + 1] != '=') return std::nullopt;
  search::Constraint c;
  c.metric = trim(text.substr(0, op));
  c.at_most = text[op] == '<';
  const std::string bound = trim(text.substr(op + 2));
  if (c.metric.empty() || bound.empty()) return std::nullopt;
  for (const unsigned char ch : c.metric)
    if (!(std::isalnum(ch) || ch == '_' || ch == '.' || ch == '-' || ch == '/')) return std::nullopt;
  char* end = nullptr;
  c.bound = std::strtod(bound.c_str(), &end);
  if (end == bound.c_str() || *end != '\0' || !std::isfinite(c.bound)) return std::nullopt;
  return c;
}

}  // namespace

// [experiment] metric and mode: a string each (one objective), or lists of one name and one
// mode per objective; `constraints`: bounds on reported metrics. Several objectives or any
// constraint fill cfg.objectives; cfg.metric and cfg.mode are always the first objective.
void Parser::read_objectives(const Table& e, ExperimentConfig& cfg) const {
  const toml::value* m = find(e, "metric");
  const toml::value* md = find(e, "mode");
  if (m == nullptr) fail(e.v, e.key("metric"), "missing required key. Add metric = \"loss\" (or a list of metrics: metric = [\"val_accuracy\", \"params_m\"])");
  if (md == nullptr) fail(e.v, e.key("mode"), "missing required key. Add mode = \"max\" or \"min\" (a list, one per metric, when metric is a list)");
  std::vector<std::string> metrics, modes;
  const bool list = m->is_array();
  if (list) {
    read(e, "metric", metrics);
    if (metrics.empty()) fail(m, e.key("metric"), "is an empty list. Name the metric to optimize, or several");
  } else {
    metrics.emplace_back();
    read(e, "metric", metrics.front());
  }
  for (const std::string& name : metrics)
    if (name.empty()) fail(m, e.key("metric"), "names an empty metric. Name the metric to optimize");
  for (std::size_t i = 0; i < metrics.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (metrics[i] == metrics[j])
        fail(m, e.key("metric"), "names '" + sys::excerpt(metrics[i]) + "' twice. Each objective is one metric");
  if (md->is_array() != list) {
    if (list)
      fail(md, e.key("mode"), "is one mode, and metric is a list of " + std::to_string(metrics.size()) +
                                  ". Give one mode per metric: mode = [" +
                                  [&] {
                                    std::string out;
                                    for (std::size_t i = 0; i < metrics.size(); ++i) out += i ? ", \"max\"" : "\"max\"";
                                    return out;
                                  }() + "] (each \"max\" or \"min\")");
    fail(md, e.key("mode"), "is a list, and metric is one name. Give mode = \"max\" or \"min\", or list the metrics too");
  }
  if (list) {
    read(e, "mode", modes);
  } else {
    modes.emplace_back();
    read(e, "mode", modes.front());
  }
  if (modes.size() != metrics.size())
    fail(md, e.key("mode"), "lists " + std::to_string(modes.size()) + " modes for " + std::to_string(metrics.size()) +
                                " metrics. Give one mode (\"max\" or \"min\") per metric, in the same order");
  search::Objectives o;
  o.metrics = metrics;
  for (const std::string& mode : modes) {
    if (mode != "max" && mode != "min")
      fail(md, e.key("mode"), "'" + sys::excerpt(mode) + "' is not a mode. Valid values: \"max\", \"min\"");
    o.modes.push_back(mode == "max" ? search::Mode::Max : search::Mode::Min);
  }
  if (std::vector<std::string> constraints; read(e, "constraints", constraints)) {
    const toml::value* c = find(e, "constraints");
    for (std::size_t i = 0; i < constraints.size(); ++i) {
      const toml::value* at = c->is_array() && i < c->as_array().size() ? &c->as_array()[i] : c;
      const auto parsed = parse_constraint(constraints[i]);
      if (!parsed)
        fail(at, e.key("constraints"), "\"" + sys::excerpt(constraints[i]) +
                                           "\" is not a constraint. Write \"METRIC <= BOUND\" or \"METRIC >= BOUND\" "
                                           "with a reported metric and a finite number (\"latency_ms <= 2.0\")");
      for (const search::Constraint& earlier : o.constraints)
        if (earlier == *parsed) fail(at, e.key("constraints"), "\"" + sys::excerpt(constraints[i]) + "\" is given twice");
      o.constraints.push_back(*parsed);
    }
  }
  cfg.metric = o.metrics.front();
  cfg.mode = o.modes.front();
  if (o.multi()) cfg.objectives = std::move(o);
}

// [trainable]: only the kind here. Its own keys are the kind's to read (train/registry.h);
// parse_config hands them over, with this reader, as TrainableKeys.
void Parser::read_trainable(const Table& t, ExperimentConfig& cfg) const { read(t, "kind", cfg.trainable.kind); }

void Parser::parse(const toml::value& root, ExperimentConfig& cfg) {
  const Table top{&root, ""};
  record_lines(top, cfg.lines);
  check_keys(top, {"experiment", "search", "scheduler", "trainable", "stop", "resources", "checkpoint", "report"});

  const Table e = sub(top, "experiment", true);
  check_keys(e, {"name", "metric", "mode", "constraints", "seed", "num_samples", "results", "max_failures",
                 "non_finite", "flush_interval_ms", "status_interval_s"});
  read_required(e, "name", cfg.name, "\"my_experiment\"");
  if (cfg.name.empty() || !std::all_of(cfg.name.begin(), cfg.name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '.' || c == '-';
      }))
    fail(find(e, "name"), e.key("name"),
         "must match [A-Za-z0-9_.-]+ (got \"" + sys::excerpt(cfg.name) +
             "\"). It names the results file; use letters, "
             "digits, '_', '.' and '-'");
  if (cfg.name.size() > kMaxNameLength)
    fail(find(e, "name"), e.key("name"),
         "is " + std::to_string(cfg.name.size()) + " characters long; at most " +
             std::to_string(kMaxNameLength) + " are allowed (got \"" + sys::excerpt(cfg.name) +
             "\"). It names the results file and the files beside it; use a shorter name");
  read_objectives(e, cfg);
  std::int64_t seed = 0;
  read_min(e, "seed", seed, std::int64_t{0});
  cfg.seed = static_cast<std::uint64_t>(seed);
  read_range(e, "num_samples", cfg.num_samples, std::int64_t{1}, search::kMaxTrials);
  std::string results = cfg.name + ".h5";
  if (read(e, "results", results) && results.empty())
    fail(find(e, "results"), e.key("results"),
         "must not be empty. Omit it to use \"" + cfg.name + ".h5\"");
  cfg.results = fs::absolute(results).lexically_normal().string();
  check_results_path(find(e, "results") ? find(e, "results") : find(e, "name"),
                     find(e, "results") ? e.key("results") : e.key("name"), cfg.results);
  read_min(e, "max_failures", cfg.max_failures, 0);
  read_enum(e, "non_finite", {"error", "worst"}, cfg.non_finite);
  read_range(e, "flush_interval_ms", cfg.flush_interval_ms, 0.0, search::kMaxSeconds * 1000, /*strict=*/true);
  read_range(e, "status_interval_s", cfg.status_interval_s, 0.0, search::kMaxSeconds, /*strict=*/true);

  // The algorithms own their options: the keys besides algorithm/kind pass through, and
  // the factories check them (see search/options.h).
  const Table s = sub(top, "search", true);
  read_enum(s, "algorithm", search::searcher_names(), cfg.algorithm);
  read_space(sub(s, "space", true), cfg.space);
  if (find(s, "algorithm") == nullptr) {
    // No algorithm named: the one the search-quality suite measured best for the space; with
    // several objectives or constraints, MOTPE (only some searchers take them: gp, the
    // default for small numeric spaces, does not).
    const search::DefaultSearcher d = search::default_searcher(cfg.space);
    cfg.algorithm = cfg.objectives.multi() ? "tpe" : d.algorithm;
    cfg.algorithm_reason = cfg.objectives.multi() ? "several objectives or constraints: MOTPE (tpe), which takes them "
                                                    "and whose pair with MO-ASHA is the recommended one (docs/guide/"
                                                    "multi-objective.md)"
                                                  : d.reason;
  }
  read_options(s, {"algorithm", "space", "points_to_evaluate", "warm_start"}, cfg.search_options);
  if (std::vector<std::string> files; read(s, "warm_start", files)) {
    for (const std::string& f : files) {
      if (f.empty()) fail(find(s, "warm_start"), s.key("warm_start"), "names an empty path; give earlier results files");
      cfg.warm_start.push_back(fs::absolute(f).lexically_normal().string());
    }
  }
  read_points(s, cfg);
  check_trial_count(e, s, cfg);

  const Table sch = sub(top, "scheduler", false);
  read_enum(sch, "kind", search::scheduler_names(), cfg.scheduler);
  cfg.scheduler_given = find(sch, "kind") != nullptr;
  read_options(sch, {"kind", "mutable"}, cfg.scheduler_options);
  read_mutable(sch, cfg);

  read_trainable(sub(top, "trainable", true), cfg);

  const Table st = sub(top, "stop", false);
  check_keys(st, {"max_t", "time_budget_s", "max_total_steps", "target"});
  read_range(st, "max_t", cfg.max_t, std::int64_t{1}, search::kMaxIterations);
  read_range(st, "time_budget_s", cfg.time_budget_s, 0.0, search::kMaxSeconds);
  read_range(st, "max_total_steps", cfg.max_total_steps, std::int64_t{0}, search::kMaxIterations);
  if (double target = 0; read(st, "target", target)) cfg.target = target;

  const Table ck = sub(top, "checkpoint", false);
  check_keys(ck, {"every", "at_end", "keep_last", "keep_best", "fsync"});
  read_range(ck, "every", cfg.checkpoint_every, std::int64_t{0}, search::kMaxIterations);
  read(ck, "at_end", cfg.checkpoint_at_end);
  read_range(ck, "keep_last", cfg.checkpoint_keep_last, std::int64_t{0}, search::kMaxIterations);
  read_range(ck, "keep_best", cfg.checkpoint_keep_best, std::int64_t{0}, search::kMaxIterations);
  read(ck, "fsync", cfg.checkpoint_fsync);

  const Table r = sub(top, "resources", false);
  check_keys(r, {"ranks_per_trial"});
  read_min(r, "ranks_per_trial", cfg.ranks_per_trial, 1);
  // Whether the trainable can run as a gang is its kind's to say (train::read_trainable).

  const Table rp = sub(top, "report", false);
  check_keys(rp, {"html", "html_interval_s"});
  if (std::string html; read(rp, "html", html)) {
    if (html.empty()) fail(find(rp, "html"), rp.key("html"), "must not be empty. Omit it for no live page");
    cfg.report_html = fs::absolute(html).lexically_normal().string();
    // Said now rather than at the first page, minutes into the run.
    const fs::path folder = fs::path(cfg.report_html).parent_path();
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
      fail(find(rp, "html"), rp.key("html"),
           "the folder " + folder.string() + " does not exist; make it, or give a page in a folder that does");
    if (fs::is_directory(cfg.report_html, ec))
      fail(find(rp, "html"), rp.key("html"), cfg.report_html + " is a folder; give the page's file name (run.html)");
  }
  read_range(rp, "html_interval_s", cfg.report_html_interval_s, 1.0, search::kMaxSeconds);
}

}  // namespace config_detail

using namespace config_detail;

ConfigError::ConfigError(std::string file, int line, std::string key, const std::string& message)
    : std::runtime_error([&] {
        // An override names itself ("--set KEY=VALUE", "--results PATH"): quote a long one
        // shortly, as values are.
        std::string s = (file.rfind("--", 0) == 0 ? sys::excerpt(file, 200) : file) +
                        (line > 0 ? ":" + std::to_string(line) : "") + ": " +
                        (key.empty() ? "" : sys::excerpt(key, 200) + ": ") + message;
        std::replace(s.begin(), s.end(), '\n', ' ');
        return s;
      }()),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)) {}

void ExperimentConfig::fail(const std::string& key, const std::string& message) const {
  fail_at(*this, display_name(path), key, message);
}

void config_detail::fail_at(const ExperimentConfig& cfg, const std::string& file, const std::string& key,
                            const std::string& message) {
  const auto& lines = cfg.lines;
  const auto& overrides = cfg.overrides;
  // The nearest recorded ancestor: a defaulted key is best pointed at by its section.
  for (std::string k = key;;) {
    if (const auto it = lines.find(k); it != lines.end()) {
      if (it->second > 0) throw ConfigError(file, it->second, key, message);
      // Line 0: the key came from an override; name the last one that set it, as it was
      // typed (a flag that stands for one is named as the flag).
      for (auto o = overrides.rbegin(); o != overrides.rend(); ++o) {
        const std::string set = trim(o->substr(0, o->find('=')));
        if (k == set || k.rfind(set + ".", 0) == 0 || set.rfind(k + ".", 0) == 0)
          throw ConfigError(override_name(*o, cfg.shown_overrides), 0, key, message);
      }
      break;
    }
    const auto dot = k.rfind('.');
    if (dot == std::string::npos) break;
    k.resize(dot);
  }
  throw ConfigError(file, 0, key, message);
}

ExperimentConfig parse_config(const std::string& text, const std::string& path,
                              const std::vector<std::string>& overrides,
                              const std::map<std::string, std::string>& shown) {
  const std::string file = display_name(path);
  toml::value root;
  LineMap lines;
  try {
    root = parse_toml(text, file, &lines);
  } catch (const toml::exception& e) {
    throw syntax_error(e, file, lines);
  }
  Parser parser(file, std::move(lines), overrides, shown);
  parser.remember_order(root);
  for (const auto& ov : overrides) apply_override(root, ov, override_name(ov, shown));

  ExperimentConfig cfg;
  cfg.path = path.empty() ? "" : fs::absolute(path).lexically_normal().string();
  cfg.text = text;
  cfg.overrides = overrides;
  for (const auto& ov : overrides)
    if (const auto it = shown.find(ov); it != shown.end()) cfg.shown_overrides.insert(*it);
  parser.parse(root, cfg);
  // The reader and the table go with the config: the kind reads its own keys later
  // (train::read_trainable), and its errors still name their file:line.
  cfg.trainable.keys = TrainableKeys(
      std::make_shared<const TrainableKeys::Impl>(TrainableKeys::Impl{std::move(parser), root.at("trainable")}));
  return cfg;
}

ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides,
                             const std::map<std::string, std::string>& shown) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw ConfigError(path, 0, "", "no such file. Check the path (see configs/ for examples)");
  if (!fs::is_regular_file(path, ec))
    throw ConfigError(path, 0, "", "not a regular file. Pass the path of a .toml config");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, 0, "", std::string("cannot be read: ") + std::strerror(errno));
  // Not `text << in.rdbuf()`: it fails on an empty file, which then read as an error with
  // whatever errno was left ("No such file or directory").
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw ConfigError(path, 0, "", std::string("cannot be read: ") + std::strerror(errno));
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw ConfigError(path, 0, "",
                      std::string(text.empty() ? "is empty" : "holds only blank space") +
                          ". Write a config there (configs/quickstart.toml is a small one to start from)");
  return parse_config(text, path, overrides, shown);
}


std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  return sys::closest_name(word, candidates);
}

search::SchedulerContext scheduler_context(const ExperimentConfig& cfg) {
  return {cfg.metric, cfg.mode, cfg.max_t, &cfg.space, cfg.seed, cfg.objectives};
}

}  // namespace ranktune::config
