// store/crc32c.cc — CRC-32C, hardware and table implementations (see crc32c.h).
#include "store/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace wort::store {
namespace {

constexpr std::uint32_t kPoly = 0x82f63b78u;  // Castagnoli, bit-reflected

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = make_table();

using Fn = std::uint32_t (*)(std::uint32_t, const void*, std::size_t) noexcept;

Fn choose() noexcept {
  return crc32c_has_sse42() ? &crc32c_sse42 : &crc32c_portable;
}

}  // namespace

bool crc32c_has_sse42() noexcept {
#if defined(__x86_64__)
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

std::uint32_t crc32c_portable(std::uint32_t crc, const void* p, std::size_t n) noexcept {
  const auto* b = static_cast<const unsigned char*>(p);
  std::uint32_t c = ~crc;
  for (std::size_t i = 0; i < n; ++i) c = kTable[(c ^ b[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::uint32_t crc, const void* p,
                                                             std::size_t n) noexcept {
  const auto* b = static_cast<const unsigned char*>(p);
  std::uint64_t c = ~crc;
  for (; n >= 8; n -= 8, b += 8) {
    std::uint64_t w;
    std::memcpy(&w, b, 8);
    c = _mm_crc32_u64(c, w);
  }
  // The tail (under 8 bytes) in at most three steps: 4, 2, 1.
  std::uint32_t c32 = static_cast<std::uint32_t>(c);
  if (n & 4) {
    std::uint32_t w;
    std::memcpy(&w, b, 4);
    c32 = _mm_crc32_u32(c32, w);
    b += 4;
  }
  if (n & 2) {
    std::uint16_t w;
    std::memcpy(&w, b, 2);
    c32 = _mm_crc32_u16(c32, w);
    b += 2;
  }
  if (n & 1) c32 = _mm_crc32_u8(c32, *b);
  return ~c32;
}
#else
std::uint32_t crc32c_sse42(std::uint32_t crc, const void* p, std::size_t n) noexcept {
  return crc32c_portable(crc, p, n);
}
#endif

std::uint32_t crc32c(std::uint32_t crc, const void* p, std::size_t n) noexcept {
  static const Fn fn = choose();
  return fn(crc, p, n);
}

}  // namespace wort::store
