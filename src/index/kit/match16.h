// index/kit/match16.h — compare one byte against 16 partial keys at once (NODE16 search).
// SSE2 is part of x86-64; other targets get the scalar loop.
#pragma once

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace wort::kit {

//! Bit i set if keys[i] == b (16 bits).
inline std::uint32_t match16(const std::uint8_t* keys, std::uint8_t b) noexcept {
#if defined(__SSE2__)
  const __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(keys));
  const __m128i eq = _mm_cmpeq_epi8(k, _mm_set1_epi8(static_cast<char>(b)));
  return static_cast<std::uint32_t>(_mm_movemask_epi8(eq));
#else
  std::uint32_t m = 0;
  for (unsigned i = 0; i < 16; ++i) m |= std::uint32_t{keys[i] == b} << i;
  return m;
#endif
}

}  // namespace wort::kit
