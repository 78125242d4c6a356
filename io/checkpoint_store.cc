// Checkpoints in the results file: /checkpoints rows over the bytes of /checkpoint_data,
// stored and read piece by piece (CheckpointSink, CheckpointSource), the free space of
// dropped checkpoints and its reuse, and retention (see io/store.h, io/retention.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <span>

#include "io/crc32c.h"
#include "io/results_writer_impl.h"

namespace ranktune::io {
using namespace detail;

namespace detail {

void pack_checkpoint_row(const Layout& L, const CheckpointRow& r, std::byte* row) {
  put_int(row, L[kCkTrial], r.trial);
  put_int(row, L[kCkAttempt], r.attempt);
  put_int(row, L[kCkIteration], r.iteration);
  put_f64(row, L[kCkTime], r.time);
  put_int(row, L[kCkOffset], r.offset);
  put_int(row, L[kCkSize], r.size);
  put_int(row, L[kCkCrc], r.crc32c);
  // A schema v1 table has neither column; the caller refuses to drop rows there.
  if (const auto c = column_index(L, kCkScoreName)) put_f64(row, L[*c], r.score);
  if (const auto c = column_index(L, kCkDroppedName)) put_int(row, L[*c], r.dropped ? 1 : 0);
}

}  // namespace detail

namespace {

// The writer's handle on /checkpoint_data bypasses HDF5's chunk cache: checkpoints arrive in
// pieces of megabytes that nothing reads back soon, and the cache (1 MiB by default, one
// chunk) would copy every byte once more on the way, and zero-fill each new chunk first.
// With no cache and, in files made since, no fill value written (H5D_FILL_TIME_NEVER),
// HDF5 writes the caller's buffer straight to the file. No reader sees a byte that no
// checkpoint wrote: bytes are read only through a row, which exists only once they are in.
h5::PropList uncached_access() {
  h5::PropList dapl{H5_CHECK(H5Pcreate(H5P_DATASET_ACCESS))};
  H5_CHECK(H5Pset_chunk_cache(dapl.get(), 0, 0, 1.0));
  return dapl;
}

h5::Dataset create_checkpoint_data(hid_t root) {
  hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = kCheckpointChunk;
  h5::Dataspace space{H5_CHECK(H5Screate_simple(1, &zero, &unlimited))};
  h5::PropList dcpl{H5_CHECK(H5Pcreate(H5P_DATASET_CREATE))};
  H5_CHECK(H5Pset_chunk(dcpl.get(), 1, &chunk));
  H5_CHECK(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER));
  return h5::Dataset{H5_CHECK(H5Dcreate2(root, kCheckpointData, H5T_NATIVE_UINT8, space.get(), H5P_DEFAULT,
                                         dcpl.get(), uncached_access().get()))};
}

}  // namespace

void ResultsWriter::Impl::create_checkpoint_tables(hid_t root) {
  checkpoints.create(root, kCheckpoints, checkpoint_layout());
  checkpoint_data = create_checkpoint_data(root);
}

