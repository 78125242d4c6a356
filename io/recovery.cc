// A writer's claim on a results file and what its death leaves: the writer lock, the
// superblock's status flags and their repair with h5clear, and the checks that a file is
// fit to be resumed (read_for_resume, see io/store.h).
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "io/store.h"
#include "io/store_detail.h"
#include "sys/run.h"
#include "sys/safe_fs.h"

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

namespace {

// One lock on a file, as /proc/locks lists it.
struct ListedLock {
  std::string kind;  // FLOCK (flock(2): HDF5's file locks), POSIX, OFDLCK
  bool write = false;
  pid_t pid = -1;    // -1 for OFD locks, whose owner is an open file, not a process
};

// The locks on the file (dev, ino) that the kernel lists in /proc/locks. Lines with "->" are
// waiters, not holders. A process of another pid namespace shows as pid 0.
std::vector<ListedLock> listed_locks(dev_t dev, ino_t ino) {
  std::vector<ListedLock> out;
  std::ifstream in("/proc/locks");
  char want[64];
  std::snprintf(want, sizeof want, "%02x:%02x:%llu", major(dev), minor(dev), static_cast<unsigned long long>(ino));
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string number, kind, advisory, type, pid, file;
    if (!(words >> number >> kind >> advisory >> type >> pid >> file) || kind == "->" || file != want) continue;
    ListedLock l;
    l.kind = kind;
    l.write = type == "WRITE";
    try {
      l.pid = static_cast<pid_t>(std::stol(pid));
    } catch (const std::exception&) {
      l.pid = -1;
    }
    out.push_back(l);
  }
  return out;
}

// "pid 123 (python3, uid 1001 ranktune-o-7)", from /proc; the uid into `uid` when known.
std::string describe_process(pid_t pid, std::optional<uid_t>& uid) {
  std::string comm;
  if (std::ifstream f("/proc/" + std::to_string(pid) + "/comm"); f) std::getline(f, comm);
  if (std::ifstream f("/proc/" + std::to_string(pid) + "/status"); f) {
    for (std::string line; std::getline(f, line);) {
      unsigned long real = 0;
      if (std::sscanf(line.c_str(), "Uid: %lu", &real) == 1) {
        uid = static_cast<uid_t>(real);
        break;
      }
    }
  }
  std::string out = "pid " + std::to_string(pid);
  std::string details = comm;
  if (uid) {
    details += std::string(details.empty() ? "" : ", ") + "uid " + std::to_string(*uid);
    if (const passwd* pw = ::getpwuid(*uid); pw != nullptr && pw->pw_name != nullptr)
      details += std::string(" ") + pw->pw_name;
  }
  return details.empty() ? out : out + " (" + details + ")";
}

// How another program holds the file, keeping writers out.
enum class Hold {
  HdfReader,  // HDF5's file lock (flock, shared): a reader, SWMR or not (HDF5 1.10 takes it for both)
  HdfWriter,  // HDF5's file lock, exclusive: a writer that is not ranktune's (h5py "r+")
  ReadLock,   // an fcntl read lock (lockf, or an HDF5 reader's flock as NFS turns it into one)
};

// Why a writer cannot have the file `path` while `holders` hold it as `hold`: who, where
// known, and what to do.
std::string busy_message(const std::string& path, std::vector<pid_t> holders, Hold hold) {
  std::sort(holders.begin(), holders.end());
  holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
  std::string who;
  bool others = false;  // a holder of another user
  for (const pid_t pid : holders) {
    if (pid <= 0) continue;
    std::optional<uid_t> uid;
    who += (who.empty() ? "" : ", ") + describe_process(pid, uid);
    others = others || (uid && *uid != ::geteuid());
  }
  if (who.empty())
    who = "which process is not known here (another machine that mounts the file, or another container): `fuser -v " +
          path + "` on each names it";
  if (hold == Hold::HdfWriter)
    return "another program has it open for writing with HDF5 (" + who + "), and while it does HDF5 lets no other "
           "writer in: close it there, then try again";
  std::string what = hold == Hold::ReadLock
                         ? "another program holds a read lock on it (" + who + "), which keeps every writer out: "
                         : "h5py or another program has it open for reading (" + who +
                               "), and the HDF5 file lock that it holds keeps every writer out: ";
  if (others)
    return what + "that is another user's program: ask them to close the file, then try again (`chmod go-r " + path +
           "` keeps other users from opening it)";
  if (hold == Hold::ReadLock) return what + "end it or let it unlock the file, then try again";
  return what + "close it (h5py: f.close(); ranktune.results: r.close()), then try again. To read a results file while "
                "runs may resume it, open it without that lock: h5py.File(path, \"r\", locking=False) (h5py 3.5 or "
                "later; SWMR alone does not do it), or HDF5_USE_FILE_LOCKING=FALSE in the reader's environment";
}

