// The results file's single writer: creating a file (metadata, every dataset, then SWMR),
// opening one to resume it, buffering rows and committing them by flush(), and holding
// disk space ahead of HDF5's writes (see io/store.h). Checkpoints: io/checkpoint_store.cc.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string_view>
#include <variant>

#include "io/results_writer_impl.h"
#include "ranktune/config.h"

namespace ranktune::io {
using namespace detail;
namespace {

namespace fs = std::filesystem;

// `items` comma-separated, as many whole ones as fit `width` bytes (cut between items).
std::string join_fitting(const std::vector<std::string>& items, std::size_t width) {
  std::string s;
  for (const std::string& item : items) {
    if (s.size() + !s.empty() + item.size() > width) break;
    if (!s.empty()) s.push_back(',');
    s.append(item);
  }
  return s;
}

std::string join_ranks(const std::vector<int>& ranks, std::size_t width) {
  std::vector<std::string> items;
  items.reserve(ranks.size());
  for (const int r : ranks) items.push_back(std::to_string(r));
  return join_fitting(items, width);
}

// What note_texts compares: a trial's texts get a row in /trial_texts only when they change.
std::size_t texts_hash(int attempt, std::string_view error, std::string_view log_tail) {
  const std::hash<std::string_view> h;
  return h(error) ^ (h(log_tail) * 1099511628211u) ^ (static_cast<std::size_t>(attempt) * 0x9E3779B97F4A7C15u);
}

void put_value(std::byte* row, const Column& c, const search::Value* v) {
  if (c.kind == Kind::F64) {
    double d = NAN;
    if (v && std::holds_alternative<double>(*v)) d = std::get<double>(*v);
    if (v && std::holds_alternative<std::int64_t>(*v)) d = static_cast<double>(std::get<std::int64_t>(*v));
    put_f64(row, c, d);
  } else if (c.kind == Kind::I64) {
    std::int64_t i = kMissingInt;
    if (v && std::holds_alternative<std::int64_t>(*v)) i = std::get<std::int64_t>(*v);
    if (v && std::holds_alternative<double>(*v) && std::isfinite(std::get<double>(*v)))
      i = std::llround(std::get<double>(*v));
    put_int(row, c, i);
  } else {
    put_str(row, c, v ? (std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v)
                                                                  : search::to_string(*v))
                      : std::string());
  }
}

}  // namespace

namespace detail {

std::string disk_full_message(const std::string& path, std::uint64_t needed) {
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  struct statvfs st {};
  std::string free = ::statvfs(dir.c_str(), &st) == 0
                         ? std::to_string(static_cast<unsigned long long>(st.f_bavail) * st.f_frsize) + " bytes free"
                         : "free space unknown";
  if (needed > 0) free += ", fewer than the " + std::to_string(needed) + " its next writes need";
  return "the file system of " + path + " is full (" + free + "): every row committed before is in the file; "
         "free space there, then resume with `ranktune run CONFIG --resume`";
}

SpaceReserve::~SpaceReserve() {
  // Blocks reserved past the end of a closed file would stay allocated on ext4 and xfs.
  // ext4 does not punch past a file's end (it returns 0 and frees nothing), but frees every
  // block past it at a truncate to its own size.
  struct stat st {};
  if (fd >= 0 && high > 0 && ::fstat(fd, &st) == 0 && high > static_cast<std::uint64_t>(st.st_size)) {
    (void)::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, st.st_size,
                      static_cast<off_t>(high - static_cast<std::uint64_t>(st.st_size)));
    (void)::ftruncate(fd, st.st_size);
  }
}

}  // namespace detail

