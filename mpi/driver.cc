// The driver loop on rank 0 (mpi/driver.h): the handshake with the workers, the controller
// run against them over MPI, the results file, signals, live control and resume.
#include "config/stored.h"
#include "mpi/driver.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <optional>
#include <string_view>

#include <boost/mpi/collectives/broadcast.hpp>

#include "experiment/exit_codes.h"
#include "experiment/experiment.h"
#include "experiment/live_page.h"
#include "experiment/recorder.h"
#include "experiment/resume.h"
#include "experiment/stack.h"
#include "experiment/status_board.h"
#include "io/control_file.h"
#include "io/json.h"
#include "io/store.h"
#include "mpi/backoff.h"
#include "mpi/checkpoint_stream.h"
#include "mpi/errors.h"
#include "mpi/gang.h"
#include "mpi/launch.h"
#include "mpi/placement.h"
#include "mpi/trace.h"
#include "mpi/wire.h"
#include "controller/controller.h"
#include "sys/printable.h"
#include "sys/safe_fs.h"
#include "train/registry.h"

namespace ranktune::mpi {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_signal{0};

/// RANKTUNE_TRACE=trials (mpi/trace.h's trace_trial), read once.
bool trace_trials_on() {
  static const bool on = [] {
    const char* v = std::getenv("RANKTUNE_TRACE");
    return v != nullptr && std::string_view(v) == "trials";
  }();
  return on;
}

extern "C" void on_signal(int sig) {
  // A second SIGINT means "now": fall back to the default action. Every row flushed so far
  // is in the file; only the current group-commit batch is lost.
  if (g_signal.exchange(sig) != 0 && sig == SIGINT) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGUSR1}) sigaction(sig, &sa, nullptr);
}

std::vector<io::WorkerInfo> gather_hellos(const boost::mpi::communicator& world) {
  std::vector<io::WorkerInfo> workers(static_cast<std::size_t>(world.size() - 1));
  for (int received = 0; received < world.size() - 1;) {
    const auto in = receive(world, MPI_ANY_SOURCE, 1ms);
    if (in.tag != kTagHello) throw MpiError("driver: expected Hello, got tag " + std::to_string(in.tag));
    const auto h = unpack<Hello>(world, in);
    if (h.wire_version != kWireVersion) {
      throw MpiError("worker " + std::to_string(in.source) + " speaks wire version " +
                     std::to_string(h.wire_version) + ", driver " + std::to_string(kWireVersion));
    }
    workers[static_cast<std::size_t>(in.source - 1)] =
        io::WorkerInfo{in.source, h.host, h.local_index, h.device, h.device_name};
    ++received;
  }
  return workers;
}


class Driver {
 public:
  Driver(const boost::mpi::communicator& world, const config::ExperimentConfig& cfg,
         io::ResultsWriter& writer, const std::vector<io::WorkerInfo>& workers, io::ControlInbox control,
         const io::StoreMeta& meta)
      : world_(world),
        cfg_(cfg),
        writer_(writer),
        workers_(workers),
        recorder_(writer, cfg.trainable.metrics),
        controller_(experiment::make_controller(cfg, experiment::controller_options(cfg, experiment::Transport::Mpi, workers), &recorder_)),
        board_(stdout, cfg.name, cfg.status_interval_s, cfg.time_budget_s),
        control_(std::move(control)) {
    if (!cfg.report_html.empty()) {
      live_ = std::make_unique<experiment::LivePage>(cfg, meta, cfg.trainable.metrics, workers);
      recorder_.mirror_to(live_.get());
    }
  }

  /// Rebuilds the controller from the file it is about to go on writing.
  void resume(const io::ResultsFile& previous, const std::string& cause) {
    // This run's clock goes on from the largest time the file holds (experiment::ResumePoint).
    experiment::ResumePoint point = experiment::resume_point(previous);
    offset_ = point.spent;
    if (live_) live_->seed(previous);
    // Every recorded result is an iteration run, towards [stop] max_total_steps.
    controller_.count_steps_done(static_cast<std::int64_t>(previous.results.size()));
    controller_.resume(std::move(point.trials), writer_.latest_checkpoints(), writer_.latest_state().value_or(""), cause,
                       now());
  }

