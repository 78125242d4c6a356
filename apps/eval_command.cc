// `ranktune eval`: held-out evaluation and latency benchmarking of the leaders of a results
// file, recorded in that file. The work is in eval/; this file chooses, prints and records.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <unistd.h>

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
#include "mpi/errors.h"
#include "mpi/eval_farm.h"
#include "mpi/launch.h"
#include "experiment/exit_codes.h"
#include "experiment/stack.h"
#include "report/evaluations.h"
#include "report/pareto_front.h"
#include "report/sensitivity.h"
#include "sys/printable.h"
#include "sys/temp_dir.h"
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

// Who reads the file for what: the process that records (a serial eval, rank 0 of a
// parallel one) checks that it can record and says which trials it passes over; the
// self-launcher checks the same before mpirun starts, quietly; a worker of a parallel eval
// only reads.
enum class Role { Recorder, Launcher, Worker };

// What one process needs to evaluate: the file as read, its stored config, the leaders (which
// point into the file) and the manifest (its pipelines: one evaluation each).
struct Plan {
  io::ResultsFile file;
  config::ExperimentConfig cfg;
  eval::LeaderChoice choice;
  config::EvalManifest manifest;
  /// A multi-objective experiment's Pareto view of `file` (the leaders' places and ranks).
  std::optional<report::ParetoView> pareto;
  bool runs_program = false;  ///< the trainable runs a program (a command): see evaluate()

  // The work, pipeline by pipeline: item i is leader i % n through pipeline i / n.
  std::size_t items() const { return choice.leaders.size() * manifest.pipelines.size(); }
  eval::EvalOptions options(std::size_t item) const {
    return eval::options_of(manifest, manifest.pipelines[item / choice.leaders.size()]);
  }
  std::vector<eval::Leader> work() const {
    std::vector<eval::Leader> all;
    for (std::size_t p = 0; p < manifest.pipelines.size(); ++p)
      all.insert(all.end(), choice.leaders.begin(), choice.leaders.end());
    return all;
  }
};

std::shared_ptr<const Plan> make_plan(const EvalOptions& o, Role role) {
  if (o.format != "table" && o.format != "json")
    throw std::invalid_argument("unknown --format '" + o.format + "'; valid: table, json");
  auto p = std::make_shared<Plan>();
  p->file = io::ResultsFile::read(o.results);
  if (!o.no_record && role != Role::Worker) {
    try {
      io::check_recordable(o.results);
    } catch (const io::FileBusyError& e) {  // its message says what to do first
      throw io::StoreError(std::string(e.what()) + "; or pass --no-record to evaluate it now without recording");
    } catch (const io::StoreError& e) {
      throw io::StoreError(std::string(e.what()) + ". Evaluate it once the run has ended, or pass --no-record " +
                           "to evaluate it now without recording");
    }
  }
  const io::ResultsFile& file = p->file;
  p->cfg = config::stored_config(file, o.config);
  p->pareto = report::pareto_view(file, p->cfg.objectives);
  if (o.front && !p->pareto)
    throw std::invalid_argument("--front: " + o.results + " is a single-objective experiment (metric " + file.meta.metric +
                                ", " + search::to_string(file.meta.mode) + "): it has no Pareto front. Evaluate its " +
                                "leaders with --top N, or chosen trials with --trial ID");
  eval::require_evaluable(file, p->cfg);  // before choosing leaders: nothing to pass over for nothing
  // Several objectives: a trial is placed on the Pareto leaderboard by its last results,
  // which its newest checkpoint holds, so that one stands for it unless --checkpoint says
  // otherwise (the best-scoring one is the best of the first objective alone).
  const eval::CheckpointChoice checkpoint = p->pareto && !o.given.contains("--checkpoint")
                                                ? eval::CheckpointChoice::Latest
                                                : eval::parse_checkpoint_choice(o.checkpoint);
  p->choice = o.front ? eval::choose_front(file, *p->pareto, checkpoint)
                      : eval::choose_leaders(file, o.top, o.trials, checkpoint, p->pareto ? &*p->pareto : nullptr);
  if (role == Role::Recorder)
    for (const auto& why : p->choice.skipped) std::fprintf(stderr, "ranktune eval: passed over %s\n", why.c_str());
  if (o.front && p->choice.leaders.empty())
    throw std::invalid_argument(o.results + ": none of the " + std::to_string(p->pareto->front) + " trials on the Pareto " +
                                "front has a stored checkpoint to evaluate (store them with [checkpoint] at_end or every)");
  if (p->choice.leaders.empty())
    throw std::invalid_argument(o.results + ": no trial " +
                                (p->pareto ? std::string("ranked on the Pareto leaderboard") : "with a finite " + file.meta.metric) +
                                " has a stored checkpoint to evaluate (store them with [checkpoint] every, at_end or " +
                                "keep_best)");

  p->manifest = manifest_of(o);
  // A program that the config names (a command) runs where the stored config's relative
  // paths lead: next to the results file unless --config says where the config was.
  p->runs_program = [&] {
    config::ExperimentConfig read = p->cfg;
    train::read_trainable(read);
    return train::traits(read.trainable).writes_logs;
  }();
  return p;
}