void ResultsWriter::Impl::create(const StoreMeta& meta, const std::vector<WorkerInfo>& worker_list, bool compress,
                                 bool& created) {
  std::vector<std::string> param_names, metric_names = schema.metrics;
  for (ParamColumn& p : schema.params) {
    param_names.push_back(p.name);
    if (p.type == search::ValueType::String && p.length == 0) p.length = 8;
    if (p.length > kMaxParamWidth) throw StoreError("parameter '" + p.name + "' is wider than 64 KiB");
  }
  check_extra_names(kTrials, param_names, "parameter");
  check_extra_names(kResults, metric_names, "metric");

  // A link there (dangling or not) is refused by name: H5Fcreate's O_EXCL would not follow
  // it either, but answers "File exists".
  if (results_file_exists(path)) throw StoreError("already exists (refusing to overwrite it)");
  // SWMR needs the latest format; it also gives checksummed metadata, so the reader
  // detects corruption instead of following garbage.
  h5::PropList fapl{H5_CHECK(H5Pcreate(H5P_FILE_ACCESS))};
  H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
  file = h5::File{H5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()))};
  created = true;
  lock = WriterLock(path, /*created=*/true);  // no group or other write, whatever the umask
  lock.same_file(file.get());
  space.fd = lock.fd();
  reserve(0);
  metric = meta.metric;

  const hid_t root = file.get();
  write_int_attr(root, "schema_version", kSchemaVersion);
  write_string_attr(root, "ranktune_version", RANKTUNE_VERSION);
  write_text(root, "experiment", meta.experiment);
  write_text(root, "metric", meta.metric);
  write_string_attr(root, "mode", search::to_string(meta.mode));
  write_text(root, "config", meta.config_text);
  write_text(root, "overrides", meta.overrides);
  write_text(root, "command_line", meta.command_line);
  if (!meta.config_path.empty()) write_text(root, "config_path", meta.config_path);
  if (!meta.algorithm.empty()) write_text(root, "algorithm", meta.algorithm);
  write_string_attr(root, "created", meta.created.empty() ? iso8601_utc_now() : meta.created);
  {
    // The same instant as a number (Unix epoch seconds): times in the file count from it,
    // across resumed runs. Files from before it have only "created" and still read.
    std::int64_t unix_seconds = meta.created_unix;
    std::tm tm{};
    if (unix_seconds == 0 && !meta.created.empty() && strptime(meta.created.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr)
      unix_seconds = timegm(&tm);
    if (unix_seconds == 0) unix_seconds = std::time(nullptr);  // within the second "created" was read
    h5::Dataspace scalar{H5_CHECK(H5Screate(H5S_SCALAR))};
    h5::Attribute attr{H5_CHECK(H5Acreate2(root, "created_unix", H5T_STD_I64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT))};
    H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT64, &unix_seconds));
  }
  {
    h5::Group stack{H5_CHECK(H5Gcreate2(root, "stack", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))};
    for (const auto& [key, value] : meta.stack)
      write_string_attr(stack.get(), key.c_str(),
                        std::string_view(value).substr(0, utf8_prefix(value, kMaxTextAttribute)));
  }  // attributes and groups must be closed before SWMR writing starts

  trials.create(root, kTrials, trial_layout(schema), compress);
  trial_texts.create(root, kTrialTexts, fixed_layout(kTrialTexts), compress);
  results.create(root, kResults, result_layout(schema), compress);
  index_metrics();
  events.create(root, kEvents, fixed_layout(kEvents), compress);
  workers.create(root, kWorkersTable, fixed_layout(kWorkersTable), compress);  // written once: no chunk rewritten
  create_checkpoint_tables(root);
  create_state_tables(root);

  for (const WorkerInfo& w : worker_list) {
    std::byte* row = workers.add_row();
    const Layout& L = workers.layout;
    put_int(row, L[kWkRank], w.rank);
    put_str(row, L[kWkHost], w.host);
    put_int(row, L[kWkLocal], w.local_index);
    put_str(row, L[kWkDevice], w.device);
    put_str(row, L[kWkDeviceName], w.device_name);
  }
  workers.append();
  H5_CHECK(H5Fstart_swmr_write(root));
}

void ResultsWriter::Impl::index_metrics() {
  metrics_by_name.clear();
  metric_column = results.layout.size();
  for (std::size_t c = results.layout.first_free(); c < results.layout.size(); ++c) {
    metrics_by_name.push_back(c);
    if (results.layout[c].name == metric) metric_column = c;
  }
  std::sort(metrics_by_name.begin(), metrics_by_name.end(),
            [&](std::size_t a, std::size_t b) { return results.layout[a].name < results.layout[b].name; });
}

