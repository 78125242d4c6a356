#pragma once
/// The HDF5 C API, opened on first use instead of linked. Most processes of a run never touch
/// a results file (every worker rank, `ranktune --version`, `ranktune ctl` without --wait), yet
/// a link makes each of them load libhdf5 and what Debian's build of it needs (libcurl,
/// GnuTLS, OpenSSL, Kerberos, LDAP: 30 libraries), about 6 ms of CPU per process, most of it
/// resolving symbols. On a 2-core node with 9 ranks that was 58 ms, 0.46% of a 12.5 s
/// experiment's wall (benchmarks/README.md, "Libraries opened on first use").
///
/// How: `api()` opens the library named at configure time (RANKTUNE_HDF5_SHARED_OBJECT:
/// cmake/RanktuneSharedObject.cmake) with sys::SharedLibrary::open_system, which trusts it as
/// a linked library is trusted and returns the copy the process has if it has one, and binds
/// every function and global that io/ uses. Then, as loaders of the
/// OpenGL API do, each of those names is a macro for its bound pointer, so that io/ calls
/// `H5Dwrite(...)` as written in HDF5's manual. A name missing from the lists below stays a
/// plain reference and fails at link time, since nothing links libhdf5: a new call cannot
/// silently bring the link back. HDF5's predefined types and property classes
/// (H5T_NATIVE_INT, H5P_FILE_ACCESS) expand to `H5open(), H5T_NATIVE_INT_g`: both parts go
/// through the bound library.
///
/// Include io/hdf5.h, not this file. Code outside io/ (tests, benchmarks) may link HDF5 and
/// call it directly: dlopen finds the library already mapped and both reach the same one.

#include <hdf5.h>

#include <string>

/// The functions io/ calls, without their "H5" prefix.
#define RANKTUNE_HDF5_FUNCTIONS(X) X(Aclose) X(Acreate2) X(Aexists) X(Aget_space) X(Aget_type) \
  X(Aiterate2) X(Aopen) X(Aread) X(Awrite) X(Dclose) X(Dcreate2) X(Dflush) X(Dget_space) \
  X(Dget_type) X(Dopen2) X(Dread) X(Dset_extent) X(Dwrite) X(Eget_auto2) X(Eset_auto2) X(Ewalk2) \
  X(Fclose) X(Fcreate) X(Fflush) X(Fget_eoa) X(Fget_vfd_handle) X(Fis_hdf5) X(Fopen) \
  X(Fstart_swmr_write) X(Gclose) X(Gcreate2) X(Gopen2) X(Lexists) X(Literate) X(Ocopy) \
  X(Oget_info_by_name2) X(Pclose) X(Pcreate) X(Pset_chunk) X(Pset_chunk_cache) X(Pset_deflate) \
  X(Pset_fill_time) X(Pset_libver_bounds) X(Pset_metadata_read_attempts) X(Pset_shuffle) \
  X(Sclose) X(Screate) X(Screate_simple) X(Sget_simple_extent_dims) X(Sget_simple_extent_ndims) \
  X(Sget_simple_extent_npoints) X(Sselect_elements) X(Sselect_hyperslab) X(Tclose) X(Tcopy) \
  X(Tcreate) X(Tget_class) X(Tget_member_index) X(Tget_member_name) X(Tget_member_type) \
  X(Tget_nmembers) X(Tget_size) X(Tinsert) X(Tis_variable_str) X(Tset_size) X(Tset_strpad) \
  X(check_version) X(free_memory) X(get_libversion) X(open)

/// The globals behind the predefined identifiers io/ uses, without their "H5" prefix.
#define RANKTUNE_HDF5_GLOBALS(X) X(T_C_S1_g) X(T_NATIVE_DOUBLE_g) X(T_NATIVE_INT_g) \
  X(T_NATIVE_INT32_g) X(T_NATIVE_INT64_g) X(T_NATIVE_LLONG_g) X(T_NATIVE_UINT8_g) \
  X(T_STD_I32LE_g) X(T_STD_I64LE_g) X(P_CLS_DATASET_ACCESS_ID_g) X(P_CLS_DATASET_CREATE_ID_g) \
  X(P_CLS_FILE_ACCESS_ID_g)

