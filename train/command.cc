// The command trainable (train/command.h: the protocol): one subprocess per attempt and
// gang member, its JSON-line reports, checkpoints through RANKTUNE_CHECKPOINT_DIR, stops
// (asked for, then signalled) and timeouts. Its log is train/trial_log.h, its environment
// train/command_env.h, its [trainable] keys command_config.cc.
#include "train/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <system_error>
#include <utility>

#include "io/archive.h"
#include "io/json.h"
#include "sys/safe_fs.h"

namespace ranktune::train {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;

namespace {

std::string seconds(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

}  // namespace

CommandTrainable::CommandTrainable(const config::TrainableSpec& spec)
    : spec_(options_of<CommandOptions>(spec)), metrics_(spec.metrics) {}

void CommandTrainable::setup(const search::Config& config, const Context& context) {
  stop();
  buffer_.clear();
  line_no_ = 0;
  eof_ = finished_ = false;
  started_ = true;
  trial_id_ = context.trial_id;
  attempt_ = context.attempt;
  protocol_ = 1;
  peer_failed_ = context.peer_failed;
  log_path_.clear();
  if (spec_.command.empty()) throw TrialFailure("the trainable command is empty");

  const std::string& program = spec_.command[0];
  const auto spec_path = spec_.env.find("PATH");
  const char* inherited_path = ::getenv("PATH");
  const std::string path_env = spec_path != spec_.env.end() ? spec_path->second
                               : inherited_path           ? inherited_path
                                                          : "";
  const sys::ResolvedProgram resolved = sys::resolve_program(program, context.config_dir, path_env);
  if (resolved.error != 0) throw TrialFailure("cannot run '" + program + "': " + std::strerror(resolved.error));

  const std::string workdir = spec_.workdir.empty() ? context.config_dir : spec_.workdir;
  std::error_code ec;
  if (!workdir.empty() && !fs::is_directory(workdir, ec)) {
    throw TrialFailure("working directory '" + workdir + "' is not a directory");
  }

  // The driver made the folder private before any trial started (rank 0); opening it the
  // same way here refuses one that was swapped for a link or another user's folder since,
  // and the log is opened inside it, never through a link.
  const fs::path log_dir = fs::absolute(context.log_dir.empty() ? "." : context.log_dir, ec);
  // Each member of a gang has its own log: they print at the same time.
  const std::string name = "trial_" + std::to_string(context.trial_id) + "_attempt_" + std::to_string(context.attempt) +
                           (context.distributed.world_size > 1 ? "_rank_" + std::to_string(context.distributed.rank) : "") +
                           ".log";
  log_path_ = (log_dir / name).string();
  // A fresh attempt starts a fresh log; any other start (a resume, an exploit, a `ctl set`)
  // goes on in the same attempt, so its log is appended to, after a line saying why.
  const bool append = !context.start_cause.empty() && context.start_cause != "start";
  try {
    if (log_dir.has_parent_path()) fs::create_directories(log_dir.parent_path(), ec);
    const sys::UniqueFd dir = sys::make_private_directory(log_dir.string());
    const auto max_bytes = static_cast<std::int64_t>(spec_.max_log_mb * 1024 * 1024);
    log_.open(dir.get(), name, log_path_, append, max_bytes);
  } catch (const sys::FsError& e) {
    log_path_.clear();
    throw TrialFailure(std::string("cannot open its log: ") + e.what());
  }
  // Also at the top of a log still empty (a retry, or an exploit before its first output):
  // the line says why this run started where it did.
  if (append) {
    log_.write(std::string(kOwnLinePrefix) + "---- trial " + std::to_string(context.trial_id) + " attempt " +
               std::to_string(context.attempt) + " goes on at iteration " + std::to_string(context.first_iteration) +
               " (" + context.start_cause + ") ----\n");
  }
  // The program's stdout and stderr: a pipe, read without blocking in fill(). A larger
  // buffer lets a chatty program run on while the worker waits for a decision.
  int out_fds[2];
  if (::pipe2(out_fds, O_CLOEXEC) != 0)
    throw TrialFailure(std::string("cannot create a pipe: ") + std::strerror(errno));
  sys::UniqueFd output_read(out_fds[0]), output_write(out_fds[1]);
  (void)::fcntl(output_read.get(), F_SETPIPE_SZ, 1 << 20);
  if (::fcntl(output_read.get(), F_SETFL, O_NONBLOCK) != 0)
    throw TrialFailure(std::string("cannot set up the output pipe: ") + std::strerror(errno));

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw TrialFailure(std::string("cannot create a pipe: ") + std::strerror(errno));
  sys::UniqueFd read_end(fds[0]), write_end(fds[1]);

  std::map<std::string, std::string> env = trial_environment(spec_.env, config, context);
  set_mode_env(env, context);  // RANKTUNE_MODE, and RANKTUNE_EVAL_* for `ranktune eval` (command_eval.cc)
  control_.reset();
  control_child_.reset();
  awaiting_continue_ = launched_ = false;
  // The control socket, for every program (protocol 2); ranktune writes to it only once the
  // program speaks checkpoints or said hello. A socket rather than a pipe: send(MSG_NOSIGNAL)
  // reports a program that has exited as EPIPE instead of raising SIGPIPE in the worker.
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw TrialFailure(std::string("cannot create the control socket: ") + std::strerror(errno));
  control_.reset(sv[0]);
  control_child_.reset(sv[1]);
  checkpoint_dir_.remove();
  if (spec_.checkpoint) {
    try {
      // In the worker's run folder (sys::TempDir::run_folder), which goes with the worker even
      // when its job is killed; "ranktune-" marks it where there is none (a unit test).
      checkpoint_dir_ = sys::TempDir("ranktune-trial" + std::to_string(context.trial_id) + "-attempt" +
                                std::to_string(context.attempt) + "-");
    } catch (const std::system_error& e) {
      throw TrialFailure(std::string("RANKTUNE_CHECKPOINT_DIR: ") + e.what() + " (set TMPDIR to a writable folder)");
    }
    env["RANKTUNE_CHECKPOINT_DIR"] = checkpoint_dir_.path();
  }
  request_ = sys::SpawnRequest{resolved.path, spec_.command, environment_list(env), workdir};
  output_ = std::move(output_read);
  output_write_ = std::move(output_write);
  report_write_ = std::move(write_end);
  report_ = std::move(read_end);
  // A checkpointing command starts at its first step, so that restore() can fill its
  // directory before the program looks at it.
  if (!spec_.checkpoint) launch();
}

void CommandTrainable::launch() {
  launched_ = true;
  request_.output_fd = output_write_.get();
  request_.report_fd = report_write_.get();
  request_.control_fd = control_child_.get();
  const int err = sys::ChildProcess::spawn(request_, child_);
  // Our copies close now: the report pipe then reaches EOF once the program and everything
  // it started have closed theirs.
  output_write_.reset();
  report_write_.reset();
  control_child_.reset();
  if (err != 0) {
    finished_ = true;
    throw TrialFailure("cannot run '" + spec_.command.front() + "': " + std::strerror(err), log_.tail());
  }
}

bool CommandTrainable::send_control(const char* line) {
  const std::size_t n = std::strlen(line);
  for (;;) {
    // Never blocking: a program that follows the protocol has read every earlier line, so
    // a full socket means it does not read its control fd at all.
    const ssize_t sent = ::send(control_.get(), line, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent == static_cast<ssize_t>(n)) return true;
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EPIPE || errno == ECONNRESET)) return false;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      fail("it does not read RANKTUNE_CONTROL_FD: with [trainable] checkpoint = true, or after it said hello "
           "(protocol 2), a program must read one line from it after each report (docs/command_protocol.md)");
    fail(std::string("cannot write its control socket: ") + (sent < 0 ? std::strerror(errno) : "short write"));
  }
}

