// index/wort/wort_layout.h — the persistent layout of WORT (Lee et al., FAST'17, §3.1–3.4).
//
// Three kinds of pool blocks, linked by 8-byte child words:
//
//   Anchor (64 B, the pool root)        one slot, `root`, the parent of the root node
//   Node   (8 + 8 + 16 x 8 + 8 = 152 B) header, end-of-key slot, 16 child slots, lock word
//                                       (the 192-byte size class: the lock word is free)
//   Leaf   (16 B + key bytes)           value, key length, key bytes
//
// A child word is 0 (empty), a node offset (64-aligned, low bit 0) or a leaf offset with
// the low bit set (leaves are 16-aligned, so the bit is free):
//
//   63                                                  4 3 2 1 0
//   +----------------------------------------------------+-------+-+
//   |                 block offset from the pool base               |L|   L = 1: leaf
//   +---------------------------------------------------------------+-+
//
// Node (4-bit spans; with kSpanBits = 8 the child array has 256 slots):
//
//   byte 0        8             16            24                 136     144     152
//   +-------------+-------------+-------------+------ ... -------+-------+-------+
//   | header word | end_child   | child[0]    |                  |child15| lock  |
//   +-------------+-------------+-------------+------ ... -------+-------+-------+
//   cache line 0 holds header, end_child, child[0..5]; lines 1 and 2 the rest (line 2:
//   child[14], child[15] and the lock word).
//
//   The persistent image is bytes [0, 144) (kNodeImageBytes): what make_node copies and
//   writes back. `lock` is the node's writers' lock (kit::gen_lock, index/kit/gen_lock.h):
//   volatile state tagged with the pool's open generation, stored only with
//   pm::cas_volatile / pm::store_volatile*, never written back on purpose, so a restart
//   never sees it held whatever a crash left in PM. A fresh node's lock word is set to 0
//   (free) before the node is published when the reused block held anything else there.
//
// Header word: one failure-atomic 8-byte store rewrites all three fields at once (the
// paper's "compression header"; SplitCmp, RecoverHeader and the remove-merge store it):
//
//   63                                  28 27           14 13            0
//   +-------------------------------------+---------------+---------------+
//   | prefix array: 36 bits = 9 partial   | prefix_len    | depth         |
//   | keys of 4 bits (4 of 8 bits), first | (14 bits)     | (14 bits)     |
//   | partial key in the lowest bits      |               |               |
//   +-------------------------------------+---------------+---------------+
//
//   depth       position (in partial keys, from 0) of the first partial key this node's
//               compressed path covers; a node reached through slot i of a node whose branch
//               position is b has depth b + 1, the root node has depth 0.
//   prefix_len  how many partial keys are collapsed into this node (path compression).
//   prefix      the first min(prefix_len, 9) of them (hybrid compression: longer prefixes
//               are checked in full at the leaf, or against a leaf below when inserting).
//   The node branches on the partial key at position depth + prefix_len (its "branch
//   position"); SplitCmp and the remove-merge both keep depth + prefix_len unchanged, which
//   is what makes an interrupted one detectable (depth disagrees) and repairable.
//
//   14 bits hold depths up to 16383 partial keys: keys up to kMaxKeyLength = 4096 bytes
//   have 8192 four-bit partial keys, plus one position for "the key ends here".
//
// end_child: the leaf of the one key (if any) whose partial keys end exactly at the branch
// position, i.e. a key that is a proper prefix of every other key below. It sorts before
// child[0] (a prefix sorts first), so in-order traversal is end_child, child[0..15].
//
// Leaf:
//   byte 0        8          12         16
//   +-------------+----------+----------+-------------------------+
//   | value (u64) | key_len  | fresh    | key bytes (key_len)     |
//   +-------------+----------+----------+-------------------------+
//   `value` is the upsert commit word. A leaf is written once before it is published and
//   never changes afterwards except for `value` and `fresh`.
//   `fresh` (fresh_mark(generation)) is written with the leaf's image: the insert that
//   publishes it commits with a cached store (pm::publish), which other threads may read
//   before it is durable. After the commit's fence the inserting writer clears it with a
//   volatile store (pm::store_volatile: never written back on purpose); a reader that meets
//   the mark writes back the slot words above the leaf and fences before it uses the leaf
//   (README, "No dirty reads"). The mark is the pool's open generation (its low 32 bits,
//   never 0): one left in PM by an earlier session (a crash, or a clean exit before the
//   cleared line was evicted) names an older generation and means nothing — the leaf is
//   reachable after the restart, so its commit is durable — and is just cleared. key_len and
//   fresh are one 8-byte word, so a lookup compares both with the one compare it made of
//   key_len.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "wort/key.h"

