// Opening OpenBLAS on first use (train/blas.h).
#include "train/blas.h"

#include <string>

#include "sys/shared_library.h"

namespace ranktune::train {
namespace {

Blas load() {
  try {
    const auto library = sys::SharedLibrary::open_system(RANKTUNE_OPENBLAS_SHARED_OBJECT);  // RTLD_NODELETE
    Blas b;
    library.bind(b.sgemm, "cblas_sgemm");
    library.bind(b.set_num_threads, "openblas_set_num_threads");
    return b;
  } catch (const sys::LibraryError& e) {
    throw sys::LibraryError(std::string("OpenBLAS: ") + e.what() +
                            "; the CPU engine needs the OpenBLAS ranktune was built against (Debian: libopenblas0, "
                            "which scripts/setup.sh installs)");
  }
}

}  // namespace

const Blas& blas() { return sys::LoadedOnce<Blas, load>::get(); }

bool blas_loaded() noexcept { return sys::LoadedOnce<Blas, load>::loaded(); }

}  // namespace ranktune::train