void CommandTrainable::save(CheckpointWriter& out) {
  if (!spec_.checkpoint) return Trainable::save(out);
  if (!launched_ || finished_) throw TrialFailure("there is no running program to save a checkpoint of");
  if (!send_control("save\n")) fail("it exited before it could save its checkpoint");
  const std::optional<std::string> line = next_line();
  if (!line) fail("it ended without acknowledging the save request (it must report {\"ranktune\": \"saved\"})");
  const auto ack = nlohmann::json::parse(*line, nullptr, /*allow_exceptions=*/false);
  if (!(ack.is_object() && ack.size() == 1 && ack.value("ranktune", "") == "saved"))
    fail("it reported '" + line->substr(0, 80) + "' instead of {\"ranktune\": \"saved\"} after a save request: " +
         "after each report it must wait for a line on RANKTUNE_CONTROL_FD (see docs/command_protocol.md)");
  try {
    io::pack_directory(checkpoint_dir_.path(), [&](std::span<const std::byte> b) { out.write(b); });
  } catch (const io::ArchiveError& e) {
    fail(std::string("cannot pack its checkpoint directory: ") + e.what());
  }
}

void CommandTrainable::restore(CheckpointReader& in) {
  if (!spec_.checkpoint) return Trainable::restore(in);
  if (launched_) throw TrialFailure("restore() after the program started");
  try {
    io::unpack_directory([&](std::span<std::byte> b) { return in.read(b); }, checkpoint_dir_.path());
  } catch (const io::ArchiveError& e) {
    throw CheckpointError(std::string("the checkpoint directory cannot be unpacked: ") + e.what());
  }
}

