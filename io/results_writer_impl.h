#pragma once
/// The state of a ResultsWriter, shared by the files that implement it: io/results_writer.cc
/// (creating, resuming, rows, commits, disk space) and io/checkpoint_store.cc (checkpoint
/// streams, free space, retention). Internal to io/.

#include <cerrno>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/retention.h"
#include "io/store.h"
#include "io/store_detail.h"

namespace ranktune::io {
namespace detail {

/// What a full disk means for the run, in its own words: no write of `path` can succeed
/// until space is freed, and nothing is wrong with the file (see ResultsWriter::flush).
/// `needed`: the bytes a reservation asked for (0: unknown).
std::string disk_full_message(const std::string& path, std::uint64_t needed = 0);

/// Runs a write of the results file `path`, turning HDF5's failure from ENOSPC or EDQUOT
/// (a failed write(2) or ftruncate(2) under it) into DiskFullError.
template <class F>
auto writing(const std::string& path, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const h5::CallError& e) {
    if (e.sys_errno() == ENOSPC || e.sys_errno() == EDQUOT) throw DiskFullError(disk_full_message(path));
    throw;
  }
}

/// Disk space that the writer holds ahead of HDF5's writes (see ResultsWriter::Impl::reserve),
/// given back when the file is closed.
struct SpaceReserve {
  int fd = -1;             ///< the WriterLock's descriptor of the file
  std::uint64_t end = 0;   ///< reserved up to this offset (past the file's size)
  std::uint64_t blocks = 0;  ///< the file's allocated 512-byte blocks (st_blocks) when `end` was last checked
  std::uint64_t high = 0;    ///< the furthest `end` ever reserved: given back up to there at the close
  bool enabled = true;     ///< false where the file system has no fallocate(2)
  SpaceReserve() = default;
  SpaceReserve(const SpaceReserve&) = delete;
  SpaceReserve& operator=(const SpaceReserve&) = delete;
  ~SpaceReserve();
};

}  // namespace detail

struct ResultsWriter::Impl {
  std::string path;
  StoreSchema schema;
  detail::WriterLock lock;     // released after the file is closed
  detail::SpaceReserve space;  // given back after the file is closed, before the lock's fd closes
  h5::File file;               // declared first: closed after every dataset
  detail::Table trials, results, events, workers;
  std::map<hsize_t, std::vector<std::byte>> dirty_trials;  // row (id - 1) -> packed row
  /// /trial_texts (no dataset: a file from before schema 3, whose /trials holds the texts).
  detail::Table trial_texts;
  /// A hash of the (attempt, error, log_tail) that /trial_texts holds for each trial with a
  /// row there: a trial's texts get a new row only when they change.
  std::unordered_map<std::int64_t, std::size_t> texts_written;
  std::vector<std::size_t> metrics_by_name;  // metric columns of `results`, sorted by name
  detail::Table checkpoints;
  h5::Dataset checkpoint_data;
  hsize_t checkpoint_bytes = 0;  // extent of checkpoint_data
  struct Stored {
    CheckpointRow row;
    hsize_t index = 0;  // row of /checkpoints (rows past checkpoints.rows are still buffered)
  };
  std::map<CheckpointKey, Stored> checkpoint_index;  // live checkpoints only
  std::map<hsize_t, std::vector<std::byte>> dirty_checkpoints;  // flushed rows now dropped
  // Schema v1 tables cannot flag a row dropped, so such a file never frees bytes.
  bool can_drop = true;
  bool data_unflushed = false;  ///< checkpoint bytes written since the last flush()
  FreeSpace free_space;
  std::vector<std::pair<hsize_t, hsize_t>> freed_unflushed;  // free after the next flush
  // (offset, size) of the checkpoints a CheckpointSource is reading: a dropped range among
  // them stays in freed_unflushed until the read ends, so its bytes cannot change under it.
  mutable std::multiset<std::pair<hsize_t, hsize_t>> reading;
  RetentionPolicy retention;
  // The experiment metric at each trial's latest result (index = id), for keep_best.
  std::string metric;
  std::size_t metric_column = 0;  ///< its column in `results` (layout size when absent)
  std::vector<std::pair<std::int64_t, double>> last_score;

  // The experiment state (state_store.cc): /state rows over the bytes of /state_data. Only
  // the newest state is ever read, so the bytes of every older one are free once a newer
  // one is committed.
  struct StateRow {
    std::int64_t sequence = 0;
    double time = 0;
    std::int64_t offset = 0, size = 0;
    std::uint32_t crc32c = 0;
  };
  detail::Table states;  ///< no dataset: a file from before /state whose state failed its checksum
  h5::Dataset state_data;
  hsize_t state_bytes = 0;  // extent of state_data
  std::optional<StateRow> newest_state;  ///< in /state, committed or still buffered
  bool state_committed = false;  ///< a /state row reached the file (by a flush, or before a resume)
  bool state_unflushed = false;  ///< state bytes written since the last flush()
  FreeSpace state_free;
  std::vector<std::pair<hsize_t, hsize_t>> superseded_states;  // free after the next flush
  /// Files from before /state: their states, /checkpoints rows of trial 0, by sequence.
  std::map<std::int64_t, Stored> legacy_states;

  // results_writer.cc
  void create(const StoreMeta& meta, const std::vector<WorkerInfo>& worker_list, bool compress, bool& created);
  void open_existing(ResumeInfo& info);
  void reserve(std::uint64_t more);
  void index_metrics();
  void pack_trial(const search::Trial& t, std::byte* row) const;
  /// Buffers a /trial_texts row for `t` when its texts differ from those the table holds.
  void note_texts(const search::Trial& t);
  // checkpoint_store.cc
  void create_checkpoint_tables(hid_t root);
  /// Opens /checkpoints and /checkpoint_data of a file being resumed and indexes its live
  /// checkpoints (and the states of a file from before /state, into legacy_states); a file
  /// from before checkpoints gets them created.
  void open_checkpoints(hid_t root);
  void drop(std::map<CheckpointKey, Stored>::iterator it);
  /// Flags the /checkpoints row of `s` dropped (buffered, or rewritten at the next flush)
  /// and frees its bytes after the next flush.
  void drop_row(Stored& s);
  /// After a flush: the bytes of checkpoints dropped before it may be reused now.
  void release_freed();
  // state_store.cc
  void create_state_tables(hid_t root);
  /// Opens /state of a file being resumed; a file from before /state gets one, once its
  /// newest legacy state has passed its checksum (a damaged file is left as it was).
  void open_state(hid_t root, ResumeInfo& info);
  /// The newest legacy state's bytes, checksum verified. Throws StoreError.
  std::string read_legacy_state(std::int64_t sequence) const;
  /// After a flush committed every buffered row: superseded states' bytes may be reused.
  void state_flushed();
};

}  // namespace ranktune::io
