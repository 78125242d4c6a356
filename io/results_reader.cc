// Reading a results file: opening it (with a one-line reason when it cannot be), checking
// that it is a ranktune file, and decoding its tables into ResultsFile (see io/store.h).
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include <unistd.h>

#include "io/store.h"
#include "io/store_detail.h"
#include "ranktune/config.h"

namespace ranktune::io {
using namespace detail;
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_hosts(std::string_view s) {
  std::vector<std::string> hosts;
  while (!s.empty()) {
    const std::string_view item = s.substr(0, s.find(','));
    hosts.emplace_back(item);
    s.remove_prefix(std::min(s.size(), item.size() + 1));
  }
  return hosts;
}

std::vector<int> parse_ranks(std::string_view s) {
  std::vector<int> ranks;
  while (!s.empty()) {
    std::string_view item = s.substr(0, s.find(','));
    int r = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), r);
    if (ec != std::errc() || end != item.data() + item.size())
      throw StoreError("bad workers list '" + std::string(s) + "'");
    ranks.push_back(r);
    s.remove_prefix(std::min(s.size(), item.size() + 1));
  }
  return ranks;
}

search::Mode parse_mode(const std::string& s) {
  if (s == "max") return search::Mode::Max;
  if (s == "min") return search::Mode::Min;
  throw StoreError("attribute mode is '" + s + "', expected 'max' or 'min'");
}

StoreMeta read_meta(hid_t file) {
  StoreMeta meta;
  meta.schema_version = static_cast<int>(read_int_attr(file, "schema_version"));
  auto text = [&](const char* name) { return read_text(file, name).value_or(""); };
  meta.ranktune_version = text("ranktune_version");
  meta.experiment = text("experiment");
  meta.metric = text("metric");
  meta.mode = parse_mode(text("mode"));
  meta.config_text = text("config");
  meta.overrides = text("overrides");
  meta.command_line = text("command_line");
  meta.config_path = text("config_path");
  meta.algorithm = text("algorithm");
  meta.created = text("created");
  if (H5_CHECK(H5Aexists(file, "created_unix")) > 0) meta.created_unix = read_int_attr(file, "created_unix");
  if (H5_CHECK(H5Lexists(file, "stack", H5P_DEFAULT)) > 0) {
    h5::Group stack{H5_CHECK(H5Gopen2(file, "stack", H5P_DEFAULT))};
    for (const std::string& name : attribute_names(stack.get()))
      meta.stack[name] = read_string_attr(stack.get(), name.c_str()).value_or("");
  }
  return meta;
}

std::vector<search::Trial> read_trials(const RawTable& t, StoreSchema& schema) {
  const Layout& L = t.layout;
  schema.params = params_of(L);
  schema.objectives = objectives_of(L);
  const auto pareto_rank = column_index(L, kParetoRankName);
  std::vector<search::Trial> trials;
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    search::Trial trial;
    trial.id = get_int(row, L[kTrialId]);
    if (trial.id == 0) continue;  // a row below the highest id that was never written
    auto where = [&] { return "/trials row " + std::to_string(i) + ": "; };
    if (trial.id < 0) throw StoreError(where() + "negative trial_id");
    // The writer puts trial N in row N - 1 and nowhere else, so any other id there is
    // damage (a flipped bit, a copied row): read on, it would show a trial twice or
    // under another trial's results.
    if (trial.id != static_cast<search::TrialId>(i + 1))
      throw StoreError(where() + "holds trial_id " + std::to_string(trial.id) + ", but row " + std::to_string(i) +
                       " is trial " + std::to_string(i + 1) + "'s (rows are by id): the file is damaged; "
                       "restore it from a copy");
    std::string status = get_str(row, L[kStatus]);
    auto parsed = search::parse_trial_status(status);
    if (!parsed) throw StoreError(where() + "unknown status '" + status + "'");
    trial.status = *parsed;
    trial.attempt = static_cast<int>(get_int(row, L[kAttempt]));
    trial.iterations = get_int(row, L[kIterations]);
    trial.best = get_f64(row, L[kBest]);
    trial.best_iteration = get_int(row, L[kBestIteration]);
    trial.last = get_f64(row, L[kLast]);
    trial.start_time = get_f64(row, L[kStart]);
    trial.end_time = get_f64(row, L[kEnd]);
    trial.workers = with_context(where(), [&] { return parse_ranks(get_str(row, L[kWorkers])); });
    // Schema 1 and 2 files only (read_trial_texts reads those of later files).
    if (const auto e = column_index(L, "error")) trial.error = get_str(row, L[*e]);
    if (const auto l = column_index(L, "log_tail")) trial.log_tail = get_str(row, L[*l]);
    if (const auto h = column_index(L, "hosts")) trial.hosts = split_hosts(get_str(row, L[*h]));
    // A name this reader does not know (a newer ranktune's) is a reason all the same.
    if (const auto r = column_index(L, "end_reason"); r && trial.finished())
      trial.end_reason = search::parse_trial_end(get_str(row, L[*r])).value_or(search::TrialEnd::Unknown);
    if (pareto_rank) trial.pareto_rank = static_cast<int>(get_int(row, L[*pareto_rank]));
    for (std::size_t c = L.first_free(); c < L.size(); ++c) {
      const Column& col = L[c];
      if (col.kind == Kind::F64) {
        if (double d = get_f64(row, col); !std::isnan(d)) trial.config[col.name] = d;
      } else if (col.kind == Kind::I64) {
        if (std::int64_t v = get_int(row, col); v != kMissingInt) trial.config[col.name] = v;
      } else if (std::string s = get_str(row, col); !s.empty()) {
        trial.config[col.name] = std::move(s);
      }
    }
    trials.push_back(std::move(trial));
  }
  return trials;
}

