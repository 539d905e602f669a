// index/fastfair/fastfair_layout.h — the persistent layout of FAST&FAIR (Hwang et al.,
// FAST'18, §3–§4): a B+-tree whose every node, inner nodes included, lives in the pool.
//
// Three kinds of pool blocks:
//
//   Anchor (64 B, the pool root)   magic, root node offset, node size
//   Node   (node_size B, 64-aligned, default 512 = 8 lines)
//   KeyBlock (16 B + key bytes)    a key that is not stored inline in a record
//
// Node (512 B: 32-byte header, 30 records of {key word, pointer word}; a record never
// straddles a line, and a key shares its line with its pointer):
//
//   byte 0          8          16    17    18             20        22     24       32
//   +---------------+----------+-----+-----+--------------+---------+------+--------+
//   | leftmost      | sibling  | tag |level| switch (u16) |last_idx |slots | spare  |
//   +---------------+----------+-----+-----+--------------+---------+------+--------+
//   line 0: header + rec[0], rec[1]; line 1: rec[2..5]; ... line 7: rec[26..29]
//
//   rec[i] = { key word (8 B) | ptr (8 B) }
//     leaf:  ptr is the key's value (any 8 bytes)
//     inner: ptr is the child for keys in [rec[i].key, next live key); `leftmost` is the
//            child for keys below rec[0].key. A node made by an inner split has leftmost 0
//            and keeps the median as rec[0] (its low fence; FAST_FAIR issue #5).
//   sibling   the right neighbour on the same level (B-link, every level), 0 at the end.
//   switch    the paper's switch counter: even after an insert, odd after a delete or a
//             dead slot's left shift (the direction lock-free readers read the node in,
//             §5; they read it again if it changed meanwhile). Never needed for recovery,
//             written only when the direction changes (and moved on by 2, volatile, after
//             an append). Two bytes: the paper's one byte wraps after 256 steps, which a
//             descheduled reader can sleep through (README "Switch counter"); its high
//             byte was the reserved `deleted` (the paper's flag, never set here; always 0,
//             so an existing pool reads its old counter).
//   last_idx  reserved (the paper's last-index hint is not kept: the end is the first
//             kEmpty key, which a linear search reads anyway).
//   slots     records per node, checked against the anchor by the walk.
//   spare     a leaf's writer lock, kit::gen_lock (index/kit/gen_lock.h): tagged with
//             the pool's open generation, so a restart never sees it held; stored only with
//             pm::cas_volatile / store_volatile_release (never written back on purpose), or
//             in a fresh leaf's image by the SMO that creates it locked. Unused in inner
//             nodes (the structure lock covers them).
//
// Logical content of a node (the "endurable transient inconsistency" of §3.2):
//   end      the first slot whose key word is kEmpty (slots if none); slots >= end are
//            garbage and never read.
//   dead     slot i < end is dead if rec[i].key == rec[i+1].key (i+1 < end): of two equal
//            adjacent key words the RIGHT one is live. FAST keeps at most one dead slot.
//   The paper marks the dead entry by a duplicate POINTER; wort's values are arbitrary
//   8-byte words, not unique pointers, so the mark is the duplicate KEY word instead (keys
//   in a node are unique; §3.4 of the paper uses duplicate keys the same way). See README.
//
// Key word (8 bytes):
//   < kTagBase           an 8-byte key inline: its big-endian value (so word order is key
//                        order); 8-byte keys whose first two bytes are 0xffff do not fit
//   kTagBase | offset    any other key (shorter, longer, or 0xffff...): offset of a KeyBlock
//   kEmpty (all ones)    end of the records
//
// KeyBlock: { u32 len | u32 pad | u64 pad | len key bytes }, written once before the record
// that names it is committed; owned by exactly one live record (inner separators own a copy).
#pragma once

#include <cstddef>
#include <cstdint>

namespace wort::fastfair {

inline constexpr std::uint64_t kAnchorMagic = 0x5249414654534146ull;  // "FASTFAIR"
inline constexpr std::uint8_t kNodeTag = 0xFA;
inline constexpr std::uint32_t kDefaultNodeSize = 512;
inline constexpr std::uint32_t kMinNodeSize = 256;   // >= 14 records: splits stay sane
inline constexpr std::uint32_t kMaxNodeSize = 4096;
inline constexpr std::uint32_t kMaxLevels = 32;

inline constexpr std::uint64_t kTagBase = 0xFFFF'0000'0000'0000ull;
inline constexpr std::uint64_t kOffsetMask = 0x0000'FFFF'FFFF'FFFFull;
inline constexpr std::uint64_t kEmpty = ~0ull;

struct Anchor {
  std::uint64_t magic;
  std::uint64_t root;       // offset of the root node (never 0 after create)
  std::uint64_t node_size;  // bytes per node (IndexOptions words[0], default 512)
  std::uint64_t spare[5];
};
static_assert(sizeof(Anchor) == 64);
static_assert(offsetof(Anchor, root) % 8 == 0, "root is the root-split commit word");

struct Record {
  std::uint64_t key;  // key word (see above); the insert and delete commit word
  std::uint64_t ptr;  // value (leaf) or child offset (inner); the upsert commit word
};
static_assert(sizeof(Record) == 16 && 64 % sizeof(Record) == 0,
              "records never straddle a cache line");
static_assert(offsetof(Record, key) == 0 && offsetof(Record, ptr) == 8);

//! The switch counter (§5): parity = the direction lock-free readers read a node in; every
//! change of it, and every append, moves it on, and a reader retries when it changed. Two
//! bytes (the paper's one, widened into the reserved byte after it: a wrap needs 65,536
//! steps during one reader's read of one node; README "Switch counter").
using SwitchCount = std::uint16_t;

struct NodeHeader {
  std::uint64_t leftmost;   // inner: child below rec[0].key (0 in leaves / split siblings)
  std::uint64_t sibling;    // right neighbour; the split's link store
  std::uint8_t tag;         // kNodeTag
  std::uint8_t level;       // 0 = leaf
  SwitchCount switch_counter;  // bytes 18-19 (byte 19 was the reserved `deleted`, always 0)
  std::uint16_t last_index;  // reserved, always 0
  std::uint16_t slots;
  std::uint64_t spare;  // leaves: the writer lock word (kit::gen_lock)
};
static_assert(sizeof(NodeHeader) == 32, "the header leaves line 0 room for two records");
static_assert(offsetof(NodeHeader, sibling) == 8, "sibling: one aligned 8-byte store");
static_assert(offsetof(NodeHeader, switch_counter) == 18 &&
              offsetof(NodeHeader, last_index) == 20 && offsetof(NodeHeader, slots) == 22,
              "the counter took the reserved byte 19 only: every other field keeps its offset");
static_assert(offsetof(NodeHeader, spare) % 8 == 0, "spare: the leaf lock word, one CAS");

struct Node {
  NodeHeader h;
  Record rec[1];  // really h.slots records
};
static_assert(offsetof(Node, rec) == 32 && offsetof(Node, rec) % sizeof(Record) == 0);

constexpr std::uint32_t slots_for(std::uint64_t node_size) {
  return static_cast<std::uint32_t>((node_size - sizeof(NodeHeader)) / sizeof(Record));
}
static_assert(slots_for(kDefaultNodeSize) == 30);

struct KeyBlock {
  std::uint32_t len;
  std::uint32_t pad0;
  std::uint64_t pad1;
  // len key bytes follow
};
static_assert(sizeof(KeyBlock) == 16);

constexpr bool is_indirect(std::uint64_t word) { return word >= kTagBase && word != kEmpty; }

}  // namespace wort::fastfair
