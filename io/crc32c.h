#pragma once
/// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected), the checksum of iSCSI, ext4 and
/// Btrfs. Incremental: feed the previous value back in to checksum a stream in pieces.
///   crc32c("123456789") == 0xE3069283

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ranktune::io {

/// The CRC-32C of `bytes` continued from `crc` (0 for a fresh stream). Uses the SSE4.2
/// instruction when the CPU has it, else a table-driven software loop; both give the same
/// value.
std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t crc = 0) noexcept;

/// The same value from the table-driven loop alone (what crc32c() runs without SSE4.2);
/// exposed so tests check both paths on any CPU.
std::uint32_t crc32c_software(std::span<const std::byte> bytes, std::uint32_t crc = 0) noexcept;

/// `crc` as the 8 lowercase hex digits that manifests and messages show ("e3069283").
std::string crc32c_hex(std::uint32_t crc);

}  // namespace ranktune::io
