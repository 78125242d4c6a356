#pragma once
/// The results file (HDF5, schema v2): one writer on rank 0, readers anywhere.
///
/// Layout (every dataset and attribute is created before SWMR writing starts, and every
/// string is fixed-length, so h5py `swmr=True` readers see a consistent file):
///   /            attrs: schema_version, ranktune_version, experiment, metric, mode,
///                       config (TOML text), overrides, command_line, created, created_unix
///   /stack       attrs: one string per stack entry (hosts, cpu_model, mpi_library, ...)
/// The fixed columns of each table, their order, kinds and widths are in io/schema.h (the one
/// place that names them); what they hold:
///   /trials      one row per trial, updated in place (its end_reason once it ended: why,
///                search::TrialEnd's names), then one column per hyperparameter
///   /trial_texts a trial's error and log_tail (schema 3; older files have them in /trials):
///                one row each time they change, appended; a trial's last row holds them,
///                and a trial without a row has none
///   /results     one row per reported iteration, then one float64 column per declared
///                metric (NaN when not reported)
///   /events      lifecycle log
///   /workers     one row per worker rank
///   /checkpoints one row per stored checkpoint: trial_id (from 1; in files from before
///                /state, 0: the searcher's and scheduler's state), attempt, iteration, time, offset, size, crc32c (CRC-32C of the
///                bytes), score (the experiment metric at `iteration`, NaN when unknown),
///                dropped (1: retention or a failed checksum removed it; its bytes are free
///                and may hold a later checkpoint, so only rows with dropped = 0 are read)
///   /checkpoint_data  uint8, the checkpoints' bytes at their rows' offsets. Freed ranges
///                are reused first fit, so the file stops growing once retention drops
///                as much as arrives; `ranktune compact` rewrites it without free bytes.
///   /state       one row per stored experiment state (searcher and scheduler): sequence,
///                time, offset, size, crc32c. Only the newest row whose bytes lie inside
///                /state_data is read; an older row's bytes may hold a newer state.
///   /state_data  uint8, the states' bytes at their rows' offsets.
/// Schema v1 (ranktune before retention) had no score and dropped columns: it is read as
/// "nothing dropped", and resumed without retention (compact upgrades it to v2).
/// Times are seconds since the experiment was created, over every run of it (a resumed run
/// goes on from the largest time recorded); `created` is ISO-8601 UTC, `created_unix` the
/// same instant in Unix epoch seconds (missing in older files).
/// A root text (config, overrides, command_line) longer than kMaxTextAttribute bytes is
/// stored as a scalar fixed-string dataset of the same name (/config) instead of an
/// attribute; the reader accepts both. /trials rows never written (ids skipped so far)
/// read as trial_id 0 and are skipped by the reader.

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "io/errors.h"
#include "io/retention.h"
#include "io/schema.h"
#include "search/event_kind.h"
#include "search/space.h"
#include "search/trial.h"
#include "search/types.h"

namespace ranktune::io {

/// Experiment-level metadata written as attributes.
struct StoreMeta {
  std::string experiment;
  std::string metric;
  search::Mode mode = search::Mode::Max;
  std::string config_text;
  std::string overrides;     ///< the --set strings, one per line
  std::string command_line;
  /// The absolute path of the config file the run started from (attribute config_path; ""
  /// in files written before it): where the stored config's relative paths resolve.
  std::string config_path;
  /// The search algorithm the experiment runs (attribute algorithm; "" in files written
  /// before it), recorded because a config that names none gets the default of the ranktune
  /// that started it: a resume goes on with this one (config/stored.h).
  std::string algorithm;
  std::string created;       ///< ISO-8601 UTC; filled by create() when empty
  /// The same instant in Unix epoch seconds (attribute created_unix); create() fills it
  /// when 0, and files written before it read as 0.
  std::int64_t created_unix = 0;
  std::map<std::string, std::string> stack;
  std::string ranktune_version;  ///< filled by the reader; the writer uses RANKTUNE_VERSION
  int schema_version = kSchemaVersion;  ///< filled by the reader
};

/// One hyperparameter column of /trials. A trial whose config lacks the parameter stores
/// NaN (Float), INT64_MIN (Int) or "" (String), and reads back without the key.
struct ParamColumn {
  std::string name;
  search::ValueType type = search::ValueType::Float;
  std::size_t length = 0;  ///< String columns: fixed width in bytes (longest value, min 8)
};

/// The columns that depend on the experiment.
struct StoreSchema {
  std::vector<ParamColumn> params;   ///< one trials column per parameter, declared order
  std::vector<std::string> metrics;  ///< one results column per metric, in this order
  /// The objectives of a multi-objective experiment (empty: one objective): /trials then
  /// has pareto_rank and objective:METRIC columns (io/schema.h).
  std::vector<std::string> objectives;

