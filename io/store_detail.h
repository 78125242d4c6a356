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
class WriterLock {
 public:
  WriterLock() = default;
  /// Throws StoreError when another process holds the lock.
  explicit WriterLock(const std::string& path);
  /// The locked file, open for writing (-1 when not locked): ResultsWriter reserves disk
  /// space through it.
  int fd() const noexcept { return fd_.get(); }

 private:
  sys::UniqueFd fd_;  ///< the lock goes with it
};

// ------------------------------------------------------------------------ checkpoint_store.cc

void pack_checkpoint_row(const Layout& L, const CheckpointRow& r, std::byte* row);

}  // namespace ranktune::io::detail
