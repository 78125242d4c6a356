// `ranktune eval`: held-out evaluation and latency benchmarking of the leaders of a results
// file, recorded in that file. The work is in eval/; this file chooses, prints and records.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <span>
#include <unistd.h>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "config/eval_manifest.h"
#include "config/stored.h"
#include "apps/commands.h"
#include "eval/evaluator.h"
#include "eval/leaders.h"
#include "io/crc32c.h"
#include "io/evaluations.h"
#include "io/store.h"
#include "mpi/launch.h"
#include "experiment/stack.h"
#include "report/evaluations.h"
#include "report/sensitivity.h"
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

// The confusion matrix as rows of counts (row: true label), or null when not asked for.
nlohmann::json confusion_json(const eval::LeaderEvaluation& e) {
  if (e.confusion.empty() || e.classes < 1) return nullptr;
  nlohmann::json rows = nlohmann::json::array();
  const auto c = static_cast<std::size_t>(e.classes);
  for (std::size_t y = 0; y < c; ++y)
    rows.push_back(std::vector<std::int64_t>(e.confusion.begin() + static_cast<std::ptrdiff_t>(y * c),
                                             e.confusion.begin() + static_cast<std::ptrdiff_t>((y + 1) * c)));
  return rows;
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
          {"pipeline", e.manifest.value("pipeline", nlohmann::json::object())},
          {"confusion", confusion_json(e)},
          {"manifest", e.manifest}};
}

io::Evaluation to_record(const std::vector<eval::LeaderEvaluation>& evals, const nlohmann::json& manifest,
                         const std::string& split) {
  io::Evaluation r;
  r.split = split;
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
    const auto c = static_cast<std::size_t>(e.classes);
    for (std::size_t k = 0; k < e.confusion.size() && c > 0; ++k)
      r.confusion.push_back({id, it, static_cast<std::int64_t>(k / c), static_cast<std::int64_t>(k % c), e.confusion[k]});
  }
  return r;
}

// The manifest to evaluate with: the file's, else one of the flags; flags given on the
// command line override the file's values (and the override is in the recorded command line).
config::EvalManifest manifest_of(const EvalOptions& o) {
  config::EvalManifest m = o.manifest.empty() ? config::EvalManifest{} : config::read_eval_manifest(o.manifest);
  const auto given = [&](const char* flag) { return o.given.contains(flag); };
  if (o.manifest.empty() || given("--device")) m.device = o.device;
  if (o.manifest.empty() || given("--threads")) m.threads = o.threads;
  if (o.manifest.empty() || given("--batch-sizes")) {
    m.batch_sizes = o.batch_sizes;
    if (m.batch_sizes == std::vector<std::int64_t>{0}) m.batch_sizes.clear();  // --batch-sizes 0: no latency
  }
  if (o.manifest.empty() || given("--warmup")) m.warmup = o.warmup;
  if (o.manifest.empty() || given("--latency-s")) m.latency_s = o.latency_s;
  return m;
}