  /// Columns for `space`; string widths come from the longest listed value.
  static StoreSchema from(const search::Space& space, std::vector<std::string> metrics);
};

/// One worker rank as recorded in /workers.
struct WorkerInfo {
  int rank = 0;
  std::string host;
  int local_index = 0;   ///< index among the workers on its node
  std::string device;    ///< "cpu" or "cuda:N"
  std::string device_name;
};

struct EventRow {
  double time = 0;
  search::TrialId trial = -1;  ///< -1 when not about one trial
  int worker = -1;
  /// nullopt: a name that is none of search::EventKind's (a file written by a later
  /// ranktune, or by hand), kept in other_kind.
  std::optional<search::EventKind> kind;
  std::string message;
  std::string other_kind;  ///< the name read, when kind is nullopt
  /// The name as the file holds it: to_string(kind), or other_kind.
  std::string kind_name() const { return kind ? search::to_string(*kind) : other_kind; }
};

struct ResultRow {
  search::TrialId trial = 0;
  int attempt = 0;
  std::int64_t iteration = 0;
  double time = 0;
  std::vector<double> values;  ///< one per schema metric, NaN when missing
};

/// One row of /checkpoints as stored.
struct CheckpointRow {
  search::TrialId trial = 0;  ///< 0 (files from before /state only): an experiment state, not a trial
  int attempt = 0;
  std::int64_t iteration = 0;
  double time = 0;
  std::int64_t offset = 0;  ///< into /checkpoint_data; -1 once compact removed its bytes
  std::int64_t size = 0;
  std::uint32_t crc32c = 0;
  double score = NAN;       ///< the experiment metric at `iteration`, NaN when unknown
  bool dropped = false;
};

/// Where the bytes of /checkpoint_data are, in bytes.
struct CheckpointSpace {
  std::uint64_t extent = 0;  ///< size of /checkpoint_data
  std::uint64_t live = 0;    ///< held by live checkpoints
  std::uint64_t free = 0;    ///< reusable now (dropped bytes wait for a flush first)
};

/// Whether `path` is a non-empty file with an HDF5 signature (whatever its state).
bool is_hdf5_file(const std::string& path);

/// What opening a file to resume found.
struct ResumeInfo {
  bool mended = false;               ///< its status flags had to be cleared (its writer died)
  std::int64_t state_sequence = 0;   ///< states stored so far
};

/// How a new results file is laid out.
struct WriterOptions {
  /// Deflate (after shuffle) the chunks of /trials, /trial_texts, /results, /events and
  /// /workers. HDF5
  /// never frees the old copy of a compressed chunk that a flush rewrites while SWMR writing,
  /// so this pays only for a writer whose every flush fills many whole chunks (`ranktune
  /// simulate`, a flush per 65,536 results): a run flushing every 200 ms or at each trial
  /// start would grow its file faster than without (docs/architecture.md, "Results file
  /// size"). A resumed file keeps the filters it was created with.
  bool compress = false;
};

/// The single writer. Rows are buffered and written by flush() (group commit); flush()
/// also calls H5Fflush so a reader or a recovery after kill -9 sees every flushed row.
class ResultsWriter {
 public:
  /// Creates `path` (refuses to overwrite an existing file), writes all metadata and
  /// creates every dataset, then starts SWMR writing. Throws StoreError.
  ResultsWriter(const std::string& path, const StoreMeta& meta, const StoreSchema& schema,
                const std::vector<WorkerInfo>& workers, const WriterOptions& options = {});
  /// Opens an existing results file to go on writing it (resume). A file whose writer was
  /// killed while it held it is mended first (its SWMR status flags cleared), which `info`
  /// reports. Throws StoreError.
  ResultsWriter(const std::string& path, ResumeInfo& info);
  ~ResultsWriter();  // flushes; never throws
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;

