// Self-launch under mpirun (mpi/launch.h): the launcher's environment, the mpirun command,
// signals passed on, the exit code handed back, and ranks that end with their parent.
#include "mpi/launch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "experiment/exit_codes.h"
#include "mpi/gpu.h"
#include "mpi/trace.h"
#include "sys/fd.h"
#include "sys/process.h"
#include "sys/safe_fs.h"
#include "sys/temp_dir.h"

namespace ranktune::mpi {

bool under_mpi_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

int launcher_world_size() {
  int size = 1;
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* s = std::getenv(v); s != nullptr) size = std::max(size, std::atoi(s));
  }
  // An srun step's tasks; the batch shell of an sbatch job has no SLURM_STEP_ID, so a
  // command in the job script itself is one process whatever the allocation holds.
  if (std::getenv("SLURM_STEP_ID") != nullptr) {
    if (const char* s = std::getenv("SLURM_STEP_NUM_TASKS"); s != nullptr) size = std::max(size, std::atoi(s));
  }
  return size;
}

void require_one_process(const std::string& command, const std::string& repeat) {
  if (const int n = launcher_world_size(); n > 1)
    throw std::invalid_argument(command + " runs as one process, and this is one of " + std::to_string(n) +
                                " that a launcher started (each would " + repeat +
                                "): run it without mpirun or srun, or with one task");
}

int default_worker_count() {
  const int gpus = cuda_device_count();
  const int n = gpus > 0 ? gpus : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(2, n);
}

namespace {

std::string trimmed(std::string v) {
  v.erase(0, v.find_first_not_of(" \t\"'"));
  v.erase(v.find_last_not_of(" \t\r\"'") + 1);
  return v;
}

// The last "NAME = VALUE" line of an MCA parameter file (spaces allowed), if any.
std::optional<std::string> file_value(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  std::optional<std::string> value;
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line.compare(first, name.size(), name) != 0) continue;
    const auto eq = line.find_first_not_of(" \t", first + name.size());
    if (eq != std::string::npos && line[eq] == '=') value = trimmed(line.substr(eq + 1));
  }
  return value;
}

// The MCA parameter's value as Open MPI would take it: the environment, else the user's
// file, else the site's.
std::optional<std::string> mca_value(const std::string& name) {
  if (const char* v = std::getenv(("OMPI_MCA_" + name).c_str())) return trimmed(v);
  if (const char* home = std::getenv("HOME"))
    if (auto v = file_value(std::string(home) + "/.openmpi/mca-params.conf", name)) return v;
  return file_value("/etc/openmpi/openmpi-mca-params.conf", name);
}

// Whether a component list picks the components: "ucx" or "ob1,ucx" does; an exclusion
// ("^ucx", Debian's default) leaves the choice to Open MPI, and so to us, unless it excludes
// one of the components we would take (`ours`).
bool picks(const std::optional<std::string>& value, std::initializer_list<const char*> ours) {
  if (!value || value->empty()) return false;
  if ((*value)[0] != '^') return true;
  const std::string excluded = "," + value->substr(1) + ",";
  for (const char* c : ours)
    if (excluded.find("," + std::string(c) + ",") != std::string::npos) return true;
  return false;
}

}  // namespace

LaunchSite launch_site() {
  LaunchSite site;
  const auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0';
  };
  // An sbatch shell's mpirun spreads the ranks over the job's nodes.
  for (const char* nodes : {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"})
    if (const char* n = std::getenv(nodes); n != nullptr && std::atoi(n) > 1) site.one_host = false;
  if (set("PBS_NODEFILE") || set("OMPI_MCA_orte_default_hostfile") || set("OMPI_MCA_rmaps_base_hostfile"))
    site.one_host = false;
  site.pml_chosen = picks(mca_value("pml"), {"ob1"});
  site.btl_chosen = picks(mca_value("btl"), {"self", "vader"});
  return site;
}

std::vector<std::string> mpirun_command(int workers, const std::vector<std::string>& args, const LaunchSite& site) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(workers + 1), "--bind-to", "none"};
  if (workers + 1 > static_cast<int>(std::thread::hardware_concurrency())) {
    argv.push_back("--oversubscribe");
  }
  if (site.one_host && !site.pml_chosen) argv.insert(argv.end(), {"--mca", "pml", "ob1"});
  if (site.one_host && !site.btl_chosen) argv.insert(argv.end(), {"--mca", "btl", "self,vader"});
  argv.push_back(ec ? "ranktune" : self.string());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

