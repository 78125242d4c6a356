// Opening and binding the HDF5 C API on first use (io/hdf5_api.h).
#include "io/hdf5_api.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <type_traits>
#include <utility>

#include "io/errors.h"
#include "sys/shared_library.h"

namespace ranktune::io::h5 {
namespace {

std::atomic<bool> g_loaded{false};

}  // namespace

Api load(const std::string& path) {
  const std::string fix = "; ranktune needs the HDF5 C library it was built against (Debian: libhdf5-103-1, "
                          "which scripts/setup.sh installs)";
  sys::SharedLibrary library = [&] {
    try {
      return sys::SharedLibrary::open_system(path);
    } catch (const sys::LibraryError& e) {
      throw StoreError(std::string("HDF5: ") + e.what() + fix);
    }
  }();
  Api a;
  auto bind = [&](auto& member, const char* name) {
    void* address = library.symbol(name);
    if (address == nullptr)
      throw StoreError("HDF5: " + library.path() + " has no symbol " + name + " (an HDF5 of another version?)" + fix);
    member = reinterpret_cast<std::remove_reference_t<decltype(member)>>(address);
  };
  // A global may live in the executable instead: one that links HDF5 and names, say,
  // H5T_NATIVE_UINT8 itself (a test) gets a copy relocation, and from then on HDF5's own code
  // reads and writes that copy. The library's own definition, which its handle gives, is
  // never set. So the copy is taken when the main program holds one; an address found in any
  // other object (another HDF5 of another SONAME, mapped globally) is not ours.
  auto bind_global = [&](auto& member, const char* name) {
    bind(member, name);
    void* found = ::dlsym(RTLD_DEFAULT, name);
    Dl_info info{};
    link_map* object = nullptr;
    if (found != nullptr && ::dladdr1(found, &info, reinterpret_cast<void**>(&object), RTLD_DL_LINKMAP) != 0 &&
        object != nullptr && object->l_prev == nullptr)  // the head of the link map: the main program
      member = static_cast<std::remove_reference_t<decltype(member)>>(found);
  };
#define RANKTUNE_HDF5_BIND(name) bind(a.name, "H5" #name);
  RANKTUNE_HDF5_FUNCTIONS(RANKTUNE_HDF5_BIND)
#undef RANKTUNE_HDF5_BIND
#define RANKTUNE_HDF5_BIND(name) bind_global(a.name, "H5" #name);
  RANKTUNE_HDF5_GLOBALS(RANKTUNE_HDF5_BIND)
#undef RANKTUNE_HDF5_BIND
  // The handle may go: sys::SharedLibrary opens with RTLD_NODELETE, so the code and the
  // globals bound above stay mapped for the life of the process, as HDF5's own exit handler
  // (registered by its first call) needs them to.
  return a;
}

const char* library_path() noexcept { return RANKTUNE_HDF5_SHARED_OBJECT; }

const Api& api() {
  static const Api bound = [] {
    Api a = load(library_path());
    g_loaded.store(true, std::memory_order_release);
    return a;
  }();
  return bound;
}

bool loaded() noexcept { return g_loaded.load(std::memory_order_acquire); }

}  // namespace ranktune::io::h5