  /// Inserts or overwrites the row of `trial` (row index = id - 1).
  void write_trial(const search::Trial& trial);
  /// Buffers one result. Metrics not in the schema are ignored (the caller warns).
  /// Returns how many of `metrics` are schema columns, so a caller can detect undeclared
  /// metrics without looking each name up again.
  std::size_t append_result(search::TrialId trial, int attempt, std::int64_t iteration, double time,
                     const search::Metrics& metrics);
  void append_event(const EventRow& event);
  class CheckpointSink;
  class CheckpointSource;

  /// Starts storing a checkpoint of trial `trial` (>= 1) of `size` bytes that arrives in pieces (a checkpoint
  /// streamed over MPI): its byte range of /checkpoint_data is reserved now (first fit from
  /// the free list, else at the end), the pieces are written straight to the file as they
  /// come, and its row exists only once CheckpointSink::finish() has run. The sink must
  /// not outlive this writer. Throws StoreError.
  CheckpointSink begin_checkpoint(search::TrialId trial, int attempt, std::int64_t iteration, std::uint64_t size);
  /// Stores a checkpoint held whole in memory: begin_checkpoint, one write, finish.
  void append_checkpoint(search::TrialId trial, int attempt, std::int64_t iteration, double time,
                         std::string_view bytes);
  /// Opens the checkpoint that `trial` stored at `iteration` for reading in pieces. Its
  /// bytes are not reused (even if it is dropped meanwhile) while the source lives; the
  /// source must not outlive this writer. Throws StoreError when there is none or its
  /// range lies outside /checkpoint_data.
  CheckpointSource open_checkpoint(search::TrialId trial, std::int64_t iteration) const;
  /// The bytes of the checkpoint that `trial` stored at `iteration`, checksum verified.
  /// Throws StoreError when there is none or it is damaged.
  std::string read_checkpoint(search::TrialId trial, std::int64_t iteration) const;

  /// Turns retention on (or off, with a disabled policy). Throws StoreError for a schema 1 file,
  /// which cannot mark rows dropped (`ranktune compact` upgrades it).
  void set_retention(const RetentionPolicy& policy);
  /// Applies the policy to every trial's live checkpoints, keeping `pinned` (see
  /// pinned_checkpoints). Returns the checkpoints it dropped.
  std::vector<CheckpointKey> apply_retention(const std::set<CheckpointKey>& pinned);
  /// Marks a checkpoint dropped (its row stays, flagged): it is never read again, and its
  /// bytes are reused by checkpoints stored after the next flush() (so that a crash in
  /// between cannot leave a live row over overwritten bytes). False when there is none.
  /// In a schema 1 file the row cannot be flagged: the checkpoint is only forgotten until
  /// the writer is closed.
  bool drop_checkpoint(search::TrialId trial, std::int64_t iteration);
  /// The newest live checkpoint of `trial` before `iteration`, 0 when there is none.
  std::int64_t previous_checkpoint(search::TrialId trial, std::int64_t iteration) const;
  CheckpointSpace checkpoint_space() const;
  /// Stores the experiment-level state (searcher and scheduler) as of the rows buffered
  /// now, in /state; it is committed with them by the next flush(), so the two always
  /// match. Only the newest state is kept: an older one's bytes are reused once a newer one
  /// is committed. Throws StoreError.
  void append_state(double time, std::string_view state);
  /// The last state that append_state stored (before or after a resume; in a file from
  /// before /state, its newest trial 0 row), if any. Throws StoreError ("experiment state N
  /// fails its checksum") when its bytes are damaged.
  std::optional<std::string> latest_state() const;
  /// Each trial's newest stored checkpoint iteration.
  std::map<search::TrialId, std::int64_t> latest_checkpoints() const;
  /// Writes every buffered row and calls H5Fflush.
  void flush();
  /// Rows buffered and not yet flushed.
  std::size_t pending() const;
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::int64_t state_sequence_ = 0;
};

/// A checkpoint being stored piece by piece (ResultsWriter::begin_checkpoint). Pieces are
/// written in order, each straight to its place in /checkpoint_data, and the CRC-32C is
/// computed as they pass. Destroyed before finish() (its sender stopped half way, or an
/// error ended the run), it leaves no row, and its reserved bytes are free again at once:
/// no row ever pointed at them. Move-only.
class ResultsWriter::CheckpointSink {
 public:
  CheckpointSink(CheckpointSink&& other) noexcept;
  CheckpointSink& operator=(CheckpointSink&& other) noexcept;
  ~CheckpointSink();  // abandons an unfinished checkpoint; never throws

