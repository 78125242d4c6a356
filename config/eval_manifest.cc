// The evaluation manifest reader (config/eval_manifest.h), with the experiment config's
// typed reader: the same words, the same file:line:key in every error.
#include "config/eval_manifest.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "config/config_parser.h"
#include "search/options.h"

namespace ranktune::config {

using config_detail::LineMap;
using config_detail::Parser;
namespace fs = std::filesystem;

const std::vector<std::string>& eval_input_dtypes() {
  static const std::vector<std::string> v = {"float32", "float16", "bfloat16"};
  return v;
}

std::string split_prefix(const std::string& split) { return split + "_"; }

namespace {

// A batch size past this is not a latency measurement of one batch but of a data set.
constexpr std::int64_t kMaxBatch = 1 << 20;
// More classes than any top-k a classifier here could report.
constexpr int kMaxTopK = 1000;

// An array of integers in [min, max], each distinct.
template <class T>
std::vector<T> read_ints(const Parser& p, const Parser::Table& t, const std::string& k, T min, T max,
                         const std::string& example) {
  const toml::value* v = p.find(t, k);
  std::vector<T> out;
  if (!v) return out;
  if (!v->is_array()) p.wrong_type(*v, t.key(k), "an array of integers", "Write it as " + k + " = " + example);
  for (const auto& e : v->as_array()) {
    if (!e.is_integer())
      p.wrong_type(e, t.key(k), "an array of integers, with an element that is an integer",
                   "Write it as " + k + " = " + example);
    std::int64_t x = 0;
    p.convert(e, t.key(k), x);
    if (x < min || x > max)
      p.fail(&e, t.key(k),
             "holds " + std::to_string(x) + ", outside " + std::to_string(min) + ".." + std::to_string(max));
    if (std::find(out.begin(), out.end(), static_cast<T>(x)) != out.end())
      p.fail(&e, t.key(k), "holds " + std::to_string(x) + " twice. List each value once");
    out.push_back(static_cast<T>(x));
  }
  return out;
}

EvalPipeline read_pipeline(const Parser& p, const Parser::Table& t, const std::string& fallback_name) {
  p.check_keys(t, {"name", "normalize", "input_dtype"});
  EvalPipeline out;
  out.name = fallback_name;
  if (p.read(t, "name", out.name)) {
    if (out.name.empty() || out.name.size() > 48 ||
        out.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
            std::string::npos)
      p.fail(p.find(t, "name"), t.key("name"),
             "must be 1 to 48 letters, digits, '_', '-' or '.' (it names the evaluation in tables)");
  }
  p.read(t, "normalize", out.normalize);
  p.read_enum(t, "input_dtype", eval_input_dtypes(), out.input_dtype);
  return out;
}

// A pipeline nobody named is called after what it changes: "reference" for the training
// pipeline, else e.g. "raw_float16".
std::string default_name(const EvalPipeline& pl, std::size_t index) {
  if (pl.normalize && pl.input_dtype == "float32") return index == 0 ? "reference" : "pipeline" + std::to_string(index + 1);
  std::string name = pl.normalize ? "" : "raw";
  if (pl.input_dtype != "float32") name += (name.empty() ? "" : "_") + pl.input_dtype;
  return name;
}

EvalManifest parse(const std::string& text, const std::string& path) {
  toml::value root;
  LineMap lines;
  try {
    root = config_detail::parse_toml(text, path, &lines);
  } catch (const toml::exception& e) {
    throw config_detail::syntax_error(e, path, lines);
  }
  Parser p(path, std::move(lines), {}, {});
  p.remember_order(root);
  const Parser::Table top{&root, ""};
  p.check_keys(top, {"version", "data", "compute", "latency", "metrics", "pipeline"});

  EvalManifest m;
  m.path = fs::absolute(path).lexically_normal().string();
  m.text = text;
  if (!p.read(top, "version", m.version))
    p.fail(nullptr, "version",
           "missing required key. Start the manifest with version = " + std::to_string(kEvalManifestVersion) +
               " (the manifest format this build reads)");
  if (m.version != kEvalManifestVersion)
    p.fail(p.find(top, "version"), "version",
           "this build reads manifest version " + std::to_string(kEvalManifestVersion) + " only (got " +
               std::to_string(m.version) + "). Write it for version " + std::to_string(kEvalManifestVersion) +
               " or use the ranktune that reads it");

  const Parser::Table data = p.sub(top, "data", false);
  p.check_keys(data, {"split", "dir"});
  p.read_enum(data, "split", {"test", "validation"}, m.split);
  if (std::string dir; p.read(data, "dir", dir)) {
    if (dir.empty()) p.fail(p.find(data, "dir"), "data.dir", "must not be empty. Omit it to use the experiment's data");
    if (m.split != "test")
      p.fail(p.find(data, "dir"), "data.dir",
             "applies to split = \"test\" only: the validation split is the experiment's own, drawn from its "
             "training data. Remove data.dir or evaluate the test split");
    m.data_dir = (fs::path(m.path).parent_path() / dir).lexically_normal().string();
  }

  const Parser::Table compute = p.sub(top, "compute", false);
  p.check_keys(compute, {"device", "threads"});
  if (p.read(compute, "device", m.device)) {
    const bool cuda = m.device.rfind("cuda:", 0) == 0 && m.device.size() > 5 &&
                      m.device.find_first_not_of("0123456789", 5) == std::string::npos;
    if (m.device != "auto" && m.device != "cpu" && !cuda)
      p.fail(p.find(compute, "device"), "compute.device",
             "unknown device \"" + sys::excerpt(m.device) + "\". Valid: \"auto\", \"cpu\", \"cuda:N\"");
  }
  p.read_range(compute, "threads", m.threads, 1, 1024);

  const Parser::Table latency = p.sub(top, "latency", false);
  p.check_keys(latency, {"batch_sizes", "warmup", "repetitions", "max_repetitions", "budget_s"});
  if (p.find(latency, "batch_sizes"))
    m.batch_sizes = read_ints<std::int64_t>(p, latency, "batch_sizes", 1, kMaxBatch, "[1, 128] (or [] for no latency)");
  p.read_range(latency, "warmup", m.warmup, 0, 1000000);
  p.read_range(latency, "repetitions", m.min_batches, std::int64_t{1}, std::int64_t{100000000});
  p.read_range(latency, "max_repetitions", m.max_batches, std::int64_t{1}, std::int64_t{100000000});
  if (m.max_batches < m.min_batches)
    p.fail(p.find(latency, "max_repetitions") ? p.find(latency, "max_repetitions") : p.find(latency, "repetitions"),
           p.find(latency, "max_repetitions") ? "latency.max_repetitions" : "latency.repetitions",
           "max_repetitions (" + std::to_string(m.max_batches) + ") must be >= repetitions (" +
               std::to_string(m.min_batches) + ")");
  p.read_range(latency, "budget_s", m.latency_s, 0.0, search::kMaxSeconds);

  const Parser::Table metrics = p.sub(top, "metrics", false);
  p.check_keys(metrics, {"accuracy", "loss", "top_k", "confusion"});
  p.read(metrics, "accuracy", m.accuracy);
  p.read(metrics, "loss", m.loss);
  m.top_k = read_ints<int>(p, metrics, "top_k", 1, kMaxTopK, "[3, 5]");
  p.read(metrics, "confusion", m.confusion);
  if (!m.accuracy && !m.loss && m.top_k.empty() && !m.confusion)
    p.fail(metrics.v, "metrics", "turns every metric off. Keep at least one of accuracy, loss, top_k, confusion");

  // [pipeline] (one) or [[pipeline]] (several: one evaluation each, the first the reference).
  if (const toml::value* v = p.find(top, "pipeline")) {
    m.pipelines.clear();
    if (v->is_table()) {
      m.pipelines.push_back(read_pipeline(p, {v, "pipeline"}, ""));
    } else if (v->is_array()) {
      if (v->as_array().empty()) p.fail(v, "pipeline", "is empty. Give at least one [[pipeline]] or omit it");
      std::size_t i = 0;
      for (const auto& e : v->as_array()) {
        const std::string at = "pipeline[" + std::to_string(++i) + "]";
        if (!e.is_table()) p.wrong_type(e, at, "a table", "Write each as [[pipeline]] followed by its keys");
        m.pipelines.push_back(read_pipeline(p, {&e, at}, ""));
      }
    } else {
      p.wrong_type(*v, "pipeline", "a table", "Write it as [pipeline] or [[pipeline]] followed by its keys");
    }
    for (std::size_t i = 0; i < m.pipelines.size(); ++i) {
      auto& pl = m.pipelines[i];
      if (pl.name.empty()) pl.name = default_name(pl, i);
      for (std::size_t j = 0; j < i; ++j)
        if (m.pipelines[j].name == pl.name)
          p.fail(v, "pipeline", "names \"" + pl.name + "\" twice (pipelines " + std::to_string(j + 1) + " and " +
                                     std::to_string(i + 1) + "). Give each a distinct name");
    }
  }
  return m;
}

}  // namespace

EvalManifest read_eval_manifest(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ConfigError(path, 0, "", "no such file. Check the --manifest path");
  if (!fs::is_regular_file(path, ec)) throw ConfigError(path, 0, "", "not a regular file. Pass a .toml manifest");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, 0, "", std::string("cannot be read: ") + std::strerror(errno));
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw ConfigError(path, 0, "", std::string("cannot be read: ") + std::strerror(errno));
  if (text.size() > (1u << 20)) throw ConfigError(path, 0, "", "is over 1 MiB: not an evaluation manifest");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw ConfigError(path, 0, "", "is empty. Start it with version = 1 (configs/eval_sensitivity.toml is one)");
  return parse(text, path);
}

}  // namespace ranktune::config
