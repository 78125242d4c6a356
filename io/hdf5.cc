// The HDF5 wrappers' checked calls and h5::Quiet, which silences HDF5's error printing for
// one call and restores the program's handler after it (io/hdf5.h).
#include "io/hdf5.h"

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace ranktune::io::h5 {
namespace {

// Runs at exit before HDF5's own handler (atexit runs handlers in reverse order, and HDF5
// registered its handler when it was first called, before any Quiet could register this):
// H5_term_library prints what it could not close only when error printing is on.
void quiet_library_termination() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

}  // namespace

Quiet::Quiet() noexcept {
  if (H5Eget_auto2(H5E_DEFAULT, &func_, &data_) < 0) func_ = nullptr, data_ = nullptr;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  static const bool registered = std::atexit(quiet_library_termination) == 0;
  (void)registered;
}

std::string last_error() {
  std::string message;
  // Walking upward starts at the frame that detected the problem ("file signature not
  // found", "truncated file"), which says more than the API-level "unable to open file".
  auto first = [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
    if (n == 0 && e->desc) *static_cast<std::string*>(data) = e->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first, &message);
  return message;
}

int last_errno() {
  // HDF5's sec2 driver words a failed write(2), ftruncate(2) or read(2) as "..., errno = 28,
  // error message = 'No space left on device'"; the errno is in no other form on the stack.
  int found = 0;
  auto scan = [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
    if (e->desc == nullptr) return 0;
    const std::string_view desc(e->desc);
    if (const auto at = desc.find("errno = "); at != std::string_view::npos) {
      int value = 0;
      for (std::size_t i = at + 8; i < desc.size() && desc[i] >= '0' && desc[i] <= '9'; ++i)
        value = value * 10 + (desc[i] - '0');
      if (value > 0) *static_cast<int*>(data) = value;
    }
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, scan, &found);
  return found;
}

[[noreturn]] void fail(const char* expr, const char* file, int line) {
  std::string_view call(expr);
  call = call.substr(0, call.find('('));
  std::string_view where(file);
  if (auto slash = where.rfind('/'); slash != std::string_view::npos) where.remove_prefix(slash + 1);
  std::string message = std::string(where) + ":" + std::to_string(line) + ": " +
                        std::string(call) + " failed";
  if (std::string detail = last_error(); !detail.empty()) message += ": " + detail;
  throw CallError(message, last_errno());
}

Datatype string_type(std::size_t size) {
  Datatype type{H5_CHECK(H5Tcopy(H5T_C_S1))};
  H5_CHECK(H5Tset_size(type.get(), size));
  H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD));
  return type;
}

}  // namespace ranktune::io::h5