void ResultsWriter::Impl::open_checkpoints(hid_t root) {
  if (H5_CHECK(H5Lexists(root, kCheckpoints.name, H5P_DEFAULT)) == 0) {
    create_checkpoint_tables(root);  // a file from before checkpoints existed
    return;
  }
  checkpoints.open(root, kCheckpoints);
  can_drop = column_index(checkpoints.layout, kCkDroppedName).has_value();
  checkpoint_data = h5::Dataset{H5_CHECK(H5Dopen2(root, kCheckpointData, uncached_access().get()))};
  h5::Dataspace space{H5_CHECK(H5Dget_space(checkpoint_data.get()))};
  H5_CHECK(H5Sget_simple_extent_dims(space.get(), &checkpoint_bytes, nullptr));
  std::error_code ec;
  const std::vector<CheckpointRow> rows =
      read_checkpoint_rows(read_table(root, kCheckpoints, std::filesystem::file_size(path, ec)));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CheckpointRow& r = rows[i];
    if (r.dropped || r.offset < 0 || r.size < 0 || static_cast<hsize_t>(r.offset + r.size) > checkpoint_bytes)
      continue;  // dropped, or torn by a crash
    if (r.trial == kLegacyStateTrial) {  // a file from before /state: its experiment states
      if (auto old = legacy_states.find(r.iteration); old != legacy_states.end()) drop_row(old->second);
      legacy_states[r.iteration] = {r, i};
      continue;
    }
    const CheckpointKey key{r.trial, r.iteration};
    // A later row for the same checkpoint supersedes the earlier one, as it did for the
    // writer that stored them; the earlier row is flagged at the next flush.
    if (auto old = checkpoint_index.find(key); old != checkpoint_index.end()) drop(old);
    checkpoint_index[key] = {r, i};
  }
  if (can_drop) {
    // Free is what no live checkpoint holds: dropped bytes, and bytes a crash left
    // without a row. Everything here was flushed, so all of it is free at once.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> used;
    for (const auto& [key, stored] : checkpoint_index)
      used.emplace_back(static_cast<std::uint64_t>(stored.row.offset), static_cast<std::uint64_t>(stored.row.size));
    for (const auto& [sequence, stored] : legacy_states)
      used.emplace_back(static_cast<std::uint64_t>(stored.row.offset), static_cast<std::uint64_t>(stored.row.size));
    free_space = FreeSpace::gaps(std::move(used), checkpoint_bytes);
    freed_unflushed.clear();
  }
}

void ResultsWriter::Impl::drop(std::map<CheckpointKey, Stored>::iterator it) {
  drop_row(it->second);
  checkpoint_index.erase(it);
}

void ResultsWriter::Impl::drop_row(Stored& s) {
  if (!can_drop) return;  // schema v1: forgotten for this run (by the caller), but its row cannot say so
  s.row.dropped = true;
  if (s.index >= checkpoints.rows) {  // still buffered: flag it there
    pack_checkpoint_row(checkpoints.layout, s.row,
                        checkpoints.buffer.data() + (s.index - checkpoints.rows) * checkpoints.layout.row_size());
  } else {
    std::vector<std::byte>& packed = dirty_checkpoints[s.index];
    packed.assign(checkpoints.layout.row_size(), std::byte{0});
    pack_checkpoint_row(checkpoints.layout, s.row, packed.data());
  }
  if (s.row.size > 0) freed_unflushed.emplace_back(s.row.offset, s.row.size);
}

void ResultsWriter::Impl::release_freed() {
  // The file now says these bytes are dropped, so overwriting them cannot hurt a row
  // that a crash recovery or a live reader would still trust.
  // A range that a CheckpointSource still reads waits for a later flush.
  const auto being_read = [&](const std::pair<hsize_t, hsize_t>& range) {
    for (const auto& [offset, size] : reading)
      if (offset < range.first + range.second && range.first < offset + size) return true;
    return false;
  };
  const auto kept = std::stable_partition(freed_unflushed.begin(), freed_unflushed.end(), being_read);
  for (auto it = kept; it != freed_unflushed.end(); ++it) free_space.release(it->first, it->second);
  freed_unflushed.erase(kept, freed_unflushed.end());
}

std::map<search::TrialId, std::int64_t> ResultsWriter::latest_checkpoints() const {
  std::map<search::TrialId, std::int64_t> latest;
  for (const auto& [key, stored] : impl_->checkpoint_index) latest[key.first] = std::max(latest[key.first], key.second);
  return latest;
}