  /// One "warm_start" event per earlier results file the searcher started from (a fresh run's).
  void log_warm_start() {
    for (const std::string& source : cfg_.warm_sources) recorder_.on_event(now(), -1, -1, search::EventKind::WarmStart, source);
  }

  /// One "slurm" event per allocation that runs the experiment (first run and requeues).
  void log_allocation() {
    const auto env = experiment::slurm_environment();
    const std::string slurm = experiment::slurm_event_message(env);
    if (!slurm.empty()) recorder_.on_event(now(), -1, -1, search::EventKind::Slurm, slurm);
    // This launch got through MPI_Init; the next may not (docs/guide/slurm.md).
    if (const std::string fence = experiment::pmix_fence_warning(env); !fence.empty()) recorder_.warn(now(), -1, -1, fence);
  }

  int run() {
    log_allocation();
    // Every worker is free at once, so that gangs are placed knowing them all (rank order
    // alone made the first two idle ranks a gang, across hosts under --map-by node).
    std::vector<int> workers;
    for (int w = 1; w < world_.size(); ++w) workers.push_back(w);
    carry_out(controller_.on_workers_free(workers, now()));
    trace("driver: first Starts sent");
    // The driver answers the results that end a lease; its nap bounds each such round
    // trip, so it naps at most 100 us (10,000 polls/s of one rank cost about 2% of a core).
    Backoff backoff(5us, 100us);
    double last_flush = 0, last_control = 0;
    bool interrupted = false;
    while (true) {
      int handled = 0;
      // Drain a bounded batch so ticks, flushes and the board still run under a flood.
      // One timestamp serves the whole drain: reading the clock per message cost more
      // than recording the message on this VM.
      const double t = now();
      drain_began_ = trace_trials_on() ? trace_detail::realtime() : 0;
      while (handled < 512) {
        auto in = try_receive(world_, MPI_ANY_SOURCE, MPI_ANY_TAG);
        if (!in) break;
        handle(*in, t);
        ++handled;
        // A checkpoint chunk in or out moves megabytes to or from the disk: the batch ends
        // there, so the clock, ticks and flushes stay current while checkpoints stream.
        if (in->tag == kTagCheckpoint || in->tag == kTagRestoreAck) break;
      }
      // Chunks that the writer thread has written since: acknowledged, and the checkpoints
      // they complete stored.
      for (const StoredCheckpoint& stored : streams_.poll(t)) {
        checkpoint_stored(stored, t);
        ++handled;
      }
      if (g_signal.load() != 0 && !interrupted) {
        interrupted = true;
        std::fprintf(stderr, "ranktune: signal %d received: stopping trials, flushing %s\n",
                     g_signal.load(), cfg_.results.c_str());
        carry_out(controller_.request_stop(t));
      }
      // Four looks a second at the control file: an open and fstat each, and an answer
      // within a fraction of a second for the operator.
      if (t - last_control >= 0.25) {
        last_control = t;
        handle_control(t);
      }
      carry_out(controller_.on_tick(t));
      const bool done = controller_.finished();
      if (done || recorder_.take_lifecycle() || (t - last_flush) * 1e3 >= cfg_.flush_interval_ms) {
        // The searcher's and scheduler's state goes with every commit, so a resume after a
        // crash finds state and rows that match.
        trace_trial("driver: flush begins", -1);
        writer_.append_state(t, controller_.save_state());
        controller_.rank_pareto();
        recorder_.flush(controller_.trials());
        trace_trial("driver: flush ends", -1);
        last_flush = t;
      }
      if (done) break;
      board_.update(controller_, t);
      if (live_) live_->tick(t, controller_.trials());
      if (handled == 0) {
        backoff.wait();
      } else {
        backoff.reset();
      }
    }
    trace("driver: experiment finished");
    shutdown_workers();
    trace("driver: every Bye in");
    if (live_) {
      live_->finish(controller_.trials());
      recorder_.on_event(now(), -1, 0, search::EventKind::LivePage, live_->summary());
    }
    // Rank 0's peak memory, so that a run shows (and tests/mpi/large_checkpoints.sh checks)
    // that checkpoints streamed through it chunk by chunk instead of sitting in it whole.
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    recorder_.on_event(now(), -1, 0, search::EventKind::Driver, "peak RSS " + std::to_string(usage.ru_maxrss) + " KiB");
    writer_.append_state(now(), controller_.save_state());
    controller_.rank_pareto();
    recorder_.flush(controller_.trials());
    board_.final(controller_, now());
    trace("driver: final flush done");

    const auto counts = controller_.counts();
    if (controller_.end_reason() == controller::EndReason::Interrupted) return experiment::kExitInterrupted;
    if (counts[static_cast<std::size_t>(search::TrialStatus::Terminated)] == 0) return experiment::kExitFailed;
    return experiment::kExitOk;
  }