void ResultsWriter::Impl::open_existing(ResumeInfo& info) {
  // The lock first: its open refuses a file that is not ours, or that others may change,
  // and it must be held before mending (never clear the flags of a live writer).
  lock = WriterLock(path);
  space.fd = lock.fd();
  if (!is_hdf5_file(path)) throw StoreError("not an HDF5 file: nothing to resume");
  // A reader holding HDF5's file lock keeps its writers out, h5clear included: said as
  // such, not as a file that cannot be mended.
  lock.refuse_readers();
  h5::PropList fapl{H5_CHECK(H5Pcreate(H5P_FILE_ACCESS))};
  H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
  file = h5::File{H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get())};
  if (file) lock.same_file(file.get());
  if (!file) {
    // Most likely the writer died (kill -9, node failure) while it held the file open for
    // SWMR writing: the superblock still says so, and HDF5 refuses to open it again.
    const std::string first = h5::last_error();
    if (const std::string why = mend_status_flags(path); !why.empty())
      throw StoreError("cannot open it to resume (" + first + "), and mending it failed: " + why);
    info.mended = true;
    file = h5::File{H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get())};
    if (!file) throw StoreError("cannot open it to resume even after clearing its status flags: " + h5::last_error());
    lock.same_file(file.get());
  }
  const hid_t root = file.get();
  trials.open(root, kTrials);
  if (H5_CHECK(H5Lexists(root, kTrialTexts.name, H5P_DEFAULT)) > 0) {
    // Which texts each trial has there already: only a change adds a row.
    const RawTable texts = read_table(root, kTrialTexts, 0);
    for (std::size_t i = 0; i < texts.rows; ++i) {
      const std::byte* row = texts.row(i);
      const Layout& L = texts.layout;
      texts_written[get_int(row, L[kTxTrial])] =
          texts_hash(static_cast<int>(get_int(row, L[kTxAttempt])), get_str(row, L[kTxError]), get_str(row, L[kTxLogTail]));
    }
    trial_texts.open(root, kTrialTexts);
  } else if (!column_index(trials.layout, kTrialLegacyColumns[0].name)) {
    throw StoreError("no /trial_texts table, and /trials has no error column: not a ranktune results file, or a "
                     "damaged one");
  }
  results.open(root, kResults);
  events.open(root, kEvents);
  workers.open(root, kWorkersTable);
  metric = read_text(root, "metric").value_or("");
  open_checkpoints(root);
  open_state(root, info);
  schema.params = params_of(trials.layout);
  schema.objectives = objectives_of(trials.layout);
  schema.metrics = metrics_of(results.layout);
  index_metrics();
  H5_CHECK(H5Fstart_swmr_write(root));
  reserve(0);  // a resume onto a full disk stops here, before its first row
}

// Holds disk space for what HDF5 will write next: fallocate(2) (FALLOC_FL_KEEP_SIZE) from the
// end of the file's data to `more` bytes (and kSpareBytes) past HDF5's end of allocation.
// HDF5 goes on flushing metadata after a data write fails (H5Fflush), so on a full disk it
// committed table extents over rows that never reached the file (zero rows, a /trials row
// "never written"): a write that a reservation covers cannot fail, and a reservation that
// fails throws DiskFullError before HDF5 writes anything, leaving the file as the last
// commit left it. Where the file system has no fallocate, HDF5's own errors are all there is.
//
// It runs before every flush, and a fallocate of a range that is allocated already still
// costs a journal transaction on ext4 (12% of rank 0's CPU in benchmarks/overhead.sh). So it
// reserves ahead in steps of kStepBytes and calls fallocate again only when HDF5's end of
// allocation nears the end of the reservation, or when blocks of the reservation were given
// back: HDF5 truncates the file to its end of allocation at a flush, which frees every
// block past it, reserved ones too, and lowers the file's allocated block count (st_blocks;
// writes inside the reservation fill blocks that are counted already).
void ResultsWriter::Impl::reserve(std::uint64_t more) {
  constexpr std::uint64_t kSpareBytes = 512 << 10;  // metadata (object headers, chunk indexes)
  constexpr std::uint64_t kStepBytes = 4 << 20;
  if (!space.enabled || space.fd < 0 || !file) return;
  haddr_t eoa = 0;
  struct stat st {};
  if (H5Fget_eoa(file.get(), &eoa) < 0 || ::fstat(space.fd, &st) != 0) return;
  const std::uint64_t to = eoa + more + kSpareBytes;
  const auto blocks = static_cast<std::uint64_t>(st.st_blocks);
  if (to <= space.end && blocks >= space.blocks) {
    space.blocks = blocks;
    return;
  }
  const std::uint64_t from = std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), eoa);
  // A step ahead, unless the disk has no room for it: then exactly what is needed, and a
  // disk that has no room for that is full.
  for (const std::uint64_t end : {to + kStepBytes, to}) {
    if (::fallocate(space.fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from), static_cast<off_t>(end - from)) == 0) {
      space.end = end;
      space.high = std::max(space.high, end);
      space.blocks = ::fstat(space.fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_blocks) : 0;
      return;
    }
    if (errno != ENOSPC && errno != EDQUOT) break;
  }
  if (errno == ENOSPC || errno == EDQUOT) throw DiskFullError(disk_full_message(path, to - from));
  space.enabled = false;  // EOPNOTSUPP (some network file systems), or EINTR: not worth retrying
}

