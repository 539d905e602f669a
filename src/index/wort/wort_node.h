// index/wort/wort_node.h — WORT inner nodes: header packing, child words, node creation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "index/kit/radix_key.h"
#include "index/wort/wort_layout.h"
#include "index/wort/wort_leaf.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::wort_index {

//! Partial-key arithmetic at this build's span.
using Partial = radix::Partials<kSpanBits>;

//! The three fields of a node header word.
struct HeaderFields {
  std::uint32_t depth = 0;       //!< first partial-key position the node's prefix covers
  std::uint32_t prefix_len = 0;  //!< collapsed partial keys
  std::uint64_t prefix = 0;      //!< the prefix array bits (kPrefixSlots partial keys)

  //! The position the node branches on; invariant under split, merge and repair.
  std::uint32_t branch() const noexcept { return depth + prefix_len; }
  //! Partial keys of the prefix the header itself holds.
  std::uint32_t stored() const noexcept {
    return prefix_len < kPrefixSlots ? prefix_len : kPrefixSlots;
  }
  //! Stored prefix partial key `i` (< stored()).
  unsigned prefix_at(unsigned i) const noexcept {
    return static_cast<unsigned>(prefix >> (i * kSpanBits)) & ((1u << kSpanBits) - 1);
  }
};

//! Unpacks a header word.
inline HeaderFields decode_header(std::uint64_t w) noexcept {
  HeaderFields h;
  h.depth = static_cast<std::uint32_t>(w & kMaxDepth);
  h.prefix_len = static_cast<std::uint32_t>((w >> kDepthBits) & ((1u << kPrefixLenBits) - 1));
  h.prefix = w >> (kDepthBits + kPrefixLenBits);
  return h;
}

//! Packs a header for a node at `depth` collapsing `prefix_len` partial keys, taking the
//! stored part of the prefix from `source` (a key of the node's subtree, or the key being
//! inserted, which has at least depth + prefix_len partial keys).
std::uint64_t make_header(std::uint32_t depth, std::uint32_t prefix_len, Key source) noexcept;

//! One atomic acquire load of a pool word a writer may change under a lock-free reader (a
//! child word, a node header, a leaf's value): a plain load on x86. The acquire pairs with
//! the release of the commit that published the word (under TSan, where pm::commit_nt is a
//! release store), so the reader sees the block the word names as it was written.
inline std::uint64_t load(const std::uint64_t* p) noexcept {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

inline bool is_leaf(std::uint64_t word) noexcept { return (word & kLeafTag) != 0; }
inline std::uint64_t block_of(std::uint64_t word) noexcept { return word & ~kLeafTag; }

//! Read-only view of the pool's blocks by child word.
class Blocks {
 public:
  explicit Blocks(std::byte* base) noexcept : base_(base) {}
  Node* node(std::uint64_t word) const noexcept { return reinterpret_cast<Node*>(base_ + word); }
  LeafHeader* leaf(std::uint64_t word) const noexcept {
    return reinterpret_cast<LeafHeader*>(base_ + block_of(word));
  }
  std::byte* base() const noexcept { return base_; }
  //! Child word of a node.
  std::uint64_t word_of(const Node* n) const noexcept {
    return static_cast<std::uint64_t>(reinterpret_cast<const std::byte*>(n) - base_);
  }
  //! Word of the leftmost (smallest-key) leaf below a non-empty child word (each child word
  //! read with one atomic load: readers call it too; 0 only below a node with no children,
  //! which a reachable node never is).
  std::uint64_t leftmost_leaf(std::uint64_t word) const noexcept;

 private:
  std::byte* base_;
};

//! The slot of `n` that a key with `count` partial keys takes at branch position `b`.
inline std::uint64_t* slot_for(Node* n, Key k, std::uint32_t b) noexcept {
  return Partial::count(k) == b ? &n->end_child : &n->child[Partial::at(k, b)];
}

//! Non-empty slots of a node (end_child included; each read with one atomic load: a
//! writer's lock-free descent calls it, and decides again under the node's lock).
unsigned child_count(const Node* n) noexcept;

//! Slot `i` of a node in key order: 0 is end_child, 1 + p is child[p].
inline std::uint64_t* ordered_slot(Node* n, unsigned i) noexcept {
  return i == 0 ? &n->end_child : &n->child[i - 1];
}
inline const std::uint64_t* ordered_slot(const Node* n, unsigned i) noexcept {
  return i == 0 ? &n->end_child : &n->child[i - 1];
}
inline constexpr unsigned kOrderedSlots = kFanout + 1;

//! Allocates a node and writes `image` into it, storing and writing back only the cache
//! lines whose bytes differ (pm::copy_changed: in a block of a never-used chunk, which reads
//! zero, a new node's header and two children fill 1–2 of its 3 lines); not fenced. Its
//! lock word is set to `lock` (volatile, never written back): an insert passes the held
//! value of its generation, so the node is born locked and no other writer commits below
//! it before its publishing commit is durable (README, "No dirty reads").
//! out_of_space leaves the pool unchanged.
Status make_node(Pool& pool, const Node& image, std::uint64_t lock, std::uint64_t* word) noexcept;

}  // namespace wort::wort_index