  /// Carries out the requests `ranktune ctl` appended to the control file since the last
  /// look, and answers each with a "control" event that quotes its id.
  void handle_control(double t) {
    std::vector<io::ControlLine> lines = control_.poll();
    if (const std::string problem = control_.take_problem(); !problem.empty()) recorder_.warn(t, -1, -1, problem);
    for (io::ControlLine& line : lines) {
      std::string tag = "#";  // appended, not "#" + id: GCC 12 inlines that into a false -Wrestrict warning
      tag += line.id.empty() ? std::string("?") : line.id;
      if (!line.request) {
        recorder_.on_event(t, -1, -1, search::EventKind::Control, tag + " refused: " + line.error);
        continue;
      }
      controller::ControlRequest& r = *line.request;
      // The file is an input like any other: its values are checked here, whatever the
      // sender checked.
      std::string why;
      if ((r.kind == controller::ControlRequest::Kind::Set || r.kind == controller::ControlRequest::Kind::Add) &&
          r.count == 0)
        why = controller::check_control_config(cfg_.space, r.config, r.kind == controller::ControlRequest::Kind::Add, r.force);
      if (why.empty() && r.kind == controller::ControlRequest::Kind::Set) {
        if (const search::Trial* trial = controller_.find(r.trial)) {
          search::Config current = trial->config;
          for (const auto& [key, value] : trial->pending) current[key] = value;
          why = controller::check_set_conditions(cfg_.space, current, r.config);
        }
      }
      if (why.empty() && r.kind == controller::ControlRequest::Kind::Add)
        why = controller::check_added_trials(std::max<std::int64_t>(r.count, 1), controller_.added_by_control(),
                                         controller_.expected_trials());
      std::vector<controller::Instruction> out;
      const controller::ControlOutcome o =
          why.empty() ? controller_.on_control(r, t, out) : controller::ControlOutcome{false, why};
      // The event is about the trial it names, when there is one.
      const auto known = static_cast<search::TrialId>(controller_.trials().size());
      const search::TrialId trial = r.kind == controller::ControlRequest::Kind::Add ? (o.applied && r.count == 0 ? known : -1)
                                    : controller::names_trial(r.kind) && r.trial <= known ? r.trial
                                                                                          : -1;
      // "pending": accepted, in effect later (a second "control" event says when).
      const char* word = !o.applied ? "refused" : o.pending ? "pending" : "applied";
      recorder_.on_event(t, trial, -1, search::EventKind::Control, tag + " " + word + ": " + o.message);
      // The request's id and values are the sender's text: shown, not obeyed by the terminal.
      std::fprintf(stderr, "ranktune: control %s %s: %s\n", sys::printable(tag).c_str(), word,
                   sys::printable(o.message).c_str());
      carry_out(out);
    }
  }