namespace ranktune::io::h5 {

/// Every entry of the two lists, bound. Members are named without the "H5" prefix, so that
/// the macros below never rewrite them.
struct Api {
#define RANKTUNE_HDF5_MEMBER(name) decltype(&::H5##name) name = nullptr;
  RANKTUNE_HDF5_FUNCTIONS(RANKTUNE_HDF5_MEMBER)
#undef RANKTUNE_HDF5_MEMBER
#define RANKTUNE_HDF5_MEMBER(name) const decltype(::H5##name)* name = nullptr;
  RANKTUNE_HDF5_GLOBALS(RANKTUNE_HDF5_MEMBER)
#undef RANKTUNE_HDF5_MEMBER
};

/// The library, opened and bound on the first call (thread-safe), the same afterwards.
/// Throws StoreError (io/errors.h) naming the library and what failed: absent, refused by
/// sys::SharedLibrary's checks, or lacking a symbol (an HDF5 of another ABI).
const Api& api();

/// Opens the library at `path` and binds it; what api() does once with the configured path.
/// For tests of the failures above.
Api load(const std::string& path);

/// The library api() opens.
const char* library_path() noexcept;

/// Whether api() has opened the library in this process (tests: a worker must not).
bool loaded() noexcept;

}  // namespace ranktune::io::h5