  /// Writes `bytes` at byte `at` of the checkpoint. Pieces come in order: `at` must be
  /// written(), and the checkpoint must have room. Throws StoreError otherwise.
  /// write() and sync() touch only this sink and the file through HDF5 (built thread-safe),
  /// so they may run on another thread than the writer's other calls (rank 0's writer
  /// thread, mpi/write_thread.h), one call at a time per sink, and never at the same time
  /// as finish(), a move or the destruction of this sink.
  void write(std::uint64_t at, std::string_view bytes);
  /// Makes the bytes written so far durable: H5Dflush of /checkpoint_data, then
  /// fdatasync(2) of the file ([checkpoint] fsync = true). Throws StoreError
  /// (DiskFullError when the disk is full).
  void sync();
  /// Adds the checkpoint's row (buffered until the next flush(), like every row). It then
  /// replaces an earlier checkpoint of the same (trial, iteration). Throws StoreError when
  /// fewer than size() bytes were written.
  void finish(double time);
  std::uint64_t size() const { return size_; }
  std::uint64_t written() const { return written_; }

 private:
  friend class ResultsWriter;
  CheckpointSink(ResultsWriter::Impl* impl, CheckpointRow row);
  void abandon() noexcept;

  ResultsWriter::Impl* impl_ = nullptr;  ///< null once finished, abandoned or moved from
  CheckpointRow row_;                    ///< trial, attempt, iteration, offset, size
  std::uint64_t size_ = 0, written_ = 0;
  std::uint32_t crc_ = 0;
};

/// A stored checkpoint being read piece by piece (ResultsWriter::open_checkpoint). Its byte
/// range stays out of the free list while the source lives, so a drop meanwhile cannot
/// hand its bytes to a new checkpoint half way through the read. Move-only.
class ResultsWriter::CheckpointSource {
 public:
  CheckpointSource(CheckpointSource&& other) noexcept;
  CheckpointSource& operator=(CheckpointSource&& other) noexcept;
  ~CheckpointSource();  // never throws

  /// The next at most `max_bytes` bytes; empty at the end. Throws StoreError.
  std::string read(std::uint64_t max_bytes);
  /// After the last read: throws StoreError ("... fails its checksum (the file is
  /// damaged)") when the bytes read do not match the row's CRC-32C.
  void verify() const;
  std::uint64_t size() const { return static_cast<std::uint64_t>(row_.size); }
  std::uint64_t position() const { return read_; }
  bool done() const { return read_ == size(); }
  /// The CRC-32C recorded for the checkpoint (what a receiver checks the bytes against).
  std::uint32_t crc32c() const { return row_.crc32c; }

 private:
  friend class ResultsWriter;
  CheckpointSource(const ResultsWriter::Impl* impl, CheckpointRow row);
  void release() noexcept;

  const ResultsWriter::Impl* impl_ = nullptr;  ///< null once moved from
  CheckpointRow row_;
  std::uint64_t read_ = 0;
  std::uint32_t crc_ = 0;
};

/// A results file read whole, after checking that it is one. Throws StoreError with a
/// one-line message for a missing, foreign, truncated or corrupted file, or a wrong schema.
struct ResultsFile {
  std::string path;
  StoreMeta meta;
  StoreSchema schema;
  std::vector<search::Trial> trials;
  std::vector<ResultRow> results;
  std::vector<EventRow> events;
  std::vector<WorkerInfo> workers;
  std::vector<CheckpointRow> checkpoints;  ///< every row of /checkpoints, dropped ones too
  std::size_t trial_rows = 0;  ///< rows of /trials, unwritten ones (trial_id 0) included