  /// Tells every worker to stop; used on the way out of a run that ended. (After an error
  /// rank 0 ends the job instead: a worker in a trial takes a Shutdown for a protocol
  /// error, and its message would hide rank 0's.)
  void shutdown_workers() {
    if (shut_down_) return;
    shut_down_ = true;
    // Restores still queued or half sent end with an aborted chunk: their workers wait for
    // chunks before anything else, and then fail those attempts (stale by now).
    streams_.abort_restores();
    // Chunks still being written are written and acknowledged (their workers wait for the
    // acks before their Bye); a checkpoint they complete gets its row, which the controller,
    // done by now, does not hear of (a resume finds it).
    streams_.drain(now());
    for (int w = 1; w < world_.size(); ++w) send(world_, w, kTagShutdown, Empty{});
    // Wait for every Bye so no worker is still mid-message when MPI finalizes. Stale
    // results that cross the shutdown are dropped. Chunks of checkpoints still streaming
    // in are acknowledged (the worker waits for that) and thrown away: the controller no
    // longer waits for them, and their reserved bytes go back to the free list.
    for (int byes = 0; byes < world_.size() - 1;) {
      const Incoming in = receive(world_, MPI_ANY_SOURCE, 1ms);
      if (in.tag == kTagBye) {
        ++byes;
      } else if (in.tag == kTagCheckpoint) {
        streams_.discard_chunk(in.source, unpack<CheckpointChunk>(world_, in));
      } else if (in.tag == kTagRestoreAck) {
        streams_.acknowledged_at_shutdown(in.source, unpack<ChunkAck>(world_, in));
      } else if (in.tag == kTagLogTail) {
        // The attempt whose NaN ended the run: its worker sends the tail (a LogTail, or the
        // Ended of a program that exited before the Stop came) after the controller has
        // finished. Only the tail is taken; the final flush records it.
        const auto l = unpack<LogTail>(world_, in);
        controller_.on_log_tail(l.trial, l.attempt, l.log_tail);
      } else if (in.tag == kTagEnded) {
        const auto e = unpack<Ended>(world_, in);
        controller_.on_log_tail(e.trial, e.attempt, e.log_tail);
      } else if (in.tag == kTagNotice) {
        // The trials stopped by the shutdown send theirs now (a program killed with SIGKILL).
        try {
          record_notice(in, now());
        } catch (const std::exception&) {  // shutting down after an error: the file may not take it
        }
      }
    }
    streams_.close();
  }

 private:
  /// Seconds since the experiment was created, counted over its runs (see resume()).
  double now() const { return offset_ + std::chrono::duration<double>(Clock::now() - start_).count(); }

  void handle(const Incoming& in, double t) {
    // What a worker sends after a checkpoint (its next Result, its Ended) is about a state
    // that follows it: the checkpoint is stored first, in the order the worker sent them.
    if (in.tag != kTagCheckpoint)
      for (const StoredCheckpoint& stored : streams_.written_from(in.source, t)) checkpoint_stored(stored, t);
    switch (in.tag) {
      case kTagResult: {
        auto r = unpack<Result>(world_, in);
        trace_trial("driver: Result in", r.trial);
        // The moment its drain began: the `t` that the trial's end_time (and the next
        // trial's start_time) is stamped with (benchmarks/trace_split.py).
        if (drain_began_ > 0) trace_detail::print(drain_began_, "driver: drain began", r.trial);
        commands_.clear();
        controller_.on_result(r.trial, r.attempt, r.metrics, t, commands_);
        carry_out(commands_);
        break;
      }
      case kTagCheckpoint:  // its bytes follow; the writer thread writes them (poll() in run())
        streams_.receive_chunk(in.source, unpack<CheckpointChunk>(world_, in), t);
        break;
      case kTagRestoreAck:
        restores_failed(streams_.acknowledged(in.source, unpack<ChunkAck>(world_, in)));
        break;
      case kTagPlaced: {
        const auto p = unpack<Placed>(world_, in);
        const search::Trial* trial = controller_.find(p.trial);
        if (trial == nullptr || trial->attempt != p.attempt) break;  // stale
        nlohmann::json hosts = nlohmann::json::array();
        for (const int w : trial->workers) hosts.push_back(workers_.at(static_cast<std::size_t>(w - 1)).host);
        const nlohmann::json placement = {{"path", p.path},   {"threads", p.threads}, {"ranks", trial->workers},
                                          {"hosts", hosts},   {"collective", p.collective}};
        recorder_.on_event(t, p.trial, in.source, search::EventKind::Placement, placement.dump());
        break;
      }
      case kTagNotice:
        record_notice(in, t);
        break;
      case kTagEnded: {
        const auto e = unpack<Ended>(world_, in);
        carry_out(e.failed ? controller_.on_trial_failed(e.trial, e.attempt, e.reason, e.log_tail, t)
                           : controller_.on_trial_done(e.trial, e.attempt, t, e.log_tail));
        // An attempt the driver failed on a result (a NaN) that ended by itself before the
        // Stop arrived: its Ended carries the tail, not a LogTail. Also when its retry has
        // started since: on_log_tail keeps it only for the attempt it failed.
        controller_.on_log_tail(e.trial, e.attempt, e.log_tail);
        break;
      }
      case kTagLogTail: {
        const auto l = unpack<LogTail>(world_, in);
        controller_.on_log_tail(l.trial, l.attempt, l.log_tail);
        break;
      }
      default:
        throw MpiError("driver: unexpected message tag " + std::to_string(in.tag) + " from rank " +
                       std::to_string(in.source));
    }
  }

