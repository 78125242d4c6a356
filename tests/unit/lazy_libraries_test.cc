// HDF5, libarchive and OpenBLAS are opened on first use, not at start (io/hdf5_api.h,
// io/archive_api.h, train/blas.h). This executable is the one unit test that does not link
// HDF5 or libarchive itself (tests/CMakeLists.txt), so it sees what a rank sees: none of the
// three mapped until the code that needs it runs, then each one, once. ctest runs each test
// in a process of its own (gtest_discover_tests), so each one starts from nothing opened.

#include <dlfcn.h>
#include <link.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "io/archive.h"
#include "io/archive_api.h"
#include "io/errors.h"
#include "io/hdf5_api.h"
#include "io/store.h"
#include "sys/shared_library.h"
#include "sys/temp_dir.h"
#include "train/blas.h"

namespace ranktune {
namespace {

// Whether an object whose file name contains `part` is mapped into this process.
bool mapped(const std::string& part) {
  struct Look {
    const std::string* part;
    bool found;
  } look{&part, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* l = static_cast<Look*>(data);
        if (info->dlpi_name != nullptr && std::string(info->dlpi_name).find(*l->part) != std::string::npos)
          l->found = true;
        return 0;
      },
      &look);
  return look.found;
}

TEST(LazyLibraries, NoneIsMappedAtStart) {
  EXPECT_FALSE(io::h5::loaded());
  EXPECT_FALSE(io::libarchive::loaded());
  EXPECT_FALSE(train::blas_loaded());
  EXPECT_FALSE(mapped("libhdf5"));
  EXPECT_FALSE(mapped("libarchive"));
  EXPECT_FALSE(mapped("libopenblas"));
  // What Debian's HDF5 brought along with it.
  EXPECT_FALSE(mapped("libcurl"));
}

TEST(LazyLibraries, Hdf5OpensOnItsFirstCall) {
  const std::string version = io::hdf5_library_version();
  EXPECT_EQ(version, std::to_string(H5_VERS_MAJOR) + "." + std::to_string(H5_VERS_MINOR) + "." +
                         std::to_string(H5_VERS_RELEASE));
  EXPECT_TRUE(io::h5::loaded());
  EXPECT_TRUE(mapped("libhdf5"));
  EXPECT_FALSE(io::libarchive::loaded());
  EXPECT_FALSE(mapped("libarchive"));  // HDF5 does not bring libarchive with it
  // Asked again, the process gets the library it has, not a second copy.
  EXPECT_EQ(sys::SharedLibrary::open_system(io::h5::library_path()).symbol("H5open"),
            reinterpret_cast<void*>(io::h5::api().open));

  // A real file through the bound library: written, then recognised.
  sys::TempDir dir("lazy_libraries");
  const std::string path = dir.path() + "/not_results.txt";
  std::ofstream(path) << "not an HDF5 file\n";
  EXPECT_FALSE(io::is_hdf5_file(path));
}

TEST(LazyLibraries, LibarchiveOpensWhenAFolderIsPacked) {
  sys::TempDir dir("lazy_libraries");
  const std::filesystem::path folder = std::filesystem::path(dir.path()) / "ckpt";
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "weights.bin") << "0123456789";
  std::size_t bytes = 0;
  io::pack_directory(folder, [&](std::span<const std::byte> chunk) { bytes += chunk.size(); });
  EXPECT_TRUE(io::libarchive::loaded());
  EXPECT_TRUE(mapped("libarchive"));
  EXPECT_GT(bytes, 10u);
}

TEST(LazyLibraries, OpenBlasOpensWithTheFirstCpuEngine) {
  const train::Blas& blas = train::blas();
  EXPECT_TRUE(train::blas_loaded());
  EXPECT_TRUE(mapped("openblas"));
  // C = A * B for 2x2 matrices, through the bound sgemm.
  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  float c[4] = {};
  blas.set_num_threads(1);
  blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
  EXPECT_FLOAT_EQ(c[0], 19);
  EXPECT_FLOAT_EQ(c[1], 22);
  EXPECT_FLOAT_EQ(c[2], 43);
  EXPECT_FLOAT_EQ(c[3], 50);
}

TEST(LazyLibraries, AMappedLibraryIsTakenWhereverItCameFrom) {
  // The C library is mapped in every process: its SONAME finds it, whatever the folder.
  const auto c = sys::SharedLibrary::open_system("/nonexistent/libc.so.6");
  EXPECT_NE(c.symbol("getpid"), nullptr);
  EXPECT_EQ(c.symbol("getpid"), dlsym(RTLD_DEFAULT, "getpid"));
}

TEST(LazyLibraries, AMissingLibraryIsAClearError) {
  try {
    io::h5::load("/nonexistent/libhdf5_absent.so.103");
    FAIL() << "no error";
  } catch (const io::StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/nonexistent/libhdf5_absent.so.103"), std::string::npos) << what;
    EXPECT_NE(what.find("libhdf5-103-1"), std::string::npos) << what;
  }
  try {
    io::libarchive::load("/nonexistent/libarchive_absent.so.13");
    FAIL() << "no error";
  } catch (const io::ArchiveError& e) {
    EXPECT_NE(std::string(e.what()).find("libarchive13"), std::string::npos) << e.what();
  }
}

TEST(LazyLibraries, ALibraryOfAnotherKindIsRefusedByName) {
  // libarchive is a real library, with none of HDF5's symbols.
  try {
    io::h5::load(io::libarchive::library_path());
    FAIL() << "no error";
  } catch (const io::StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("has no symbol H5"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ranktune