StepResult CommandTrainable::step() {
  if (!started_) throw TrialFailure("step() before setup()");
  if (finished_) return StepResult{{}, true};
  if (!launched_) launch();
  // A program that has exited cannot take the line; its exit status tells the rest.
  if (std::exchange(awaiting_continue_, false)) send_control("continue\n");
  for (;;) {
    const std::optional<std::string> line = next_line();
    if (!line) return finish();
    // The announcement of a program that speaks protocol 2 (before its first report).
    // Not counted in the line numbers of errors, which then number the program's reports.
    if (const int version = hello_version(*line); version > 0) {
      protocol_ = std::min(version, kCommandProtocol);
      --line_no_;
      continue;
    }
    StepResult result = parse(*line);
    // It waits for an answer after each report: one that speaks checkpoints, or protocol 2.
    awaiting_continue_ = control_ && (spec_.checkpoint || protocol_ >= 2);
    return result;
  }
}

int CommandTrainable::hello_version(const std::string& line) {
  if (line.find("\"hello\"") == std::string::npos) return 0;  // most lines: no parse
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("ranktune", nlohmann::json()) != "hello") return 0;
  const auto v = j.find("protocol");
  if (v == j.end() || !v->is_number_integer() || v->get<std::int64_t>() < 1) return 1;
  return static_cast<int>(std::min<std::int64_t>(v->get<std::int64_t>(), 1000));
}

std::optional<std::string> CommandTrainable::next_line() {
  constexpr std::size_t kMaxLine = 1 << 20;
  Deadline deadline;
  if (spec_.step_timeout_s > 0) {
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(spec_.step_timeout_s));
  }
  for (;;) {
    while (auto line = take_line()) {
      if (line->find_first_not_of(" \t\r") == std::string::npos) continue;
      check_log();
      return line;
    }
    if (buffer_.size() > kMaxLine) {
      fail("malformed report line " + std::to_string(line_no_ + 1) + ": over 1 MiB without a newline: '" +
           buffer_.substr(0, 80) + "'");
    }
    if (eof_) {
      if (!wait_for_exit(deadline)) fail("no report for " + seconds(spec_.step_timeout_s) + " s (step_timeout_s)");
      return std::nullopt;
    }
    if (!fill(deadline)) fail("no report for " + seconds(spec_.step_timeout_s) + " s (step_timeout_s)");
  }
}

std::optional<std::string> CommandTrainable::take_line() {
  const auto nl = buffer_.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  std::string line = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  ++line_no_;
  return line;
}

bool CommandTrainable::read_some() {
  char chunk[65536];
  const ssize_t got = ::read(report_.get(), chunk, sizeof chunk);
  if (got > 0) {
    buffer_.append(chunk, static_cast<std::size_t>(got));
    return true;
  }
  if (got == 0) {
    eof_ = true;
    return false;
  }
  if (errno == EINTR || errno == EAGAIN) return true;
  fail(std::string("cannot read the report pipe: ") + std::strerror(errno));
}

