// index/kit/radix_key.h — partial keys of arbitrary byte-string keys, for radix trees.
//
// A key of n bytes is a string of n * 8 / Bits partial keys, most significant first (so the
// order of partial-key strings is the byte order of keys, and 8-byte big-endian integer keys
// sort numerically). Position count(k) is "the key ends here": a radix tree that lets one
// key be a prefix of another gives it its own slot, sorting before every partial key.
//
// Header-only and free of any index's layout: WORT uses it with Bits = 4, the ART engine
// (src/index/art_engine, for WOART / ART+CoW) with Bits = 8. It is part of the kit, which
// indexes link without depending on each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wort/key.h"

namespace wort::radix {

template <unsigned Bits>
struct Partials {
  static_assert(Bits == 1 || Bits == 2 || Bits == 4 || Bits == 8, "Bits must divide a byte");
  static constexpr unsigned kPerByte = 8 / Bits;
  static constexpr unsigned kMask = (1u << Bits) - 1;

  //! Number of partial keys in `k`.
  static std::size_t count(Key k) noexcept { return k.size() * kPerByte; }

  //! Partial key at position `i` (precondition: i < count(k)).
  static unsigned at(Key k, std::size_t i) noexcept {
    const unsigned byte = static_cast<std::uint8_t>(k[i / kPerByte]);
    if constexpr (Bits == 8) {
      return byte;
    } else {
      const unsigned shift = 8 - Bits * (static_cast<unsigned>(i % kPerByte) + 1);
      return (byte >> shift) & kMask;
    }
  }

  //! First position >= `from` at which `a` and `b` differ, where running out of partial keys
  //! counts as differing; returns count(a) if a == b. Precondition: both have >= `from`
  //! partial keys, or `from` is at most the shorter count.
  static std::size_t mismatch(Key a, Key b, std::size_t from) noexcept {
    const std::size_t limit = count(a) < count(b) ? count(a) : count(b);
    std::size_t i = from;
    // Partial keys up to the next byte boundary one at a time, then whole bytes.
    while (i < limit && i % kPerByte != 0) {
      if (at(a, i) != at(b, i)) return i;
      ++i;
    }
    std::size_t byte = i / kPerByte;
    const std::size_t bytes = limit / kPerByte;
    while (byte + 8 <= bytes) {
      std::uint64_t x, y;
      std::memcpy(&x, a.data() + byte, 8);
      std::memcpy(&y, b.data() + byte, 8);
      if (x != y) break;
      byte += 8;
    }
    while (byte < bytes && a[byte] == b[byte]) ++byte;
    for (i = byte * kPerByte; i < limit; ++i)
      if (at(a, i) != at(b, i)) return i;
    return limit;
  }
};

}  // namespace wort::radix
