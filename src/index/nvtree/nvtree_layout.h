// index/nvtree/nvtree_layout.h — the persistent layout of NV-Tree (Yang et al., FAST'15) as
// the WORT and FPTree papers measured it: only the leaves live in the pool, as a singly
// linked list in key order; the inner nodes (PLNs and INs) are DRAM, rebuilt from the list.
//
// Blocks:
//   Anchor (64 B, the pool root)    magic, head of the leaf list, capacities, spare leaf
//   Leaf   (64 B + cap x 24 B)      append-only log of insert / delete entries
//   KeyBlock (8 B + key bytes)      a key longer than 8 bytes
//
// Leaf, 64-aligned:
//
//   line 0   +-----------+-----------+----------+--------------------------+
//            | count     | next      | capacity | reserved                 |
//            +-----------+-----------+----------+--------------------------+
//             0           8           16         20                       64
//   line 1.. +------------------+------------------+-- ... --+
//            | entry[0] (24 B)  | entry[1]         |         |  appended in order; the
//            +------------------+------------------+-- ... --+  newest entry of a key wins
//
//   count  entries [0, count) are valid: the commit word of every insert, update and
//          remove (an 8-byte counter: the public reimplementation's 8-bit counter wrapped
//          at 256 in 300-entry leaves, see README.md).
//   next   the next leaf in key order, 0 at the end; a leaf split commits by storing the
//          first new leaf into its predecessor's `next` (or the anchor's `head`).
//
// Entry: the key form of wbtree (prefix, meta) with the delete flag in meta's top bit:
//
//   +------------------------+---+--------------------+------------------------+
//   | prefix: first 8 key    | D | length 0..8 or     | value (0 in a delete)  |
//   | bytes big-endian, zero |   | KeyBlock offset    |                        |
//   +------------------------+---+--------------------+------------------------+
//   D = 1: a delete entry (the key is absent from here on, until a newer insert).
//   Several entries of one key in one leaf share its key block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace wort::nvtree {

inline constexpr std::uint64_t kDeleteFlag = 1ull << 63;  //!< meta bit: delete entry
inline constexpr std::uint64_t kMaxInline = 8;            //!< keys up to 8 bytes inline
inline constexpr unsigned kDefaultLeafCapacity = 32;      //!< FPTree paper's NV-Tree: 32
inline constexpr unsigned kDefaultPlnCapacity = 128;      //!< FPTree paper's NV-Tree: 128
inline constexpr unsigned kDefaultInFanout = 128;
inline constexpr unsigned kMinCapacity = 4;
inline constexpr unsigned kMaxLeafCapacity = 4096;

//! One log entry; 24 bytes.
struct Entry {
  std::uint64_t prefix;  //!< first <= 8 key bytes, big-endian, zero padded
  std::uint64_t meta;    //!< kDeleteFlag | (<= 8: inline length; else KeyBlock offset)
  std::uint64_t value;
};
static_assert(std::is_standard_layout_v<Entry> && sizeof(Entry) == 24);

struct Leaf {
  std::uint64_t count;      //!< the commit word: entries [0, count) are valid
  std::uint64_t next;       //!< next leaf in key order (a split's commit word), 0 = last
  std::uint32_t capacity;   //!< entries the block holds; written once
  std::uint32_t reserved0;
  std::uint64_t reserved[5];
  Entry* entries() noexcept { return reinterpret_cast<Entry*>(this + 1); }
  const Entry* entries() const noexcept { return reinterpret_cast<const Entry*>(this + 1); }
};
static_assert(std::is_standard_layout_v<Leaf> && sizeof(Leaf) == 64);
static_assert(offsetof(Leaf, count) == 0 && offsetof(Leaf, next) == 8);

constexpr std::size_t leaf_bytes(unsigned cap) { return sizeof(Leaf) + cap * sizeof(Entry); }

struct KeyBlock {
  std::uint64_t len;  //!< key bytes that follow
};

struct Anchor {
  std::uint64_t magic;          //!< kAnchorMagic
  std::uint64_t head;           //!< first leaf (commit word of the first insert and of a
                                //!< split of the first leaf), 0 = empty tree
  std::uint32_t leaf_capacity;  //!< entries per leaf
  std::uint32_t pln_capacity;   //!< leaves per parent-of-leaf node (DRAM)
  std::uint32_t in_fanout;      //!< children per inner node (DRAM)
  std::uint32_t rebuild_fill;   //!< leaves per PLN after a rebuild
  std::uint64_t spare;          //!< a leaf block held in reserve (0: none), so that a
                                //!< remove in a full leaf never fails for lack of space
  std::uint64_t reserved[3];
};
static_assert(std::is_standard_layout_v<Anchor> && sizeof(Anchor) == 64);
static_assert(offsetof(Anchor, head) == 8 && offsetof(Anchor, spare) == 32);

inline constexpr std::uint64_t kAnchorMagic = 0x3145455254564e35ull;  // "5NVTREE1"

}  // namespace wort::nvtree
