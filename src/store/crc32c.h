// store/crc32c.h — CRC-32C (Castagnoli), the checksum of every value blob. The SSE4.2 crc32
// instruction when the CPU has it (chosen once, at the first call), else a table.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wort::store {

//! Extends `crc` (0 to start) over [p, p+n): the standard CRC-32C (initial and final
//! inversion inside), so crc32c(crc32c(0, a), b) == crc32c(0, a followed by b).
std::uint32_t crc32c(std::uint32_t crc, const void* p, std::size_t n) noexcept;

//! The two implementations, for the test that compares them.
std::uint32_t crc32c_portable(std::uint32_t crc, const void* p, std::size_t n) noexcept;
//! Only where crc32c_has_sse42().
std::uint32_t crc32c_sse42(std::uint32_t crc, const void* p, std::size_t n) noexcept;
bool crc32c_has_sse42() noexcept;

}  // namespace wort::store