// What sys::open_file says, as the error a writer of a results file throws.
[[noreturn]] void refuse_to_open(const std::string& path, const sys::FsError& e) {
  if (e.error() == 0) throw UnsafeFileError(e.what());  // a refusal on safe_fs.h's rules
  struct stat st {};
  if ((e.error() == EACCES || e.error() == EPERM) && ::lstat(path.c_str(), &st) == 0 && st.st_uid != ::geteuid())
    throw UnsafeFileError(path + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                          std::to_string(::geteuid()) + "): ranktune writes only a results file of its own user; "
                          "use another results path");
  throw StoreError(std::string("cannot open it for writing: ") + std::strerror(e.error()));
}

// Opens the results file for writing under sys/safe_fs.h's rules, and no group or other
// write: whoever may write the file may change what the run builds on (README, "Threat
// model"). A file made just now (`created`) is ours (HDF5 made it with O_EXCL), whatever
// its mode: a umask of 002 may have left it group-writable.
sys::UniqueFd open_for_writing(const std::string& path, bool created) {
  sys::OpenOptions o;
  o.access = O_RDWR;
  o.owned = true;
  o.forbidden_bits = created ? 0 : S_IWGRP | S_IWOTH;
  try {
    return sys::open_file(path, o);
  } catch (const sys::FsError& e) {
    refuse_to_open(path, e);
  }
}

}  // namespace

WriterLock::WriterLock(const std::string& path, bool created) : path_(path), fd_(open_for_writing(path, created)) {
  struct stat st {};
  if (created && ::fstat(fd_.get(), &st) == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 &&
      ::fchmod(fd_.get(), st.st_mode & 07777 & ~(S_IWGRP | S_IWOTH)) != 0)
    throw StoreError(std::string("cannot chmod it go-w: ") + std::strerror(errno));
  struct flock whole {};  // l_start = l_len = 0: the whole file
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  if (::fcntl(fd_.get(), F_OFD_SETLK, &whole) == 0) return;
  const int err = errno;
  if (err != EAGAIN && err != EACCES) return;  // no fcntl locks here: it goes unlocked
  // Someone holds a lock: a ranktune writer holds a write lock (F_WRLCK) for as long as it
  // runs; a read lock is a reader's (an HDF5 reader's flock, which NFS turns into one).
  struct flock held {};
  held.l_type = F_WRLCK;
  held.l_whence = SEEK_SET;
  if (::fcntl(fd_.get(), F_OFD_GETLK, &held) == 0 && held.l_type == F_RDLCK) {
    std::vector<pid_t> pids;
    if (held.l_pid > 0) pids.push_back(held.l_pid);
    if (::fstat(fd_.get(), &st) == 0)
      for (const ListedLock& l : listed_locks(st.st_dev, st.st_ino))
        if (!l.write && l.kind != "FLOCK") pids.push_back(l.pid);  // a local flock is no fcntl lock
    throw FileBusyError(busy_message(path, pids, Hold::ReadLock));
  }
  throw StoreError("another process is writing it (a run still going, or rank 0 of a killed mpirun that has not "
                   "exited yet): wait until that process has ended, then try again");
}

void WriterLock::refuse_readers() const {
  if (!fd_) return;
  // HDF5 takes flock(LOCK_SH) for a reader and flock(LOCK_EX) for a writer, and holds it
  // while the file is open (a reader opened for SWMR too, in HDF5 1.10; an SWMR writer lets
  // go once it writes SWMR, so readers may join a running experiment). Our own lock is an fcntl one,
  // which flock does not see, so a free writer lock says nothing about these: try for an
  // exclusive flock (on our own descriptor, let go at once, before HDF5 takes its own).
  if (::flock(fd_.get(), LOCK_EX | LOCK_NB) == 0) {
    ::flock(fd_.get(), LOCK_UN);
    return;
  }
  if (errno != EWOULDBLOCK) return;  // no flock here (ENOLCK): HDF5 will say what it finds
  struct stat st {};
  std::vector<pid_t> pids;
  bool writing = false;
  if (::fstat(fd_.get(), &st) == 0)
    for (const ListedLock& l : listed_locks(st.st_dev, st.st_ino))
      if (l.kind == "FLOCK") {
        pids.push_back(l.pid);
        writing = writing || l.write;
      }
  throw FileBusyError(busy_message(path_, pids, writing ? Hold::HdfWriter : Hold::HdfReader));
}