// Each trial's last row of /trial_texts gives its error and log_tail. A row about a trial
// that /trials lacks is skipped: a flush cut short by kill -9 may have written it without
// the trial's own row.
void read_trial_texts(const RawTable& t, std::vector<search::Trial>& trials) {
  const Layout& L = t.layout;
  std::vector<std::size_t> index;  // id - 1 -> position in `trials` (rows never written are skipped)
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto id = static_cast<std::size_t>(trials[i].id);
    if (index.size() < id) index.resize(id, trials.size());
    index[id - 1] = i;
  }
  for (std::size_t r = 0; r < t.rows; ++r) {
    const std::byte* row = t.row(r);
    const std::int64_t id = get_int(row, L[kTxTrial]);
    const auto at = static_cast<std::size_t>(id - 1);
    if (id < 1 || at >= index.size() || index[at] == trials.size()) continue;
    search::Trial& trial = trials[index[at]];
    trial.error = get_str(row, L[kTxError]);
    trial.log_tail = get_str(row, L[kTxLogTail]);
  }
}

std::vector<ResultRow> read_results(const RawTable& t, StoreSchema& schema) {
  const Layout& L = t.layout;
  for (std::size_t c = L.first_free(); c < L.size(); ++c) {
    if (L[c].kind == Kind::Str)
      throw StoreError("/results: metric column '" + L[c].name + "' is not numeric");
  }
  schema.metrics = metrics_of(L);
  std::vector<ResultRow> rows(t.rows);
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    ResultRow& r = rows[i];
    r.trial = get_int(row, L[kResTrial]);
    r.attempt = static_cast<int>(get_int(row, L[kResAttempt]));
    r.iteration = get_int(row, L[kResIteration]);
    r.time = get_f64(row, L[kResTime]);
    for (std::size_t c = L.first_free(); c < L.size(); ++c) r.values.push_back(get_f64(row, L[c]));
  }
  return rows;
}

std::vector<EventRow> read_events(const RawTable& t) {
  const Layout& L = t.layout;
  std::vector<EventRow> events;
  events.reserve(t.rows);
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    std::string kind = get_str(row, L[kEvKind]);
    EventRow e{get_f64(row, L[kEvTime]), get_int(row, L[kEvTrial]), static_cast<int>(get_int(row, L[kEvWorker])),
               search::parse_event_kind(kind), get_str(row, L[kEvMessage])};
    if (!e.kind) e.other_kind = std::move(kind);
    // The rest of a long message goes on with the row before it (ResultsWriter::append_event).
    if (e.kind == search::EventKind::Continued && !events.empty() && events.back().time == e.time &&
        events.back().trial == e.trial) {
      events.back().message += e.message;
      continue;
    }
    events.push_back(std::move(e));
  }
  return events;
}

std::vector<WorkerInfo> read_workers(const RawTable& t) {
  const Layout& L = t.layout;
  std::vector<WorkerInfo> workers(t.rows);
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    workers[i] = {static_cast<int>(get_int(row, L[kWkRank])), get_str(row, L[kWkHost]),
                  static_cast<int>(get_int(row, L[kWkLocal])), get_str(row, L[kWkDevice]),
                  get_str(row, L[kWkDeviceName])};
  }
  return workers;
}