// One leader's evaluation with `opt` (the plan's, or a parallel worker's device and turns).
eval::LeaderEvaluation evaluate(const Plan& p, const eval::Leader& l, const eval::EvalOptions& opt,
                                const EvalOptions& o) {
  try {
    return eval::evaluate_leader(p.file, p.cfg, l, opt);
  } catch (const io::StoreError&) {
    throw;
  } catch (const config::ConfigError&) {
    throw;
  } catch (const std::runtime_error& e) {
    if (!p.runs_program || !o.config.empty()) throw;
    throw std::runtime_error(std::string(e.what()) +
                             "\n(If the script or its files were not found: the stored config's relative paths "
                             "resolve next to the results file; pass --config with the experiment's config file "
                             "to resolve them as in the run.)");
  }
}

// Evaluates the leaders through each pipeline, here (`farm` nullptr) or on the workers of a
// parallel evaluation, then prints and records one evaluation per pipeline; several form a
// sensitivity group, compared with the first.
int evaluate_and_record(const EvalOptions& o, mpi::EvalFarm* farm) {
  const std::shared_ptr<const Plan> plan = make_plan(o, Role::Recorder);
  const io::ResultsFile& file = plan->file;
  const config::EvalManifest& manifest = plan->manifest;
  const std::size_t pipelines = manifest.pipelines.size(), n = plan->choice.leaders.size();
  std::vector<eval::LeaderEvaluation> all;
  if (farm != nullptr) {
    all = farm->gather(plan->work());
  } else {
    const std::vector<eval::Leader> work = plan->work();
    for (std::size_t i = 0; i < work.size(); ++i) {
      const eval::Leader& l = work[i];
      std::fprintf(stderr, "ranktune eval: trial %lld (rank %zu), checkpoint at iteration %lld%s ...\n",
                   static_cast<long long>(l.trial->id), l.rank, static_cast<long long>(l.checkpoint->iteration),
                   pipelines > 1 ? (", pipeline " + manifest.pipelines[i / n].name).c_str() : "");
      all.push_back(evaluate(*plan, l, plan->options(i), o));
    }
  }

  // A token that no other run of eval on this file shares: the time in ns and the process.
  const std::string group =
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) + "-" + std::to_string(::getpid());
  const nlohmann::json stack =
      farm != nullptr ? experiment::collect_stack(farm->workers(), farm->size()) : experiment::collect_stack({}, 1);
  nlohmann::json json_out = {{"results", o.results}, {"experiment", file.meta.experiment},
                             {"metric", file.meta.metric}, {"evaluations", nlohmann::json::array()},
                             {"stack", stack}};
  std::vector<io::Evaluation> records;
  for (std::size_t p = 0; p < pipelines; ++p) {
    const config::EvalPipeline& pipeline = manifest.pipelines[p];
    const std::vector<eval::LeaderEvaluation> evals(all.begin() + static_cast<std::ptrdiff_t>(p * n),
                                                    all.begin() + static_cast<std::ptrdiff_t>((p + 1) * n));
    nlohmann::json record_manifest = {{"command_line", o.command_line},
                                      {"stack", stack},
                                      {"eval_manifest", manifest_record(manifest)},
                                      {"pipeline",
                                       {{"name", pipeline.name},
                                        {"normalize", pipeline.normalize},
                                        {"input_dtype", pipeline.input_dtype}}},
                                      {"evaluations", nlohmann::json::array()}};
    if (farm != nullptr)
      record_manifest["parallel"] = {{"workers", farm->size() - 1}, {"exclusive_latency", farm->exclusive_latency()}};
    if (pipelines > 1)
      record_manifest["sensitivity"] = {{"group", group}, {"index", p}, {"count", pipelines},
                                        {"reference", manifest.pipelines.front().name}};
    for (const auto& e : evals) record_manifest["evaluations"].push_back(e.manifest);
    for (const auto& e : evals) json_out["evaluations"].push_back(as_json(e));
    io::Evaluation record = to_record(evals, record_manifest, manifest.split);
    if (o.format != "json") {
      if (pipelines > 1) std::printf("%spipeline %s\n", p ? "\n" : "", sys::printable(pipeline.name).c_str());
      std::printf("%s", report::render_table(report::evaluation_grid(file, record, plan->pareto ? &*plan->pareto : nullptr)).c_str());
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

// `eval --parallel` or `--np N` started without a launcher: the same command under mpirun,
// with one worker per leader up to --np (default: one per GPU, else per core), after the
// checks that need no MPI, so that a bad request costs no launch.
int self_launch(const EvalOptions& o) {
  const std::shared_ptr<const Plan> plan = make_plan(o, Role::Launcher);
  const int wanted = o.np > 0 ? o.np : mpi::default_worker_count();
  const int workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(wanted), plan->items()));
  std::string error;
  mpi::LaunchEnd end;
  const int code = mpi::run_under_mpirun(workers, std::vector<std::string>(o.argv.begin() + 1, o.argv.end()),
                                         sys::run_folder_key("eval:" + o.results), error, &end);
  if (code >= 0 && !end.rank0_code)
    std::fprintf(stderr, "ranktune eval: the evaluation was killed: %s. Nothing was recorded. Exit code %d.\n",
                 end.what.c_str(), code);
  if (code >= 0) return code;
  std::fprintf(stderr, "ranktune: %s\n", error.c_str());
  return experiment::kExitInternal;
}

}  // namespace

