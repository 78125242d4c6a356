#pragma once
/// The columns of the results file: the one place that names the fixed columns of each
/// table, their kinds, string widths and chunk sizes, and the schema version. No HDF5 here
/// (config/config.cc reads the trial column names from it); io/h5_table.h lays these columns
/// out as HDF5 rows. The layout itself is described in io/store.h and docs/guide/results-file.md.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ranktune::io {

/// 3: a trial's error and log_tail moved from /trials to /trial_texts (files of schema 1 and
/// 2 keep them in /trials, and are read and resumed that way).
inline constexpr int kSchemaVersion = 3;
/// The oldest schema the reader and the resuming writer accept.
inline constexpr int kMinSchemaVersion = 1;

/// Fixed-length string widths of the schema, in bytes (longer strings are truncated).
inline constexpr std::size_t kStatusLen = 12;
inline constexpr std::size_t kWorkersLen = 64;
inline constexpr std::size_t kHostsLen = 256;  // /trials.hosts: the hosts of `workers`, comma-separated
inline constexpr std::size_t kErrorLen = 256;
inline constexpr std::size_t kEndReasonLen = 16;  // /trials.end_reason: "max_t", "budget", ...
inline constexpr std::size_t kLogTailLen = 2048;
inline constexpr std::size_t kEventKindLen = 16;
inline constexpr std::size_t kEventMessageLen = 256;
/// A message longer than a row's kEventMessageLen bytes (a PBT lineage of many parameters)
/// is split into rows at UTF-8 boundaries, the rows after the first of kind "continued"
/// (search::EventKind::Continued), and readers join them. Messages are kept up to this many bytes (64 rows); the rest is cut, with "..." at the end.
inline constexpr std::size_t kMaxEventMessage = 16 * 1024;
inline constexpr std::size_t kHostLen = 64;
inline constexpr std::size_t kDeviceLen = 16;
inline constexpr std::size_t kDeviceNameLen = 128;
/// Root texts longer than this many bytes become datasets (HDF5 attributes stay small).
inline constexpr std::size_t kMaxTextAttribute = 48 * 1024;

/// The fixed columns of /trials, in order: a hyperparameter may not take one of these names.
std::vector<std::string> trial_column_names();

// What a config may ask of the tables (configs/README.md, "Limits"). The config layer checks
// them at `ranktune check` (config/config.cc for the parameters, train/registry.cc for the
// metrics), so that `run` never fails on them once it has started: a config beyond them made
// a run fail after it had made the control file and the logs folder, with HDF5's "object
// header message is too large" or a rank 0 stuck for minutes naming 100,000 columns.

/// Hyperparameters (columns of /trials) and recorded metrics (columns of /results).
inline constexpr std::size_t kMaxParams = 1000;
inline constexpr std::size_t kMaxMetrics = 1000;
/// The bytes of a /trials row that its hyperparameters take: 8 a number, the longest listed
/// value (at least 8) a string. Each row is written whole, 64 to a chunk.
inline constexpr std::size_t kMaxParamRowBytes = 64 * 1024;
/// HDF5 keeps a table's row type (every column's name, offset and type) in one object header
/// message, which cannot exceed 64 KiB; row_type_bytes() must stay within this.
inline constexpr std::size_t kMaxRowTypeBytes = 63 * 1024;
/// At most what the row type of /trials (with hyperparameters `params`) or of /results (with
/// metrics `metrics`) takes in its object header message: per column its name, a NUL and 24
/// bytes (HDF5 1.10 with the latest format takes at most 22 for a float column's offset and
/// type, less for an integer or a string: tests/unit/io/results_layout_test.cc measures it).
std::size_t trial_row_type_bytes(const std::vector<std::string>& params);
std::size_t result_row_type_bytes(const std::vector<std::string>& metrics);

