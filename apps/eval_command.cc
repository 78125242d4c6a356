// `ranktune eval`: held-out evaluation and latency benchmarking of the leaders of a results
// file, recorded in that file. The work is in eval/; this file chooses, prints and records.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
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
#include "mpi/errors.h"
#include "mpi/eval_farm.h"
#include "mpi/launch.h"
#include "experiment/exit_codes.h"
#include "experiment/stack.h"
#include "report/evaluations.h"
#include "sys/printable.h"
#include "sys/temp_dir.h"
#include "train/registry.h"

namespace ranktune::apps {
namespace {

nlohmann::json as_json(const eval::LeaderEvaluation& e) {
  nlohmann::json latency = nlohmann::json::array();
  for (const auto& l : e.latency)
    latency.push_back({{"batch_size", l.batch_size}, {"batches", l.batches}, {"mean_ms", l.mean_s * 1e3},
                       {"p50_ms", l.p50_s * 1e3}, {"p90_ms", l.p90_s * 1e3}, {"p99_ms", l.p99_s * 1e3},
                       {"max_ms", l.max_s * 1e3}, {"samples_per_s", l.samples_per_s}});
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
    for (const auto& l : e.latency)
      r.latency.push_back({id, it, l.batch_size, l.batches, l.mean_s * 1e3, l.p50_s * 1e3, l.p90_s * 1e3,
                           l.p99_s * 1e3, l.max_s * 1e3, l.samples_per_s});
  }
  return r;
}

// Who reads the file for what: the process that records (a serial eval, rank 0 of a
// parallel one) checks that it can record and says which trials it passes over; the
// self-launcher checks the same before mpirun starts, quietly; a worker of a parallel eval
// only reads.
enum class Role { Recorder, Launcher, Worker };

// What one process needs to evaluate: the file as read, its stored config, the leaders (which
// point into the file) and the evaluator's options.
struct Plan {
  io::ResultsFile file;
  config::ExperimentConfig cfg;
  eval::LeaderChoice choice;
  eval::EvalOptions opt;
  bool runs_program = false;  ///< the trainable runs a program (a command): see evaluate()
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
  eval::require_evaluable(file, p->cfg);  // before choosing leaders: nothing to pass over for nothing
  p->choice = eval::choose_leaders(file, o.top, o.trials, eval::parse_checkpoint_choice(o.checkpoint));
  if (role == Role::Recorder)
    for (const auto& why : p->choice.skipped) std::fprintf(stderr, "ranktune eval: passed over %s\n", why.c_str());
  if (p->choice.leaders.empty())
    throw std::invalid_argument(o.results + ": no trial with a finite " + file.meta.metric +
                                " has a stored checkpoint to evaluate (store them with [checkpoint] every, at_end or " +
                                "keep_best)");

  eval::EvalOptions& opt = p->opt;
  opt.device = o.device;
  opt.threads = o.threads;
  opt.batch_sizes = o.batch_sizes;
  if (opt.batch_sizes == std::vector<std::int64_t>{0}) opt.batch_sizes.clear();  // --batch-sizes 0: no latency
  opt.warmup = o.warmup;
  opt.latency_s = o.latency_s;
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

// Evaluates the leaders, here (`farm` nullptr) or on the workers of a parallel evaluation,
// then prints and records the evaluation.
int evaluate_and_record(const EvalOptions& o, mpi::EvalFarm* farm) {
  const std::shared_ptr<const Plan> plan = make_plan(o, Role::Recorder);
  const io::ResultsFile& file = plan->file;
  std::vector<eval::LeaderEvaluation> evals;
  if (farm != nullptr) {
    evals = farm->gather(plan->choice.leaders);
  } else {
    for (const eval::Leader& l : plan->choice.leaders) {
      std::fprintf(stderr, "ranktune eval: trial %lld (rank %zu), checkpoint at iteration %lld ...\n",
                   static_cast<long long>(l.trial->id), l.rank, static_cast<long long>(l.checkpoint->iteration));
      evals.push_back(evaluate(*plan, l, plan->opt, o));
    }
  }

  nlohmann::json manifest = {
      {"command_line", o.command_line},
      {"stack", farm != nullptr ? experiment::collect_stack(farm->workers(), farm->size()) : experiment::collect_stack({}, 1)},
      {"evaluations", nlohmann::json::array()}};
  if (farm != nullptr)
    manifest["parallel"] = {{"workers", farm->size() - 1}, {"exclusive_latency", farm->exclusive_latency()}};
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
  if (o.format != "json") std::printf("%s", report::render_table(report::evaluation_grid(file, record)).c_str());
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

// `eval --parallel` or `--np N` started without a launcher: the same command under mpirun,
// with one worker per leader up to --np (default: one per GPU, else per core), after the
// checks that need no MPI, so that a bad request costs no launch.
int self_launch(const EvalOptions& o) {
  const std::shared_ptr<const Plan> plan = make_plan(o, Role::Launcher);
  const int wanted = o.np > 0 ? o.np : mpi::default_worker_count();
  const int workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(wanted), plan->choice.leaders.size()));
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
      w.leaders = plan->choice.leaders;
      w.evaluate = [plan, &o, &farm](const eval::Leader& l, eval::ComputeTurns* turns) {
        eval::EvalOptions opt = plan->opt;
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
  on_run(eval_cmd, [eval] { return run_eval(*eval); });
}

}  // namespace ranktune::apps