  /// A checkpoint streamed in and stored: its event, and the controller learns of it.
  void checkpoint_stored(const StoredCheckpoint& c, double t) {
    char took[32];
    std::snprintf(took, sizeof took, " in %.3f s", t - c.began);
    recorder_.on_event(t, c.trial, c.source, search::EventKind::Checkpoint,
                       "iteration " + std::to_string(c.iteration) + ", " + std::to_string(c.total) + " bytes" + took);
    carry_out(controller_.on_checkpoint(c.trial, c.attempt, c.iteration, t));
    // After the controller has moved its restore points to the new checkpoint.
    if (cfg_.checkpoint_keep_last > 0 || cfg_.checkpoint_keep_best > 0)
      writer_.apply_retention(io::pinned_checkpoints(controller_.trials()));
  }

  /// A worker's Notice becomes an event of the trial (stale or not: it happened).
  void record_notice(const Incoming& in, double t) {
    const auto n = unpack<Notice>(world_, in);
    recorder_.on_event(t, n.trial, in.source, n.kind, n.message);
  }

  /// Restores whose bytes failed their checksum once all of them were sent (the worker,
  /// which checks them too, then fails the same attempt, and its Ended is stale).
  void restores_failed(const std::vector<RestoreFailure>& failed) {
    for (const RestoreFailure& f : failed) restore_failed(f.command, f.reason);
  }

  /// A Start's checkpoint cannot be read (it fails its checksum): the attempt fails, never
  /// the run. The checkpoint is dropped, so that the retry restores the one before it, or
  /// starts over when there is none.
  void restore_failed(const controller::Instruction& c, const std::string& reason) {
    writer_.drop_checkpoint(c.restore_trial, c.restore_checkpoint);
    controller_.on_checkpoint_lost(c.restore_trial, c.restore_checkpoint,
                                   writer_.previous_checkpoint(c.restore_trial, c.restore_checkpoint));
    carry_out(controller_.on_trial_failed(c.trial, c.attempt, "cannot restore its checkpoint: " + reason, "", now()));
  }

  /// Sends the commands to their workers.
  void carry_out(const std::vector<controller::Instruction>& commands) {
    for (const auto& c : commands) {
      switch (c.kind) {
        case controller::Instruction::Kind::Start: {
          Start start{c.trial, c.attempt, c.config, c.until, c.iterations};
          start.gang = c.gang;
          start.cause = c.cause;
          if (c.restore_trial == 0) {
            send(world_, c.worker, kTagStart, start);
            trace_trial("driver: Start out", c.trial);
            break;
          }
          // The checkpoint follows the Start in chunks; each gang member gets its own stream.
          std::optional<io::ResultsWriter::CheckpointSource> source;
          try {
            source.emplace(writer_.open_checkpoint(c.restore_trial, c.restore_checkpoint));
          } catch (const io::StoreError& e) {
            restore_failed(c, e.what());
            break;
          }
          start.restore = true;
          start.checkpoint_size = static_cast<std::int64_t>(source->size());
          start.checkpoint_crc32c = source->crc32c();
          send(world_, c.worker, kTagStart, start);
          restores_failed(streams_.restore(c, std::move(*source)));
          break;
        }
        case controller::Instruction::Kind::Continue:
          // The controller answers only the results a worker waits for (the end of its
          // lease), and save requests, which come where leases end.
          send(world_, c.worker, kTagDecision,
               Decision{c.trial, c.attempt, Decision::Continue, c.until, c.save, false});
          break;
        case controller::Instruction::Kind::Stop:
          send(world_, c.worker, kTagDecision, Decision{c.trial, c.attempt, Decision::Stop, 0, false, c.failed});
          break;
        case controller::Instruction::Kind::Pause:
          send(world_, c.worker, kTagDecision, Decision{c.trial, c.attempt, Decision::Pause});
          break;
      }
    }
  }