// A one-line reason for a file that HDF5 will not open, with what to do about it. Both
// attempts' messages are kept: SWMR_READ and plain opens refuse for different reasons.
std::string open_failure(const std::string& path, std::uintmax_t file_size, const std::string& swmr_error,
                         const std::string& plain_error) {
  auto says = [&](const char* text) {
    return swmr_error.find(text) != std::string::npos || plain_error.find(text) != std::string::npos;
  };
  if (file_size < 48)  // the signature is there (H5Fis_hdf5 found it), the superblock is not
    return "truncated: the file has " + std::to_string(file_size) +
           " bytes, fewer than an HDF5 header; copy it again from the original";
  if (says("truncated file")) {
    const std::uint64_t expected = superblock_eof(path);
    std::string sizes = std::to_string(file_size) + " bytes";
    if (expected > file_size) sizes += " of the " + std::to_string(expected) + " its header records";
    return "truncated: the file has " + sizes +
           " (a copy cut short, or a full disk); copy it again from the original";
  }
  if (says("already open for write"))
    return "the file is open for writing by a program that does not allow live reading "
           "(or one that was killed): wait for it to finish, or read a copy";
  if (says("checksum"))
    return "corrupted: HDF5 metadata fails its checksum (" + plain_error +
           "); the file cannot be read, restore it from a copy";
  return "not an HDF5 file (or it is truncated/corrupted): " + (plain_error.empty() ? swmr_error : plain_error);
}

// Why each ended trial ended, where /trials does not say: files from before the column, and
// rows an older ranktune wrote when it resumed a newer file. What the events tell: an ERROR
// failed, an early_stop was its scheduler's; the rest is "unknown".
void derive_end_reasons(std::vector<search::Trial>& trials, const std::vector<EventRow>& events) {
  std::unordered_set<search::TrialId> stopped;
  for (const EventRow& e : events)
    if (e.kind == search::EventKind::EarlyStop) stopped.insert(e.trial);
  for (search::Trial& t : trials) {
    if (!t.finished() || t.end_reason != search::TrialEnd::None) continue;
    t.end_reason = t.status == search::TrialStatus::Error ? search::TrialEnd::Error
                   : stopped.count(t.id)                  ? search::TrialEnd::Stopped
                                                          : search::TrialEnd::Unknown;
  }
}

ResultsFile read_file(const std::string& path, bool with_results) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw StoreError("no such file");
  if (!fs::is_regular_file(st)) throw StoreError("not a regular file");
  const std::uintmax_t file_size = fs::file_size(path, ec);

  if (file_size == 0) throw StoreError("empty file (0 bytes): not an HDF5 file");
  if (::access(path.c_str(), R_OK) != 0)
    throw StoreError(std::string("cannot read it: ") + std::strerror(errno));
  const std::string not_hdf5 = "not an HDF5 file (or it is truncated/corrupted): ";
  if (const htri_t is_hdf5 = H5Fis_hdf5(path.c_str()); is_hdf5 <= 0)
    throw StoreError(is_hdf5 == 0 ? not_hdf5 + "no HDF5 signature" : open_failure(path, file_size, h5::last_error(), ""));
  h5::File file = open_for_reading(path, file_size);

  // HDF5 1.10.8 reads past buffers (H5O_attr_decode) and crashes (H5Aiterate2 on a half-built
  // table) on damaged metadata in the old format, object header version 1, which has no
  // checksums; the fuzzer found both, and h5py crashes on such files too. ranktune writes
  // version 2 headers only, whose checksums stop damage before HDF5 decodes it, so a file
  // is read only when every object the reader opens has one. The root is checked first:
  // its links locate the others.
  require_checksummed(file.get(), ".");
  for (const char* name : kTopLevelObjects) {
    if (H5_CHECK(H5Lexists(file.get(), name, H5P_DEFAULT)) == 0) continue;
    require_checksummed(file.get(), name);
  }
  if (H5_CHECK(H5Aexists(file.get(), "schema_version")) == 0)
    throw StoreError("not a ranktune results file (no schema_version attribute)");
  const long long version = read_int_attr(file.get(), "schema_version");
  if (version < kMinSchemaVersion || version > kSchemaVersion)
    throw StoreError("schema version " + std::to_string(version) + ", but ranktune " +
                     RANKTUNE_VERSION + " reads schema version " + std::to_string(kSchemaVersion) +
                     " and older (down to " + std::to_string(kMinSchemaVersion) + ") only");

  for (const TableSpec* spec : {&kTrials, &kResults, &kEvents, &kWorkersTable})
    if (H5_CHECK(H5Lexists(file.get(), spec->name, H5P_DEFAULT)) == 0)
      throw StoreError(std::string("not a ranktune results file (no /") + spec->name + " table)");

  ResultsFile out;
  out.path = path;
  out.meta = read_meta(file.get());
  {
    const RawTable trials = read_table(file.get(), kTrials, file_size);
    out.trial_rows = trials.rows;
    out.trials = read_trials(trials, out.schema);
  }
  if (H5_CHECK(H5Lexists(file.get(), kTrialTexts.name, H5P_DEFAULT)) > 0)
    read_trial_texts(read_table(file.get(), kTrialTexts, file_size), out.trials);
  if (with_results) out.results = read_results(read_table(file.get(), kResults, file_size), out.schema);
  out.events = read_events(read_table(file.get(), kEvents, file_size));
  derive_end_reasons(out.trials, out.events);
  out.workers = read_workers(read_table(file.get(), kWorkersTable, file_size));
  if (H5_CHECK(H5Lexists(file.get(), kCheckpoints.name, H5P_DEFAULT)) > 0)
    out.checkpoints = read_checkpoint_rows(read_table(file.get(), kCheckpoints, file_size));
  return out;
}

}  // namespace