int run_eval(const EvalOptions& o) {
  if (!o.parallel && o.np == 0) {
    mpi::require_one_process("ranktune eval", "evaluate and record everything again; pass --parallel to spread "
                                              "the leaders over them instead");
    return evaluate_and_record(o, nullptr);
  }
  if (!mpi::under_mpi_launcher()) return self_launch(o);
  mpi::EvalFarm farm(o.exclusive_latency);
  if (!farm.root()) {
    farm.serve([&o, &farm] {
      const std::shared_ptr<const Plan> plan = make_plan(o, Role::Worker);
      mpi::FarmWorkerPlan w;
      w.leaders = plan->work();
      w.evaluate = [plan, &o, &farm](std::size_t item, const eval::Leader& l, eval::ComputeTurns* turns) {
        eval::EvalOptions opt = plan->options(item);
        opt.device = farm.device(opt.device);
        opt.turns = turns;
        return evaluate(*plan, l, opt, o);
      };
      return w;
    });
    return 0;
  }
  // Rank 0 leaves its exit code for a self-launcher before MPI_Finalize (the farm's end).
  try {
    const int code = evaluate_and_record(o, &farm);
    mpi::report_exit_code(code);
    return code;
  } catch (const std::exception& e) {
    mpi::report_exit_code(mpi::describe_error(e).code);
    throw;
  }
}

void setup_eval(CLI::App& app, int argc, char** argv) {
  const auto eval = std::make_shared<EvalOptions>();
  for (int i = 0; i < argc; ++i) eval->command_line += (i ? " " : "") + std::string(argv[i]);
  eval->argv.assign(argv, argv + argc);
  auto* eval_cmd = app.add_subcommand(
      "eval", "Evaluate the leaders' stored checkpoints on the held-out test set and time their inference; "
              "recorded in the file's /evaluations");
  eval_cmd->add_option("results", eval->results, "Results file (.h5)")->required();
  auto* top = eval_cmd->add_option("--top", eval->top, "Leaders to evaluate: the best trials that have a stored checkpoint")
                  ->capture_default_str()->check(CLI::PositiveNumber);
  auto* trial = eval_cmd->add_option("--trial", eval->trials, "Evaluate these trial ids instead (repeatable)")
                    ->check(CLI::PositiveNumber);
  eval_cmd->add_flag("--front", eval->front,
                     "Multi-objective: evaluate the trials on the Pareto front (pareto_rank 0) that have a stored "
                     "checkpoint, each from its latest one (unless --checkpoint), instead of --top")
      ->excludes(trial)
      ->excludes(top);
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
  eval_cmd->add_flag("--parallel", eval->parallel,
                     "Spread the leaders over the ranks of mpirun or srun, one per worker; rank 0 records "
                     "(started plainly: launches itself under mpirun)");
  eval_cmd->add_option("--np", eval->np,
                       "Workers to launch for a parallel evaluation started plainly (implies --parallel; default: "
                       "one per GPU, else per core, at most one per leader)")
      ->check(CLI::PositiveNumber);
  eval_cmd->add_flag("--exclusive-latency,!--no-exclusive-latency", eval->exclusive_latency,
                     "Parallel: time latency alone on each node, while nothing else of the evaluation computes "
                     "there (default on)");
  on_run(eval_cmd, [eval, eval_cmd] {
    // Which flags were typed: they override a manifest's values.
    for (const char* flag : {"--device", "--threads", "--batch-sizes", "--warmup", "--latency-s", "--checkpoint"})
      if (eval_cmd->count(flag) > 0) eval->given.insert(flag);
    return run_eval(*eval);
  });
}

}  // namespace ranktune::apps
