#pragma once
/// The command trainable: any program (a PyTorch script, a shell script) as one subprocess
/// per trial attempt and gang member, reporting one JSON object per line on a pipe. The
/// protocol, version 2, is docs/command_protocol.md; the Python helper is python/ranktune.
///
/// The child's environment (train/command_env.h) is the worker's, plus `[trainable] env`, plus
///   RANKTUNE_CONFIG     the trial's config as a JSON object
///   RANKTUNE_TRIAL_ID   RANKTUNE_ATTEMPT   RANKTUNE_DEVICE ("cpu", "cuda:0")
///   RANKTUNE_SEED       the experiment seed (combine with the trial id for a trial stream)
///   RANKTUNE_REPORT_FD  the fd to write JSON lines to (always 3)
///   RANKTUNE_CONTROL_FD the fd (always 4) on which ranktune answers, see below
///   RANKTUNE_PROTOCOL   2
///   RANKTUNE_ITERATION  the iteration its next report will be (Context::first_iteration):
///                       1 for a fresh start, more after a resume or a PBT exploit
///   RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK NODE_RANK MASTER_ADDR
///   MASTER_PORT         torchrun's variables (Context::distributed), so that a DDP script
///                       needs no launcher; CUDA_VISIBLE_DEVICES narrowed to the worker's GPU
///   PYTHONUNBUFFERED=1  unless set already, so the log is live
/// and, with `[trainable] checkpoint = true`,
///   RANKTUNE_CHECKPOINT_DIR  a private, fresh directory; on a restore it holds the
///                            checkpoint's files before the program starts
/// Answers on the control fd, one line after each report: "continue", "save" (write the
/// state after the iteration just reported into RANKTUNE_CHECKPOINT_DIR, report
/// {"ranktune": "saved"}, then wait for the next line) or "stop" (finish and exit 0 within
/// `stop_grace_s`). ranktune answers a program that speaks checkpoints, or that said
/// {"ranktune": "hello", "protocol": 2} (the Python helper does, before its first report);
/// it never writes to one that did neither. So the program never runs ahead of ranktune's
/// decisions, a save is exactly at its iteration, and a gang's members stop together.
/// ranktune packs the directory (io/archive.h) after the acknowledgement.
/// stdin is /dev/null; stdout and stderr go to a pipe that the worker copies into
/// <log_dir>/trial_<id>_attempt_<k>.log (`_rank_<r>` added for gang member r; train/trial_log.h:
/// capped, appended to when the same attempt goes on, a full disk named).
/// The program leads its own process group and dies with the worker (sys::ChildProcess). A stop
/// asks a program that said hello to stop, and waits `stop_grace_s` for it to exit; then (or
/// at once for others) it sends SIGTERM to the group and SIGKILL after `kill_grace_s`.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "sys/fd.h"
#include "sys/process.h"
#include "sys/temp_dir.h"
#include "train/command_env.h"
#include "train/registry.h"
#include "train/trainable.h"
#include "train/trial_log.h"

namespace ranktune::train {


/// The largest `[trainable] kill_grace_s` and `stop_grace_s`: a worker waits this long per
/// stopped trial.
inline constexpr double kMaxKillGraceS = 600.0;

/// `[trainable] kind = "command"`: its own keys (configs/README.md). Its `metrics` key is the
/// spec's metrics (config::TrainableSpec::metrics).
struct CommandOptions : config::TrainableOptions {
  static constexpr const char* kKind = "command";
  std::vector<std::string> command;           ///< argv; argv[0] relative to config dir if it has a '/'
  std::string workdir;                        ///< absolute after loading ("" = config dir)
  std::map<std::string, std::string> env;     ///< extra environment variables
  double step_timeout_s = 0.0;                ///< 0: none. A trial silent for longer fails.
  /// Each trial log (`<results>.logs/trial_T_attempt_A.log`) is kept under about this many
  /// MiB: its head and its tail, with a line saying where and how much was cut. 0: no cap.
  double max_log_mb = 100.0;
  /// Seconds a stopped program has between SIGTERM and SIGKILL (at most kMaxKillGraceS).
  double kill_grace_s = 2.0;
  /// Seconds a program that follows protocol version 2 has, after ranktune answered "stop",
  /// to exit by itself before it gets SIGTERM (at most kMaxKillGraceS).
  double stop_grace_s = 30.0;
  /// The command speaks the checkpoint protocol (RANKTUNE_CHECKPOINT_DIR and
  /// RANKTUNE_CONTROL_FD, see docs/guide/checkpoints.md, "Checkpoints of command trainables").
  bool checkpoint = false;
  /// Parameters that change the shape of the program's checkpoint (a layer's width):
  /// PBT and PB2 may not mutate them (train::TrainableTraits::shape_params).
  std::vector<std::string> shape_params;
  void print(config::TomlWriter& out, const std::vector<std::string>& metrics) const override;
};

/// The command kind: its line of trainable_kinds() (train/registry.h; train/command_config.cc).
TrainableKind command_kind();

/// Runs `spec.command` as one subprocess per trial attempt. Every step() returns the next
/// JSON line the program reports; its exit ends the trial (code 0: done, else a failure).
class CommandTrainable : public Trainable {
 public:
  explicit CommandTrainable(const config::TrainableSpec& spec);
  ~CommandTrainable() override = default;  // child_ terminates and reaps