#ifndef WORT_SPAN_BITS
#define WORT_SPAN_BITS 4  // the paper's evaluation: 4-bit partial keys, 16 children
#endif

namespace wort::wort_index {

//! Bits per partial key (compile-time: 4 as in the paper, 8 to try a 256-way node).
inline constexpr unsigned kSpanBits = WORT_SPAN_BITS;
static_assert(kSpanBits == 4 || kSpanBits == 8, "partial keys must divide a byte");
//! Children per node.
inline constexpr unsigned kFanout = 1u << kSpanBits;

//! Header word field widths (see the diagram above).
inline constexpr unsigned kDepthBits = 14;
inline constexpr unsigned kPrefixLenBits = 14;
inline constexpr unsigned kPrefixBits = 64 - kDepthBits - kPrefixLenBits;
//! Partial keys the header's prefix array holds.
inline constexpr unsigned kPrefixSlots = kPrefixBits / kSpanBits;
//! Largest depth or prefix length a header can hold.
inline constexpr std::uint32_t kMaxDepth = (1u << kDepthBits) - 1;
static_assert(kMaxKeyLength * 8 / kSpanBits + 1 <= kMaxDepth,
              "header depth must cover every partial key of the longest key");
static_assert(kPrefixSlots >= 4, "the prefix array must hold a few partial keys");

//! Low bit of a child word that marks a leaf.
inline constexpr std::uint64_t kLeafTag = 1;

//! An inner node. Allocated 64-aligned; never moves.
struct Node {
  std::uint64_t header;            //!< packed depth / prefix_len / prefix (one 8-byte store)
  std::uint64_t end_child;         //!< leaf whose key ends at the branch position, or 0
  std::uint64_t child[kFanout];    //!< child words indexed by the partial key
  std::uint64_t lock;              //!< writers' lock (kit::gen_lock): volatile, never flushed
};
static_assert(std::is_standard_layout_v<Node>);
static_assert(offsetof(Node, header) == 0 && offsetof(Node, end_child) == 8);
static_assert(offsetof(Node, child) == 16);
//! Bytes of a node that are persistent (header, end_child, children): the lock word follows.
inline constexpr std::size_t kNodeImageBytes = offsetof(Node, lock);
static_assert(kNodeImageBytes == 16 + 8 * kFanout && sizeof(Node) == kNodeImageBytes + 8);
static_assert(kSpanBits != 4 || kNodeImageBytes == 144, "4-bit node: 144 bytes, 3 cache lines");
static_assert(kSpanBits != 4 || sizeof(Node) <= 192,
              "the lock word fits in the 192-byte block a 144-byte node already takes");

//! The fixed part of a leaf; the key bytes follow it.
struct LeafHeader {
  std::uint64_t value;     //!< the upsert commit word
  std::uint32_t key_len;   //!< bytes of key that follow
  std::uint32_t fresh;     //!< fresh_mark(gen) until the publishing commit is durable, then 0
};
//! LeafHeader::fresh of a leaf published in pool generation `gen` whose publishing commit
//! may not be durable yet: the generation's low 32 bits, never 0.
inline constexpr std::uint32_t fresh_mark(std::uint64_t gen) noexcept {
  return static_cast<std::uint32_t>(gen) != 0 ? static_cast<std::uint32_t>(gen) : 1u << 31;
}
static_assert(std::is_standard_layout_v<LeafHeader>);
static_assert(offsetof(LeafHeader, value) == 0 && sizeof(LeafHeader) == 16);
static_assert(offsetof(LeafHeader, key_len) == 8 && offsetof(LeafHeader, fresh) == 12,
              "key_len and fresh are one 8-byte word (little-endian: fresh in the high half)");

//! The block the pool's root offset names.
struct Anchor {
  std::uint64_t magic;      //!< kAnchorMagic
  std::uint64_t span_bits;  //!< kSpanBits of the build that created it
  std::uint64_t root;       //!< child word of the whole tree: 0, a leaf or the root node
  std::uint64_t reserved[5];
};
static_assert(std::is_standard_layout_v<Anchor> && sizeof(Anchor) == 64);
static_assert(offsetof(Anchor, root) == 16);

inline constexpr std::uint64_t kAnchorMagic = 0x31544e4f48434e41ull;  // "ANCHONT1"

}  // namespace wort::wort_index
