// index/wbtree/wbtree_layout.h — the persistent layout of wB+Tree (Chen & Jin, VLDB'15), the
// bitmap + slot-array variant the WORT paper measured (its Table 1: 6.0 flushes per insert).
//
// Every node lives in the pool. Four kinds of blocks:
//
//   Anchor (64 B, the pool root)   magic, root word, node capacities, the split micro-log
//   Node   (128 B + cap x 24 B)    leaf (level 0) or inner node (level >= 1)
//   KeyBlock (8 B + key bytes)     a key longer than 8 bytes (leaf key or inner separator)
//
// Node, 64-aligned; capacity (<= 63) chosen at create (IndexOptions words 0 and 1):
//
//   line 0   +-----------+-------+----------+-------------------------------+
//            | bitmap    | level | capacity | reserved                      |
//            +-----------+-------+----------+-------------------------------+
//             0           8       12         16                            64
//   line 1   +------+------+------+-- ... --+------+
//            |count | s[1] | s[2] |         | s[63]|   slot array: s[1..count] are entry
//            +------+------+------+-- ... --+------+   positions in ascending key order
//   line 2.. +------------------+------------------+-- ... --+
//            | entry[0] (24 B)  | entry[1]         |         |   unsorted, append where free
//            +------------------+------------------+-- ... --+
//
//   bitmap: bit p (0..62) = entry p is valid; bit 63 = the slot array is valid. It is the
//   commit word of every insert and remove (one 8-byte store). When bit 63 is clear (a crash
//   between the slot-array invalidation and the commit) readers and writers sort the valid
//   entries themselves; the next write to the node rewrites the slot array (lazy repair).
//
// Entry: key form (16 B) + value. For a leaf, value is the user's value (the upsert commit
// word); for an inner node, the child's offset. In an inner node the first entry's key is
// a lower bound only (routing treats it as minus infinity).
//
//   +------------------------+------------------------+------------------------+
//   | prefix: first 8 key    | meta: key length 0..8  | value / child offset   |
//   | bytes big-endian, zero | (inline) or KeyBlock   |                        |
//   | padded                 | offset (> 8, 16-align) |                        |
//   +------------------------+------------------------+------------------------+
//   Ordering: prefix as u64 first (= byte order of the first 8 bytes); on a tie, two inline
//   keys compare by length (a proper prefix, e.g. "ab" vs "ab\0", sorts first); otherwise
//   the full key bytes decide. So byte-string order holds and keys of different lengths
//   never collide.
//
// Anchor micro-log (one cache line with the root): a split of node N under parent P writes
// log.node / log.parent, then the new sibling S and log.sibling; recovery redoes the rest
// (attach S to P, drop S's entries from N) — see README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace wort::wbtree {

inline constexpr unsigned kMaxCapacity = 63;          //!< entries a node can hold (bitmap)
inline constexpr unsigned kDefaultLeafCapacity = 63;  //!< FPTree paper's wBTree: 64 (bitmap limit)
inline constexpr unsigned kDefaultInnerCapacity = 32; //!< FPTree paper's wBTree: 32
inline constexpr unsigned kMinCapacity = 4;           //!< smallest node the options allow
inline constexpr std::uint64_t kSlotsValid = 1ull << 63;  //!< bitmap bit: slot array valid
inline constexpr std::uint64_t kMaxInline = 8;       //!< keys up to 8 bytes live in the entry

//! One entry; 24 bytes, 8-aligned.
struct Entry {
  std::uint64_t prefix;  //!< first <= 8 key bytes, big-endian, zero padded
  std::uint64_t meta;    //!< <= 8: inline key length; else the KeyBlock offset
  std::uint64_t value;   //!< leaf: value; inner: child node offset
};
static_assert(std::is_standard_layout_v<Entry> && sizeof(Entry) == 24);
static_assert(offsetof(Entry, value) == 16);

//! Node header line and slot line; `capacity` entries follow at offset 128.
struct Node {
  std::uint64_t bitmap;      //!< the commit word (see the diagram)
  std::uint32_t level;       //!< 0 = leaf; written once, before the node is reachable
  std::uint32_t capacity;    //!< entries the block holds; written once
  std::uint64_t reserved[6];
  std::uint8_t slot[64];     //!< slot[0] = count, slot[1..count] sorted entry positions
  // Entry entry[capacity] follows.
  Entry* entries() noexcept { return reinterpret_cast<Entry*>(this + 1); }
  const Entry* entries() const noexcept { return reinterpret_cast<const Entry*>(this + 1); }
};
static_assert(std::is_standard_layout_v<Node> && sizeof(Node) == 128);
static_assert(offsetof(Node, bitmap) == 0 && offsetof(Node, slot) == 64);

//! Bytes of a node block with `cap` entries.
constexpr std::size_t node_bytes(unsigned cap) { return sizeof(Node) + cap * sizeof(Entry); }

//! A key longer than 8 bytes; `len` bytes follow. Written once, before it is reachable.
struct KeyBlock {
  std::uint64_t len;
};
static_assert(sizeof(KeyBlock) == 8);

//! The split micro-log (see README.md: what each state means to recovery).
struct MicroLog {
  std::uint64_t node;     //!< N, the node being split (0: no split in progress)
  std::uint64_t parent;   //!< P, N's parent (room for one more entry)
  std::uint64_t sibling;  //!< S, the new right half, complete and durable (0: not yet)
};

//! The block the pool root names.
struct Anchor {
  std::uint64_t magic;           //!< kAnchorMagic
  std::uint64_t root;            //!< root node offset, 0 = empty tree
  std::uint32_t leaf_capacity;   //!< entries per leaf
  std::uint32_t inner_capacity;  //!< entries per inner node
  MicroLog log;
  std::uint64_t reserved[2];
};
static_assert(std::is_standard_layout_v<Anchor> && sizeof(Anchor) == 64);
static_assert(offsetof(Anchor, root) == 8 && offsetof(Anchor, log) == 24);
// The split's step 1 relies on it: log.node and log.parent reach PM with log.sibling's
// write-back (one line, stores in order); the anchor block is 64-aligned (allocator blocks).

inline constexpr std::uint64_t kAnchorMagic = 0x3145455254425735ull;  // "5WBTREE1"

}  // namespace wort::wbtree