ResultsWriter::CheckpointSink ResultsWriter::begin_checkpoint(search::TrialId trial, int attempt,
                                                              std::int64_t iteration, std::uint64_t size) {
  const h5::Quiet quiet;
  return writing(impl_->path, [&] { return with_context(impl_->path + ": " + checkpoint_name(trial, iteration) + ": ", [&] {
    Impl& m = *impl_;
    // Trial ids start at 1 (trial 0's rows are the experiment states of files from before /state).
    if (trial < 1) throw StoreError("trial id " + std::to_string(trial) + " is out of range");
    if (size > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw StoreError("a size of " + std::to_string(size) + " bytes is out of range");
    const hsize_t offset = size == 0 ? 0 : m.free_space.allocate(size, m.checkpoint_bytes);
    // Its bytes may all land in chunks not allocated yet (HDF5 allocates chunks whole).
    if (size > 0) {
      try {
        m.reserve(((offset + size - 1) / kCheckpointChunk - offset / kCheckpointChunk + 1) * kCheckpointChunk);
      } catch (...) {
        m.free_space.release(offset, size);
        throw;
      }
    }
    // The dataset grows to hold the whole range now, so that the next checkpoint to begin,
    // while this one is still arriving, is placed after it.
    if (const hsize_t extent = offset + size; extent > m.checkpoint_bytes) {
      try {
        H5_CHECK(H5Dset_extent(m.checkpoint_data.get(), &extent));
      } catch (...) {
        m.free_space.release(offset, size);
        throw;
      }
      m.checkpoint_bytes = extent;
    }
    CheckpointRow row{trial, attempt, iteration, 0.0, static_cast<std::int64_t>(offset), static_cast<std::int64_t>(size)};
    return CheckpointSink(impl_.get(), row);
  }); });
}

void ResultsWriter::append_checkpoint(search::TrialId trial, int attempt, std::int64_t iteration, double time,
                                      std::string_view bytes) {
  CheckpointSink sink = begin_checkpoint(trial, attempt, iteration, bytes.size());
  sink.write(0, bytes);
  sink.finish(time);
}

ResultsWriter::CheckpointSink::CheckpointSink(ResultsWriter::Impl* impl, CheckpointRow row)
    : impl_(impl), row_(row), size_(static_cast<std::uint64_t>(row.size)) {}

ResultsWriter::CheckpointSink::CheckpointSink(CheckpointSink&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)), row_(other.row_), size_(other.size_), written_(other.written_),
      crc_(other.crc_) {}

ResultsWriter::CheckpointSink& ResultsWriter::CheckpointSink::operator=(CheckpointSink&& other) noexcept {
  if (this != &other) {
    abandon();
    impl_ = std::exchange(other.impl_, nullptr);
    row_ = other.row_;
    size_ = other.size_;
    written_ = other.written_;
    crc_ = other.crc_;
  }
  return *this;
}

ResultsWriter::CheckpointSink::~CheckpointSink() { abandon(); }

void ResultsWriter::CheckpointSink::abandon() noexcept {
  // No row points at the range (rows are added by finish() only), so nothing that a live
  // reader or a crash recovery trusts can see its bytes change: it is free at once.
  if (impl_ != nullptr && size_ > 0) impl_->free_space.release(static_cast<hsize_t>(row_.offset), size_);
  impl_ = nullptr;
}

void ResultsWriter::CheckpointSink::write(std::uint64_t at, std::string_view bytes) {
  if (impl_ == nullptr) throw StoreError("checkpoint sink used after finish()");
  const std::string what = impl_->path + ": " + checkpoint_name(row_.trial, row_.iteration);
  if (at != written_ || bytes.size() > size_ - written_)
    throw StoreError(what + ": a piece of " + std::to_string(bytes.size()) + " bytes at byte " + std::to_string(at) +
                     " does not follow the " + std::to_string(written_) + " of " + std::to_string(size_) +
                     " bytes stored so far (pieces must come in order and fit the announced size)");
  const h5::Quiet quiet;
  // begin_checkpoint grew /checkpoint_data over the whole range, so this never extends it
  // (the extent is the end of the range, not impl_->checkpoint_bytes, which the writer's
  // thread may change meanwhile: this may run on another thread, see store.h).
  writing(impl_->path, [&] { with_context(what + ": ", [&] {
    write_bytes(impl_->checkpoint_data.get(), static_cast<hsize_t>(row_.offset) + at, bytes,
                static_cast<hsize_t>(row_.offset) + size_);
  }); });
  crc_ = io::crc32c(std::as_bytes(std::span(bytes.data(), bytes.size())), crc_);
  written_ += bytes.size();
}

