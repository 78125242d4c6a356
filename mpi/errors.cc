#include "mpi/errors.h"

#include <unistd.h>

namespace ranktune::mpi {

const std::string& host_name() {
  static const std::string name = [] {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return std::string(buf);
  }();
  return name;
}

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError(std::string(call) + " failed on rank " + std::to_string(rank) + " (" +
                 host_name() + ") at " + file + ":" + std::to_string(line) + ": " + text);
}

}  // namespace ranktune::mpi
