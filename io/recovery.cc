// A writer's claim on a results file and what its death leaves: the writer lock, the
// superblock's status flags and their repair with h5clear, and the checks that a file is
// fit to be resumed (read_for_resume, see io/store.h).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "io/store.h"
#include "io/store_detail.h"
#include "sys/run.h"

namespace ranktune::io {
using namespace detail;
namespace {

namespace fs = std::filesystem;

// Status flags of a version 2/3 superblock (HDF5's H5F_SUPER_*).
constexpr unsigned kSuperWriteAccess = 0x1, kSuperSwmrWriteAccess = 0x4;

// What a resumed writer builds on, and every file ranktune leaves at rest holds (see
// read_for_resume). Cheap: one pass over each table, and a sort of the result keys.
void check_at_rest(const ResultsFile& f) {
  const auto n = static_cast<search::TrialId>(f.trials.size());
  if (f.trials.size() != f.trial_rows) {
    std::size_t row = 0;
    while (row < f.trials.size() && f.trials[row].id == static_cast<search::TrialId>(row + 1)) ++row;
    throw StoreError("/trials row " + std::to_string(row) + " was never written (its trial_id is 0), though /trials has " +
                     std::to_string(f.trial_rows) + " rows: a run writes every trial's row when it creates the trial, "
                     "so its ids are 1.." + std::to_string(f.trial_rows) + "; the file is damaged");
  }
  struct Key {
    search::TrialId trial;
    int attempt;
    std::int64_t iteration;
    std::size_t row;
  };
  std::vector<Key> keys;
  keys.reserve(f.results.size());
  for (std::size_t i = 0; i < f.results.size(); ++i) {
    const ResultRow& r = f.results[i];
    const std::string where = "/results row " + std::to_string(i) + " ";
    if (r.trial < 1 || r.trial > n)
      throw StoreError(where + "is about trial " + std::to_string(r.trial) + ", which /trials does not hold (it has trials 1.." +
                       std::to_string(n) + ")" +
                       (r.trial == 0 && r.iteration == 0 ? ": a row of zeros, as a file cut short and filled up again has" : "") +
                       "; the file is damaged");
    if (r.attempt < 0 || r.iteration < 1)
      throw StoreError(where + "(trial " + std::to_string(r.trial) + ") has attempt " + std::to_string(r.attempt) +
                       " and iteration " + std::to_string(r.iteration) +
                       " (attempts count from 0, iterations from 1); the file is damaged");
    keys.push_back({r.trial, r.attempt, r.iteration, i});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::tie(a.trial, a.attempt, a.iteration, a.row) < std::tie(b.trial, b.attempt, b.iteration, b.row);
  });
  for (std::size_t i = 1; i < keys.size(); ++i) {
    const Key &a = keys[i - 1], &b = keys[i];
    if (a.trial == b.trial && a.attempt == b.attempt && a.iteration == b.iteration)
      throw StoreError("/results rows " + std::to_string(a.row) + " and " + std::to_string(b.row) + " both record trial " +
                       std::to_string(a.trial) + ", attempt " + std::to_string(a.attempt) + ", iteration " +
                       std::to_string(a.iteration) + " (a run records each once); the file is damaged");
  }
  for (std::size_t i = 0; i < f.checkpoints.size(); ++i) {
    const CheckpointRow& c = f.checkpoints[i];
    if (!c.dropped && (c.trial < 0 || c.trial > n))
      throw StoreError("/checkpoints row " + std::to_string(i) + " is a checkpoint of trial " + std::to_string(c.trial) +
                       ", which /trials does not hold (it has trials 1.." + std::to_string(n) + "); the file is damaged");
  }
}

}  // namespace

namespace detail {

WriterLock::WriterLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CLOEXEC)) {
  if (!fd_) throw StoreError(std::string("cannot open it to lock it: ") + std::strerror(errno));
  struct flock whole {};  // l_start = l_len = 0: the whole file
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  if (::fcntl(fd_.get(), F_OFD_SETLK, &whole) == 0) return;
  const int err = errno;
  fd_.reset();
  if (err == EAGAIN || err == EACCES)
    throw StoreError("another process is writing it (a run still going, or rank 0 of a killed mpirun that "
                     "has not exited yet): wait until that process has ended, then resume");
}