namespace detail {

h5::File open_for_reading(const std::string& path, std::uintmax_t file_size) {
  // Two metadata attempts: the default retries a bad checksum for minutes.
  h5::PropList fapl{H5_CHECK(H5Pcreate(H5P_FILE_ACCESS))};
  H5_CHECK(H5Pset_metadata_read_attempts(fapl.get(), 2));
  h5::File file{H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.get())};
  if (!file) {
    // Files from other tools may only open plainly.
    const std::string swmr_error = h5::last_error();
    file = h5::File{H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get())};
    if (!file) throw StoreError(open_failure(path, file_size, swmr_error, h5::last_error()));
  }
  return file;
}

std::vector<CheckpointRow> read_checkpoint_rows(const RawTable& t) {
  const Layout& L = t.layout;
  const auto score = column_index(L, kCkScoreName), dropped = column_index(L, kCkDroppedName);
  std::vector<CheckpointRow> rows(t.rows);
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::byte* row = t.row(i);
    CheckpointRow& r = rows[i];
    r.trial = get_int(row, L[kCkTrial]);
    r.attempt = static_cast<int>(get_int(row, L[kCkAttempt]));
    r.iteration = get_int(row, L[kCkIteration]);
    r.time = get_f64(row, L[kCkTime]);
    r.offset = get_int(row, L[kCkOffset]);
    r.size = get_int(row, L[kCkSize]);
    r.crc32c = static_cast<std::uint32_t>(get_int(row, L[kCkCrc]));
    r.score = score ? get_f64(row, L[*score]) : NAN;
    r.dropped = dropped && get_int(row, L[*dropped]) != 0;
  }
  return rows;
}

}  // namespace detail

ResultsFile ResultsFile::read(const std::string& path, bool results) {
  const h5::Quiet quiet;
  try {
    return read_file(path, results);
  } catch (const h5::CallError& e) {
    throw StoreError(path + ": corrupted or unreadable (restore it from a copy): " + e.what());
  } catch (const std::exception& e) {  // bad_alloc and filesystem errors too: one line
    throw StoreError(path + ": " + e.what());
  }
}

const search::Trial* ResultsFile::trial(search::TrialId id) const {
  const auto it = std::find_if(trials.begin(), trials.end(), [&](const search::Trial& t) { return t.id == id; });
  return it == trials.end() ? nullptr : &*it;
}

bool is_hdf5_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) == 0) return false;
  const h5::Quiet quiet;
  return H5Fis_hdf5(path.c_str()) > 0;
}

std::string read_checkpoint_bytes(const ResultsFile& file, const CheckpointRow& row) {
  const h5::Quiet quiet;
  const std::string what = file.path + ": " + checkpoint_name(row.trial, row.iteration);
  if (row.dropped) throw StoreError(what + " was dropped (by retention, or after failing its checksum): its bytes are gone");
  if (row.offset < 0 || row.size < 0)
    throw StoreError(what + " has no bytes (offset " + std::to_string(row.offset) + ", size " + std::to_string(row.size) + ")");
  std::string bytes = with_context(what + ": ", [&] {
    std::error_code ec;
    const h5::File f = open_for_reading(file.path, fs::file_size(file.path, ec));
    const h5::Dataset ds{H5_CHECK(H5Dopen2(f.get(), kCheckpointData, H5P_DEFAULT))};
    return read_bytes(ds.get(), static_cast<hsize_t>(row.offset), static_cast<hsize_t>(row.size), kCheckpointData);
  });
  if (crc_of(bytes) != row.crc32c) throw StoreError(what + " fails its checksum (the file is damaged)");
  return bytes;
}

}  // namespace ranktune::io
