// The command trainable in evaluation mode (`ranktune eval`; train/command.h): the
// RANKTUNE_MODE and RANKTUNE_EVAL_* variables, the run of the program on a restored
// checkpoint, the lines of its ranktune.on_evaluate() and ranktune.time_inference(), and
// what the evaluation's manifest records of the command. The protocol is
// docs/command_protocol.md, "Evaluation mode".
#include "train/command.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "io/crc32c.h"
#include "io/json.h"

namespace ranktune::train {

namespace fs = std::filesystem;

namespace {

std::string join(const std::vector<std::int64_t>& v) {
  std::string out;
  for (const std::int64_t x : v) {
    if (!out.empty()) out += ',';
    out += std::to_string(x);
  }
  return out;
}

std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string excerpt(const std::string& line) { return line.size() > 80 ? line.substr(0, 80) + "..." : line; }

// "auto" is the script's GPU when this machine has one (its driver's device node), else
// the CPU; the script computes where RANKTUNE_DEVICE says, as in a trial.
std::string device_for(const std::string& asked) {
  if (asked != "auto") return asked;
  std::error_code ec;
  return fs::exists("/dev/nvidia0", ec) ? "cuda:0" : "cpu";
}

// A number of a latency line: present, finite and not negative.
double seconds_of(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
    throw std::invalid_argument(std::string("\"") + key + "\" is missing, negative or not a finite number");
  return it->get<double>();
}

std::int64_t count_of(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 1)
    throw std::invalid_argument(std::string("\"") + key + "\" is missing or not an integer >= 1");
  return it->get<std::int64_t>();
}

MeasuredLatency latency_from(const nlohmann::json& j) {
  MeasuredLatency l;
  l.batch_size = count_of(j, "batch_size");
  l.batches = count_of(j, "batches");
  l.mean_s = seconds_of(j, "mean_s");
  l.p50_s = seconds_of(j, "p50_s");
  l.p90_s = seconds_of(j, "p90_s");
  l.p99_s = seconds_of(j, "p99_s");
  l.max_s = seconds_of(j, "max_s");
  l.samples_per_s = seconds_of(j, "samples_per_s");
  // (Not mean <= max: a mean of equal times may round above them.)
  if (!(l.p50_s <= l.p90_s && l.p90_s <= l.p99_s && l.p99_s <= l.max_s))
    throw std::invalid_argument("its percentiles are out of order (p50 <= p90 <= p99 <= max)");
  // The split, sent by helpers since the latency traces: each part's percentiles, null (or
  // absent, from an older helper) where the part was not measured.
  const char* parts[] = {"pre", "inference", "post"};
  for (int i = 0; i < 3; ++i) {
    const std::string name = parts[i];
    const std::string keys[] = {name + "_p50_s", name + "_p90_s", name + "_p99_s"};
    for (int k = 0; k < 3; ++k)
      if (const auto it = j.find(keys[k]); it != j.end() && !it->is_null())
        l.parts_s[3 * i + k] = seconds_of(j, keys[k].c_str());
    const double* p = l.parts_s + 3 * i;
    const int given = std::isfinite(p[0]) + std::isfinite(p[1]) + std::isfinite(p[2]);
    if (given != 0 && given != 3)
      throw std::invalid_argument("\"" + keys[0] + "\", \"" + keys[1] + "\" and \"" + keys[2] +
                                  "\" must be all numbers or all null (not measured)");
    if (given == 3 && !(p[0] <= p[1] && p[1] <= p[2]))
      throw std::invalid_argument("the percentiles of " + name + " are out of order (p50 <= p90 <= p99)");
  }
  // The trace: [batch, start_s, total_s, pre_s, inference_s, post_s] per kept batch.
  if (const auto it = j.find("trace"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw std::invalid_argument("\"trace\" is not an array");
    for (const auto& b : *it) {
      const bool ok = b.is_array() && b.size() == 6 && b[0].is_number_integer() && b[0].get<std::int64_t>() >= 0 &&
                      b[0].get<std::int64_t>() < l.batches;
      if (!ok)
        throw std::invalid_argument("a \"trace\" entry is not [batch, start_s, total_s, pre_s, inference_s, post_s] "
                                    "with batch in 0.." + std::to_string(l.batches - 1) + ": " + b.dump());
      std::array<double, 6> row{static_cast<double>(b[0].get<std::int64_t>()), NAN, NAN, NAN, NAN, NAN};
      for (std::size_t k = 1; k < 6; ++k) {
        const bool optional = k >= 3;  // a part may be null: not measured
        if (optional && b[k].is_null()) continue;
        if (!b[k].is_number() || !std::isfinite(b[k].get<double>()) || b[k].get<double>() < 0)
          throw std::invalid_argument("a \"trace\" entry has a time that is not a finite number >= 0" +
                                      std::string(optional ? " or null" : "") + ": " + b.dump());
        row[k] = b[k].get<double>();
      }
      l.trace.push_back(row);
    }
  }
  return l;
}

}  // namespace

void CommandTrainable::set_mode_env(std::map<std::string, std::string>& env, const Context& context) {
  // Always set, so that a RANKTUNE_MODE inherited from a shell cannot put a trial in the
  // wrong mode.
  env["RANKTUNE_MODE"] = context.mode == "eval" ? "eval" : "train";
  eval_ = context.eval;
  compute_ = {};
  eval_workdir_ = spec_.workdir.empty() ? context.config_dir : spec_.workdir;
  if (context.mode != "eval") return;
  env["RANKTUNE_DEVICE"] = compute_.path = device_for(eval_.device);
  compute_.threads = eval_.threads > 0 ? eval_.threads : 1;
  env["RANKTUNE_EVAL_SPLIT"] = eval_.split;  // "test" unless a manifest asks for "validation"
  env["RANKTUNE_EVAL_BATCH_SIZES"] = join(eval_.batch_sizes);
  env["RANKTUNE_EVAL_WARMUP"] = std::to_string(eval_.warmup);
  env["RANKTUNE_EVAL_LATENCY_S"] = exact(eval_.latency_s);
  env["RANKTUNE_EVAL_MIN_BATCHES"] = std::to_string(eval_.min_batches);
  env["RANKTUNE_EVAL_MAX_BATCHES"] = std::to_string(eval_.max_batches);
  if (eval_.threads > 0) env["RANKTUNE_EVAL_THREADS"] = std::to_string(eval_.threads);
}

HeldOutResult CommandTrainable::evaluate_held_out() {
  if (!spec_.checkpoint) return Trainable::evaluate_held_out();
  if (!started_ || launched_) throw TrialFailure("evaluate_held_out() needs setup() (and restore()) first, once");
  const std::string where = "; its output is in " + log_path_;
  // A script that cannot be evaluated this way: ended, and refused as such (not a failure
  // of its code, which may train perfectly well).
  const auto refuse = [&](const std::string& why) {
    stop();
    throw std::invalid_argument(why + where);
  };
  const auto never_called = [&](const std::string& what_it_did) {
    refuse("it never called ranktune.on_evaluate() (" + what_it_did +
           "). In evaluation mode (RANKTUNE_MODE=eval) a script must build its model, load the checkpoint from "
           "RANKTUNE_CHECKPOINT_DIR and call ranktune.on_evaluate(fn) before its training loop (see "
           "docs/command_protocol.md, \"Evaluation mode\")");
  };
  HeldOutResult out;
  bool evaluated = false;
  std::set<std::int64_t> timed;
  try {
    launch();
    for (;;) {
      const std::optional<std::string> line = next_line();
      if (!line) break;
      const auto j = nlohmann::json::parse(*line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object())
        fail("malformed line " + std::to_string(line_no_) + ": not a JSON object: '" + excerpt(*line) + "'");
      const auto type = j.find("ranktune");
      if (type == j.end()) never_called("it reported '" + excerpt(*line) + "' as in training instead");
      if (!type->is_string()) fail("malformed line " + std::to_string(line_no_) + ": '" + excerpt(*line) + "'");
      const std::string kind = type->get<std::string>();
      if (kind == "latency") {
        try {
          MeasuredLatency l = latency_from(j);
          if (!timed.insert(l.batch_size).second)
            throw std::invalid_argument("batch size " + std::to_string(l.batch_size) +
                                        " was timed twice (call ranktune.time_inference() once)");
          out.latency.push_back(l);
        } catch (const std::invalid_argument& e) {
          fail("malformed latency line " + std::to_string(line_no_) + ": " + e.what() + ": '" + excerpt(*line) + "'");
        }
      } else if (kind == "evaluation") {
        if (evaluated) fail("it sent a second evaluation (line " + std::to_string(line_no_) + ")");
        std::string bad;
        const auto samples = j.find("samples");
        const auto metrics = j.find("metrics");
        if (samples == j.end() || !samples->is_number_integer() || samples->get<std::int64_t>() < 1)
          bad = "\"samples\" is missing or not an integer >= 1";
        else if (metrics == j.end() || !metrics->is_object() || metrics->empty())
          bad = "\"metrics\" is missing, empty or not an object";
        if (!bad.empty()) fail("malformed evaluation line " + std::to_string(line_no_) + ": " + bad);
        out.samples = samples->get<std::int64_t>();
        std::vector<std::string> names;
        for (const auto& [name, value] : metrics->items()) names.push_back(name);
        try {
          out.metrics = io::metrics_from_json_line(metrics->dump(), names);
        } catch (const std::invalid_argument& e) {
          fail("malformed evaluation line " + std::to_string(line_no_) + ": its metrics: " + e.what());
        }
        if (const auto files = j.find("files"); files != j.end() && files->is_array()) {
          for (const auto& f : *files) {
            if (!f.is_string()) fail("malformed evaluation line " + std::to_string(line_no_) + ": \"files\" must hold paths");
            const fs::path p = fs::absolute(fs::path(eval_workdir_) / f.get<std::string>()).lexically_normal();
            out.data.push_back(fingerprint_file(p.string()));
          }
        }
        if (const auto device = j.find("device"); device != j.end() && device->is_string() && !device->empty())
          compute_.path = device->get<std::string>();
        if (const auto threads = j.find("threads"); threads != j.end() && threads->is_number_integer() &&
                                                     threads->get<std::int64_t>() >= 1)
          compute_.threads = static_cast<int>(threads->get<std::int64_t>());
        evaluated = true;
      }
      // Other ranktune lines (a protocol greeting, say) carry nothing for an evaluation.
    }
    const StepResult last = finish();  // a non-zero exit or a signal throws, with the last line
    if (!last.metrics.empty()) never_called("it reported metrics as in training instead");
  } catch (const TrialFailure& e) {
    throw TrialFailure(e.what() + where, e.log_tail());
  }
  if (!evaluated) never_called("it exited with code 0 without evaluating anything");
  // The latency asked for, in the order asked: a script that timed nothing, or other batch
  // sizes, would leave a hole in the comparison between leaders.
  const std::set<std::int64_t> asked(eval_.batch_sizes.begin(), eval_.batch_sizes.end());
  if (timed != asked) {
    if (timed.empty())
      refuse("it did not call ranktune.time_inference() in its evaluation function, so no latency was measured at "
             "batch sizes " + join(eval_.batch_sizes) + ". Call it there, or pass --batch-sizes 0");
    refuse("it timed batch sizes " + join({timed.begin(), timed.end()}) + ", not the " + join(eval_.batch_sizes) +
           " asked for (ranktune.time_inference() times those of RANKTUNE_EVAL_BATCH_SIZES)");
  }
  std::vector<MeasuredLatency> ordered;
  for (const std::int64_t b : eval_.batch_sizes)
    for (const MeasuredLatency& l : out.latency)
      if (l.batch_size == b) ordered.push_back(l);
  out.latency = std::move(ordered);
  out.timed = "the script's batches through ranktune.time_inference(): its preprocess(batch) if given "
              "(preprocessing), predict(x) (inference) and its postprocess(y) if given (postprocessing), from an input "
              "batch in memory to its output on the host (making the batch, batches(n), is not timed)";
  return out;
}

nlohmann::json command_describe(const config::TrainableSpec& spec) {
  const CommandOptions& o = options_of<CommandOptions>(spec);
  nlohmann::json program = nlohmann::json::array();
  // Every argument that names a file (the interpreter, found in PATH, and the script,
  // relative to the workdir): what ran, to the byte.
  const char* path_env = std::getenv("PATH");
  const auto it = o.env.find("PATH");
  for (std::size_t i = 0; i < o.command.size(); ++i) {
    std::string path;
    if (i == 0) {
      const sys::ResolvedProgram r =
          sys::resolve_program(o.command[0], o.workdir, it != o.env.end() ? it->second : path_env ? path_env : "");
      if (r.error == 0) path = r.path;
    } else {
      std::error_code ec;
      const fs::path p = fs::absolute(fs::path(o.workdir) / o.command[i], ec).lexically_normal();
      if (!ec && fs::is_regular_file(p, ec)) path = p.string();
    }
    if (path.empty()) continue;
    try {
      const DataFile f = fingerprint_file(path);
      program.push_back({{"argv", i}, {"path", f.path}, {"bytes", f.bytes}, {"crc32c", io::crc32c_hex(f.crc32c)}});
    } catch (const TrialFailure&) {  // unreadable: it ran all the same, and the argv says what
    }
  }
  return {{"command", o.command}, {"workdir", o.workdir}, {"program_files", program}};
}

}  // namespace ranktune::train
