#pragma once
/// OpenBLAS, opened when the first CPU engine is made instead of linked (io/hdf5_api.h tells
/// why: most ranks of a run never multiply a matrix on the CPU, and OpenBLAS alone is 14,000
/// relocations and a thread pool started at load, about 3 ms of CPU per process). The CPU
/// engine (train/mlp_cpu.cc) is its only caller, through the two functions bound here.

#include <cblas.h>

namespace ranktune::train {

struct Blas {
  decltype(&::cblas_sgemm) sgemm = nullptr;
  decltype(&::openblas_set_num_threads) set_num_threads = nullptr;
};

/// OpenBLAS as configured at build time (RANKTUNE_OPENBLAS_SHARED_OBJECT), opened and bound
/// on the first call (thread-safe). Throws sys::LibraryError naming the library, what failed
/// and the package to install.
const Blas& blas();

/// Whether blas() has opened the library in this process.
bool blas_loaded() noexcept;

}  // namespace ranktune::train