std::optional<unsigned> superblock_flags(const std::string& path) {
  unsigned char sb[12] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  const std::size_t n = std::fread(sb, 1, sizeof sb, f);
  std::fclose(f);
  if (n < sizeof sb || std::memcmp(sb, "\x89HDF\r\n\x1a\n", 8) != 0 || (sb[8] != 2 && sb[8] != 3)) return std::nullopt;
  return sb[11];
}

std::uint64_t superblock_eof(const std::string& path) {
  unsigned char sb[48] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 0;
  const std::size_t n = std::fread(sb, 1, sizeof sb, f);
  std::fclose(f);
  if (n < sizeof sb || std::memcmp(sb, "\x89HDF\r\n\x1a\n", 8) != 0 || (sb[8] != 2 && sb[8] != 3) ||
      sb[9] != 8)
    return 0;
  std::uint64_t base = 0, eof = 0;
  for (int i = 7; i >= 0; --i) {
    base = base << 8 | sb[12 + i];
    eof = eof << 8 | sb[28 + i];
  }
  return base + eof;
}

std::string mend_status_flags(const std::string& path) {
  // No shell: the path goes to h5clear as one argument, whatever characters it holds.
  sys::RunOptions options;
  options.merge_stderr = true;
  options.timeout_s = 120;  // it rewrites a superblock: a hang is a stuck file system
  const sys::RunResult r = sys::run_program({"h5clear", "-s", "--increment", path}, options);
  if (r.timed_out) return "h5clear did not finish within 120 s";
  if (r.status < 0) return r.err + " (h5clear comes with hdf5-tools)";
  if (r.status != 0) return "h5clear failed" + (r.out.empty() ? std::string() : ": " + r.out.substr(0, r.out.find('\n')));
  return {};
}

}  // namespace detail

bool marked_open_for_writing(const std::string& path) {
  const auto flags = superblock_flags(path);
  return flags && *flags != 0;
}

std::optional<bool> writer_alive(const std::string& path) {
  const sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct flock whole {};  // would a write lock of the whole file conflict with one held?
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  if (::fcntl(fd.get(), F_OFD_GETLK, &whole) != 0) return std::nullopt;
  return whole.l_type != F_UNLCK;
}

bool writer_died(const std::string& path) {
  // Mark, then no lock, then the mark still there: a writer that closed the file cleared the
  // mark before it let the lock go, so it was not a clean close. The lock is probed twice,
  // apart: a new writer makes the file (its mark) a moment before it takes the lock.
  if (!marked_open_for_writing(path)) return false;
  for (int probe = 0; probe < 2; ++probe) {
    if (probe > 0) ::usleep(200 * 1000);
    if (writer_alive(path).value_or(true)) return false;
  }
  return marked_open_for_writing(path);
}

std::optional<ResultsFile> read_for_resume(const std::string& path) {
  const h5::Quiet quiet;
  std::error_code ec;
  if (fs::exists(path, ec) && fs::is_regular_file(path, ec)) {
    // First, so that a live run's file is refused for what it is, not for a row in flight.
    try {
      const WriterLock probe(path);
    } catch (const StoreError& e) {
      throw StoreError(path + ": cannot resume: " + e.what());
    }
    if (const auto flags = superblock_flags(path);
        flags && (*flags & kSuperWriteAccess) != 0 && (*flags & kSuperSwmrWriteAccess) == 0) {
      // Its writer died between opening it and starting SWMR writing, when it had written
      // nothing yet (ResultsWriter allocates no space before H5Fstart_swmr_write): so its
      // end-of-file mark is exact, and a shorter file was cut short.
      const std::uint64_t size = fs::file_size(path, ec), expected = superblock_eof(path);
      if (expected > size)
        throw StoreError(path + ": cannot resume: truncated: the file has " + std::to_string(size) + " bytes of the " +
                         std::to_string(expected) + " its header records (a copy cut short, or a full disk); copy it "
                         "again from the original");
      return std::nullopt;
    }
  }
  ResultsFile file = ResultsFile::read(path);
  try {
    check_at_rest(file);
  } catch (const StoreError& e) {
    throw StoreError(path + ": cannot resume: " + e.what() + "; restore it from a copy, or start afresh with --results NEW");
  }
  return file;
}

}  // namespace ranktune::io
