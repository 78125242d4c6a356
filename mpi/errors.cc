// MpiError's message, the exit code and line that main() gives an error, and abort_job
// (mpi/errors.h).
#include "mpi/errors.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "experiment/exit_codes.h"
#include "config/config.h"
#include "io/store.h"
#include "mpi/launch.h"
#include "sys/host.h"

namespace ranktune::mpi {

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError(std::string(call) + " failed on rank " + std::to_string(rank) + " (" +
                 sys::host_name() + ") at " + file + ":" + std::to_string(line) + ": " + text);
}

ErrorReport describe_error(const std::exception& e) {
  if (dynamic_cast<const config::ConfigError*>(&e) != nullptr)
    return {experiment::kExitUsage, std::string("ranktune: config error: ") + e.what()};
  // Nothing is wrong with a file on a full disk: an environment failure, as for HDF5.
  if (dynamic_cast<const io::DiskFullError*>(&e) != nullptr) return {experiment::kExitInternal, std::string("ranktune: ") + e.what()};
  if (dynamic_cast<const io::StoreError*>(&e) != nullptr) return {experiment::kExitBadFile, std::string("ranktune: ") + e.what()};
  if (dynamic_cast<const std::invalid_argument*>(&e) != nullptr) return {experiment::kExitUsage, std::string("ranktune: ") + e.what()};
  return {experiment::kExitInternal, std::string("ranktune: error: ") + e.what()};
}

void abort_job(int code, const std::string& line) {
  if (!line.empty()) std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  report_exit_code(code);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // not reached: MPI_Abort does not return
}

}  // namespace ranktune::mpi