  const boost::mpi::communicator& world_;
  const config::ExperimentConfig& cfg_;
  io::ResultsWriter& writer_;
  const std::vector<io::WorkerInfo>& workers_;  ///< by rank - 1
  experiment::Recorder recorder_;
  controller::Controller controller_;
  experiment::StatusBoard board_;
  std::unique_ptr<experiment::LivePage> live_;  ///< [report] html, when set
  io::ControlInbox control_;
  Clock::time_point start_ = Clock::now();
  double offset_ = 0;  ///< the time the runs before this one spent (resume)
  bool shut_down_ = false;
  double drain_began_ = 0;  ///< wall clock at the current drain's `t`, with RANKTUNE_TRACE=trials only
  std::vector<controller::Instruction> commands_;  // reused for every result: no allocation per message

  MpiChunkTransport transport_{world_};
  /// Hold the writer's byte ranges (and join their writer thread): destroyed first.
  CheckpointStreams streams_{writer_, transport_, cfg_.checkpoint_fsync};
};

std::string log_dir_for(const std::string& results) { return results + ".logs"; }

}  // namespace

void abort_setup(const boost::mpi::communicator& world) {
  Setup empty;  // an empty config tells the workers to exit quietly
  boost::mpi::broadcast(world, empty, 0);
}

namespace {

// The run's error path: a full disk stops the run (the error is printed first), and what
// can still be committed is. Carries the exit code out to abort_job.
struct RunStopped {
  int code;
};

// Everything of run_driver after the workers have the Setup. Throws on any error: the
// caller ends the job, since returning would leave the workers waiting.
int drive(const boost::mpi::communicator& world, const config::ExperimentConfig& given, const DriverOptions& options) {
  // A resume may take the searcher the file's experiment began with (adopt_stored_algorithm).
  config::ExperimentConfig cfg = given;
  place(world);
  const boost::mpi::communicator gangs = gang_parent(world);  // the workers build gangs from it
  trace("driver: placed");
  const auto workers = gather_hellos(world);
  trace("driver: every Hello in");

  io::StoreMeta meta = config::experiment_meta(cfg, options.command_line);
  meta.stack = experiment::collect_stack(workers, world.size());
  trace("driver: stack collected");

  std::printf("ranktune: experiment '%s' on %d workers (%s mode); results: %s\n", cfg.name.c_str(),
              world.size() - 1, meta.stack["device_mode"].c_str(), cfg.results.c_str());
  std::fflush(stdout);
  install_signal_handlers();
  tighten_timer_slack();

  std::unique_ptr<io::ResultsWriter> writer;
  std::optional<io::ResultsFile> previous;
  std::optional<io::ControlInbox> control;
  io::ResumeInfo resumed;
  // The control file, made (mode 0600) before the results file is opened for writing, so
  // that a `ranktune ctl` that sees the run finds it; one there that another user could
  // have written stops the run here, before anything ran.
  control.emplace(cfg.results);
  if (io::results_file_exists(cfg.results)) {  // a link there is refused (exit 2)
    // Resume. Nothing is written into the file before read_for_resume has checked it: a
    // damaged file must stay as it is (and refused), never be mended into a healthy-looking one.
    writer = experiment::open_to_resume(cfg, options.force, previous, resumed);
    std::printf("ranktune: resuming %s: %zu trials recorded\n", cfg.results.c_str(), previous->trials.size());
    if (config::adopt_stored_algorithm(cfg, previous->meta))
      std::printf("ranktune: [search] algorithm not given: %s\n", cfg.algorithm_reason.c_str());
  } else {
    writer = std::make_unique<io::ResultsWriter>(cfg.results, meta,
                                                 experiment::store_schema(cfg), workers);
  }
  trace("driver: results file open");
  writer->set_retention({cfg.checkpoint_keep_last, cfg.checkpoint_keep_best, cfg.mode});
  int code = experiment::kExitInternal;
  {  // the driver's checkpoint streams hold the writer's byte ranges: it goes first
    Driver driver(world, cfg, *writer, workers, std::move(*control), meta);
    if (!previous) driver.log_warm_start();
    if (previous) {
      try {
        driver.resume(*previous, experiment::resume_cause(resumed));
      } catch (const std::invalid_argument& e) {  // the controller refuses what the file holds
        // A file from before the algorithm was recorded, whose config names none, began
        // with the default of its day (random, later tpe), which may not be today's.
        const bool guessed = !cfg.algorithm_reason.empty() && previous->meta.algorithm.empty();
        throw io::StoreError(cfg.results + ": cannot resume: " + e.what() +
                             (guessed ? ". The config names no [search] algorithm, and this file, written before ranktune "
                                        "recorded the one it chose, may have begun with another default (random, "
                                        "later tpe): name it in [search] algorithm and resume with --force"
                                      : ""));
      }
    }
    try {
      code = driver.run();
    } catch (const io::DiskFullError& e) {
      // Said first, so that nothing a worker prints as the job ends hides it.
      std::fprintf(stderr, "ranktune: %s\n", e.what());
      std::fflush(stderr);
      code = experiment::kExitInterrupted;  // the run stopped with its rows committed, as after a signal
      try {
        writer->flush();  // commits what is buffered; a checkpoint row only once its bytes are in
      } catch (const std::exception&) {
        code = experiment::kExitInternal;  // rows since the last commit are lost: the disk is still full
      }
      throw RunStopped{code};
    }
  }
  writer.reset();
  trace("driver: results file closed");
  std::printf("ranktune: results: %s\n", cfg.results.c_str());
  return code;
}

}  // namespace

