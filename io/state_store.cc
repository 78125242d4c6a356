// The experiment state in the results file: the controller's saved searcher and scheduler,
// one /state row (sequence, time, offset, size, CRC-32C) per stored state over its bytes in
// /state_data, committed with the rows of the same flush; and the states of files from
// before /state, which were /checkpoints rows of trial 0 (see io/store.h).
#include <algorithm>
#include <filesystem>
#include <span>

#include "io/crc32c.h"
#include "io/results_writer_impl.h"

namespace ranktune::io {
using namespace detail;
namespace {

std::string state_name(std::int64_t sequence) { return "experiment state " + std::to_string(sequence); }

}  // namespace

void ResultsWriter::Impl::create_state_tables(hid_t root) {
  states.create(root, kState, fixed_layout(kState));
  state_data = create_byte_dataset(root, kStateData, kStateChunk);
}

void ResultsWriter::Impl::open_state(hid_t root, ResumeInfo& info) {
  if (!legacy_states.empty()) info.state_sequence = legacy_states.rbegin()->first;
  if (H5_CHECK(H5Lexists(root, kState.name, H5P_DEFAULT)) == 0) {
    // A file from before /state. It gets one, but only once its newest state has passed its
    // checksum: a resume refused for a damaged state (latest_state) leaves the file as it was.
    if (!legacy_states.empty()) {
      try {
        (void)read_legacy_state(info.state_sequence);
      } catch (const StoreError&) {
        return;  // latest_state() says what is wrong
      }
    }
    create_state_tables(root);
    return;
  }
  states.open(root, kState);
  state_data = h5::Dataset{H5_CHECK(H5Dopen2(root, kStateData, H5P_DEFAULT))};
  state_bytes = extent_of(state_data.get());
  std::error_code ec;
  const RawTable rows = read_table(root, kState, std::filesystem::file_size(path, ec));
  const Layout& L = rows.layout;
  for (std::size_t i = 0; i < rows.rows; ++i) {
    const std::byte* row = rows.row(i);
    StateRow r{get_int(row, L[kStSequence]), get_f64(row, L[kStTime]), get_int(row, L[kStOffset]),
               get_int(row, L[kStSize]), static_cast<std::uint32_t>(get_int(row, L[kStCrc]))};
    // Rows a crash tore (past the bytes that reached the file) never held a state; the
    // newest intact one is the state committed with the newest rows.
    if (r.sequence < 1 || r.offset < 0 || r.size < 0 || static_cast<hsize_t>(r.offset + r.size) > state_bytes) continue;
    if (!newest_state || r.sequence > newest_state->sequence) newest_state = r;
  }
  if (newest_state) {
    state_committed = true;
    info.state_sequence = std::max(info.state_sequence, newest_state->sequence);
  }
  // Every byte but the newest state's is free: no other state is ever read again.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> used;
  if (newest_state)
    used.emplace_back(static_cast<std::uint64_t>(newest_state->offset), static_cast<std::uint64_t>(newest_state->size));
  state_free = FreeSpace::gaps(std::move(used), state_bytes);
}

std::string ResultsWriter::Impl::read_legacy_state(std::int64_t sequence) const {
  const auto it = legacy_states.find(sequence);
  if (it == legacy_states.end()) throw StoreError(path + ": no " + state_name(sequence));
  const CheckpointRow& r = it->second.row;
  const std::string bytes = with_context(path + ": " + state_name(sequence) + ": ", [&] {
    return read_bytes(checkpoint_data.get(), static_cast<hsize_t>(r.offset), static_cast<hsize_t>(r.size), kCheckpointData);
  });
  if (crc_of(bytes) != r.crc32c) throw StoreError(path + ": " + state_name(sequence) + " fails its checksum (the file is damaged)");
  return bytes;
}

void ResultsWriter::Impl::state_flushed() {
  if (newest_state) state_committed = true;
  for (const auto& [offset, size] : superseded_states) state_free.release(offset, size);
  superseded_states.clear();
}

void ResultsWriter::append_state(double time, std::string_view state) {
  const h5::Quiet quiet;
  Impl& m = *impl_;
  const std::int64_t sequence = ++state_sequence_;
  writing(m.path, [&] { with_context(m.path + ": " + state_name(sequence) + ": ", [&] {
    if (!m.states.ds)
      throw StoreError("cannot be stored: this file (from before /state) was opened with a damaged experiment state");
    const hsize_t size = state.size();
    const hsize_t offset = size == 0 ? 0 : m.state_free.allocate(size, m.state_bytes);
    try {
      if (size > 0) m.reserve(((offset + size - 1) / kStateChunk - offset / kStateChunk + 1) * kStateChunk);
      const hsize_t extent = std::max<hsize_t>(m.state_bytes, offset + size);
      write_bytes(m.state_data.get(), offset, state, extent);
      m.state_bytes = extent;
    } catch (...) {
      if (size > 0) m.state_free.release(offset, size);
      throw;
    }
    m.state_unflushed = true;
    const Impl::StateRow r{sequence, time, static_cast<std::int64_t>(offset), static_cast<std::int64_t>(size),
                           crc_of(state)};
    std::byte* row = m.states.add_row();
    const Layout& L = m.states.layout;
    put_int(row, L[kStSequence], r.sequence);
    put_f64(row, L[kStTime], r.time);
    put_int(row, L[kStOffset], r.offset);
    put_int(row, L[kStSize], r.size);
    put_int(row, L[kStCrc], r.crc32c);
    // The state this one replaces stays readable until this one is committed.
    if (m.newest_state && m.newest_state->size > 0)
      m.superseded_states.emplace_back(m.newest_state->offset, m.newest_state->size);
    m.newest_state = r;
  }); });
  // A resumed file from before /state: once a state of /state is in the file, its trial 0
  // rows are never read again (their dropped flags go out with the next flush).
  if (m.state_committed && !m.legacy_states.empty()) {
    for (auto& [seq, stored] : m.legacy_states) m.drop_row(stored);
    m.legacy_states.clear();
  }
}

std::optional<std::string> ResultsWriter::latest_state() const {
  const h5::Quiet quiet;
  const Impl& m = *impl_;
  if (!m.newest_state) {
    if (m.legacy_states.empty()) return std::nullopt;
    return m.read_legacy_state(m.legacy_states.rbegin()->first);
  }
  const Impl::StateRow& r = *m.newest_state;
  const std::string what = m.path + ": " + state_name(r.sequence);
  std::string bytes = with_context(what + ": ", [&] {
    return read_bytes(m.state_data.get(), static_cast<hsize_t>(r.offset), static_cast<hsize_t>(r.size), kStateData);
  });
  if (crc_of(bytes) != r.crc32c) throw StoreError(what + " fails its checksum (the file is damaged)");
  return bytes;
}

}  // namespace ranktune::io