namespace {

pid_t g_mpirun = -1;

extern "C" void forward_signal(int sig) {
  if (g_mpirun > 0) kill(g_mpirun, sig);
}

constexpr const char* kRankFilePrefix = "rank-";  // RUN_FOLDER/rank-N holds rank N's pid

// The ranks of a self-launched job on this host, as they register (register_rank), watched
// while mpirun runs. mpirun's exit code says that a process was killed, not which: when a
// rank dies, mpirun ends the others, and only the order of their ends tells a killed worker
// from a killed rank 0.
class RankWatch {
 public:
  RankWatch(std::string folder, int ranks) : folder_(std::move(folder)), expected_(ranks) {}

  /// Ranks register as they start, before MPI_Init; those on other hosts never do. Past
  /// this, the launcher stops looking for more and sleeps until something exits.
  static constexpr auto kRegistration = std::chrono::seconds(60);

  /// Sleeps until mpirun (`mpirun_fd`, its pidfd; -1: none) or a watched rank exits, or for
  /// at most 100 ms while ranks may still register; notes the ranks that exited.
  void wait(int mpirun_fd) {
    scan();
    std::vector<pollfd> fds;
    if (mpirun_fd >= 0) fds.push_back({mpirun_fd, POLLIN, 0});
    std::vector<std::size_t> index;  // ranks_ by fds entry, after mpirun's
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i].gone || !ranks_[i].fd) continue;
      fds.push_back({ranks_[i].fd.get(), POLLIN, 0});
      index.push_back(i);
    }
    const bool looking = static_cast<int>(ranks_.size()) < expected_ && std::chrono::steady_clock::now() < until_;
    const int timeout = !looking && mpirun_fd >= 0 ? -1 : 100;
    if (::poll(fds.data(), fds.size(), timeout) <= 0) return;  // EINTR: a forwarded signal
    const std::size_t first = mpirun_fd >= 0 ? 1 : 0;
    std::vector<std::size_t> now_gone;
    for (std::size_t k = first; k < fds.size(); ++k)
      if (fds[k].revents != 0) now_gone.push_back(index[k - first]);
    for (const std::size_t i : now_gone) ranks_[i].gone = true;
    // The first ranks seen gone, unless mpirun went in the same wake (it ended them all).
    const bool mpirun_gone = mpirun_fd >= 0 && fds[0].revents != 0;
    if (first_.empty() && !mpirun_gone) first_ = now_gone;
  }

  /// "rank 1 (a worker, pid 123)": the ranks that ended first, while mpirun still ran; ""
  /// when unknown (none did, or some rank of the job never registered here: it runs on
  /// another host, where it may have been the first).
  std::string first_text() const {
    if (first_.empty() || static_cast<int>(ranks_.size()) < expected_) return "";
    std::string out;
    for (const std::size_t i : first_) {
      const Rank& r = ranks_[i];
      out += (out.empty() ? "" : " and ") + std::string("rank ") + std::to_string(r.rank) +
             (r.rank == 0 ? " (the driver, pid " : " (a worker, pid ") + std::to_string(r.pid) + ")";
    }
    return out;
  }

 private:
  struct Rank {
    int rank = -1;
    pid_t pid = -1;
    sys::UniqueFd fd;  ///< a pidfd: readable once it has exited
    bool gone = false;
  };

  // Takes in the rank files written since the last look (the folder is ours, mode 0700).
  void scan() {
    if (static_cast<int>(ranks_.size()) >= expected_ || std::chrono::steady_clock::now() >= until_) return;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(folder_, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(kRankFilePrefix, 0) != 0) continue;
      const int rank = std::atoi(name.c_str() + std::strlen(kRankFilePrefix));
      if (std::any_of(ranks_.begin(), ranks_.end(), [&](const Rank& r) { return r.rank == rank; })) continue;
      long pid = 0;
      if (std::FILE* f = std::fopen(entry.path().c_str(), "r")) {
        if (std::fscanf(f, "%ld", &pid) != 1) pid = 0;
        std::fclose(f);
      }
      if (pid <= 1) continue;  // still being written: the next look takes it
      Rank r;
      r.rank = rank;
      r.pid = static_cast<pid_t>(pid);
      r.fd = sys::open_pidfd(r.pid);
      r.gone = !r.fd && kill(r.pid, 0) != 0;
      ranks_.push_back(std::move(r));
    }
  }

  std::string folder_;
  int expected_;
  std::chrono::steady_clock::time_point until_ = std::chrono::steady_clock::now() + kRegistration;
  std::vector<Rank> ranks_;
  std::vector<std::size_t> first_;  ///< ranks_ that ended first
};

}  // namespace

