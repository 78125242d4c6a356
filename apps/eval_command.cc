// `ranktune eval`: held-out evaluation and latency benchmarking of the leaders of a results
// file, recorded in that file. The work is in eval/; this file chooses, prints and records.

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "config/stored.h"
#include "apps/commands.h"
#include "eval/evaluator.h"
#include "eval/leaders.h"
#include "io/evaluations.h"
#include "io/store.h"
#include "mpi/launch.h"
#include "experiment/stack.h"
#include "report/evaluations.h"
#include "sys/printable.h"
#include "train/registry.h"

namespace ranktune::apps {
namespace {

// A part's percentiles in ms, as /evaluations/latency_split holds them (NaN: not measured).
void put_parts(double* ms, const eval::LatencyStats& l) {
  const eval::LatencyPart* parts[] = {&l.pre, &l.inference, &l.post};
  for (int i = 0; i < 3; ++i) {
    ms[3 * i] = parts[i]->p50_s * 1e3;
    ms[3 * i + 1] = parts[i]->p90_s * 1e3;
    ms[3 * i + 2] = parts[i]->p99_s * 1e3;
  }
}

nlohmann::json as_json(const eval::LeaderEvaluation& e) {
  nlohmann::json latency = nlohmann::json::array();
  for (const auto& l : e.latency) {
    nlohmann::json row = {{"batch_size", l.batch_size}, {"batches", l.batches}, {"mean_ms", l.mean_s * 1e3},
                          {"p50_ms", l.p50_s * 1e3}, {"p90_ms", l.p90_s * 1e3}, {"p99_ms", l.p99_s * 1e3},
                          {"max_ms", l.max_s * 1e3}, {"samples_per_s", l.samples_per_s}};
    double ms[9];
    put_parts(ms, l);
    for (int i = 0; i < 9; ++i) row[io::kLatencyPartNames[i]] = std::isfinite(ms[i]) ? nlohmann::json(ms[i]) : nlohmann::json(nullptr);
    latency.push_back(std::move(row));
  }
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, value] : e.metrics) metrics[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
  return {{"trial", e.leader.trial->id},
          {"rank", e.leader.rank},
          {"iteration", e.leader.checkpoint->iteration},
          {"metrics", metrics},
          {"samples", e.samples},
          {"path", e.path},
          {"threads", e.threads},
          {"latency", latency},
          {"seconds", e.seconds},
          {"manifest", e.manifest}};
}

io::Evaluation to_record(const std::vector<eval::LeaderEvaluation>& evals, const nlohmann::json& manifest) {
  io::Evaluation r;
  r.split = "test";
  r.device = evals.front().path;
  r.threads = evals.front().threads;
  r.trials = static_cast<std::int64_t>(evals.size());
  r.manifest = manifest.dump();
  for (const auto& e : evals) {
    const search::TrialId id = e.leader.trial->id;
    const std::int64_t it = e.leader.checkpoint->iteration;
    for (const auto& [name, value] : e.metrics) r.metrics.push_back({id, it, name, value});
    for (const auto& l : e.latency) {
      io::EvalLatencyRow& row = r.latency.emplace_back(io::EvalLatencyRow{id, it, l.batch_size, l.batches, l.mean_s * 1e3,
                                                                          l.p50_s * 1e3, l.p90_s * 1e3, l.p99_s * 1e3,
                                                                          l.max_s * 1e3, l.samples_per_s});
      put_parts(row.parts_ms, l);
      for (const eval::BatchTime& b : l.trace)
        r.trace.push_back({id, it, l.batch_size, b.batch, b.start_s * 1e3, b.total_s * 1e3, b.pre_s * 1e3,
                           b.inference_s * 1e3, b.post_s * 1e3});
    }
  }
  return r;
}

}  // namespace

