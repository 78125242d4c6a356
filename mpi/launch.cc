// Self-launch under mpirun (mpi/launch.h): the launcher's environment, the mpirun command,
// signals passed on, the exit code handed back, and ranks that end with their parent.
#include "mpi/launch.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <atomic>
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

}  // namespace

int run_under_mpirun(int workers, const std::vector<std::string>& args, const std::string& run_key,
                     std::string& error) {
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
  child.wait_exit(std::nullopt);
  trace("launcher: mpirun exited");
  g_mpirun = -1;  // before the reap frees its pid for reuse
  const std::optional<int> reaped = child.reap();
  const int status = reaped.value_or(0);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (std::FILE* f = std::fopen(code_file.c_str(), "r")) {
    if (int rank0 = 0; std::fscanf(f, "%d", &rank0) == 1) code = rank0;
    std::fclose(f);
  }
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
  if (const char* code_file = std::getenv("RANKTUNE_EXIT_CODE_FILE");
      is_parent && code_file != nullptr && rank != nullptr && std::string(rank) == "0") {
    // The self-launcher's run folder, if the launcher died too (else it removes it).
    unlink(code_file);
    rmdir(std::filesystem::path(code_file).parent_path().c_str());
  }
  _exit(experiment::kExitInternal);
}

}  // namespace

void exit_with_parent() {
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
