#pragma once
/// The channel of live control (`ranktune ctl`): a JSON-lines file next to the results
/// file, RESULTS.control, that `ranktune ctl` appends requests to and the run's rank 0
/// reads as they arrive. A file, not a socket: it reaches rank 0 wherever Slurm put it,
/// through the shared file system that already holds the results file, with nothing to
/// listen on. The answer comes back as a "control" event in the results file, naming the
/// request's id.
///
/// One request per line: {"id": "...", "op": "stop"|"set"|"add"|"pause"|"resume"|"budget"|
/// "stop-experiment", "trial": N, "config": {...}, "count": N, "force": false,
/// "time_budget_s": S, "num_samples": N, "max_t": T, "uid": N}; "stop", "set", "pause" and
/// "resume" name a "trial"; "add" has a "config" or a "count" (at most
/// controller::kMaxAddCount); "budget" has one or more of its three rules.
///
/// Who may control a run (docs/guide/failures.md, "Threat model"): rank 0 makes the file itself when the
/// run starts, mode 0600, so only the job's user (and root) can write to it; it reads only
/// a regular file that this user owns with mode 0600 and one link (opened under the rules
/// of sys/safe_fs.h: never through a symlink, never blocking on a FIFO), and carries out
/// only requests whose "uid" is the file's owner. `ranktune ctl` never makes the file.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controller/control.h"

namespace ranktune::io {

/// RESULTS.control for the results file RESULTS.
std::string control_path(const std::string& results);

/// The request as one JSON line (no newline).
std::string control_line(const controller::ControlRequest& request);

/// Parses one line. Throws std::invalid_argument saying what is wrong.
controller::ControlRequest parse_control_line(const std::string& line);

/// Appends `request` (its uid set to this process's) to control_path(results) in one
/// write(2), under an exclusive flock, so concurrent `ranktune ctl`s never interleave.
/// Throws std::invalid_argument, saying why and what to do, when the file is absent (no
/// run of this ranktune is going), not a regular file, a link, not this user's, not mode
/// 0600, or not writable; std::runtime_error when the write fails.
void append_control(const std::string& results, controller::ControlRequest request);

/// Checks an existing control_path(results) as a ControlInbox would, without making one:
/// `run` does it before it launches mpirun, so that a planted file costs no launch. Throws
/// std::invalid_argument (see ControlInbox).
void check_control_file(const std::string& results);

/// One line read by a ControlInbox.
struct ControlLine {
  std::optional<controller::ControlRequest> request;  ///< set when the line parsed, and its sender may control the run
  std::string id;     ///< the request's id when it could be read, else ""
  std::string error;  ///< why it did not parse, or why it is refused
};

/// Rank 0's reader of control_path(results): each poll() returns the complete lines
/// appended since the last one. Lines written before the inbox was made are not read (they
/// were for an earlier run). A file that shrinks or is replaced by another is read again
/// from its start; a removed one is made again. Never throws after construction: a file
/// that breaks the rules above reads as empty, and problem() says why.
class ControlInbox {
 public:
  /// Makes control_path(results) (O_EXCL, mode 0600), or accepts the one an earlier run of
  /// this experiment made: a regular file of this user, mode 0600, one link. Throws
  /// std::invalid_argument naming the file, what is wrong and what to do.
  explicit ControlInbox(std::string results);
  std::vector<ControlLine> poll();
  /// Why the last poll() could not read the file, the first time that reason came up
  /// ("" otherwise), so that a warning is recorded once, not four times a second.
  std::string take_problem();

 private:
  std::string path_;
  std::uint64_t offset_ = 0;
  dev_t device_ = 0;  ///< the file read so far: another one is read from its start
  ino_t inode_ = 0;
  std::string partial_;  ///< a line whose newline has not arrived yet
  std::string problem_;  ///< why the file cannot be read now ("" when it can)
  bool problem_new_ = false;
};

}  // namespace ranktune::io
