#include "mpi/launch.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <cstring>
#include <filesystem>
#include <thread>

#include "mpi/gpu.h"

extern char** environ;

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

std::vector<std::string> mpirun_command(int workers, const std::vector<std::string>& args) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(workers + 1), "--bind-to", "none"};
  if (workers + 1 > static_cast<int>(std::thread::hardware_concurrency())) {
    argv.push_back("--oversubscribe");
  }
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

int run_under_mpirun(int workers, const std::vector<std::string>& args, std::string& error) {
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  // The ranks' stdout is a pseudo-terminal under mpirun whatever ours is; tell the status
  // board what the user is really looking at.
  setenv("RANKTUNE_STATUS", isatty(STDOUT_FILENO) ? "tty" : "lines", 0);
  // mpirun exits 1 whenever it was signalled, whatever rank 0 returned; rank 0 leaves its
  // documented exit code here instead.
  char code_file[] = "/tmp/ranktune-exit.XXXXXX";
  const int fd = mkstemp(code_file);
  if (fd < 0) {
    error = std::string("cannot create a temporary file: ") + std::strerror(errno);
    return -1;
  }
  close(fd);
  setenv("RANKTUNE_EXIT_CODE_FILE", code_file, 1);

  const auto cmd = mpirun_command(workers, args);
  std::vector<char*> argv;
  for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Ctrl-C reaches mpirun directly (same process group); a signal sent to this process
  // alone (kill PID, a batch system) is passed on.
  struct sigaction ignore {}, forward {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forward_signal;
  sigaction(SIGINT, &ignore, nullptr);
  sigaction(SIGTERM, &forward, nullptr);
  sigaction(SIGUSR1, &forward, nullptr);
  pid_t pid = -1;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    unlink(code_file);
    error = std::string("cannot run mpirun: ") + std::strerror(errno) +
            ". Install Open MPI (apt-get install openmpi-bin) or start ranktune under mpirun/srun.";
    return -1;
  }
  g_mpirun = pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (std::FILE* f = std::fopen(code_file, "r")) {
    if (int rank0 = 0; std::fscanf(f, "%d", &rank0) == 1) code = rank0;
    std::fclose(f);
  }
  unlink(code_file);
  return code;
}

void report_exit_code(int code) {
  const char* path = std::getenv("RANKTUNE_EXIT_CODE_FILE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (path == nullptr || rank == nullptr || std::string(rank) != "0") return;
  if (std::FILE* f = std::fopen(path, "w")) {
    std::fprintf(f, "%d\n", code);
    std::fclose(f);
  }
}

}  // namespace ranktune::mpi
