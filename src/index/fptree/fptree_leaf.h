// index/fptree/fptree_leaf.h — a view of one persistent leaf (fptree_layout.h): field
// access, the fingerprint-filtered key search (Alg. 1's in-leaf loop), and writing a slot
// before its bitmap commit. The view owns nothing; every leaf of a tree shares one geometry.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "index/fptree/fptree_layout.h"
#include "wort/key.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace wort::fptree_index {

//! No slot.
inline constexpr int kNoSlot = -1;

class LeafRef {
 public:
  LeafRef(std::byte* base, std::uint64_t off, const LeafGeometry& g) noexcept
      : base_(base), p_(base + off), g_(&g) {}

  std::uint64_t offset() const noexcept { return static_cast<std::uint64_t>(p_ - base_); }
  const LeafGeometry& geometry() const noexcept { return *g_; }

  std::uint64_t* bitmap_word() const noexcept { return word(LeafGeometry::kBitmapOff); }
  std::uint64_t* next_word() const noexcept { return word(g_->next_off); }
  std::uint64_t* inline_word() const noexcept { return word(g_->inline_off); }
  std::uint64_t* lock_word() const noexcept { return word(g_->lock_off); }
  std::uint8_t* fingerprints() const noexcept {
    return reinterpret_cast<std::uint8_t*>(p_ + LeafGeometry::kFingerprintOff);
  }
  Slot* slot(int i) const noexcept { return reinterpret_cast<Slot*>(p_ + g_->slots_off) + i; }

  std::uint64_t bitmap() const noexcept { return *bitmap_word(); }
  std::uint64_t next() const noexcept { return *next_word(); }
  bool full() const noexcept { return bitmap() == g_->mask(); }
  int count() const noexcept { return std::popcount(bitmap()); }
  bool is_inline(int i) const noexcept { return (*inline_word() >> i) & 1; }

  //! The key of slot i (valid or a slot being written). For a non-inline slot the key block
  //! must be a checked block of this pool.
  Key key(int i) const noexcept {
    const Slot* s = slot(i);
    if (is_inline(i)) return {reinterpret_cast<const std::byte*>(&s->key), 8};
    const auto* kb = reinterpret_cast<const KeyBlock*>(base_ + s->key);
    return {reinterpret_cast<const std::byte*>(kb + 1), static_cast<std::size_t>(kb->length)};
  }

  //! Slots whose fingerprint equals fp (bit i), among the first `capacity` bytes.
  std::uint64_t fingerprint_hits(std::uint8_t fp) const noexcept;

  // --- lock-free readers (FPTree::lookup, scans): every word a writer may store under
  // them is read with one relaxed atomic load; the reader validates the leaf's version
  // afterwards (FPTree::leaf_unchanged) and only then follows a key word.
  static std::uint64_t load(const std::uint64_t* w) noexcept {
    return __atomic_load_n(w, __ATOMIC_RELAXED);
  }
  //! fingerprint_hits for a reader racing writers: the SSE2 loads (a torn read is caught
  //! by the validation); under ThreadSanitizer one atomic byte load per slot instead.
  std::uint64_t fingerprint_hits_sync(std::uint8_t fp) const noexcept {
#if defined(__SANITIZE_THREAD__)
    const std::uint8_t* f = fingerprints();
    std::uint64_t hits = 0;
    for (std::uint32_t i = 0; i < g_->capacity; ++i)
      hits |= std::uint64_t{__atomic_load_n(f + i, __ATOMIC_RELAXED) == fp} << i;
    return hits;
#else
    return fingerprint_hits(fp);
#endif
  }
  //! The key in the key block at `off` (a validated key word of this pool).
  Key block_key(std::uint64_t off) const noexcept {
    const auto* kb = reinterpret_cast<const KeyBlock*>(base_ + off);
    return {reinterpret_cast<const std::byte*>(kb + 1), static_cast<std::size_t>(kb->length)};
  }
  bool block_key_equals(std::uint64_t off, Key k) const noexcept {
    const Key s = block_key(off);
    return s.size() == k.size() && (k.empty() || std::memcmp(s.data(), k.data(), k.size()) == 0);
  }

  //! The valid slot holding `k` (fingerprint `fp`), or kNoSlot.
  int find(Key k, std::uint8_t fp) const noexcept {
    for (std::uint64_t m = fingerprint_hits(fp) & bitmap(); m != 0; m &= m - 1) {
      const int i = std::countr_zero(m);
      const Key s = key(i);
      if (s.size() == k.size() && (k.empty() || std::memcmp(s.data(), k.data(), k.size()) == 0))
        return i;
    }
    return kNoSlot;
  }

  //! A free slot (precondition: !full()).
  int first_free() const noexcept { return std::countr_zero(~bitmap() & g_->mask()); }

 private:
  std::uint64_t* word(std::uint32_t off) const noexcept {
    return reinterpret_cast<std::uint64_t*>(p_ + off);
  }

  std::byte* base_;
  std::byte* p_;
  const LeafGeometry* g_;
};

inline std::uint64_t LeafRef::fingerprint_hits(std::uint8_t fp) const noexcept {
  const std::uint8_t* f = fingerprints();
  std::uint64_t hits = 0;
#if defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
  // (ThreadSanitizer: the loop below, which reads only the C fingerprints; the groups read
  // past them into the leaf's next, inline map and lock words, which other threads write,
  // and the masked-off bytes are a race to it.)
  // Always four 16-byte groups, unrolled (no loop on the capacity): 64 bytes from the first
  // fingerprint end at leaf byte 72, inside every leaf (the smallest is 80 bytes); the bits
  // past C are masked off below, and a reader racing a writer validates afterwards.
  static_assert(LeafGeometry::kFingerprintOff + kMaxLeafCapacity <=
                LeafGeometry::of(kMinLeafCapacity).bytes);
  const __m128i want = _mm_set1_epi8(static_cast<char>(fp));
  const auto group = [&](int i) noexcept {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(f + i));
    return static_cast<std::uint64_t>(
        static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, want))));
  };
  hits = group(0) | group(16) << 16 | group(32) << 32 | group(48) << 48;
#else
  for (std::uint32_t i = 0; i < g_->capacity; ++i) hits |= std::uint64_t{f[i] == fp} << i;
#endif
  return hits & g_->mask();
}

}  // namespace wort::fptree_index