  /// Starts the program. Throws TrialFailure when it cannot be started.
  void setup(const search::Config& config, const Context& context) override;
  /// Blocks until the next report (at most spec.step_timeout_s when > 0). Throws TrialFailure
  /// on a malformed line, a silent program, a non-zero exit or a signal.
  StepResult step() override;
  /// Terminates the program and its process group. Never throws.
  void stop() override;
  std::string log_tail() const override;

  /// True with `[trainable] checkpoint = true`.
  bool can_checkpoint() const override { return spec_.checkpoint; }
  /// Asks the program to save ("save" on the control fd), waits for its acknowledgement
  /// (at most step_timeout_s when > 0), then packs RANKTUNE_CHECKPOINT_DIR into `out`.
  /// Throws TrialFailure when the program does not follow the protocol or the directory
  /// cannot be packed (a FIFO, a device, a link out of it).
  void save(CheckpointWriter& out) override;
  /// Unpacks a checkpoint that save() wrote into the fresh RANKTUNE_CHECKPOINT_DIR; the
  /// program starts at the first step() afterwards. Throws CheckpointError for a stream
  /// that is not such a checkpoint (damaged, truncated, hostile paths).
  void restore(CheckpointReader& in) override;

  /// RANKTUNE_CHECKPOINT_DIR of the current attempt ("" without checkpoints).
  const std::string& checkpoint_dir() const { return checkpoint_dir_.path(); }

  /// The log of the current attempt ("" before setup).
  const std::string& log_path() const { return log_path_; }
  /// The program's pid while it runs, else -1.
  pid_t pid() const { return child_.pid(); }
  /// Warnings about the attempts since the last call (e.g. the program ignored SIGTERM and
  /// had to be killed), each naming the trial.
  std::vector<std::string> take_warnings() override { return std::exchange(warnings_, {}); }

  // Evaluation mode (train/command_eval.cc; docs/command_protocol.md, "Evaluation mode"):
  // with Context::mode "eval", setup() gives the program RANKTUNE_MODE=eval and the
  // RANKTUNE_EVAL_* settings, restore() fills RANKTUNE_CHECKPOINT_DIR, and
  // evaluate_held_out() starts it and reads the lines of its ranktune.on_evaluate() and
  // ranktune.time_inference().
  /// True with `[trainable] checkpoint = true`: only then is there a checkpoint to evaluate.
  bool can_evaluate() const override { return spec_.checkpoint; }
  /// The script times its own inference (ranktune.time_inference()).
  bool times_itself() const override { return true; }
  /// Runs the program in evaluation mode to its end. Throws std::invalid_argument when it
  /// cannot be evaluated (it never called ranktune.on_evaluate(), or timed other batch
  /// sizes than asked), TrialFailure when it fails (its exit and last line, the log tail).
  HeldOutResult evaluate_held_out() override;
  /// In evaluation mode, after evaluate_held_out(): the device and threads it reported.
  ComputeInfo compute_info() const override { return compute_; }

 private:
  /// RANKTUNE_MODE, and in evaluation mode the RANKTUNE_EVAL_* settings and the
  /// RANKTUNE_DEVICE asked for, into the program's environment (called by setup()).
  void set_mode_env(std::map<std::string, std::string>& env, const Context& context);

