#pragma once
/// Counter-based random numbers for training: every draw is a pure function of its keys, so
/// a stream needs no state to checkpoint, CPU and GPU draw the same numbers, and the members
/// of a gang agree without talking. Usable from CUDA device code.

#include <cstdint>

#if defined(__CUDACC__)
#define RANKTUNE_HD __host__ __device__ inline
#else
#define RANKTUNE_HD inline
#endif

namespace ranktune::train {

/// splitmix64's finalizer: a bijective 64-bit mixer.
RANKTUNE_HD std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A key derived from a parent key and one more component; chaining keeps (a, b) and (b, a)
/// apart.
RANKTUNE_HD std::uint64_t derive_key(std::uint64_t key, std::uint64_t component) {
  return mix64(key ^ mix64(component));
}

/// A uniform float in [0, 1) from 24 random bits (exactly representable).
RANKTUNE_HD float unit_float(std::uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

/// A uniform integer in [0, n) (Lemire's multiply-shift; the bias is below 2^-32 for the
/// n used here).
RANKTUNE_HD std::uint64_t below(std::uint64_t bits, std::uint64_t n) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(bits, n);
#else
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(bits) * n) >> 64);
#endif
}

/// A sequential stream over a key: draw i is mix64(key + i).
class CounterStream {
 public:
  explicit CounterStream(std::uint64_t key) : key_(key) {}
  std::uint64_t next() { return mix64(key_ + counter_++); }

 private:
  std::uint64_t key_;
  std::uint64_t counter_ = 0;
};

}  // namespace ranktune::train