void ResultsWriter::Impl::pack_trial(const search::Trial& t, std::byte* row) const {
  const Layout& L = trials.layout;
  put_int(row, L[kTrialId], t.id);
  put_str(row, L[kStatus], search::to_string(t.status));
  put_int(row, L[kAttempt], t.attempt);
  put_int(row, L[kIterations], t.iterations);
  put_f64(row, L[kBest], t.best);
  put_int(row, L[kBestIteration], t.best_iteration);
  put_f64(row, L[kLast], t.last);
  put_f64(row, L[kStart], t.start_time);
  put_f64(row, L[kEnd], t.end_time);
  // The ranks running it, or once it stopped, those that ran its last attempt.
  put_str(row, L[kWorkers], join_ranks(t.workers.empty() ? t.ran_on : t.workers, L[kWorkers].size));
  // Files from before schema 3 keep the texts in /trials (else note_texts puts them in /trial_texts).
  if (!trial_texts.ds) {
    if (const auto e = column_index(L, "error")) put_str(row, L[*e], t.error);
    if (const auto l = column_index(L, "log_tail")) put_str(row, L[*l], t.log_tail);
  }
  // Files from before the column have none: their rows keep only the ranks.
  if (const auto h = column_index(L, "hosts")) put_str(row, L[*h], join_fitting(t.hosts, L[*h].size));
  if (const auto r = column_index(L, "end_reason")) put_str(row, L[*r], search::to_string(t.end_reason));
  // A multi-objective experiment's rank and the point it ranks by (the last result's).
  if (const auto p = column_index(L, kParetoRankName)) {
    put_int(row, L[*p], t.pareto_rank);
    for (std::size_t c = *p + 1; c < L.first_free(); ++c) {
      const auto it = t.last_metrics.find(L[c].name.substr(kObjectivePrefix.size()));
      put_f64(row, L[c], it == t.last_metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second);
    }
  }
  for (std::size_t c = L.first_free(); c < L.size(); ++c) {
    auto it = t.config.find(L[c].name);
    put_value(row, L[c], it == t.config.end() ? nullptr : &it->second);
  }
}

void ResultsWriter::Impl::note_texts(const search::Trial& t) {
  if (!trial_texts.ds) return;
  const auto known = texts_written.find(t.id);
  if (known == texts_written.end() && t.error.empty() && t.log_tail.empty()) return;  // the usual case
  const std::size_t hash = texts_hash(t.attempt, t.error, t.log_tail);
  if (known != texts_written.end() && known->second == hash) return;
  texts_written[t.id] = hash;
  std::byte* row = trial_texts.add_row();
  put_row(row, trial_texts.layout, {std::int64_t{t.id}, std::int64_t{t.attempt}, t.error, t.log_tail});
}