bool CommandTrainable::fill(Deadline deadline) {
  const bool have_pidfd = child_.pidfd() >= 0;
  for (;;) {
    // poll() skips a negative fd: the output pipe is closed once the program's side is.
    pollfd fds[3] = {{report_.get(), POLLIN, 0}, {output_.get(), POLLIN, 0}, {child_.pidfd(), POLLIN, 0}};
    // Without a pidfd (Linux < 5.3) the leader's exit is checked every 200 ms instead.
    int timeout = sys::poll_timeout(deadline);
    if (!have_pidfd && (timeout < 0 || timeout > 200)) timeout = 200;
    // A gang member also looks at its peers: its program may wait on one that is gone.
    if (peer_failed_ && (timeout < 0 || timeout > 100)) timeout = 100;
    const int r = ::poll(fds, have_pidfd ? 3 : 2, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(std::string("cannot poll the report pipe: ") + std::strerror(errno));
    }
    if (r == 0) check_peers();
    if (fds[1].revents != 0) drain_output();
    if (fds[0].revents != 0) {
      read_some();
      return true;
    }
    const bool exited = have_pidfd ? fds[2].revents != 0 : child_.wait_exit(Clock::now());
    if (!exited) {
      // Output alone is no report: a program that only prints still times out.
      if (deadline && Clock::now() >= *deadline) return false;
      continue;
    }
    // The leader exited, so all it wrote is in the pipes already: drain without waiting, so
    // a leftover grandchild holding a pipe open cannot keep the trial alive.
    pollfd p{report_.get(), POLLIN, 0};
    while (::poll(&p, 1, 0) > 0 && read_some()) {
    }
    drain_output();
    eof_ = true;
    return true;
  }
}

void CommandTrainable::drain_output() noexcept {
  // Bounded, so that a program flooding its stdout cannot starve its reports.
  char chunk[65536];
  for (int i = 0; output_ && i < 64; ++i) {
    const ssize_t got = ::read(output_.get(), chunk, sizeof chunk);
    if (got > 0) {
      log_.write(std::string_view(chunk, static_cast<std::size_t>(got)));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) output_.reset();  // EOF (or broken)
    return;
  }
}

bool CommandTrainable::wait_for_exit(Deadline deadline) {
  // The program may still be writing its stdout: it would block on a full pipe, and never
  // exit, if the output were not read meanwhile.
  for (;;) {
    if (!output_ && !peer_failed_) return child_.wait_exit(deadline);
    if (child_.wait_exit(Clock::now())) return true;
    if (deadline && Clock::now() >= *deadline) return false;
    check_peers();
    pollfd fds[2] = {{output_.get(), POLLIN, 0}, {child_.pidfd(), POLLIN, 0}};
    int timeout = sys::poll_timeout(deadline);
    if (timeout < 0 || timeout > 100) timeout = 100;
    if (::poll(fds, child_.pidfd() >= 0 ? 2 : 1, timeout) > 0 && fds[0].revents != 0) drain_output();
  }
}

void CommandTrainable::check_log() {
  if (!log_.error().empty()) fail("cannot keep its log: " + log_.error());
}

StepResult CommandTrainable::finish() {
  finished_ = true;
  report_.reset();
  const std::optional<int> status = child_.reap();
  drain_output();
  output_.reset();
  log_.close();
  const std::string tail = log_.tail();
  // A full disk is the cause to name first: the program's own failure may follow from it.
  const std::string log_error = log_.error().empty() ? "" : "; and its log could not be kept: " + log_.error();
  // The report's error column is all many users read: the exception line says what the
  // traceback in log_tail says.
  const std::string last = last_meaningful_line(tail);
  if (status && WIFSIGNALED(*status)) {
    const int sig = WTERMSIG(*status);
    throw TrialFailure("killed by signal " + sys::signal_description(sig) + (sig == SIGKILL ? " (out of memory?)" : "") +
                           (last.empty() ? "" : "; its last output: " + last) + log_error,
                       tail);
  }
  if (status && WIFEXITED(*status) && WEXITSTATUS(*status) != 0) {
    throw TrialFailure("exited with code " + std::to_string(WEXITSTATUS(*status)) + (last.empty() ? "" : ": " + last) +
                           log_error,
                       tail);
  }
  if (!log_.error().empty()) throw TrialFailure("cannot keep its log: " + log_.error(), tail);
  // A last line without its newline still counts.
  if (buffer_.find_first_not_of(" \t\r\n") != std::string::npos) {
    ++line_no_;
    return parse(std::exchange(buffer_, {}));
  }
  return StepResult{{}, true};
}