int run_driver(const boost::mpi::communicator& world, const config::ExperimentConfig& cfg,
               const DriverOptions& options) {
  trace("driver: MPI_Init done, config loaded");
  if (const int workers = world.size() - 1; workers < cfg.ranks_per_trial) {
    abort_setup(world);
    cfg.fail("resources.ranks_per_trial",
             "a gang of " + std::to_string(cfg.ranks_per_trial) + " ranks needs at least that many workers, and this job has " +
                 std::to_string(workers) + " (MPI ranks minus the driver). Start at least " +
                 std::to_string(cfg.ranks_per_trial + 1) + " ranks (--np " + std::to_string(cfg.ranks_per_trial) +
                 "), or lower ranks_per_trial");
  }
  Setup setup{kWireVersion, cfg.text, cfg.path, cfg.overrides, log_dir_for(cfg.results)};
  setup.driver_pid = ::getpid();  // workers on this machine end with us (exit_with_process)
  setup.driver_namespace = process_namespace_id();
  try {
    // A results file that ranktune will not write (a link, another user's) stops the run
    // before anything is made beside it: the control file, the logs folder.
    io::refuse_unsafe_results(cfg.results);
  } catch (const io::UnsafeFileError&) {
    abort_setup(world);
    throw;
  }
  if (train::traits(cfg.trainable).writes_logs) {
    // The trial logs' folder sits beside the results file, often in a world-writable folder:
    // one that another user made, or planted as a link, would let them read or redirect
    // every log. Checked here, before any trial starts; the workers open it the same way.
    try {
      (void)sys::make_private_directory(setup.log_dir);
    } catch (const sys::FsError& e) {
      abort_setup(world);
      throw config::ConfigError(cfg.results, 0, "", std::string("the trial logs' folder: ") + e.what());
    }
  }
  boost::mpi::broadcast(world, setup, 0);
  trace("driver: Setup sent");
  // From here the workers wait on rank 0, in collectives and for messages: an error here
  // must end the job (after the results file is closed, which unwinding drive() does), or
  // rank 0 would wait in MPI_Finalize for workers that wait for it.
  try {
    return drive(world, cfg, options);
  } catch (const RunStopped& stopped) {
    abort_job(stopped.code, "");
  } catch (const std::exception& e) {
    const ErrorReport report = describe_error(e);
    abort_job(report.code, report.line);
  } catch (...) {
    abort_job(experiment::kExitInternal, "ranktune: error: an unknown exception on rank 0");
  }
}

}  // namespace ranktune::mpi
