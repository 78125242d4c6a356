#pragma once
/// Typed MPI errors and the checked-call macro. Errors carry the rank, the host and the
/// call site; only main() turns them into exit codes.

#include <mpi.h>

#include <exception>
#include <stdexcept>
#include <string>

namespace ranktune::mpi {

class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws MpiError describing `code` returned by `call` at file:line.
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);

/// How main() answers an error that ends a command: the documented exit code (ConfigError
/// and invalid_argument 2, StoreError 5 but DiskFullError 1, anything else 1) and the line it prints
/// ("ranktune: config error: ...", "ranktune: ...", "ranktune: error: ...").
struct ErrorReport {
  int code = 1;
  std::string line;
};
ErrorReport describe_error(const std::exception& e);

/// Rank 0 once the workers wait on it (they have the Setup): prints `line` to stderr
/// (unless it is empty: already printed) and flushes it, leaves `code` for a self-launcher,
/// and ends the whole job with MPI_Abort(code). Returning instead would leave rank 0 in
/// MPI_Finalize and the workers waiting for it, forever, with the error unprinted (the
/// exception reaches main() only after MPI_Finalize). Close the results file first.
[[noreturn]] void abort_job(int code, const std::string& line);

}  // namespace ranktune::mpi

#define MPI_CHECK(call)                                                        \
  do {                                                                         \
    const int rt_mpi_rc_ = (call);                                             \
    if (rt_mpi_rc_ != MPI_SUCCESS)                                             \
      ::ranktune::mpi::throw_mpi_error(rt_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
