#pragma once
/// What the results store's translation units share (io/results_reader.cc, recovery.cc,
/// results_writer.cc, checkpoint_store.cc, compact.cc, evaluations.cc): the schema's row
/// forms, opening a file to read it, and a writer's claim on a file. Internal to io/: other
/// layers go through io/store.h and io/evaluations.h.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/h5_table.h"
#include "io/schema.h"
#include "io/store.h"
#include "sys/fd.h"

namespace ranktune::io::detail {

// ------------------------------------------------------------------------ schema.cc

Kind kind_of(search::ValueType t);
/// Throws StoreError when a name in `names` is empty, repeated, or one of spec's columns
/// (compound member names must be unique; a parameter called "best" or a metric called
/// "time" would otherwise fail deep inside HDF5 with a cryptic message).
void check_extra_names(const TableSpec& spec, const std::vector<std::string>& names, const char* what);
/// The rows of /trials and /results for `schema`, of /checkpoints (schema v2).
Layout trial_layout(const StoreSchema& schema);
Layout result_layout(const StoreSchema& schema);
Layout checkpoint_layout();
/// The hyperparameter columns of a /trials layout, the metric columns of a /results layout.
std::vector<ParamColumn> params_of(const Layout& trials);
std::vector<std::string> metrics_of(const Layout& results);
/// The objectives of a /trials layout: the METRIC of each objective:METRIC column, in order.
std::vector<std::string> objectives_of(const Layout& trials);
/// "checkpoint of trial T at iteration I", or for trial 0 of a file from before /state,
/// "experiment state I".
std::string checkpoint_name(search::TrialId trial, std::int64_t iteration);

// ------------------------------------------------------------------------ results_reader.cc

/// Opens a results file read-only (SWMR_READ first, so a running writer does not stop it),
/// with few metadata retries. Throws StoreError with a one-line reason.
h5::File open_for_reading(const std::string& path, std::uintmax_t file_size);
std::vector<CheckpointRow> read_checkpoint_rows(const RawTable& t);

// ------------------------------------------------------------------------ recovery.cc

/// The file consistency flags of a version 2/3 superblock (non-zero while a writer holds
/// the file, or after its writer died), or nullopt when the first bytes are not one.
std::optional<unsigned> superblock_flags(const std::string& path);
/// The end-of-file address a version 2/3 superblock records, or 0 when the first bytes are
/// not one. Only used to word an error HDF5 already found.
std::uint64_t superblock_eof(const std::string& path);
/// Clears the status flags that a writer killed while it held the file leaves in the
/// superblock, with HDF5's own tool: `--increment` also moves the end-of-allocation mark past
/// the data the writer flushed, which a bare flag reset would cut off. Returns why not, or "".
/// Only for a file whose WriterLock the caller holds: never clear a live writer's flags.
std::string mend_status_flags(const std::string& path);

/// Held by a writer for as long as it has the file open: an open-file-description lock
/// (fcntl F_OFD_SETLK) on the results file, which the kernel releases when the process ends,
/// kill -9 included. HDF5's own flock() does not keep a second writer out of a file in SWMR
/// mode, and the ranks of a SIGKILLed mpirun go on running (rank 0 writing) for about a
/// second: a resume started then would mend and write the file under the old writer (the
/// kill loop test saw live checkpoints fail their CRC, lost rows and a lost searcher state).
/// Without fcntl locks (ENOLCK, EOPNOTSUPP on some network file systems) it goes unlocked.
///
/// It is also where every writer of an existing results file (a resume, `eval`) checks whose
/// file it is (README, "Threat model"): the file is opened under sys/safe_fs.h's rules (the
/// last component not through a link, a regular file of this user with one link, and no
/// group or other write), so a file another user left, or a link to one, is refused
/// (UnsafeFileError) before HDF5 opens it by its path. same_file() then checks that the file
/// HDF5 opened is this one.
class WriterLock {
 public:
  WriterLock() = default;
  /// Throws UnsafeFileError for a file that breaks the rules above, StoreError when another
  /// process holds the lock (saying whether a writer or a reader, see refuse_readers), and
  /// StoreError when it cannot be opened. `created`: the file was made just now (O_EXCL,
  /// by HDF5): its group and other write bits, which a umask such as 002 leaves, are cleared.
  explicit WriterLock(const std::string& path, bool created = false);
  /// The locked file, open for writing: ResultsWriter reserves disk space through it.
  int fd() const noexcept { return fd_.get(); }
  /// Throws FileBusyError when another program holds an HDF5 file lock (flock) on the file:
  /// HDF5 then refuses to open it for writing (and h5clear to mend it). Which program, and
  /// what to do (close it, or read with h5py's locking=False), is in the message. Call it
  /// right before opening the file with HDF5, never while HDF5 holds it open.
  void refuse_readers() const;
  /// Throws UnsafeFileError unless the HDF5 file `file`, opened by path, is the file this
  /// lock holds (the same device and inode): the name was not swapped in between.
  void same_file(hid_t file) const;

 private:
  std::string path_;
  sys::UniqueFd fd_;  ///< the lock goes with it
};

// ------------------------------------------------------------------------ checkpoint_store.cc

void pack_checkpoint_row(const Layout& L, const CheckpointRow& r, std::byte* row);

}  // namespace ranktune::io::detail
