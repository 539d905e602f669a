// roart/roart_leaf_array.h — leaf arrays (leaf compaction, §3.2): up to 64 leaves of one
// subtree in 8-byte slots {fingerprint 16 | leaf offset 48}, unsorted, in a block of 4, 12,
// 28 or 64 slots; a volatile bitmap of used slots rebuilt from the slots when the array's
// generation is stale. Readers never need the bitmap: they filter the slots themselves.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
#include <emmintrin.h>
#define WORT_ROART_SSE2_FP 1
#endif

#include "index/roart/roart_layout.h"
#include "index/roart/roart_node.h"
#include "wort/key.h"

namespace wort::roart {

//! One leaf of an array being built: fingerprint and leaf offset.
struct ArrayItem {
  std::uint16_t fp;
  std::uint64_t leaf;
};

//! The smallest array size (one of kArrayCaps) with room for n leaves (n <= 64).
unsigned array_cap_for(unsigned n) noexcept;
//! The size below `cap` (0 for the smallest).
unsigned smaller_cap(unsigned cap) noexcept;
//! True if `cap` is one of kArrayCaps (recovery checks the byte before following slots).
bool valid_array_cap(unsigned cap) noexcept;

//! Writes a fresh array of `cap` slots holding `items` (n <= cap) into `dst` (unreachable,
//! array_bytes(cap) long) and writes it back (no fence: the publishing commit fences).
void build_array(LeafArray* dst, unsigned cap, const ArrayItem* items, unsigned n,
                 std::uint64_t gen) noexcept;
//! Recomputes the bitmap from the slots and stamps `gen` (volatile stores).
void rebuild_array_meta(LeafArray* a, std::uint64_t gen) noexcept;
//! Used slots counted from the persistent slots (recovery, verify).
unsigned count_slots(const LeafArray* a) noexcept;
//! The used slots as items (at most a->cap), in slot order; returns how many.
unsigned array_items(const LeafArray* a, ArrayItem* out) noexcept;
//! Puts a leaf into a free slot: commit pm::publish_nt(slot) (the fence orders the new leaf).
//! Returns false if the array is full. Needs current metadata.
bool add_to_array(LeafArray* a, std::uint16_t fp, std::uint64_t leaf, NodeFlags f) noexcept;
//! Clears slot i: commit pm::commit_nt(slot, 0), then the bitmap.
void remove_from_array(LeafArray* a, unsigned i, NodeFlags f) noexcept;

//! Calls `cand(i)` for the used slots i whose fingerprint is `fp` (a superset: the slot must
//! be re-read and checked), in slot order, until it returns true; returns that i or -1.
//! Needs current metadata (the bitmap). Arrays of 4 walk the bitmap; larger ones compare the
//! 16-bit fingerprints of four slots per SSE2 step over the array's cap.
template <class F>
[[gnu::always_inline]] inline int scan_fingerprints(const LeafArray* a, std::uint16_t fp,
                                                    F&& cand) noexcept {
  const unsigned cap = a->cap;  // 4, 12, 28 or 64: a multiple of 4
#if defined(WORT_ROART_SSE2_FP)
  if (cap > 4) {
    const __m128i f = _mm_set1_epi16(static_cast<short>(fp));
    for (unsigned i = 0; i < cap; i += 4) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&a->slot[i]));
      const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&a->slot[i + 2]));
      // The fingerprint is bytes 6..7 of each slot: bit 7 of the byte mask per slot.
      std::uint32_t m =
          static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(x, f))) |
          static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(y, f))) << 16;
      for (m &= 0x80808080u; m != 0; m &= m - 1) {
        const unsigned j = i + (static_cast<unsigned>(std::countr_zero(m)) >> 3);
        if (cand(j)) return static_cast<int>(j);
      }
    }
    return -1;
  }
#endif
  for (std::uint64_t m = a->bitmap; m != 0; m &= m - 1) {
    const unsigned i = static_cast<unsigned>(std::countr_zero(m));
    if (i >= cap) break;
    if (slot_fp(a->slot[i].get()) == fp && cand(i))
      return static_cast<int>(i);
  }
  return -1;
}

}  // namespace wort::roart
