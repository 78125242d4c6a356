#pragma once
/// The channel of live control (`ranktune ctl`): a JSON-lines file next to the results
/// file, RESULTS.control, that `ranktune ctl` appends requests to and the run's rank 0
/// reads as they arrive. A file, not a socket: it reaches rank 0 wherever Slurm put it,
/// through the shared file system that already holds the results file, with nothing to
/// listen on. The answer comes back as a "control" event in the results file, naming the
/// request's id.
///
/// One request per line: {"id": "...", "op": "stop"|"set"|"add", "trial": N,
/// "config": {...}, "count": N, "force": false}; "add" has a "config" or a "count".

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "search/control.h"

namespace ranktune::io {

/// RESULTS.control for the results file RESULTS.
std::string control_path(const std::string& results);

/// The request as one JSON line (no newline).
std::string control_line(const search::ControlRequest& request);

/// Parses one line. Throws std::invalid_argument saying what is wrong.
search::ControlRequest parse_control_line(const std::string& line);

/// Appends `request` to control_path(results) in one write(2), under an exclusive flock,
/// so concurrent `ranktune ctl`s never interleave. Throws std::runtime_error.
void append_control(const std::string& results, const search::ControlRequest& request);

/// One line read by a ControlInbox.
struct ControlLine {
  std::optional<search::ControlRequest> request;  ///< set when the line parsed
  std::string id;     ///< the request's id when it could be read, else ""
  std::string error;  ///< why it did not parse
};

/// Rank 0's reader of control_path(results): each poll() returns the complete lines
/// appended since the last one. Lines written before the inbox was made are not read (they
/// were for an earlier run). A file that shrinks (rotated or removed) is read again from
/// its start. Never throws: an unreadable file reads as empty.
class ControlInbox {
 public:
  explicit ControlInbox(std::string results);
  std::vector<ControlLine> poll();

 private:
  std::string path_;
  std::uint64_t offset_ = 0;
  std::string partial_;  ///< a line whose newline has not arrived yet
};

}  // namespace ranktune::io