ResultsWriter::ResultsWriter(const std::string& path, const StoreMeta& meta,
                             const StoreSchema& schema, const std::vector<WorkerInfo>& workers,
                             const WriterOptions& options)
    : impl_(std::make_unique<Impl>()) {
  const h5::Quiet quiet;
  impl_->path = path;
  impl_->schema = schema;
  bool created = false;
  try {
    writing(path, [&] { impl_->create(meta, workers, options.compress, created); });
  } catch (const UnsafeFileError&) {
    impl_.reset();  // not removed: the name may hold another's file now (see WriterLock::same_file)
    throw;
  } catch (const std::exception& e) {
    impl_.reset();  // closes every handle before the half-made file is removed
    std::error_code ec;
    if (created) fs::remove(path, ec);
    if (dynamic_cast<const DiskFullError*>(&e) != nullptr) throw DiskFullError(path + ": " + e.what());
    throw StoreError(path + ": " + e.what());
  }
}

ResultsWriter::ResultsWriter(const std::string& path, ResumeInfo& info) : impl_(std::make_unique<Impl>()) {
  const h5::Quiet quiet;
  impl_->path = path;
  // Each refusal closes the handles while HDF5 is still quiet (impl_ would go after `quiet`).
  try {
    writing(path, [&] { impl_->open_existing(info); });
  } catch (const UnsafeFileError&) {  // names the file, and is not a damaged file (exit 2)
    impl_.reset();
    throw;
  } catch (const FileBusyError& e) {
    impl_.reset();
    throw FileBusyError(path + ": cannot resume: " + e.what());
  } catch (const DiskFullError& e) {
    impl_.reset();
    throw DiskFullError(path + ": cannot resume: " + e.what());
  } catch (const std::exception& e) {
    impl_.reset();
    throw StoreError(path + ": cannot resume: " + e.what());
  }
  state_sequence_ = info.state_sequence;
}

ResultsWriter::~ResultsWriter() {
  // Closing the file writes its metadata, which can fail too (a full disk): quiet until the
  // last handle is closed.
  const h5::Quiet quiet;
  try {
    flush();
  } catch (...) {  // destructors never throw; flush() errors were already reportable
  }
  impl_.reset();
}