// Each HDF5 name io/ uses is its bound pointer (see above).
#define H5Aclose (::ranktune::io::h5::api().Aclose)
#define H5Acreate2 (::ranktune::io::h5::api().Acreate2)
#define H5Aexists (::ranktune::io::h5::api().Aexists)
#define H5Aget_space (::ranktune::io::h5::api().Aget_space)
#define H5Aget_type (::ranktune::io::h5::api().Aget_type)
#define H5Aiterate2 (::ranktune::io::h5::api().Aiterate2)
#define H5Aopen (::ranktune::io::h5::api().Aopen)
#define H5Aread (::ranktune::io::h5::api().Aread)
#define H5Awrite (::ranktune::io::h5::api().Awrite)
#define H5Dclose (::ranktune::io::h5::api().Dclose)
#define H5Dcreate2 (::ranktune::io::h5::api().Dcreate2)
#define H5Dflush (::ranktune::io::h5::api().Dflush)
#define H5Dget_space (::ranktune::io::h5::api().Dget_space)
#define H5Dget_type (::ranktune::io::h5::api().Dget_type)
#define H5Dopen2 (::ranktune::io::h5::api().Dopen2)
#define H5Dread (::ranktune::io::h5::api().Dread)
#define H5Dset_extent (::ranktune::io::h5::api().Dset_extent)
#define H5Dwrite (::ranktune::io::h5::api().Dwrite)
#define H5Eget_auto2 (::ranktune::io::h5::api().Eget_auto2)
#define H5Eset_auto2 (::ranktune::io::h5::api().Eset_auto2)
#define H5Ewalk2 (::ranktune::io::h5::api().Ewalk2)
#define H5Fclose (::ranktune::io::h5::api().Fclose)
#define H5Fcreate (::ranktune::io::h5::api().Fcreate)
#define H5Fflush (::ranktune::io::h5::api().Fflush)
#define H5Fget_eoa (::ranktune::io::h5::api().Fget_eoa)
#define H5Fget_vfd_handle (::ranktune::io::h5::api().Fget_vfd_handle)
#define H5Fis_hdf5 (::ranktune::io::h5::api().Fis_hdf5)
#define H5Fopen (::ranktune::io::h5::api().Fopen)
#define H5Fstart_swmr_write (::ranktune::io::h5::api().Fstart_swmr_write)
#define H5Gclose (::ranktune::io::h5::api().Gclose)
#define H5Gcreate2 (::ranktune::io::h5::api().Gcreate2)
#define H5Gopen2 (::ranktune::io::h5::api().Gopen2)
#define H5Lexists (::ranktune::io::h5::api().Lexists)
#define H5Literate (::ranktune::io::h5::api().Literate)
#define H5Ocopy (::ranktune::io::h5::api().Ocopy)
#define H5Oget_info_by_name2 (::ranktune::io::h5::api().Oget_info_by_name2)
#define H5Pclose (::ranktune::io::h5::api().Pclose)
#define H5Pcreate (::ranktune::io::h5::api().Pcreate)
#define H5Pset_chunk (::ranktune::io::h5::api().Pset_chunk)
#define H5Pset_chunk_cache (::ranktune::io::h5::api().Pset_chunk_cache)
#define H5Pset_deflate (::ranktune::io::h5::api().Pset_deflate)
#define H5Pset_fill_time (::ranktune::io::h5::api().Pset_fill_time)
#define H5Pset_libver_bounds (::ranktune::io::h5::api().Pset_libver_bounds)
#define H5Pset_metadata_read_attempts (::ranktune::io::h5::api().Pset_metadata_read_attempts)
#define H5Pset_shuffle (::ranktune::io::h5::api().Pset_shuffle)
#define H5Sclose (::ranktune::io::h5::api().Sclose)
#define H5Screate (::ranktune::io::h5::api().Screate)
#define H5Screate_simple (::ranktune::io::h5::api().Screate_simple)
#define H5Sget_simple_extent_dims (::ranktune::io::h5::api().Sget_simple_extent_dims)
#define H5Sget_simple_extent_ndims (::ranktune::io::h5::api().Sget_simple_extent_ndims)
#define H5Sget_simple_extent_npoints (::ranktune::io::h5::api().Sget_simple_extent_npoints)
#define H5Sselect_elements (::ranktune::io::h5::api().Sselect_elements)
#define H5Sselect_hyperslab (::ranktune::io::h5::api().Sselect_hyperslab)
#define H5Tclose (::ranktune::io::h5::api().Tclose)
#define H5Tcopy (::ranktune::io::h5::api().Tcopy)
#define H5Tcreate (::ranktune::io::h5::api().Tcreate)
#define H5Tget_class (::ranktune::io::h5::api().Tget_class)
#define H5Tget_member_index (::ranktune::io::h5::api().Tget_member_index)
#define H5Tget_member_name (::ranktune::io::h5::api().Tget_member_name)
#define H5Tget_member_type (::ranktune::io::h5::api().Tget_member_type)
#define H5Tget_nmembers (::ranktune::io::h5::api().Tget_nmembers)
#define H5Tget_size (::ranktune::io::h5::api().Tget_size)
#define H5Tinsert (::ranktune::io::h5::api().Tinsert)
#define H5Tis_variable_str (::ranktune::io::h5::api().Tis_variable_str)
#define H5Tset_size (::ranktune::io::h5::api().Tset_size)
#define H5Tset_strpad (::ranktune::io::h5::api().Tset_strpad)
#define H5check_version (::ranktune::io::h5::api().check_version)
#define H5free_memory (::ranktune::io::h5::api().free_memory)
#define H5get_libversion (::ranktune::io::h5::api().get_libversion)
#define H5open (::ranktune::io::h5::api().open)
#define H5T_C_S1_g (*::ranktune::io::h5::api().T_C_S1_g)
#define H5T_NATIVE_DOUBLE_g (*::ranktune::io::h5::api().T_NATIVE_DOUBLE_g)
#define H5T_NATIVE_INT_g (*::ranktune::io::h5::api().T_NATIVE_INT_g)
#define H5T_NATIVE_INT32_g (*::ranktune::io::h5::api().T_NATIVE_INT32_g)
#define H5T_NATIVE_INT64_g (*::ranktune::io::h5::api().T_NATIVE_INT64_g)
#define H5T_NATIVE_LLONG_g (*::ranktune::io::h5::api().T_NATIVE_LLONG_g)
#define H5T_NATIVE_UINT8_g (*::ranktune::io::h5::api().T_NATIVE_UINT8_g)
#define H5T_STD_I32LE_g (*::ranktune::io::h5::api().T_STD_I32LE_g)
#define H5T_STD_I64LE_g (*::ranktune::io::h5::api().T_STD_I64LE_g)
#define H5P_CLS_DATASET_ACCESS_ID_g (*::ranktune::io::h5::api().P_CLS_DATASET_ACCESS_ID_g)
#define H5P_CLS_DATASET_CREATE_ID_g (*::ranktune::io::h5::api().P_CLS_DATASET_CREATE_ID_g)
#define H5P_CLS_FILE_ACCESS_ID_g (*::ranktune::io::h5::api().P_CLS_FILE_ACCESS_ID_g)
