#pragma once
/// Typed MPI errors and the checked-call macro. Errors carry the rank, the host and the
/// call site; only main() turns them into exit codes.

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace ranktune::mpi {

class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws MpiError describing `code` returned by `call` at file:line.
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);

/// This process's host name (cached).
const std::string& host_name();

}  // namespace ranktune::mpi

#define MPI_CHECK(call)                                                        \
  do {                                                                         \
    const int rt_mpi_rc_ = (call);                                             \
    if (rt_mpi_rc_ != MPI_SUCCESS)                                             \
      ::ranktune::mpi::throw_mpi_error(rt_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
