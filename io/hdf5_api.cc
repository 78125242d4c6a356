// Opening and binding the HDF5 C API on first use (io/hdf5_api.h).
#include "io/hdf5_api.h"

#include <dlfcn.h>
#include <link.h>

#include <type_traits>

#include "io/errors.h"
#include "sys/shared_library.h"

namespace ranktune::io::h5 {

Api load(const std::string& path) {
  try {
    // RTLD_NODELETE (sys::SharedLibrary): the code and the globals bound here stay mapped for
    // the life of the process, as HDF5's own exit handler (registered by its first call)
    // needs them to.
    const auto library = sys::SharedLibrary::open_system(path);
    Api a;
#define RANKTUNE_HDF5_BIND(name) library.bind(a.name, "H5" #name);
    RANKTUNE_HDF5_FUNCTIONS(RANKTUNE_HDF5_BIND)
    RANKTUNE_HDF5_GLOBALS(RANKTUNE_HDF5_BIND)
#undef RANKTUNE_HDF5_BIND
    // A global may live in the executable instead: one that links HDF5 and names, say,
    // H5T_NATIVE_UINT8 itself (a test) gets a copy relocation, and from then on HDF5's own
    // code reads and writes that copy. The library's own definition, bound above, is never
    // set. So the copy is taken when the main program holds one; an address found in any
    // other object (another HDF5 of another SONAME, mapped globally) is not ours.
    auto take_copy = [](auto& member, const char* name) {
      void* found = ::dlsym(RTLD_DEFAULT, name);
      Dl_info info{};
      link_map* object = nullptr;
      if (found != nullptr && ::dladdr1(found, &info, reinterpret_cast<void**>(&object), RTLD_DL_LINKMAP) != 0 &&
          object != nullptr && object->l_prev == nullptr)  // the head of the link map: the main program
        member = static_cast<std::remove_reference_t<decltype(member)>>(found);
    };
#define RANKTUNE_HDF5_COPY(name) take_copy(a.name, "H5" #name);
    RANKTUNE_HDF5_GLOBALS(RANKTUNE_HDF5_COPY)
#undef RANKTUNE_HDF5_COPY
    return a;
  } catch (const sys::LibraryError& e) {
    throw StoreError(std::string("HDF5: ") + e.what() +
                     "; ranktune needs the HDF5 C library it was built against (Debian: libhdf5-103-1, which "
                     "scripts/setup.sh installs)");
  }
}

namespace {

Api load_configured() { return load(library_path()); }

}  // namespace

const char* library_path() noexcept { return RANKTUNE_HDF5_SHARED_OBJECT; }

const Api& api() { return sys::LoadedOnce<Api, load_configured>::get(); }

bool loaded() noexcept { return sys::LoadedOnce<Api, load_configured>::loaded(); }

}  // namespace ranktune::io::h5