void WriterLock::same_file(hid_t file) const {
  // What remains after this (README, "Threat model"): HDF5 opens by path, so a name swapped
  // between our open and HDF5's is found here, after HDF5 opened the other file (a writer's
  // open marks its superblock). In a sticky folder (/tmp, /scratch: mode 1777) no other
  // user can rename or remove our file, so that needs a folder others may write without
  // the sticky bit, and a file of ours to swap in, since both opens refuse another's.
  void* handle = nullptr;
  struct stat ours {}, theirs {};
  if (!fd_ || H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || handle == nullptr) return;
  if (::fstat(fd_.get(), &ours) != 0 || ::fstat(*static_cast<int*>(handle), &theirs) != 0) return;
  if (ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino)
    throw UnsafeFileError(path_ + " was replaced by another file while it was being opened (a rename over it, by "
                          "another process): ranktune did not write into it; find out who did, then try again");
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

bool results_file_exists(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    throw StoreError(path + ": cannot look at it: " + std::strerror(errno));
  }
  if (!S_ISLNK(st.st_mode)) return true;
  std::error_code ec;
  const fs::path target = fs::read_symlink(path, ec);
  const bool dangling = !fs::exists(path, ec);
  throw UnsafeFileError(path + " is a symbolic link" +
                        (target.empty() ? std::string() : " to " + target.string()) +
                        (dangling ? " (which does not exist)" : "") +
                        ": ranktune writes nothing through a link (another user may have planted it); remove it, or "
                        "give the file's own path with --results");
}

void refuse_unsafe_results(const std::string& path) {
  try {
    if (!results_file_exists(path)) return;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) (void)open_for_writing(path, false);
  } catch (const StoreError&) {
    // Not a refusal of this kind: the writer's own open says it again, with its context.
  }
}

WriterCheck writer_lock_state(const std::string& path) {
  sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return WriterCheck::Unknown;
  struct flock probe {};
  probe.l_type = F_WRLCK;  // what conflicts with a write lock: any lock
  probe.l_whence = SEEK_SET;
  if (::fcntl(fd.get(), F_OFD_GETLK, &probe) != 0) return WriterCheck::Unknown;
  // A writer holds a write lock; a read lock (a reader's) cannot be held beside one.
  return probe.l_type == F_WRLCK ? WriterCheck::Holding : WriterCheck::Free;
}

bool on_network_file_system(const std::string& path) {
  struct statfs st {};
  if (::statfs(path.c_str(), &st) != 0) return true;  // unknown: assume the cautious answer
  switch (static_cast<unsigned long>(st.f_type)) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x0BD00BD0:  // Lustre
    case 0x47504653:  // GPFS
    case 0x00C36400:  // Ceph
    case 0x19830326:  // BeeGFS
    case 0xAAD7AAEA:  // PanFS
    case 0x5346414F:  // AFS
    case 0x01021997:  // 9P
    case 0x65735546:  // FUSE (sshfs and others)
      return true;
    default:
      return false;
  }
}

bool marked_open_for_writing(const std::string& path) {
  const auto flags = superblock_flags(path);
  return flags && *flags != 0;
}

bool writer_died(const std::string& path) {
  // Mark, then no lock, then the mark still there: a writer that closed the file cleared the
  // mark before it let the lock go, so it was not a clean close. The lock is probed twice,
  // apart: a new writer makes the file (its mark) a moment before it takes the lock.
  if (!marked_open_for_writing(path)) return false;
  for (int probe = 0; probe < 2; ++probe) {
    if (probe > 0) ::usleep(200 * 1000);
    if (writer_lock_state(path) != WriterCheck::Free) return false;
  }
  return marked_open_for_writing(path);
}

std::optional<ResultsFile> read_for_resume(const std::string& path) {
  const h5::Quiet quiet;
  std::error_code ec;
  struct stat st {};
  if (results_file_exists(path) && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    // First, so that a live run's file is refused for what it is, not for a row in flight,
    // and another user's file, or one they may change, before anything of it is believed.
    try {
      const WriterLock probe(path);
      probe.refuse_readers();
    } catch (const FileBusyError& e) {
      throw FileBusyError(path + ": cannot resume: " + e.what());
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
