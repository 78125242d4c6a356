// CRC-32C by slicing-by-8 tables, or by the SSE4.2 instruction when the CPU has it
// (io/crc32c.h).
#include "io/crc32c.h"

#include <array>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ranktune::io {
namespace {

constexpr std::uint32_t kReflectedPoly = 0x82F63B78u;

// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes, so eight
// input bytes are folded with eight lookups instead of eight dependent shift loops.
using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? kReflectedPoly : 0u);
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  return t;
}
constexpr Tables kTables = make_tables();

std::uint32_t slice8(const unsigned char* p, std::size_t n, std::uint32_t c) noexcept {
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    // The tables assume little-endian loads, which is every host ranktune builds on.
    word ^= c;
    c = kTables[7][word & 0xFF] ^ kTables[6][(word >> 8) & 0xFF] ^ kTables[5][(word >> 16) & 0xFF] ^
        kTables[4][(word >> 24) & 0xFF] ^ kTables[3][(word >> 32) & 0xFF] ^
        kTables[2][(word >> 40) & 0xFF] ^ kTables[1][(word >> 48) & 0xFF] ^ kTables[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t hardware(const unsigned char* p, std::size_t n,
                                                          std::uint32_t c) noexcept {
  std::uint64_t c64 = c;
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c64 = _mm_crc32_u64(c64, word);
    p += 8;
    n -= 8;
  }
  c = static_cast<std::uint32_t>(c64);
  while (n--) c = _mm_crc32_u8(c, *p++);
  return c;
}
// Static initialisers may run before the CPU model is probed, hence the explicit init.
const bool kHaveSse42 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}();
#endif

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t crc) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::uint32_t c = ~crc;
#if defined(__x86_64__)
  if (kHaveSse42) return ~hardware(p, bytes.size(), c);
#endif
  return ~slice8(p, bytes.size(), c);
}

std::uint32_t crc32c_software(std::span<const std::byte> bytes, std::uint32_t crc) noexcept {
  return ~slice8(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), ~crc);
}

std::string crc32c_hex(std::uint32_t crc) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

}  // namespace ranktune::io