void ResultsWriter::write_trial(const search::Trial& trial) {
  // Ids bound the table's extent, so a garbage id must not grow the file to petabytes.
  if (trial.id < 1 || trial.id > 1'000'000'000)
    throw StoreError(impl_->path + ": trial id " + std::to_string(trial.id) + " is out of range");
  std::vector<std::byte>& row = impl_->dirty_trials[static_cast<hsize_t>(trial.id - 1)];
  row.assign(impl_->trials.layout.row_size(), std::byte{0});
  impl_->pack_trial(trial, row.data());
  impl_->note_texts(trial);
}

std::size_t ResultsWriter::append_result(search::TrialId trial, int attempt, std::int64_t iteration,
                                         double time, const search::Metrics& metrics) {
  Table& t = impl_->results;
  std::byte* row = t.add_row();
  put_int(row, t.layout[kResTrial], trial);
  put_int(row, t.layout[kResAttempt], attempt);
  put_int(row, t.layout[kResIteration], iteration);
  put_f64(row, t.layout[kResTime], time);
  // Both sides are sorted by name (metrics_by_name orders the columns once), so one merge
  // pass matches them: a string comparison per column, no lookups.
  std::size_t recorded = 0;
  bool scored = false;
  double score = NAN;
  auto m = metrics.begin();
  for (const std::size_t c : impl_->metrics_by_name) {
    const std::string& name = t.layout[c].name;
    int order = 1;
    while (m != metrics.end() && (order = m->first.compare(name)) < 0) ++m;
    const bool found = order == 0;
    recorded += found;
    const double v = found ? m->second : NAN;
    put_f64(row, t.layout[c], v);
    if (c == impl_->metric_column) {
      scored = found;
      score = v;
    }
  }
  // The checkpoint of this iteration, if one comes, is judged by this value (keep_best).
  if (scored && trial > 0 && trial <= 1'000'000'000) {
    auto& scores = impl_->last_score;
    if (static_cast<std::size_t>(trial) >= scores.size()) scores.resize(static_cast<std::size_t>(trial) + 1, {0, NAN});
    scores[static_cast<std::size_t>(trial)] = {iteration, score};
  }
  return recorded;
}

void ResultsWriter::append_event(const EventRow& event) {
  Table& t = impl_->events;
  const Column& text = t.layout[kEvMessage];
  std::string_view rest = event.message;
  std::string cut;
  if (rest.size() > kMaxEventMessage) {
    cut = std::string(rest.substr(0, utf8_prefix(rest, kMaxEventMessage - 3))) + "...";
    rest = cut;
  }
  // One row, or several: the first has the kind, the others go on with the message. They
  // are appended together, so a flush commits them together.
  const std::string kind = event.kind_name();
  bool first = true;
  do {
    const std::size_t n = utf8_prefix(rest, text.size);
    std::byte* row = t.add_row();
    put_f64(row, t.layout[kEvTime], event.time);
    put_int(row, t.layout[kEvTrial], event.trial);
    put_int(row, t.layout[kEvWorker], event.worker);
    put_str(row, t.layout[kEvKind], first ? std::string_view(kind) : std::string_view(search::to_string(search::EventKind::Continued)));
    put_str(row, text, rest.substr(0, n));
    rest.remove_prefix(n);
    first = false;
    if (n == 0) break;  // a column narrower than one UTF-8 sequence: what is left is lost
  } while (!rest.empty());
}

void ResultsWriter::flush() {
  const h5::Quiet quiet;
  writing(impl_->path, [&] { with_context(impl_->path + ": ", [&] {
    // Checkpoint bytes reach the file before any row that points at them: H5Dflush writes
    // the dataset's cached chunks and their index, so a write that fails here (a full
    // disk) throws before a new /checkpoints row is even handed to HDF5, and a row is
    // never committed over bytes that are not in the file. The rows stay buffered: the
    // next flush that gets through commits them.
    Impl& m = *impl_;
    m.reserve(m.results.bytes_for(m.results.pending()) + m.events.bytes_for(m.events.pending()) +
              (m.trial_texts.ds ? m.trial_texts.bytes_for(m.trial_texts.pending()) : 0) +
              m.checkpoints.bytes_for(m.checkpoints.pending()) + m.trials.bytes_for(m.dirty_trials.size()) +
              (m.states.ds ? m.states.bytes_for(m.states.pending()) : 0));
    if (m.data_unflushed) {
      H5_CHECK(H5Dflush(m.checkpoint_data.get()));
      m.data_unflushed = false;
    }
    if (m.state_unflushed) {  // the same rule for the experiment state's bytes
      H5_CHECK(H5Dflush(m.state_data.get()));
      m.state_unflushed = false;
    }
    m.results.append();
    m.events.append();
    if (m.trial_texts.ds) m.trial_texts.append();
    m.checkpoints.append();
    if (m.states.ds) m.states.append();
    // Dropped flags go out only once the rows that supersede them are in the file: within
    // one H5Fflush HDF5 writes a rewritten chunk and a dataset's new extent in no set order,
    // and after kill -9 in between, the kill loop test found the newest experiment state
    // flagged dropped while the row replacing it was past the extent (no state left: the
    // resumed searcher started over and sampled extra trials).
    if (!m.dirty_checkpoints.empty()) H5_CHECK(H5Fflush(m.file.get(), H5F_SCOPE_GLOBAL));
    m.checkpoints.rewrite(m.dirty_checkpoints);
    m.trials.rewrite(m.dirty_trials);
    // H5Fflush, not only H5Dflush: recovery after kill -9 keeps only what this wrote.
    H5_CHECK(H5Fflush(m.file.get(), H5F_SCOPE_GLOBAL));
    m.release_freed();
    m.state_flushed();
  }); });
}

std::size_t ResultsWriter::pending() const {
  return impl_->results.pending() + impl_->events.pending() + impl_->checkpoints.pending() +
         (impl_->trial_texts.ds ? impl_->trial_texts.pending() : 0) +
         (impl_->states.ds ? impl_->states.pending() : 0) + impl_->dirty_trials.size() + impl_->dirty_checkpoints.size();
}

const std::string& ResultsWriter::path() const { return impl_->path; }

}  // namespace ranktune::io