void ResultsWriter::CheckpointSink::sync() {
  if (impl_ == nullptr) throw StoreError("checkpoint sink used after finish()");
  const h5::Quiet quiet;
  writing(impl_->path, [&] { with_context(impl_->path + ": " + checkpoint_name(row_.trial, row_.iteration) + ": ", [&] {
    // HDF5's chunk cache first (its chunk index goes too), then the kernel's page cache.
    H5_CHECK(H5Dflush(impl_->checkpoint_data.get()));
    void* handle = nullptr;
    H5_CHECK(H5Fget_vfd_handle(impl_->file.get(), H5P_DEFAULT, &handle));
    if (::fdatasync(*static_cast<int*>(handle)) != 0)
      throw h5::CallError(std::string("fdatasync failed: ") + std::strerror(errno), errno);
  }); });
}

void ResultsWriter::CheckpointSink::finish(double time) {
  if (impl_ == nullptr) throw StoreError("checkpoint sink used after finish()");
  Impl& m = *impl_;
  // The row below points at the bytes: the next flush writes them (H5Dflush) before it.
  m.data_unflushed = true;
  if (written_ != size_)
    throw StoreError(m.path + ": " + checkpoint_name(row_.trial, row_.iteration) + " ended after " +
                     std::to_string(written_) + " of its " + std::to_string(size_) + " bytes");
  CheckpointRow r = row_;
  r.time = time;
  r.crc32c = crc_;
  if (static_cast<std::size_t>(r.trial) < m.last_score.size() &&
      m.last_score[static_cast<std::size_t>(r.trial)].first == r.iteration)
    r.score = m.last_score[static_cast<std::size_t>(r.trial)].second;
  const CheckpointKey key{r.trial, r.iteration};
  // A second checkpoint of the same iteration (a retry that saved again) replaces the first.
  if (auto old = m.checkpoint_index.find(key); old != m.checkpoint_index.end()) m.drop(old);
  const hsize_t index = m.checkpoints.rows + m.checkpoints.pending();
  pack_checkpoint_row(m.checkpoints.layout, r, m.checkpoints.add_row());
  m.checkpoint_index[key] = {r, index};
  impl_ = nullptr;  // the range now belongs to the row
}

ResultsWriter::CheckpointSource ResultsWriter::open_checkpoint(search::TrialId trial, std::int64_t iteration) const {
  const auto it = impl_->checkpoint_index.find({trial, iteration});
  if (it == impl_->checkpoint_index.end())
    throw StoreError(impl_->path + ": no checkpoint of trial " + std::to_string(trial) + " at iteration " +
                     std::to_string(iteration));
  const CheckpointRow& r = it->second.row;
  if (static_cast<hsize_t>(r.offset + r.size) > impl_->checkpoint_bytes)
    throw StoreError(impl_->path + ": " + checkpoint_name(trial, iteration) + ": its bytes [" +
                     std::to_string(r.offset) + ", " + std::to_string(r.offset + r.size) +
                     ") lie outside /checkpoint_data (" + std::to_string(impl_->checkpoint_bytes) +
                     " bytes): the file is damaged");
  return CheckpointSource(impl_.get(), r);
}

std::string ResultsWriter::read_checkpoint(search::TrialId trial, std::int64_t iteration) const {
  CheckpointSource source = open_checkpoint(trial, iteration);
  std::string bytes = source.read(source.size());
  source.verify();
  return bytes;
}

ResultsWriter::CheckpointSource::CheckpointSource(const ResultsWriter::Impl* impl, CheckpointRow row)
    : impl_(impl), row_(row) {
  impl_->reading.emplace(static_cast<hsize_t>(row_.offset), static_cast<hsize_t>(row_.size));
}

ResultsWriter::CheckpointSource::CheckpointSource(CheckpointSource&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)), row_(other.row_), read_(other.read_), crc_(other.crc_) {}

ResultsWriter::CheckpointSource& ResultsWriter::CheckpointSource::operator=(CheckpointSource&& other) noexcept {
  if (this != &other) {
    release();
    impl_ = std::exchange(other.impl_, nullptr);
    row_ = other.row_;
    read_ = other.read_;
    crc_ = other.crc_;
  }
  return *this;
}

ResultsWriter::CheckpointSource::~CheckpointSource() { release(); }

