// Opening and binding libarchive on first use (io/archive_api.h).
#include "io/archive_api.h"

#include <atomic>
#include <type_traits>

#include "io/archive.h"
#include "sys/shared_library.h"

namespace ranktune::io::libarchive {
namespace {

std::atomic<bool> g_loaded{false};

}  // namespace

Api load(const std::string& path) {
  const std::string fix = "; ranktune needs the libarchive it was built against (Debian: libarchive13, which "
                          "scripts/setup.sh installs)";
  sys::SharedLibrary library = [&] {
    try {
      return sys::SharedLibrary::open_system(path);
    } catch (const sys::LibraryError& e) {
      throw ArchiveError(std::string("libarchive: ") + e.what() + fix);
    }
  }();
  Api a;
  auto bind = [&](auto& member, const char* name) {
    void* address = library.symbol(name);
    if (address == nullptr)
      throw ArchiveError("libarchive: " + library.path() + " has no symbol " + name + fix);
    member = reinterpret_cast<std::remove_reference_t<decltype(member)>>(address);
  };
#define RANKTUNE_LIBARCHIVE_BIND(name) bind(a.name, "archive_" #name);
  RANKTUNE_LIBARCHIVE_FUNCTIONS(RANKTUNE_LIBARCHIVE_BIND)
#undef RANKTUNE_LIBARCHIVE_BIND
  return a;  // RTLD_NODELETE (sys::SharedLibrary): the bound code outlives the handle
}

const char* library_path() noexcept { return RANKTUNE_LIBARCHIVE_SHARED_OBJECT; }

const Api& api() {
  static const Api bound = [] {
    Api a = load(library_path());
    g_loaded.store(true, std::memory_order_release);
    return a;
  }();
  return bound;
}

bool loaded() noexcept { return g_loaded.load(std::memory_order_acquire); }

}  // namespace ranktune::io::libarchive