int run_under_mpirun(int workers, const std::vector<std::string>& args, const std::string& run_key,
                     std::string& error, LaunchEnd* end) {
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  // The ranks' stdout is a pseudo-terminal under mpirun whatever ours is; tell the status
  // board what the user is really looking at.
  setenv("RANKTUNE_STATUS", isatty(STDOUT_FILENO) ? "tty" : "lines", 0);
  // mpirun exits 1 whenever it was signalled, whatever rank 0 returned; rank 0 leaves its
  // documented exit code here instead, in our run folder (which also removes the folders
  // that killed runs of this experiment left).
  sys::TempDir folder;
  try {
    folder = sys::TempDir::run_folder(run_key);
  } catch (const std::exception& e) {
    error = std::string("cannot create the run's temporary folder: ") + e.what();
    return -1;
  }
  const std::string code_file = folder.path() + "/exit-code";
  setenv("RANKTUNE_EXIT_CODE_FILE", code_file.c_str(), 1);

  const auto cmd = mpirun_command(workers, args);
  const char* path_env = std::getenv("PATH");
  const sys::ResolvedProgram mpirun = sys::resolve_program(cmd[0], "", path_env != nullptr ? path_env : "");
  const auto cannot_run = [&](int err, const std::string& where) {
    // The error is what resolve_program or spawn returned: a spawn that fails reports it
    // that way and need not set `errno`.
    error = "cannot run mpirun: " + std::string(std::strerror(err)) + " (" + where +
            "). Install Open MPI (apt-get install openmpi-bin) or start ranktune under mpirun/srun.";
    return -1;
  };
  if (mpirun.error != 0)
    return cannot_run(mpirun.error, mpirun.error == ENOENT   ? "not found in PATH"
                                    : mpirun.error == EACCES ? "found in PATH, but not executable"
                                                             : "looked up in PATH");
  // mpirun stays in our process group, so that Ctrl-C reaches it directly, and keeps our
  // stdin, our fds and its life (it must outlive us long enough to stop the ranks).
  sys::SpawnRequest request;
  request.program = mpirun.path;
  request.argv = cmd;
  request.env = sys::current_environment();
  request.keep_stdin = true;
  request.own_group = false;
  request.die_with_parent = false;
  request.close_other_fds = false;
  // A signal sent to this process alone (kill PID, a batch system) is passed on.
  struct sigaction ignore {}, forward {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forward_signal;
  sigaction(SIGINT, &ignore, nullptr);
  sigaction(SIGTERM, &forward, nullptr);
  sigaction(SIGUSR1, &forward, nullptr);
  sys::ChildProcess child;
  trace("launcher: spawning mpirun");
  if (const int err = sys::ChildProcess::spawn(request, child); err != 0) return cannot_run(err, mpirun.path);
  g_mpirun = child.pid();
  RankWatch ranks(folder.path(), workers + 1);
  while (!child.wait_exit(std::chrono::steady_clock::now())) ranks.wait(child.pidfd());
  trace("launcher: mpirun exited");
  g_mpirun = -1;  // before the reap frees its pid for reuse
  const pid_t mpirun_pid = child.pid();
  const std::optional<int> reaped = child.reap();
  const int status = reaped.value_or(0);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  LaunchEnd how;
  if (std::FILE* f = std::fopen(code_file.c_str(), "r")) {
    if (int rank0 = 0; std::fscanf(f, "%d", &rank0) == 1) {
      code = rank0;
      how.rank0_code = true;
    }
    std::fclose(f);
  }
  if (!how.rank0_code) {
    // Killed, not ended: say by what, since mpirun is silent when it is the one killed, and
    // its exit code (128 + N) does not name the process that got signal N.
    const int sig = code > 128 && code < 128 + 65 ? code - 128 : 0;
    const std::string by = sig > 0 ? ", killed by signal " + sys::signal_description(sig) : "";
    if (WIFSIGNALED(status)) {
      how.what = "mpirun (pid " + std::to_string(mpirun_pid) + ") was killed by signal " +
                 sys::signal_description(WTERMSIG(status)) + ", and the ranks ended with it";
    } else if (const std::string first = ranks.first_text(); !first.empty()) {
      how.what = first + " ended first" + by + ", and mpirun ended the rest of the job";
    } else {
      how.what = std::string(sig > 0 ? "a rank of the job was killed by signal " + sys::signal_description(sig) + " (mpirun's notice above names it)"
                                     : "the job ended without rank 0's exit code") +
                 "; mpirun exited with code " + std::to_string(code);
    }
  }
  if (end != nullptr) *end = how;
  return code;  // the folder goes with `folder`
}

namespace {

std::atomic<bool> g_job_ending{false};

/// Sleeps until `pid` has exited (or, for the parent, until we have another parent), then
/// ends this process after emergency_cleanup, unless the job is ending normally by then.
[[noreturn]] void watch_and_exit(pid_t pid, sys::UniqueFd fd, bool is_parent) {
  const auto gone = [&] { return is_parent ? getppid() != pid : kill(pid, 0) != 0 && errno == ESRCH; };
  if (fd && !gone()) {
    pollfd p{fd.get(), POLLIN, 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
  } else {
    while (!gone()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!is_parent && g_job_ending.load()) {
    // Rank 0 finished first: the normal end. Nothing to do but wait for our own.
    for (;;) pause();
  }
  // The job is gone (kill -9 of mpirun, or of the whole process group of a self-launched
  // run, or rank 0 died and mpirun is about to SIGKILL us). Nothing can be sent any more,
  // not even to stderr (its pipe may have gone with mpirun): kill the trials and remove our
  // temporary folders, then go. The results file is as after a kill -9 of rank 0, which
  // `run --resume` handles.
  sys::emergency_cleanup();
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (const char* code_file = std::getenv("RANKTUNE_EXIT_CODE_FILE"); is_parent && code_file != nullptr && rank != nullptr) {
    // The self-launcher's run folder, if the launcher died too (else it removes it): each
    // rank removes its own file (register_rank), rank 0 the exit code's too; the last one to
    // try removes the folder, empty by then.
    const std::filesystem::path folder = std::filesystem::path(code_file).parent_path();
    unlink((folder / (std::string(kRankFilePrefix) + rank)).c_str());
    if (std::string(rank) == "0") unlink(code_file);
    rmdir(folder.c_str());
  }
  _exit(experiment::kExitInternal);
}

}  // namespace

namespace {

// A rank of a self-launched run leaves its pid in the launcher's run folder (RankWatch), when
// that folder is on this host (a rank elsewhere has no such folder: it is not watched).
void register_rank() {
  const char* code_file = std::getenv("RANKTUNE_EXIT_CODE_FILE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (code_file == nullptr || rank == nullptr || *rank == '\0' || std::strspn(rank, "0123456789") != std::strlen(rank))
    return;
  const std::filesystem::path path = std::filesystem::path(code_file).parent_path() / (std::string(kRankFilePrefix) + rank);
  const sys::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  const std::string pid = std::to_string(getpid()) + "\n";
  (void)!::write(fd.get(), pid.data(), pid.size());
}

}  // namespace

void exit_with_parent() {
  register_rank();
  trace("main: before MPI_Init");
  const pid_t parent = getppid();
  if (parent <= 1) return;  // adopted already (a launcher that double-forked): nothing to watch
  // A pidfd polls readable when the parent exits, so the thread sleeps until then and idle
  // ranks do not spin. It is opened after getppid(); watch_and_exit checks that the parent
  // is still ours before it trusts it.
  std::thread(watch_and_exit, parent, sys::open_pidfd(parent), true).detach();
}

void exit_with_process(pid_t pid, const std::string& namespace_id) {
  if (pid <= 1 || namespace_id.empty() || namespace_id != process_namespace_id()) return;
  sys::UniqueFd fd = sys::open_pidfd(pid);
  // Without a pidfd, only a process that runs now: never end because of a stale pid.
  if (!fd && kill(pid, 0) != 0) return;
  std::thread(watch_and_exit, pid, std::move(fd), false).detach();
}

std::string process_namespace_id() {
  std::error_code ec;
  const auto ns = std::filesystem::read_symlink("/proc/self/ns/pid", ec);
  if (ec) return {};
  std::string boot;
  if (std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char line[64] = {};
    if (std::fgets(line, sizeof line, f) != nullptr) boot = line;
    std::fclose(f);
  }
  while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
  if (boot.empty()) return {};
  return boot + "/" + ns.string();
}

void job_ending() noexcept { g_job_ending.store(true); }

void report_exit_code(int code) {
  const char* path = std::getenv("RANKTUNE_EXIT_CODE_FILE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (path == nullptr || rank == nullptr || std::string(rank) != "0") return;
  // In the launcher's private run folder (mode 0700, ours), written as every file is.
  try {
    sys::replace_file(path, std::to_string(code) + "\n", 0600);
  } catch (const std::exception&) {  // the launcher then takes mpirun's code
  }
}

}  // namespace ranktune::mpi