  /// With `results` false, /results (the largest table by far) is not read: `results` and
  /// `schema.metrics` stay empty. For a reader that polls a live file for other rows.
  static ResultsFile read(const std::string& path, bool results = true);
  /// The trial with id `id`, or nullptr. By id, not by position: rows of trials a live run
  /// has not written yet are skipped, so `trials` can have gaps.
  const search::Trial* trial(search::TrialId id) const;
};

/// Checks, without writing a byte, that the results file `path` can be resumed, and returns
/// it as read. Refuses (StoreError naming the file and what is wrong) what ResultsFile::read
/// refuses, a file another process is writing, and what a file at rest never holds, since a
/// resumed writer would build on it: a /trials row never written (ids must be 1..N), a
/// /results row whose trial is not in /trials or whose attempt or iteration is out of range
/// (a zero-filled row: the file was cut short and filled again), a (trial, attempt,
/// iteration) recorded twice, a live /checkpoints row of an unknown trial. The file of a
/// writer that died is checked as a live reader sees it (SWMR): nothing a crash leaves is
/// refused (tests/fault/kill_loop.sh). nullopt only for a file whose writer died before it
/// started SWMR writing: no reader can open it until it is mended (ResultsWriter's resume
/// does that), so it is checked for truncation only, and must be checked again after.
std::optional<ResultsFile> read_for_resume(const std::string& path);


/// Whether the superblock of `path` says a writer has it open (a run writing it now, or
/// one that was killed and not resumed yet). A fact of the file itself, so it holds across
/// nodes whatever the file system's locking. False for a file that is not HDF5.
bool marked_open_for_writing(const std::string& path);

/// Whether the writer of `path` died without closing it (kill -9, the OOM killer, a lost
/// node): the file is marked open for writing (and stays so a moment later), but no process
/// holds its writer lock, which the kernel frees with the process. A writer clears the mark
/// before it lets the lock go; a new file is marked a moment before its writer locks it,
/// which a second probe of the lock 200 ms later covers. False when the lock cannot be probed.
bool writer_died(const std::string& path);

/// Whether a results file exists at `path`, looked at without following a link. A
/// symbolic link there, dangling or not, throws UnsafeFileError: ranktune writes nothing
/// through a link (README, "Threat model"), and HDF5 would answer a dangling one with a raw
/// "File exists". Anything else at `path` (a FIFO, a folder) counts as existing: the readers
/// and writers refuse it with their own messages. Throws StoreError when it cannot be looked at.
bool results_file_exists(const std::string& path);

/// Throws UnsafeFileError when ranktune would refuse to write the results file at `path`
/// (a link, another user's file, one that others may write, a hard link): a run checks it
/// before it makes anything beside it (the control file, the logs folder). Other problems
/// are left to the writer, which reports them with their context.
void refuse_unsafe_results(const std::string& path);

/// Whether a ranktune writer holds the writer lock of the results file `path` now (see
/// detail::WriterLock), tested without taking it (F_OFD_GETLK): Unknown where the file
/// cannot be opened or its file system has no fcntl locks. Free after kill -9 of the writer:
/// the kernel released its lock, while its superblock still says it is open for writing.
enum class WriterCheck { Holding, Free, Unknown };
WriterCheck writer_lock_state(const std::string& path);

/// Whether `path` lies on a network file system (NFS, Lustre, GPFS, CIFS, Ceph, BeeGFS, ...),
/// where another node's lock may not be seen here (NFS mounted with `nolock`).
bool on_network_file_system(const std::string& path);

/// The bytes of `row` (a row of file.checkpoints), read from file.path and checked against
/// the row's size and CRC-32C. Throws StoreError for a dropped row, a range outside
/// /checkpoint_data or a checksum mismatch.
std::string read_checkpoint_bytes(const ResultsFile& file, const CheckpointRow& row);

/// What compact_results did.
struct CompactSummary {
  std::uint64_t bytes_before = 0, bytes_after = 0;  ///< file sizes
  std::size_t live = 0;     ///< checkpoints copied
  std::size_t dropped = 0;  ///< rows kept as dropped, without bytes
  std::size_t damaged = 0;  ///< live rows whose bytes failed their checksum: now dropped
};

/// Rewrites the results file `in` without the bytes of dropped checkpoints: the root
/// attributes (schema_version set to kSchemaVersion, or to 2 for a file whose trial texts
/// are in /trials), /stack and every table are copied
/// as they are, and /checkpoint_data holds the live checkpoints back to back. Writes to
/// `out` when it is not empty (refusing an existing file), else to a temporary file next
/// to `in` that then replaces it by rename(2), so `in` is never half rewritten. Refuses
/// a file whose superblock says that a writer holds it (a run is writing it, or its
/// writer was killed: resuming the run mends it). Throws StoreError.
CompactSummary compact_results(const std::string& in, const std::string& out = "");

}  // namespace ranktune::io
