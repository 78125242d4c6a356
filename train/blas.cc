// Opening OpenBLAS on first use (train/blas.h).
#include "train/blas.h"

#include <atomic>
#include <string>

#include "sys/shared_library.h"

namespace ranktune::train {
namespace {

std::atomic<bool> g_loaded{false};

Blas load() {
  const std::string fix = "; the CPU engine needs the OpenBLAS ranktune was built against (Debian: libopenblas0, "
                          "which scripts/setup.sh installs)";
  try {
    // RTLD_NODELETE (sys::SharedLibrary): the bound code outlives the handle.
    const auto library = sys::SharedLibrary::open_system(RANKTUNE_OPENBLAS_SHARED_OBJECT);
    Blas b;
    b.sgemm = reinterpret_cast<decltype(b.sgemm)>(library.symbol("cblas_sgemm"));
    b.set_num_threads = reinterpret_cast<decltype(b.set_num_threads)>(library.symbol("openblas_set_num_threads"));
    if (b.sgemm == nullptr || b.set_num_threads == nullptr)
      throw sys::LibraryError(library.path() + ": not OpenBLAS (no cblas_sgemm or openblas_set_num_threads)");
    return b;
  } catch (const sys::LibraryError& e) {
    throw sys::LibraryError(std::string("OpenBLAS: ") + e.what() + fix);
  }
}

}  // namespace

const Blas& blas() {
  static const Blas bound = [] {
    Blas b = load();
    g_loaded.store(true, std::memory_order_release);
    return b;
  }();
  return bound;
}

bool blas_loaded() noexcept { return g_loaded.load(std::memory_order_acquire); }

}  // namespace ranktune::train
