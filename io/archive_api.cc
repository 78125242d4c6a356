// Opening and binding libarchive on first use (io/archive_api.h).
#include "io/archive_api.h"

#include "io/archive.h"
#include "sys/shared_library.h"

namespace ranktune::io::libarchive {

Api load(const std::string& path) {
  try {
    const auto library = sys::SharedLibrary::open_system(path);  // RTLD_NODELETE: outlives the handle
    Api a;
#define RANKTUNE_LIBARCHIVE_BIND(name) library.bind(a.name, "archive_" #name);
    RANKTUNE_LIBARCHIVE_FUNCTIONS(RANKTUNE_LIBARCHIVE_BIND)
#undef RANKTUNE_LIBARCHIVE_BIND
    return a;
  } catch (const sys::LibraryError& e) {
    throw ArchiveError(std::string("libarchive: ") + e.what() +
                       "; ranktune needs the libarchive it was built against (Debian: libarchive13, which "
                       "scripts/setup.sh installs)");
  }
}

namespace {

Api load_configured() { return load(library_path()); }

}  // namespace

const char* library_path() noexcept { return RANKTUNE_LIBARCHIVE_SHARED_OBJECT; }

const Api& api() { return sys::LoadedOnce<Api, load_configured>::get(); }

bool loaded() noexcept { return sys::LoadedOnce<Api, load_configured>::loaded(); }

}  // namespace ranktune::io::libarchive
