// `ranktune compact`: rewrites a results file without the bytes of dropped checkpoints, into
// a temporary file that then replaces it by rename(2) (see compact_results in io/store.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/store.h"
#include "io/store_detail.h"
#include "sys/fd.h"

namespace ranktune::io {
using namespace detail;
namespace {

namespace fs = std::filesystem;

// Copies every attribute of `from` to `to` byte for byte, in its own file type.
void copy_attributes(hid_t from, hid_t to) {
  for (const std::string& name : attribute_names(from)) {
    h5::Attribute src{H5_CHECK(H5Aopen(from, name.c_str(), H5P_DEFAULT))};
    h5::Datatype type{H5_CHECK(H5Aget_type(src.get()))};
    h5::Dataspace space{H5_CHECK(H5Aget_space(src.get()))};
    const auto points = H5_CHECK(H5Sget_simple_extent_npoints(space.get()));
    std::vector<std::byte> buffer(H5Tget_size(type.get()) * static_cast<std::size_t>(points));
    H5_CHECK(H5Aread(src.get(), type.get(), buffer.data()));
    h5::Attribute dst{H5_CHECK(H5Acreate2(to, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT))};
    H5_CHECK(H5Awrite(dst.get(), type.get(), buffer.data()));
  }
}

// Removes a file on scope exit unless release()d: a failed compact leaves nothing behind.
class RemoveOnFailure {
 public:
  explicit RemoveOnFailure(fs::path path) : path_(std::move(path)) {}
  RemoveOnFailure(const RemoveOnFailure&) = delete;
  RemoveOnFailure& operator=(const RemoveOnFailure&) = delete;
  ~RemoveOnFailure() {
    std::error_code ec;
    if (!path_.empty()) fs::remove(path_, ec);
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

// Writes the compacted copy of `src` to `tmp`; the caller renames it into place.
CompactSummary write_compacted(const ResultsFile& src, const std::string& tmp) {
  CompactSummary summary;
  std::error_code ec;
  const h5::File in = open_for_reading(src.path, fs::file_size(src.path, ec));
  h5::PropList fapl{H5_CHECK(H5Pcreate(H5P_FILE_ACCESS))};
  // The latest format, as the writer uses: a resumed run needs it for SWMR.
  H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
  const h5::File out{H5_CHECK(H5Fcreate(tmp.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()))};
  copy_attributes(in.get(), out.get());
  {
    // The copy has the dropped flags whatever the source's schema was (2), and its trial
    // texts where the source has them: in /trial_texts (3), or in /trials (2).
    h5::Attribute version{H5_CHECK(H5Aopen(out.get(), "schema_version", H5P_DEFAULT))};
    const int v = H5_CHECK(H5Lexists(in.get(), kTrialTexts.name, H5P_DEFAULT)) > 0 ? kSchemaVersion : 2;
    H5_CHECK(H5Awrite(version.get(), H5T_NATIVE_INT, &v));
  }
  for (const std::string& name : link_names(in.get())) {
    if (name == kCheckpoints.name || name == kCheckpointData) continue;
    H5_CHECK(H5Ocopy(in.get(), name.c_str(), out.get(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  }
  h5::Dataset data_in;
  if (H5_CHECK(H5Lexists(in.get(), kCheckpointData, H5P_DEFAULT)) > 0)
    data_in = h5::Dataset{H5_CHECK(H5Dopen2(in.get(), kCheckpointData, H5P_DEFAULT))};
  Table rows;
  rows.create(out.get(), kCheckpoints, checkpoint_layout());
  // Chunks are allocated whole: a few small checkpoints in 1 MiB chunks would keep the
  // compacted file as large as before, so small data gets smaller chunks (64 KiB at least).
  hsize_t live_bytes = 0;
  for (const CheckpointRow& r : src.checkpoints)
    if (!r.dropped && r.size > 0) live_bytes += static_cast<hsize_t>(r.size);
  hsize_t chunk = 64 * 1024;
  while (chunk < live_bytes && chunk < kCheckpointChunk) chunk *= 2;
  const h5::Dataset data_out = create_byte_dataset(out.get(), kCheckpointData, chunk);
  hsize_t cursor = 0;
  for (CheckpointRow r : src.checkpoints) {
    bool live = !r.dropped && r.offset >= 0 && r.size >= 0 && data_in;
    if (live) {
      try {
        const std::string bytes =
            read_bytes(data_in.get(), static_cast<hsize_t>(r.offset), static_cast<hsize_t>(r.size), kCheckpointData);
        if (crc_of(bytes) != r.crc32c) throw StoreError("checksum mismatch");
        write_bytes(data_out.get(), cursor, bytes, cursor + bytes.size());
        r.offset = static_cast<std::int64_t>(cursor);
        cursor += bytes.size();
        ++summary.live;
      } catch (const StoreError&) {
        // A damaged checkpoint could never be restored; copying its bytes would only
        // move the damage. Its row stays, dropped, like any other lost checkpoint.
        live = false;
        ++summary.damaged;
      }
    } else {
      ++summary.dropped;
    }
    if (!live) {
      r.dropped = true;
      r.offset = -1;  // its bytes are not in this file
    }
    pack_checkpoint_row(rows.layout, r, rows.add_row());
  }
  rows.append();
  H5_CHECK(H5Fflush(out.get(), H5F_SCOPE_GLOBAL));
  return summary;
}

struct FileStamp {
  std::uintmax_t size = 0;
  fs::file_time_type mtime{};
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp(const std::string& path) {
  std::error_code ec;
  return {fs::file_size(path, ec), fs::last_write_time(path, ec)};
}

}  // namespace

CompactSummary compact_results(const std::string& in, const std::string& out) {
  const h5::Quiet quiet;
  // In place, it replaces the file: only the user's own, not reached through a link (README,
  // "Threat model"); a copy (-o) may be made of any file the user may read.
  if (out.empty()) refuse_unsafe_results(in);
  const ResultsFile src = ResultsFile::read(in);  // foreign, truncated, damaged: refused here
  if (const auto flags = superblock_flags(in); flags && *flags != 0)
    throw StoreError(in + ": a writer holds it (its HDF5 superblock says it is open for writing): a run is "
                     "writing it, or one was killed. Wait for the run to end, or resume the killed run "
                     "(`ranktune run --resume` mends the file), then compact it");
  const fs::path target = out.empty() ? fs::path(in) : fs::path(out);
  std::error_code ec;
  if (!out.empty() && fs::exists(target, ec))
    throw StoreError(out + ": already exists (refusing to overwrite it; choose another -o path)");
  const FileStamp before = stamp(in);
  std::string tmp_name = ".";  // appended, not "." + ...: GCC 12 warns falsely (-Wrestrict) on that
  tmp_name += target.filename().string() + ".compact-" + std::to_string(::getpid()) + ".tmp";
  const fs::path tmp = target.parent_path() / tmp_name;
  RemoveOnFailure cleanup(tmp);
  CompactSummary summary;
  try {
    summary = write_compacted(src, tmp.string());
  } catch (const std::exception& e) {
    throw StoreError(in + ": cannot compact into " + tmp.string() + ": " + e.what());
  }
  // rename(2) is atomic, but only durable once the new file's bytes are on disk. The copy
  // loses the group and other write bits a umask such as 002 gives, as a new results file
  // does: a resume refuses a file that others may change.
  if (const sys::UniqueFd fd(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC)); fd) {
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
      (void)::fchmod(fd.get(), st.st_mode & 07777 & ~(S_IWGRP | S_IWOTH));
    if (::fsync(fd.get()) != 0) throw StoreError(tmp.string() + ": fsync failed: " + std::strerror(errno));
  }
  if (!(stamp(in) == before))
    throw StoreError(in + ": changed while it was being compacted (did a run start writing it?); nothing was "
                     "replaced. Compact it again once the run has ended");
  if (::rename(tmp.c_str(), target.c_str()) != 0)
    throw StoreError(target.string() + ": cannot replace it with the compacted copy: " + std::strerror(errno));
  cleanup.release();
  summary.bytes_before = before.size;
  summary.bytes_after = fs::file_size(target, ec);
  return summary;
}

}  // namespace ranktune::io