// What a manifest file was, for the record: its text and fingerprint, so that the same
// evaluation can be run again from the record alone.
nlohmann::json manifest_record(const config::EvalManifest& m) {
  if (m.path.empty()) return nullptr;
  return {{"path", m.path},
          {"version", m.version},
          {"crc32c", io::crc32c_hex(io::crc32c(std::as_bytes(std::span(m.text.data(), m.text.size()))))},
          {"text", m.text}};
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

  const config::EvalManifest manifest = manifest_of(o);
  // A program that the config names (a command) runs where the stored config's relative
  // paths lead: next to the results file unless --config says where the config was.
  const bool runs_program = [&] {
    config::ExperimentConfig read = cfg;
    train::read_trainable(read);
    return train::traits(read.trainable).writes_logs;
  }();
  // One evaluation per pipeline; several form a sensitivity group, compared with the first.
  const std::size_t pipelines = manifest.pipelines.size();
  // A token that no other run of eval on this file shares: the time in ns and the process.
  const std::string group =
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) + "-" + std::to_string(::getpid());
  const nlohmann::json stack = experiment::collect_stack({}, 1);
  nlohmann::json json_out = {{"results", o.results}, {"experiment", file.meta.experiment},
                             {"metric", file.meta.metric}, {"evaluations", nlohmann::json::array()},
                             {"stack", stack}};
  std::vector<io::Evaluation> records;
  for (std::size_t p = 0; p < pipelines; ++p) {
    const config::EvalPipeline& pipeline = manifest.pipelines[p];
    const eval::EvalOptions opt = eval::options_of(manifest, pipeline);
    std::vector<eval::LeaderEvaluation> evals;
    for (const eval::Leader& l : choice.leaders) {
      std::fprintf(stderr, "ranktune eval: trial %lld (rank %zu), checkpoint at iteration %lld%s ...\n",
                   static_cast<long long>(l.trial->id), l.rank, static_cast<long long>(l.checkpoint->iteration),
                   pipelines > 1 ? (", pipeline " + pipeline.name).c_str() : "");
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
    nlohmann::json record_manifest = {{"command_line", o.command_line},
                                      {"stack", stack},
                                      {"eval_manifest", manifest_record(manifest)},
                                      {"pipeline",
                                       {{"name", pipeline.name},
                                        {"normalize", pipeline.normalize},
                                        {"input_dtype", pipeline.input_dtype}}},
                                      {"evaluations", nlohmann::json::array()}};
    if (pipelines > 1)
      record_manifest["sensitivity"] = {{"group", group}, {"index", p}, {"count", pipelines},
                                        {"reference", manifest.pipelines.front().name}};
    for (const auto& e : evals) record_manifest["evaluations"].push_back(e.manifest);
    for (const auto& e : evals) json_out["evaluations"].push_back(as_json(e));
    io::Evaluation record = to_record(evals, record_manifest, manifest.split);
    if (o.format != "json") {
      if (pipelines > 1) std::printf("%spipeline %s\n", p ? "\n" : "", sys::printable(pipeline.name).c_str());
      std::printf("%s", report::render_table(report::evaluation_grid(file, record)).c_str());
      if (const report::Grid split = report::latency_split_grid(record); !split.body.empty())
        std::printf("latency split (preprocessing, inference, postprocessing; blank: not measured)\n%s",
                    report::render_table(split).c_str());
    }
    records.push_back(std::move(record));
  }
  if (o.format == "json") {
    // Metric names are the program's: C1 controls escaped, and bytes that are not UTF-8
    // replaced rather than thrown on (sys/printable.h).
    std::printf("%s\n",
                sys::printable_json(json_out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)).c_str());
  } else if (pipelines > 1) {
    std::vector<const io::Evaluation*> group_records;
    for (const io::Evaluation& r : records) group_records.push_back(&r);
    if (const auto grid = report::sensitivity_grid(group_records))
      std::printf("\npipeline sensitivity (change against \"%s\")\n%s",
                  sys::printable(manifest.pipelines.front().name).c_str(), report::render_table(*grid).c_str());
  }
  if (o.no_record) return 0;
  for (io::Evaluation& record : records) {
    try {
      const std::int64_t id = io::append_evaluation(o.results, std::move(record));
      std::fprintf(stderr, "ranktune eval: recorded as evaluation %lld in %s (/evaluations)\n",
                   static_cast<long long>(id), o.results.c_str());
    } catch (const io::StoreError& e) {
      throw io::StoreError(std::string(e.what()) + ". The figures above were NOT recorded; run again when the file " +
                           "is free, or pass --no-record");
    }
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
  eval_cmd->add_option("--manifest", eval->manifest,
                       "Evaluation manifest (TOML): data and split, pipelines, metrics, latency settings; the "
                       "flags below override its values")
      ->check(CLI::ExistingFile);
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
  on_run(eval_cmd, [eval, eval_cmd] {
    // Which flags were typed: they override a manifest's values.
    for (const char* flag : {"--device", "--threads", "--batch-sizes", "--warmup", "--latency-s"})
      if (eval_cmd->count(flag) > 0) eval->given.insert(flag);
    return run_eval(*eval);
  });
}

}  // namespace ranktune::apps