void ResultsWriter::CheckpointSource::release() noexcept {
  if (impl_ == nullptr) return;
  const auto it = impl_->reading.find({static_cast<hsize_t>(row_.offset), static_cast<hsize_t>(row_.size)});
  if (it != impl_->reading.end()) impl_->reading.erase(it);
  impl_ = nullptr;
}

std::string ResultsWriter::CheckpointSource::read(std::uint64_t max_bytes) {
  if (impl_ == nullptr) throw StoreError("checkpoint source used after a move");
  const hsize_t n = std::min<std::uint64_t>(max_bytes, size() - read_);
  const h5::Quiet quiet;
  std::string bytes = with_context(impl_->path + ": " + checkpoint_name(row_.trial, row_.iteration) + ": ", [&] {
    return read_bytes(impl_->checkpoint_data.get(), static_cast<hsize_t>(row_.offset) + read_, n, kCheckpointData);
  });
  crc_ = io::crc32c(std::as_bytes(std::span(bytes.data(), bytes.size())), crc_);
  read_ += n;
  return bytes;
}

void ResultsWriter::CheckpointSource::verify() const {
  const std::string what = (impl_ ? impl_->path : std::string("results file")) + ": " +
                           checkpoint_name(row_.trial, row_.iteration);
  if (!done())
    throw StoreError(what + ": only " + std::to_string(read_) + " of its " + std::to_string(size()) +
                     " bytes were read before checking them");
  if (crc_ != row_.crc32c) throw StoreError(what + " fails its checksum (the file is damaged)");
}

void ResultsWriter::set_retention(const RetentionPolicy& policy) {
  if (policy.enabled() && !impl_->can_drop)
    throw StoreError(impl_->path + ": schema version 1 file: its /checkpoints table cannot mark checkpoints "
                     "dropped, so [checkpoint] keep_last/keep_best cannot apply. Run `ranktune compact " +
                     impl_->path + "` to upgrade it, or remove keep_last/keep_best");
  impl_->retention = policy;
}

std::vector<CheckpointKey> ResultsWriter::apply_retention(const std::set<CheckpointKey>& pinned) {
  std::vector<CheckpointKey> dropped;
  if (!impl_->retention.enabled()) return dropped;
  auto& index = impl_->checkpoint_index;
  // The index is ordered by (trial, iteration): one pass hands the policy each trial's run.
  std::vector<CheckpointScore> live;
  std::set<std::int64_t> pins;
  for (auto it = index.begin(); it != index.end();) {
    const search::TrialId trial = it->first.first;
    live.clear();
    pins.clear();
    for (; it != index.end() && it->first.first == trial; ++it) {
      live.push_back({it->first.second, it->second.row.score});
      if (pinned.count(it->first) > 0) pins.insert(it->first.second);
    }
    for (const std::int64_t iteration : checkpoints_to_drop(live, impl_->retention, pins))
      dropped.emplace_back(trial, iteration);
  }
  for (const CheckpointKey& key : dropped) impl_->drop(index.find(key));
  return dropped;
}

bool ResultsWriter::drop_checkpoint(search::TrialId trial, std::int64_t iteration) {
  const auto it = impl_->checkpoint_index.find({trial, iteration});
  if (it == impl_->checkpoint_index.end()) return false;
  impl_->drop(it);
  return true;
}

std::int64_t ResultsWriter::previous_checkpoint(search::TrialId trial, std::int64_t iteration) const {
  const auto& index = impl_->checkpoint_index;
  auto it = index.lower_bound({trial, iteration});
  if (it == index.begin()) return 0;
  --it;
  return it->first.first == trial ? it->first.second : 0;
}

CheckpointSpace ResultsWriter::checkpoint_space() const {
  CheckpointSpace space;
  space.extent = impl_->checkpoint_bytes;
  space.free = impl_->free_space.total();
  for (const auto& [key, stored] : impl_->checkpoint_index) space.live += static_cast<std::uint64_t>(stored.row.size);
  for (const auto& [sequence, stored] : impl_->legacy_states) space.live += static_cast<std::uint64_t>(stored.row.size);
  return space;
}

}  // namespace ranktune::io