StepResult CommandTrainable::parse(const std::string& line) {
  std::string reason;
  try {
    std::vector<std::string> overflowed;
    search::Metrics m = io::metrics_from_json_line(line, metrics_, &overflowed);
    // Valid JSON, but beyond a double: recorded as inf (non_finite decides what that does
    // to the trial), with a warning event that says where the inf came from.
    for (const std::string& o : overflowed) {
      const std::size_t eq = o.rfind("' = ");  // o is "'NAME' = NUMBER"
      const std::string name = o.substr(1, eq - 1);
      if (std::find(overflowed_.begin(), overflowed_.end(), name) != overflowed_.end()) continue;
      overflowed_.push_back(name);
      warnings_.push_back("trial " + std::to_string(trial_id_) + " attempt " + std::to_string(attempt_) + ": metric " + o +
                          " on report line " + std::to_string(line_no_) +
                          " is beyond the range of a double (about 1.8e308): recorded as " +
                          (o.compare(eq + 4, 1, "-") == 0 ? "-inf" : "inf") + " (said once per metric and attempt)");
    }
    if (!m.empty()) return StepResult{std::move(m), false};
    reason = "no numeric value in the object";
  } catch (const std::exception& e) {
    reason = e.what();
  }
  fail("malformed report line " + std::to_string(line_no_) + ": " + reason + ": '" + line.substr(0, 80) + "'");
}

void CommandTrainable::terminate_child() noexcept {
  if (!child_.alive()) return;
  const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(spec_.kill_grace_s));
  // kill_grace_s = 0 asks for SIGKILL at once: nothing to warn about.
  if (!child_.terminate(grace).killed || spec_.kill_grace_s <= 0) return;
  try {
    warnings_.push_back("trial " + std::to_string(trial_id_) + " attempt " + std::to_string(attempt_) +
                        ": the program did not exit within " + seconds(spec_.kill_grace_s) +
                        " s of SIGTERM ([trainable] kill_grace_s), so it was killed with SIGKILL");
  } catch (...) {  // bad_alloc: the warning is lost, the program is gone all the same
  }
}

void CommandTrainable::fail(const std::string& reason, bool peer) {
  terminate_child();
  report_.reset();
  drain_output();  // what it wrote before it was ended is in the pipe
  output_.reset();
  log_.close();
  finished_ = true;
  if (peer) throw PeerFailure(reason, log_.tail());
  throw TrialFailure(reason, log_.tail());
}

void CommandTrainable::check_peers() {
  if (peer_failed_ && peer_failed_()) fail("stopped because another member of its gang failed", /*peer=*/true);
}

void CommandTrainable::ask_to_stop() noexcept {
  if (protocol_ < 2 || !launched_ || finished_ || !control_ || !child_.alive()) return;
  // The program waits for its answer after its last report: this is it. A program gone
  // already (EPIPE) is reaped below.
  (void)::send(control_.get(), "stop\n", 5, MSG_NOSIGNAL | MSG_DONTWAIT);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec_.stop_grace_s));
  for (;;) {
    if (child_.wait_exit(Clock::now())) return;
    int timeout = sys::poll_timeout(deadline);
    if (timeout == 0) break;
    if (timeout < 0 || timeout > 100) timeout = 100;
    // What it still reports is dropped (the trial has ended), but read, so that a full
    // pipe cannot keep it from reaching its exit.
    pollfd fds[3] = {{report_.get(), POLLIN, 0}, {output_.get(), POLLIN, 0}, {child_.pidfd(), POLLIN, 0}};
    if (::poll(fds, child_.pidfd() >= 0 ? 3 : 2, timeout) <= 0) continue;
    if (fds[1].revents != 0) drain_output();
    if (fds[0].revents != 0) {
      char chunk[65536];
      if (::read(report_.get(), chunk, sizeof chunk) == 0) report_.reset();
    }
  }
  try {
    warnings_.push_back("trial " + std::to_string(trial_id_) + " attempt " + std::to_string(attempt_) +
                        ": the program did not exit within " + seconds(spec_.stop_grace_s) +
                        " s of the stop request ([trainable] stop_grace_s), so it got SIGTERM");
  } catch (...) {  // bad_alloc: the warning is lost, the stop goes on
  }
}

void CommandTrainable::stop() {
  ask_to_stop();
  terminate_child();
  report_.reset();
  drain_output();
  output_.reset();
  output_write_.reset();
  log_.close();
  control_.reset();
  checkpoint_dir_.remove();  // the worker has what it saved; a restore gets a fresh one
  finished_ = true;
}

std::string CommandTrainable::log_tail() const { return log_.tail(); }

}  // namespace ranktune::train
