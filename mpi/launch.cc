#include "mpi/launch.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "mpi/gpu.h"

namespace ranktune::mpi {

bool under_mpi_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
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

void exec_under_mpirun(int workers, const std::vector<std::string>& args, std::string& error) {
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  // The ranks' stdout is a pseudo-terminal under mpirun whatever ours is; tell the status
  // board what the user is really looking at.
  setenv("RANKTUNE_STATUS", isatty(STDOUT_FILENO) ? "tty" : "lines", 0);
  const auto cmd = mpirun_command(workers, args);
  std::vector<char*> argv;
  for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  error = std::string("cannot run mpirun: ") + std::strerror(errno) +
          ". Install Open MPI (apt-get install openmpi-bin) or start ranktune under mpirun/srun.";
}

}  // namespace ranktune::mpi