  /// Moves the next complete line out of buffer_, if any.
  std::optional<std::string> take_line();
  /// Waits until `deadline` for output or the leader's exit, then reads what is there.
  /// Sets eof_ when the trial's output is over. Returns false on timeout.
  bool fill(std::optional<std::chrono::steady_clock::time_point> deadline);
  /// One read() into buffer_: false at EOF (sets eof_). Throws TrialFailure on errors.
  bool read_some();
  /// Terminates the program and throws TrialFailure(reason, log tail), or PeerFailure
  /// when `peer`: the program was ended because another member of its gang failed.
  [[noreturn]] void fail(const std::string& reason, bool peer = false);
  /// Fails the trial (a PeerFailure) when another member of the gang has failed.
  void check_peers();
  /// Protocol 2: answers "stop" and gives the program stop_grace_s to exit by itself,
  /// reading (and dropping) what it still writes meanwhile. Never throws.
  void ask_to_stop() noexcept;
  /// The protocol version a line announces ({"ranktune": "hello", "protocol": N}), or 0
  /// when the line is no such announcement.
  static int hello_version(const std::string& line);
  /// After eof_: reaps the program and turns its exit into done or a failure.
  StepResult finish();
  StepResult parse(const std::string& line);
  /// Starts the program prepared by setup().
  void launch();
  /// Sends one line on the control socket. False when the program is gone (it exited:
  /// its output tells the rest); fails the trial when it does not read its control fd.
  bool send_control(const char* line);
  /// The next non-blank report line, or nullopt at the end of the program's output. Fails
  /// the trial after step_timeout_s without one.
  std::optional<std::string> next_line();
  /// Copies what the program wrote to stdout and stderr into the log, without blocking.
  void drain_output() noexcept;
  /// Fails the trial when its log can no longer be written (a full disk).
  void check_log();
  /// Waits until the leader exits or `deadline` passes (false), copying its output meanwhile.
  bool wait_for_exit(std::optional<std::chrono::steady_clock::time_point> deadline);
  /// Terminates the program within kill_grace_s; notes a warning when SIGKILL was needed.
  void terminate_child() noexcept;

  CommandOptions spec_;
  std::vector<std::string> metrics_;  ///< the spec's: the experiment metric first
  /// RANKTUNE_CHECKPOINT_DIR. Declared before child_, so it is destroyed after it: the
  /// program is gone before its directory is removed.
  sys::TempDir checkpoint_dir_;
  sys::ChildProcess child_;
  sys::UniqueFd report_;     ///< read end of the report pipe
  std::string buffer_;  ///< bytes read but not yet split into lines
  std::int64_t line_no_ = 0;
  bool eof_ = false;
  bool finished_ = false;
  bool started_ = false;
  std::string log_path_;
  // Prepared by setup(), started by launch(): a checkpointing command starts at the first
  // step(), after restore() has filled its directory.
  sys::SpawnRequest request_;
  sys::UniqueFd output_write_, report_write_, control_child_;
  sys::UniqueFd output_;  ///< read end of the program's stdout and stderr (non-blocking)
  TrialLog log_;
  sys::UniqueFd control_;           ///< ranktune's end of the control socket
  bool launched_ = false;
  bool awaiting_continue_ = false;  ///< the program waits on its control fd after a report
  int protocol_ = 1;                ///< what the program announced (1: nothing)
  std::function<bool()> peer_failed_;  ///< Context::peer_failed
  std::int64_t trial_id_ = 0;
  int attempt_ = 0;
  std::vector<std::string> warnings_;  ///< for take_warnings()
  /// Metrics reported beyond a double (1e309) so far: each is warned about once per attempt,
  /// not once a line.
  std::vector<std::string> overflowed_;
  EvalSettings eval_;             ///< evaluation mode's settings (set_mode_env)
  std::string eval_workdir_;      ///< where relative data file names are resolved
  ComputeInfo compute_;           ///< what the evaluation reported it computed on
};

/// The command as the manifest of a `ranktune eval` records it: its argv, workdir, and its
/// program file (the script, when argv[0] is an interpreter) with size and CRC-32C.
nlohmann::json command_describe(const config::TrainableSpec& spec);

}  // namespace ranktune::train
