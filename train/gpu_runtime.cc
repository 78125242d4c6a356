// Finding and opening the GPU plugin, once per process (train/gpu_runtime.h).
#include "train/gpu_runtime.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "ranktune/config.h"
#include "sys/shared_library.h"

namespace ranktune::train::gpu {
namespace {

constexpr const char* kFileName = "libranktune_gpu.so";

struct State {
  std::once_flag once;
  std::atomic<const Api*> api{nullptr};  // set once, inside the call_once
  std::string why;
};

State& state() {
  static State s;  // never destroyed before exit handlers that may still use the plugin
  return s;
}

bool exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

// The places after $RANKTUNE_GPU_PLUGIN.
std::vector<std::string> places() {
  std::vector<std::string> out;
  if (const std::string exe = sys::executable_directory(); !exe.empty()) {
    out.push_back(exe + "/" + kFileName);
    out.push_back(exe + "/../lib/ranktune/" + kFileName);
  }
  if (RANKTUNE_GPU_PLUGIN_BUILD_PATH[0] != '\0') out.emplace_back(RANKTUNE_GPU_PLUGIN_BUILD_PATH);
  return out;
}

}  // namespace

bool driver_present() {
  for (const char* p : {"/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg"})
    if (exists(p)) return true;
  return false;
}

std::string find_plugin() {
  // $RANKTUNE_GPU_PLUGIN is taken as given, so that a wrong value is reported, not skipped.
  if (const char* env = std::getenv("RANKTUNE_GPU_PLUGIN"); env != nullptr && *env != '\0') return env;
  for (const auto& p : places())
    if (exists(p)) return p;
  return {};
}

const Api* open_plugin(const std::string& path) {
  // The handle is kept for the process's life: engines and communicators made by the plugin
  // may outlive any owner we could give it, and CUDA's exit handlers run from its code.
  static std::mutex mutex;
  static std::vector<sys::SharedLibrary> kept;
  auto library = sys::SharedLibrary::open(path);
  using Entry = const Api* (*)();
  auto entry = reinterpret_cast<Entry>(library.symbol(kEntry));
  if (entry == nullptr)
    throw sys::LibraryError(library.path() + ": not a ranktune GPU plugin (no symbol " + kEntry + ")");
  const Api* api = entry();
  if (api == nullptr || api->abi != kAbi)
    throw sys::LibraryError(library.path() + ": a GPU plugin of another ranktune build (interface " +
                            std::to_string(api != nullptr ? api->abi : -1) + ", this build needs " +
                            std::to_string(kAbi) + "); rebuild, or point RANKTUNE_GPU_PLUGIN at this build's");
  std::lock_guard lock(mutex);
  kept.push_back(std::move(library));
  return api;
}

const Api* runtime(std::string* why) {
  State& s = state();
  std::call_once(s.once, [&s] {
    if (!RANKTUNE_WITH_CUDA) {
      s.why = "this build has no CUDA (configure with the CUDA toolkit present)";
      return;
    }
    if (!driver_present()) {
      s.why = "no NVIDIA driver on this host (no /proc/driver/nvidia or /dev/nvidiactl)";
      return;
    }
    const std::string path = find_plugin();
    if (path.empty()) {
      s.why = std::string("the GPU plugin ") + kFileName +
              " was not found beside the executable, in ../lib/ranktune/ or in the build tree; "
              "set RANKTUNE_GPU_PLUGIN to its path";
      return;
    }
    try {
      s.api.store(open_plugin(path), std::memory_order_release);
    } catch (const sys::LibraryError& e) {
      s.why = std::string("the GPU plugin cannot be used: ") + e.what();
    }
  });
  if (why != nullptr) *why = s.why;
  return s.api.load(std::memory_order_acquire);
}

const Api* loaded() { return state().api.load(std::memory_order_acquire); }

}  // namespace ranktune::train::gpu