namespace wort::wort_index {

//! Up to 16 partial keys of `k` from position `from` (< Partial::count(k)) on, the first in
//! the top 4 bits, zero past the key's end: one 8-byte load where the key has 8 bytes from
//! there on (or in all: its last 8 bytes, shifted), else a byte loop (keys under 8 bytes).
//! For 4-bit partial keys only (match_stored_prefix's word compare).
inline std::uint64_t partials_from(Key k, std::size_t from) noexcept {
  const std::size_t byte = from / 2;
  const std::size_t size = k.size();
  std::uint64_t x = 0;
  if (size >= 8) {
    const std::size_t at = byte + 8 <= size ? byte : size - 8;
    std::memcpy(&x, k.data() + at, 8);
    x = __builtin_bswap64(x) << (8 * (byte - at));
  } else {
    for (std::size_t i = byte; i < size; ++i)
      x |= static_cast<std::uint64_t>(k[i]) << (56 - 8 * (i - byte));
  }
  return x << (4 * (from % 2));
}

//! A header's prefix array (partial key i in bits 4i..4i+3) with the partial keys in key
//! order: partial key i in bits 60-4i..63-4i, as partials_from gives a key's.
inline std::uint64_t prefix_in_key_order(std::uint64_t prefix) noexcept {
  const std::uint64_t x = __builtin_bswap64(prefix);  // byte j -> byte 7-j
  constexpr std::uint64_t kLow = 0x0f0f0f0f0f0f0f0full;
  return ((x >> 4) & kLow) | ((x & kLow) << 4);      // then the two nibbles of each byte
}

//! How many of the prefix partial keys the header stores `k` matches, starting at the
//! header's depth (stops where `k` ends). Equal to h.stored() when all match. With 4-bit
//! partial keys one word compare: the key's partial keys from the depth on against the
//! prefix array, the first difference from the count of leading zero bits.
inline std::uint32_t match_stored_prefix(const HeaderFields& h, Key k) noexcept {
  const std::size_t n = Partial::count(k);
  const std::uint32_t stored = h.stored();
  if constexpr (kSpanBits == 4) {
    if (stored == 0) return 0;
    if (h.depth >= n) return 0;
    const std::uint64_t diff = partials_from(k, h.depth) ^ prefix_in_key_order(h.prefix);
    std::size_t m = diff == 0 ? 16 : static_cast<std::size_t>(__builtin_clzll(diff)) / 4;
    if (m > n - h.depth) m = n - h.depth;
    return m < stored ? static_cast<std::uint32_t>(m) : stored;
  } else {
    for (std::uint32_t i = 0; i < stored; ++i) {
      if (h.depth + i >= n || Partial::at(k, h.depth + i) != h.prefix_at(i)) return i;
    }
    return stored;
  }
}

}  // namespace wort::wort_index
