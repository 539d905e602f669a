// roart/roart_layout.h — persistent layouts of ROART (Ma et al., FAST'21, §3): references,
// Zentries, leaf-array slots, the inner-node header, N4/N16/N48/N256, leaf arrays, leaves
// and the anchor. P = persistent (written back before the commit that publishes it),
// V = volatile (in the pool, written with pm::store_volatile, never written back; rebuilt
// from the persistent words when the node's generation differs from the pool's).
//
// Reference (48 bits; a plain u64 in N256, eok, anchor):
//
//   47                                              4 3    0
//   +------------------------------------------------+------+
//   |      pool offset of the block (16-aligned)      | tag  |  tag 0: inner node
//   +------------------------------------------------+------+      1: leaf, 2: leaf array
//
// Zentry (N4/N16/N48 slot, entry compression §3.3: one 8-byte store adds a child):
//
//   63       56 55      48 47                                 0
//   +----------+----------+-----------------------------------+
//   | used = 1 | key byte |            reference              |   0 = empty slot
//   +----------+----------+-----------------------------------+
//
// Leaf-array slot (leaf compaction §3.2):
//
//   63                48 47                                   0
//   +-------------------+-------------------------------------+
//   | fingerprint (16)  |        leaf offset (48)             |   0 = empty slot
//   +-------------------+-------------------------------------+
//
// Inner node, first cache line (every type):
//
//   0        8        12   13     16           24        32      40    42      44   48      64
//   +--------+--------+----+------+------------+---------+-------+-----+-------+----+-------+
//   | prefix | level  |type| pad  | generation |   eok   | lock  |count|nextpos| pad|N16 keys|
//   |  P     |  P     | P  |      | P (lazy)   |   P     |  V    |  V  |  V    |    | V     |
//   +--------+--------+----+------+------------+---------+-------+-----+-------+----+-------+
//   prefix word: { u16 len, u8 bytes[6] } — one store; `level` (the key byte the node
//   branches on) never changes, so depth + prefix.len != level exposes a prefix that an
//   interrupted split or merge left behind (readers skip it, writers repair it).
//   then: N4  zentry[4]                           (96 bytes)
//         N16 zentry[16]                          (192 bytes; keys[16] at 48 are V)
//         N48 index[256] V, zentry[48]            (704 bytes)
//         N256 child[256] (plain references)      (2112 bytes)
//
// Leaf array (576 bytes): [ type | pad | generation P | bitmap V | lock V | pad ] slot[64]
// Leaf (16 + key_len bytes): [ value 8 | key_len 4 | pad 4 | key bytes ]
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace wort::roart {

//! A tagged 48-bit reference (see the diagram above); 0 = none.
using Ref = std::uint64_t;
inline constexpr Ref kNull = 0;
inline constexpr std::uint64_t kRefMask = (std::uint64_t{1} << 48) - 1;
inline constexpr std::uint64_t kTagMask = 0xf;
enum : std::uint64_t { kTagNode = 0, kTagLeaf = 1, kTagArray = 2 };
inline bool is_leaf(Ref r) noexcept { return (r & kTagMask) == kTagLeaf; }
inline bool is_array(Ref r) noexcept { return (r & kTagMask) == kTagArray; }
inline bool is_node(Ref r) noexcept { return r != kNull && (r & kTagMask) == kTagNode; }
inline std::uint64_t ref_offset(Ref r) noexcept { return r & kRefMask & ~kTagMask; }

//! Zentry encoding (entry compression).
using Zentry = std::uint64_t;
inline constexpr Zentry kZentryUsed = std::uint64_t{1} << 56;
inline Zentry make_zentry(std::uint8_t b, Ref r) noexcept {
  return kZentryUsed | (std::uint64_t{b} << 48) | r;
}
inline std::uint8_t zentry_byte(Zentry e) noexcept { return static_cast<std::uint8_t>(e >> 48); }
inline Ref zentry_ref(Zentry e) noexcept { return e & kRefMask; }

//! Leaf-array slot encoding.
using LeafSlot = std::uint64_t;
inline LeafSlot make_slot(std::uint16_t fp, std::uint64_t leaf_off) noexcept {
  return (std::uint64_t{fp} << 48) | leaf_off;
}
inline std::uint16_t slot_fp(LeafSlot s) noexcept { return static_cast<std::uint16_t>(s >> 48); }
inline std::uint64_t slot_leaf(LeafSlot s) noexcept { return s & kRefMask; }

//! Longest key: level and prefix length are 16-bit.
inline constexpr std::size_t kMaxRoartKey = 65000;
//! Prefix bytes held in the prefix word; longer compressed paths are checked at a leaf.
inline constexpr unsigned kStoredPrefix = 6;
//! Leaves per leaf array (the paper's m).
inline constexpr unsigned kArraySlots = 64;

enum class NodeType : std::uint8_t { n4 = 1, n16 = 2, n48 = 3, n256 = 4, leaf_array = 5 };

//! The prefix word: written whole with one pm::store.
struct alignas(8) PrefixWord {
  std::uint16_t len = 0;                   //!< compressed path length below the parent
  std::uint8_t bytes[kStoredPrefix] = {};  //!< its first min(len, 6) bytes
};
static_assert(sizeof(PrefixWord) == 8 && std::is_trivially_copyable_v<PrefixWord>);

//! First 48 bytes of every inner node (see the diagram).
struct NodeBase {
  PrefixWord prefix;         //!< P: rewritten in place by a split / merge, then repaired
  std::uint32_t level;       //!< P: key position this node branches on (constant)
  NodeType type;             //!< P
  std::uint8_t pad0[3];
  std::uint64_t generation;  //!< P, lazily: the pool generation its V fields belong to
  Ref eok;                   //!< P: leaf whose key ends at `level`, or 0 (commit word)
  std::uint64_t lock;        //!< V
  std::uint16_t count;       //!< V: used entries
  std::uint16_t next_pos;    //!< V: one past the highest used slot (N4/N16/N48)
  std::uint32_t pad1;
};
static_assert(std::is_standard_layout_v<NodeBase> && sizeof(NodeBase) == 48);
static_assert(offsetof(NodeBase, prefix) == 0 && offsetof(NodeBase, level) == 8);
static_assert(offsetof(NodeBase, type) == 12 && offsetof(NodeBase, generation) == 16);
static_assert(offsetof(NodeBase, eok) == 24 && offsetof(NodeBase, count) == 40);

struct Node4 {
  NodeBase base;
  std::uint8_t keys[16];  //!< EC off only: P key bytes written before the entry (cost model)
  Zentry entry[4];        //!< P: the commit word of an add / remove
};
static_assert(offsetof(Node4, entry) == 64 && sizeof(Node4) == 96);

struct Node16 {
  NodeBase base;
  std::uint8_t keys[16];  //!< V: key byte of entry i (SIMD search)
  Zentry entry[16];       //!< P
};
static_assert(offsetof(Node16, keys) == 48 && offsetof(Node16, entry) == 64);
static_assert(sizeof(Node16) == 192);

struct Node48 {
  NodeBase base;
  std::uint8_t pad[16];
  std::uint8_t index[256];  //!< V: slot + 1 of the entry for a key byte, 0 = none
  Zentry entry[48];         //!< P
};
static_assert(offsetof(Node48, index) == 64 && offsetof(Node48, entry) == 320);
static_assert(sizeof(Node48) == 704);

struct Node256 {
  NodeBase base;
  std::uint8_t pad[16];
  Ref child[256];  //!< P: the commit word (no key byte to pack)
};
static_assert(offsetof(Node256, child) == 64 && sizeof(Node256) == 2112);

struct LeafArray {
  NodeType type;             //!< P: leaf_array
  std::uint8_t pad0[7];
  std::uint64_t generation;  //!< P, lazily (as in NodeBase)
  std::uint64_t bitmap;      //!< V: bit i = slot i used
  std::uint64_t lock;        //!< V
  std::uint64_t pad1[4];
  LeafSlot slot[kArraySlots];  //!< P: the commit word of an add / remove in the array
};
static_assert(offsetof(LeafArray, generation) == 8 && offsetof(LeafArray, bitmap) == 16);
static_assert(offsetof(LeafArray, slot) == 64 && sizeof(LeafArray) == 576);

struct Leaf {
  std::uint64_t value;  //!< P: commit word of upsert / update
  std::uint32_t key_len;
  std::uint32_t pad;
  std::byte key[];  // NOLINT: flexible array, key_len bytes
};
static_assert(offsetof(Leaf, value) == 0 && offsetof(Leaf, key) == 16);

//! Mechanisms a create option can turn off (IndexOptions::words[0], kept in the anchor).
enum : std::uint64_t {
  kNoLeafCompaction = 1,   //!< LC off: leaves hang from inner nodes, a leaf split makes an N4
  kNoEntryCompression = 2, //!< EC off: the key byte is persisted apart, before the entry
  kNoSelectivePersist = 4, //!< SMP off: count/next/keys/index/bitmap written back too
  kNoMinimalOrder = 8,     //!< MO off: an internal split fences after each of its 4 steps
  kAllFlags = 15,
};

//! The block the pool root names.
struct Anchor {
  std::uint64_t magic;  //!< kAnchorMagic
  Ref root;             //!< commit word of the first insert / last remove
  std::uint64_t flags;  //!< k* above, fixed at create
  std::uint64_t pad[5];
};
static_assert(sizeof(Anchor) == 64 && offsetof(Anchor, root) == 8);
inline constexpr std::uint64_t kAnchorMagic = 0x524f4152545f7631ull;  // "ROART_v1"

}  // namespace wort::roart
