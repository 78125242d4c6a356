#pragma once
/// Child processes: the one way ranktune starts a program (a trial's command, mpirun, Slurm's
/// clients, h5clear). A child leads its own process group and dies with the thread that
/// started it, unless its SpawnRequest says otherwise; the handle owns it and reaps it.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "sys/fd.h"

namespace ranktune::sys {

/// What ChildProcess::spawn starts. The defaults suit a program that ranktune supervises
/// (a trial): its own group, killed with us, stdin /dev/null, no fd of ours but 0..2.
struct SpawnRequest {
  std::string program;            ///< path to execute (already resolved; no PATH lookup)
  std::vector<std::string> argv;  ///< argv[0] is what the program sees as its name
  std::vector<std::string> env;   ///< the complete environment, "KEY=VALUE"
  std::string workdir;            ///< "" keeps the caller's
  int output_fd = -1;             ///< becomes the child's stdout and stderr (-1: inherit)
  int report_fd = -1;             ///< becomes the child's fd `kReportFd` (-1: none)
  int control_fd = -1;            ///< becomes the child's fd `kControlFd` (-1: none)
  int error_fd = -1;              ///< becomes the child's stderr instead of output_fd (-1: as output_fd)
  bool keep_stderr = false;       ///< stderr stays the caller's whatever output_fd is
  bool keep_stdin = false;        ///< stdin stays the caller's (else /dev/null)
  /// Lead a new process group, so that terminate() reaches what the program starts. False
  /// keeps the caller's group, so that a terminal's Ctrl-C reaches the program too (mpirun).
  bool own_group = true;
  /// PR_SET_PDEATHSIG = SIGKILL: the program dies when the spawning thread does.
  bool die_with_parent = true;
  /// Close every fd of ours above the ones given (else the non-close-on-exec ones stay).
  bool close_other_fds = true;
};

/// How ChildProcess::terminate() ended a program.
struct Termination {
  std::optional<int> status;  ///< the wait status; nullopt when none was collected
  bool killed = false;        ///< the leader outlived the grace after SIGTERM: SIGKILL ended it
};

/// A started child process, by default leader of its own process group (pgid == pid). Owns
/// it and its group: the destructor terminates and reaps it, so no child outlives its handle
/// and none is left a zombie. Move-only.
///
/// The child dies with its parent: it is started with PR_SET_PDEATHSIG = SIGKILL (between
/// clone and exec, which posix_spawn cannot do). The kernel sends it when the *thread* that
/// started the child exits, so spawn() must run on a thread that lives as long as the
/// process (the worker's main thread), or as long as the child (run_program). With
/// become_subreaper(), what the program leaves behind (a child that called setsid(), a
/// daemon) is killed and reaped by reap().
class ChildProcess {
 public:
  /// The fd number the report pipe has in the child.
  static constexpr int kReportFd = 3;
  /// The fd number the control socket has in the child (checkpointing commands only).
  static constexpr int kControlFd = 4;
  /// How long terminate() waits after SIGTERM before SIGKILL, by default
  /// (`[trainable] kill_grace_s`).
  static constexpr std::chrono::milliseconds kGrace{2000};

  ChildProcess() = default;
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { terminate(); }

  /// Starts `request`. Returns 0 and sets `out`, or returns the errno of the failure.
  static int spawn(const SpawnRequest& request, ChildProcess& out);

  pid_t pid() const { return pid_; }
  /// True from spawn until reaped.
  bool alive() const { return pid_ > 0; }
  /// A pidfd that polls readable once the leader has exited, or -1 (kernel < 5.3).
  int pidfd() const { return pidfd_.get(); }

  /// Waits until the leader has exited (without reaping it) or `deadline` passes.
  /// Returns true when it has exited.
  bool wait_exit(std::optional<std::chrono::steady_clock::time_point> deadline) const noexcept;
  /// SIGKILLs what is left of its group (the child alone when it has none), then reaps the
  /// leader, and (as a subreaper) kills and reaps the orphans the program left. Returns its
  /// wait status, or nullopt when it could not be collected (SIGCHLD ignored). Meant for a
  /// leader that has exited; one that still runs is killed.
  std::optional<int> reap() noexcept;
  /// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to the group
  /// and reap. No-op once reaped. Never throws.
  Termination terminate(std::chrono::milliseconds grace = kGrace) noexcept;

 private:
  /// kill(2) to the group, or to the child alone when it shares ours.
  void send_signal(int sig) const noexcept;

  pid_t pid_ = -1;
  bool own_group_ = true;
  UniqueFd pidfd_;
};

/// Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER), so that processes a trial
/// leaves behind, even in a session of their own, become its children when their parent
/// exits, and ChildProcess::reap() kills and reaps them. The children it has already (an
/// MPI runtime's) are left alone. Returns false where the kernel refuses. Call once, on the
/// thread that spawns the trials, before the first one.
bool become_subreaper() noexcept;

/// For a process whose job is gone (its parent died): SIGKILLs every child's process group
/// and what they left behind, and removes every live TempDir (sys/temp_dir.h). Then the
/// caller _exit()s. Safe to call from any thread; it never returns the lock it takes, so
/// nothing starts or removes a child after it. Never throws.
void emergency_cleanup() noexcept;

/// Where argv[0] of a command resolves to: `path` is absolute when `error` is 0.
struct ResolvedProgram {
  std::string path;
  int error = 0;  ///< errno: ENOENT, EACCES (not executable), ...
};

/// Resolves `program` as the command trainable does: a name with a '/' is a path, relative
/// ones to `config_dir` (or the working directory when that is ""); a bare name is looked up
/// in `path_env` (a PATH value) like execvp does.
ResolvedProgram resolve_program(const std::string& program, const std::string& config_dir,
                                const std::string& path_env);

/// "SIGSEGV (11)", or "signal 42" for one without a common name.
std::string signal_description(int sig);

/// A pidfd of `pid` (polls readable once it has exited), or none (kernel < 5.3, no such
/// process). Open it while `pid` is known to be the process meant (a child not yet reaped).
UniqueFd open_pidfd(pid_t pid);

/// This process's environment as SpawnRequest::env wants it.
std::vector<std::string> current_environment();

/// poll()'s timeout until `deadline`: -1 for none; rounded up so a near deadline never
/// turns into a run of zero-timeout polls.
int poll_timeout(std::optional<std::chrono::steady_clock::time_point> deadline);

}  // namespace ranktune::sys