namespace detail {

/// How a column is stored: float64, int64, int32, or a fixed-length NUL-padded string.
enum class Kind { F64, I64, I32, Str };

struct FixedColumn {
  const char* name;
  Kind kind;
  std::size_t length = 0;  // Str only
};

/// A table of the file: its name (relative to its group), the columns every file has (a
/// reader requires them; further columns follow them), its chunk size in rows, the columns
/// that files of today have after the fixed ones but older files may lack, and the columns
/// that older files have but files of today do not (a reader takes both kinds when they are
/// there; they are not hyperparameters or metrics).
struct TableSpec {
  const char* name;
  std::span<const FixedColumn> fixed;
  std::uint64_t chunk_rows;
  std::span<const FixedColumn> optional = {};
  std::span<const FixedColumn> legacy = {};
  /// Columns that some files have, by name, between the optional ones and the free ones
  /// (/trials of a multi-objective experiment: pareto_rank and objective:METRIC); a
  /// reader takes them where it finds them, and never as hyperparameters.
  bool (*derived)(std::string_view name) = nullptr;
};

// Column order of each table as documented in store.h; the enums below index into them.
inline constexpr FixedColumn kTrialColumns[] = {
    {"trial_id", Kind::I64},   {"status", Kind::Str, kStatusLen},
    {"attempt", Kind::I32},    {"iterations", Kind::I64},
    {"best", Kind::F64},       {"best_iteration", Kind::I64},
    {"last", Kind::F64},       {"start_time", Kind::F64},
    {"end_time", Kind::F64},   {"workers", Kind::Str, kWorkersLen}};
enum TrialCol {
  kTrialId, kStatus, kAttempt, kIterations, kBest, kBestIteration, kLast, kStart, kEnd,
  kWorkers, kTrialFixed
};
static_assert(std::size(kTrialColumns) == kTrialFixed);

// A trial's error and log tail: in /trial_texts since schema 3, one row each time they
// change (the last row of a trial holds its texts; a trial without a row has none). Most
// trials never fail, so fixed-width text columns in /trials were 2,304 bytes of zeros in
// each 2.7 KB row. Schema 1 and 2 files have them in /trials (kTrialLegacyColumns).
inline constexpr FixedColumn kTrialTextColumns[] = {
    {"trial_id", Kind::I64}, {"attempt", Kind::I32},
    {"error", Kind::Str, kErrorLen}, {"log_tail", Kind::Str, kLogTailLen}};
enum TrialTextCol { kTxTrial, kTxAttempt, kTxError, kTxLogTail, kTrialTextFixed };
static_assert(std::size(kTrialTextColumns) == kTrialTextFixed);
inline constexpr FixedColumn kTrialLegacyColumns[] = {{"error", Kind::Str, kErrorLen},
                                                      {"log_tail", Kind::Str, kLogTailLen}};

inline constexpr FixedColumn kResultColumns[] = {
    {"trial_id", Kind::I64}, {"attempt", Kind::I32}, {"iteration", Kind::I64},
    {"time", Kind::F64}};
enum ResultCol { kResTrial, kResAttempt, kResIteration, kResTime, kResultFixed };
static_assert(std::size(kResultColumns) == kResultFixed);

inline constexpr FixedColumn kEventColumns[] = {
    {"time", Kind::F64}, {"trial_id", Kind::I64}, {"worker", Kind::I32},
    {"kind", Kind::Str, kEventKindLen}, {"message", Kind::Str, kEventMessageLen}};
enum EventCol { kEvTime, kEvTrial, kEvWorker, kEvKind, kEvMessage, kEventFixed };
static_assert(std::size(kEventColumns) == kEventFixed);

inline constexpr FixedColumn kWorkerColumns[] = {
    {"rank", Kind::I32}, {"host", Kind::Str, kHostLen}, {"local_index", Kind::I32},
    {"device", Kind::Str, kDeviceLen}, {"device_name", Kind::Str, kDeviceNameLen}};
enum WorkerCol { kWkRank, kWkHost, kWkLocal, kWkDevice, kWkDeviceName, kWorkerFixed };
static_assert(std::size(kWorkerColumns) == kWorkerFixed);

// Chunks of roughly 32-64 KiB: a flush rewrites every partly filled chunk it touches, so
// a 256-row chunk of 2.4 KiB trial rows (the log tail, before schema 3) cost 600 KiB per
// flush. /trials columns added since schema v2 was first written: a file from before one
// lacks it, is read without it (a reader falls back: io/results_reader.cc), and its resumes
// leave it out. No schema version for these: a reader that predates one takes it for a
// hyperparameter column, which is all it can be to that reader, and reads on.
inline constexpr FixedColumn kTrialOptionalColumns[] = {{"hosts", Kind::Str, kHostsLen},
                                                        {"end_reason", Kind::Str, kEndReasonLen}};
/// /trials of a multi-objective experiment (StoreSchema::objectives): `pareto_rank` (int32: 0
/// for the front of the finished trials, 1 for the next, ...; -1 while the trial is not
/// ranked: not finished, failed, or reporting none of the objectives) and one float64 column
/// `objective:METRIC` per objective, the value the trial is ranked by (its last result's).
/// No hyperparameter can take these names (a parameter name has no ':', and pareto_rank is
/// reserved), and a file of one objective has none of them.
inline constexpr const char* kParetoRankName = "pareto_rank";
inline constexpr std::string_view kObjectivePrefix = "objective:";
inline bool is_pareto_column(std::string_view name) {
  return name == kParetoRankName || name.substr(0, kObjectivePrefix.size()) == kObjectivePrefix;
}
inline constexpr TableSpec kTrials{"trials", kTrialColumns, 64, kTrialOptionalColumns, kTrialLegacyColumns,
                                   is_pareto_column};
inline constexpr TableSpec kTrialTexts{"trial_texts", kTrialTextColumns, 16};
inline constexpr TableSpec kResults{"results", kResultColumns, 1024};
inline constexpr TableSpec kEvents{"events", kEventColumns, 128};
inline constexpr TableSpec kWorkersTable{"workers", kWorkerColumns, 256};

// Checkpoints: an index table (with each checkpoint's CRC-32C), and the bytes in a 1-D
// dataset of unsigned bytes (an append-only layout, like every other table, so SWMR readers
// and recovery after kill -9 work the same way).
inline constexpr FixedColumn kCheckpointColumns[] = {
    {"trial_id", Kind::I64}, {"attempt", Kind::I32}, {"iteration", Kind::I64}, {"time", Kind::F64},
    {"offset", Kind::I64},   {"size", Kind::I64},    {"crc32c", Kind::I64}};
enum CheckpointCol { kCkTrial, kCkAttempt, kCkIteration, kCkTime, kCkOffset, kCkSize, kCkCrc, kCheckpointFixed };
static_assert(std::size(kCheckpointColumns) == kCheckpointFixed);
inline constexpr TableSpec kCheckpoints{"checkpoints", kCheckpointColumns, 128};
inline constexpr const char* kCheckpointData = "checkpoint_data";
inline constexpr std::uint64_t kCheckpointChunk = 1 << 20;  // bytes
// Schema v2 columns of /checkpoints. They are not in kCheckpointColumns, which the reader
// requires, so that schema v1 files (without them) still open.
inline constexpr const char* kCkScoreName = "score";
inline constexpr const char* kCkDroppedName = "dropped";

// The experiment state (the controller's saved searcher and scheduler): one row per stored
// state in /state, its bytes in /state_data at the row's offset (see io/store.h). Files
// written before /state kept it as /checkpoints rows of trial 0.
inline constexpr FixedColumn kStateColumns[] = {
    {"sequence", Kind::I64}, {"time", Kind::F64}, {"offset", Kind::I64}, {"size", Kind::I64},
    {"crc32c", Kind::I64}};
enum StateCol { kStSequence, kStTime, kStOffset, kStSize, kStCrc, kStateFixed };
static_assert(std::size(kStateColumns) == kStateFixed);
inline constexpr TableSpec kState{"state", kStateColumns, 256};
inline constexpr const char* kStateData = "state_data";
inline constexpr std::uint64_t kStateChunk = 64 * 1024;  // bytes
/// The trial id under which files from before /state stored the experiment state.
inline constexpr std::int64_t kLegacyStateTrial = 0;

/// Every top-level object a ranktune results file may hold (the reader checks each one's
/// object header before it opens it).
inline constexpr const char* kTopLevelObjects[] = {"stack",       "trials",      "trial_texts",     "results",
                                                   "events",      "workers",     "checkpoints",     "checkpoint_data",
                                                   "state",       "state_data"};

inline constexpr std::int64_t kMissingInt = std::numeric_limits<std::int64_t>::min();
/// The widest string column a reader takes (and a writer makes): one value fills a row's
/// kMaxParamRowBytes.
inline constexpr std::size_t kMaxParamWidth = kMaxParamRowBytes;

}  // namespace detail
}  // namespace ranktune::io