int run_eval(const EvalOptions& o) {
  mpi::require_one_process("ranktune eval", "evaluate and record everything again");
  if (o.format != "table" && o.format != "json")
    throw std::invalid_argument("unknown --format '" + o.format + "'; valid: table, json");
  const io::ResultsFile file = io::ResultsFile::read(o.results);
  if (!o.no_record) {
    try {
      io::check_recordable(o.results);
    } catch (const io::FileBusyError& e) {  // its message says what to do first
      throw io::StoreError(std::string(e.what()) + "; or pass --no-record to evaluate it now without recording");
    } catch (const io::StoreError& e) {
      throw io::StoreError(std::string(e.what()) + ". Evaluate it once the run has ended, or pass --no-record " +
                           "to evaluate it now without recording");
    }
  }
  const config::ExperimentConfig cfg = config::stored_config(file, o.config);
  eval::require_evaluable(file, cfg);  // before choosing leaders: nothing to pass over for nothing
  const eval::LeaderChoice choice =
      eval::choose_leaders(file, o.top, o.trials, eval::parse_checkpoint_choice(o.checkpoint));
  for (const auto& why : choice.skipped) std::fprintf(stderr, "ranktune eval: passed over %s\n", why.c_str());
  if (choice.leaders.empty())
    throw std::invalid_argument(o.results + ": no trial with a finite " + file.meta.metric +
                                " has a stored checkpoint to evaluate (store them with [checkpoint] every, at_end or " +
                                "keep_best)");

  eval::EvalOptions opt;
  opt.device = o.device;
  opt.threads = o.threads;
  opt.batch_sizes = o.batch_sizes;
  if (opt.batch_sizes == std::vector<std::int64_t>{0}) opt.batch_sizes.clear();  // --batch-sizes 0: no latency
  opt.warmup = o.warmup;
  opt.latency_s = o.latency_s;
  // A program that the config names (a command) runs where the stored config's relative
  // paths lead: next to the results file unless --config says where the config was.
  const bool runs_program = [&] {
    config::ExperimentConfig read = cfg;
    train::read_trainable(read);
    return train::traits(read.trainable).writes_logs;
  }();
  std::vector<eval::LeaderEvaluation> evals;
  for (const eval::Leader& l : choice.leaders) {
    std::fprintf(stderr, "ranktune eval: trial %lld (rank %zu), checkpoint at iteration %lld ...\n",
                 static_cast<long long>(l.trial->id), l.rank, static_cast<long long>(l.checkpoint->iteration));
    try {
      evals.push_back(eval::evaluate_leader(file, cfg, l, opt));
    } catch (const io::StoreError&) {
      throw;
    } catch (const config::ConfigError&) {
      throw;
    } catch (const std::runtime_error& e) {
      if (!runs_program || !o.config.empty()) throw;
      throw std::runtime_error(std::string(e.what()) +
                               "\n(If the script or its files were not found: the stored config's relative paths "
                               "resolve next to the results file; pass --config with the experiment's config file "
                               "to resolve them as in the run.)");
    }
  }

  nlohmann::json manifest = {{"command_line", o.command_line},
                             {"stack", experiment::collect_stack({}, 1)},
                             {"evaluations", nlohmann::json::array()}};
  for (const auto& e : evals) manifest["evaluations"].push_back(e.manifest);
  if (o.format == "json") {
    nlohmann::json out = {{"results", o.results}, {"experiment", file.meta.experiment}, {"metric", file.meta.metric},
                          {"evaluations", nlohmann::json::array()}, {"stack", manifest["stack"]}};
    for (const auto& e : evals) out["evaluations"].push_back(as_json(e));
    // Metric names are the program's: C1 controls escaped, and bytes that are not UTF-8
    // replaced rather than thrown on (sys/printable.h).
    std::printf("%s\n", sys::printable_json(out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)).c_str());
  }
  io::Evaluation record = to_record(evals, manifest);
  if (o.format != "json") {
    std::printf("%s", report::render_table(report::evaluation_grid(file, record)).c_str());
    if (const report::Grid split = report::latency_split_grid(record); !split.body.empty())
      std::printf("latency split (preprocessing, inference, postprocessing; blank: not measured)\n%s",
                  report::render_table(split).c_str());
  }
  if (o.no_record) return 0;
  try {
    const std::int64_t id = io::append_evaluation(o.results, std::move(record));
    std::fprintf(stderr, "ranktune eval: recorded as evaluation %lld in %s (/evaluations)\n",
                 static_cast<long long>(id), o.results.c_str());
  } catch (const io::StoreError& e) {
    throw io::StoreError(std::string(e.what()) + ". The figures above were NOT recorded; run again when the file " +
                         "is free, or pass --no-record");
  }
  return 0;
}

void setup_eval(CLI::App& app, int argc, char** argv) {
  const auto eval = std::make_shared<EvalOptions>();
  for (int i = 0; i < argc; ++i) eval->command_line += (i ? " " : "") + std::string(argv[i]);
  auto* eval_cmd = app.add_subcommand(
      "eval", "Evaluate the leaders' stored checkpoints on the held-out test set and time their inference; "
              "recorded in the file's /evaluations");
  eval_cmd->add_option("results", eval->results, "Results file (.h5)")->required();
  eval_cmd->add_option("--top", eval->top, "Leaders to evaluate: the best trials that have a stored checkpoint")
      ->capture_default_str()->check(CLI::PositiveNumber);
  eval_cmd->add_option("--trial", eval->trials, "Evaluate these trial ids instead (repeatable)")->check(CLI::PositiveNumber);
  eval_cmd->add_option("--checkpoint", eval->checkpoint,
                       "Which stored checkpoint stands for a trial: best (best score) or latest")
      ->capture_default_str();
  eval_cmd->add_option("--device", eval->device, "auto (cuda:0 if usable, else cpu), cpu or cuda:N")->capture_default_str();
  eval_cmd->add_option("--threads", eval->threads, "Compute threads (default: the experiment's threads_per_worker)")
      ->check(CLI::PositiveNumber);
  eval_cmd->add_option("--batch-sizes", eval->batch_sizes, "Latency batch sizes, comma-separated (none: 0)")
      ->delimiter(',')->capture_default_str();
  eval_cmd->add_option("--latency-s", eval->latency_s, "Timing budget per batch size, seconds")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  eval_cmd->add_option("--warmup", eval->warmup, "Untimed batches before timing each batch size")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  eval_cmd->add_option("--config", eval->config,
                       "Resolve relative paths of the stored config (data_dir) as if it lay at this path");
  eval_cmd->add_option("--format", eval->format, "table or json")->capture_default_str();
  eval_cmd->add_flag("--no-record", eval->no_record, "Print only; do not append to the file's /evaluations");
  on_run(eval_cmd, [eval] { return run_eval(*eval); });
}

}  // namespace ranktune::apps
