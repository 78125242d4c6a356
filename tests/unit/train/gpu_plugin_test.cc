// The GPU plugin (train/gpu_runtime.h) and the loader's trust rules (sys/shared_library.h):
// the build's plugin opens and answers on a host without a GPU, and a plugin that another
// user could have written is refused before any of its code runs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/unit/common/expect_text.h"
#include "ranktune/config.h"
#include "sys/shared_library.h"
#include "sys/temp_dir.h"
#include "train/gpu_runtime.h"

namespace fs = std::filesystem;
using namespace ranktune;

namespace {

// Each test has a folder of its own (sys::TempDir: mode 0700, removed with the fixture).
class Plugin : public ::testing::Test {
 protected:
  // A copy of a real shared library (the C math library: no plugin entry) in the folder.
  std::string library(const std::string& name) const {
    const std::string p = (dir_ / name).string();
    for (const char* libm : {"/lib/x86_64-linux-gnu/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6", "/lib64/libm.so.6"})
      if (fs::exists(libm)) {
        fs::copy_file(libm, p);
        ::chmod(p.c_str(), 0755);
        return p;
      }
    ADD_FAILURE() << "no libm.so.6 to copy";
    return p;
  }
  std::string refusal(const std::string& path) const {
    try {
      sys::SharedLibrary::open(path);
    } catch (const sys::LibraryError& e) {
      return e.what();
    }
    return "(opened)";
  }
  sys::TempDir tmp_{"gpu_plugin_"};
  fs::path dir_{tmp_.path()};
};

TEST_F(Plugin, AGoodLibraryOpens) {
  const std::string p = library("libgood.so");
  auto lib = sys::SharedLibrary::open(p);
  EXPECT_NE(lib.symbol("cos"), nullptr);
  EXPECT_EQ(lib.symbol("no_such_symbol_here"), nullptr);
  EXPECT_EQ(lib.path(), fs::canonical(p).string());
}

TEST_F(Plugin, ALibraryOthersCanWriteIsRefused) {
  const std::string p = library("libopen.so");
  ::chmod(p.c_str(), 0777);
  EXPECT_CONTAINS(refusal(p), "is writable by everyone");
  ::chmod(p.c_str(), 0775);
  EXPECT_CONTAINS(refusal(p), "is writable by its group");
}

TEST_F(Plugin, ALibraryInAFolderOthersCanWriteIsRefused) {
  const std::string p = library("libshared.so");
  ::chmod(dir_.c_str(), 0777);
  const std::string why = refusal(p);
  EXPECT_CONTAINS(why, "the folder is writable by everyone");
  EXPECT_CONTAINS(why, "it holds " + fs::canonical(p).string());
  // Sticky and root's, but its own folder: still anyone's to fill (the plugin's folder
  // must be closed; only folders above it may be like /tmp).
  if (::geteuid() == 0) {
    ::chmod(dir_.c_str(), 01777);
    EXPECT_CONTAINS(refusal(p), "the folder is writable by everyone");
  }
  ::chmod(dir_.c_str(), 0755);
}

TEST_F(Plugin, ALinkIsJudgedByTheFileItReaches) {
  const std::string target = library("libreal.so");
  ::chmod(target.c_str(), 0666);
  const std::string link = (dir_ / "liblink.so").string();
  fs::create_symlink(target, link);
  EXPECT_CONTAINS(refusal(link), fs::canonical(target).string() + ": the file is writable by everyone");
}

TEST_F(Plugin, ALibraryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
  const std::string p = library("libtheirs.so");
  ASSERT_EQ(::chown(p.c_str(), 12345, 12345), 0);
  EXPECT_CONTAINS(refusal(p), "belongs to user 12345, neither root nor you");
}

TEST_F(Plugin, AbsentAndForeignFilesSayWhat) {
  EXPECT_CONTAINS(refusal((dir_ / "libnone.so").string()), "No such file or directory");
  const std::string text = (dir_ / "libtext.so").string();
  std::ofstream(text) << "not an ELF file\n";
  ::chmod(text.c_str(), 0644);
  EXPECT_CONTAINS(refusal(text), "cannot be loaded");
  // A real library without the entry is not taken for a plugin.
  try {
    train::gpu::open_plugin(library("libnotaplugin.so"));
    ADD_FAILURE() << "a library without the entry was taken for the GPU plugin";
  } catch (const sys::LibraryError& e) {
    EXPECT_CONTAINS(e.what(), "not a ranktune GPU plugin (no symbol ranktune_gpu_api)");
  }
}

// The build's own plugin, opened for real: with or without a GPU it answers, and without
// a device its engine says why instead of crashing.
TEST(GpuPlugin, TheBuildsPluginOpensAndAnswers) {
  if (!RANKTUNE_WITH_CUDA) {
    std::string why;
    EXPECT_EQ(train::gpu::runtime(&why), nullptr);
    EXPECT_CONTAINS(why, "this build has no CUDA");
    return;
  }
  const std::string path = train::gpu::find_plugin();
  ASSERT_FALSE(path.empty()) << "the build's libranktune_gpu.so was not found";
  const train::gpu::Api* api = train::gpu::open_plugin(path);
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->abi, train::gpu::kAbi);
  EXPECT_CONTAINS(api->cuda_versions(), "runtime ");
  if (RANKTUNE_WITH_NCCL) {
    ASSERT_NE(api->nccl_version, nullptr);
    EXPECT_CONTAINS(api->nccl_version(), "2.");
    EXPECT_NE(api->make_nccl_collective, nullptr);
  }
  const int devices = api->device_count();
  EXPECT_GE(devices, 0);
  if (devices == 0) {
    std::string why;
    train::MlpShape shape;
    EXPECT_EQ(api->make_mlp_engine(shape, train::OptimizerKind{}, nullptr, 0, why), nullptr);
    EXPECT_CONTAINS(why, "no usable CUDA device");
    EXPECT_FALSE(api->bind(0));
    EXPECT_EQ(api->device_name(0), "");
  }
}

// Where no driver is, the process never opens the plugin: that is what keeps CUDA's second
// of start-up out of CPU runs.
TEST(GpuPlugin, NoDriverMeansNotLoaded) {
  if (!RANKTUNE_WITH_CUDA || train::gpu::driver_present()) GTEST_SKIP() << "this host has an NVIDIA driver";
  std::string why;
  EXPECT_EQ(train::gpu::runtime(&why), nullptr);
  EXPECT_CONTAINS(why, "no NVIDIA driver on this host");
  EXPECT_EQ(train::gpu::loaded(), nullptr);
}

TEST(GpuPlugin, AnEnvironmentPathIsTakenAsGiven) {
  ::setenv("RANKTUNE_GPU_PLUGIN", "/no/such/libranktune_gpu.so", 1);
  EXPECT_EQ(train::gpu::find_plugin(), "/no/such/libranktune_gpu.so");
  ::unsetenv("RANKTUNE_GPU_PLUGIN");
  if (RANKTUNE_WITH_CUDA) EXPECT_NE(train::gpu::find_plugin(), "/no/such/libranktune_gpu.so");
}

}  // namespace
