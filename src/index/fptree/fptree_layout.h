// index/fptree/fptree_layout.h — the persistent layout of the FPTree (Oukid et al.,
// SIGMOD'16, §4): persistent leaves in a linked list, one-byte fingerprints, a validity
// bitmap, unsorted slots, and a split micro-log in the anchor. Inner nodes live in DRAM
// (fptree_inner.h) and are not part of this layout.
//
// Three kinds of pool blocks:
//
//   Anchor   (64 B + 64 B per split log, the pool root)  magic, head of the leaf list,
//                                     options, leaf-group list, split micro-logs
//   Leaf     (992 B for 56 slots)     bitmap, fingerprints, next, inline map, lock, slots
//   LeafGroup (64 B + n x leaf stride) next group, then n leaves (§4.3, App. B; an option)
//   KeyBlock (8 B + key bytes)        a key that is not exactly 8 bytes long (App. C)
//
// Anchor:
//
//   line 0: | magic | head | leaf_capacity u32 | inner_fanout u32 | hash_kind |
//           | group_leaves | groups | log_count | reserved |
//   line 1: | log[0].cur | log[0].new | reserved x6 |        (split micro-log 0, Alg. 3/4)
//   line 1+i: split micro-log i, for i < log_count              (§4.4: one per concurrent split)
//
//   head  offset of the first (smallest-key) leaf, 0 for an empty tree. Commit word of the
//         first insert and of removing the last key of the first leaf.
//   group_leaves  leaves per leaf group (IndexOptions word 3); 0: no groups, every leaf is
//         its own allocator block.
//   groups  first LeafGroup of the list (0: none). Allocator metadata, not a commit word:
//         written with pm::store_persist before the commit of the operation that needed it.
//   log_count  split micro-logs that follow (kSplitLogs in new pools; 0 in pools made before
//         the log array, which have log[0] only and open with one log).
//   log   {current leaf, new leaf} of a split in progress (both 0 when none). One line, and
//         cur is always stored before new, so a crash never shows new without cur.
//
// LeafGroup (only with group_leaves > 0):
//
//   | next group u64 | pad to 64 | leaf 0 | leaf 1 | ... | leaf n-1 |     leaf i at 64 + i * stride,
//                                                                         stride = leaf bytes rounded to 64
//
// Leaf with capacity C (2 <= C <= 64; the paper's Table 1: C = 56 single-threaded):
//
//   byte 0        8                        8+C'      +8          +16          +24   S
//   +-------------+------------------------+---------+-----------+------------+-----+----------+
//   | bitmap u64  | fingerprints[C] (u8)   | next    | inline_map| lock       | pad | slots[C] |
//   +-------------+------------------------+---------+-----------+------------+-----+----------+
//   C' = C rounded up to 8; S = slot array start, rounded up to 16. Each slot is 16 bytes:
//
//   slot i:  | key word (u64) | value (u64) |
//
//   bitmap      bit i set: slot i holds a live entry. THE commit word of insert, update and
//               remove-in-place (one 8-byte store sets a bit, clears one, or both).
//   fingerprint hash byte of slot i's key (fptree_hash.h); a filter: only slots whose byte
//               matches are compared. With C = 56, bitmap + fingerprints fill line 0.
//   next        offset of the next leaf, 0 at the end. Commit word of removing the last key
//               of a leaf (the unlink); written by a split before the micro-log is reset.
//   inline_map  bit i set: slot i's key word IS the key, exactly 8 bytes, in key byte order
//               (memcpy of the key); clear: the key word is the offset of a KeyBlock. This is
//               how 8-byte keys stay inline while keys of other lengths (shorter, longer,
//               empty) keep their byte-string order and stay distinguishable: the tag is the
//               length class, not a sentinel inside the 64 bits. Only bits of free slots are
//               ever changed, so it needs no commit of its own.
//   lock        the leaf's writer lock, kit::gen_lock (index/kit/gen_lock.h): tagged with
//               the pool generation, so a restart never sees it held. Volatile state
//               (cas_volatile / store_volatile_release), never a commit; a split's new leaf
//               is written with it held by the splitting writer, the first leaf with 0.
//
// KeyBlock:   | length u64 | key bytes (length) |      16-aligned, written once before the
//                                                      slot that names it is published.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace wort::fptree_index {

inline constexpr std::uint64_t kAnchorMagic = 0x3145455254504621ull;  // "!FPTREE1"

//! Default leaf capacity (paper Table 1, single-threaded FPTree).
inline constexpr std::uint32_t kDefaultLeafCapacity = 56;
//! Default inner-node fanout (paper Table 1, single-threaded FPTree).
inline constexpr std::uint32_t kDefaultInnerFanout = 4096;
inline constexpr std::uint32_t kMinLeafCapacity = 2;
inline constexpr std::uint32_t kMaxLeafCapacity = 64;  // one bitmap word
inline constexpr std::uint32_t kMinInnerFanout = 3;
inline constexpr std::uint32_t kMaxInnerFanout = 1u << 16;

//! Fingerprint hash: the real one, or (tests) one that maps every key to one byte.
enum class HashKind : std::uint64_t { mixed = 0, constant = 1 };

//! The split micro-log (Alg. 3): both words 0 when no split is in progress.
struct SplitLog {
  std::uint64_t cur;  //!< the leaf being split
  std::uint64_t nu;   //!< the new (right) leaf, 0 until it is allocated and logged
};
static_assert(std::is_standard_layout_v<SplitLog> && sizeof(SplitLog) == 16);

//! Split micro-logs of a new pool (§4.4: the paper's array of logs, one per concurrent
//! split). A writer claims one for the length of a split; with more writers splitting at
//! once than logs, the extra ones wait for a log (README "Concurrency").
inline constexpr std::uint32_t kSplitLogs = 16;
//! Leaves per group: the option's bounds (word 3; 0 = no groups).
inline constexpr std::uint32_t kMaxGroupLeaves = 1024;

//! One split micro-log in its own cache line (two splits never share a line).
struct alignas(64) SplitLogLine {
  SplitLog log;
  std::uint64_t reserved[6];
};
static_assert(sizeof(SplitLogLine) == 64 && offsetof(SplitLogLine, log) == 0);

//! The first two lines of the block the pool root names (all an old pool has).
struct alignas(64) Anchor {
  std::uint64_t magic;           //!< kAnchorMagic
  std::uint64_t head;            //!< first leaf (commit word of the first insert)
  std::uint32_t leaf_capacity;   //!< slots per leaf
  std::uint32_t inner_fanout;    //!< children per DRAM inner node
  std::uint64_t hash_kind;       //!< HashKind
  std::uint64_t group_leaves;    //!< leaves per LeafGroup; 0 = no groups
  std::uint64_t groups;          //!< first LeafGroup (allocator metadata, not a commit word)
  std::uint64_t log_count;       //!< split logs (0 = an old pool: 1)
  std::uint64_t reserved0;
  SplitLog log;                  //!< line 1: split micro-log 0
  std::uint64_t reserved1[6];

  std::uint32_t logs() const noexcept { return log_count == 0 ? 1 : static_cast<std::uint32_t>(log_count); }
  //! Split log i (< logs()): log 0 is line 1, log i line 1 + i of the anchor block.
  SplitLog* split_log(std::uint32_t i) noexcept {
    return &reinterpret_cast<SplitLogLine*>(reinterpret_cast<std::byte*>(this) + 64)[i].log;
  }
  const SplitLog* split_log(std::uint32_t i) const noexcept {
    return &reinterpret_cast<const SplitLogLine*>(reinterpret_cast<const std::byte*>(this) + 64)[i].log;
  }
};
static_assert(std::is_standard_layout_v<Anchor> && std::is_trivially_copyable_v<Anchor>);
static_assert(sizeof(Anchor) == 128);
static_assert(offsetof(Anchor, magic) == 0 && offsetof(Anchor, head) == 8);
static_assert(offsetof(Anchor, group_leaves) == 32 && offsetof(Anchor, groups) == 40 &&
              offsetof(Anchor, log_count) == 48);
static_assert(offsetof(Anchor, log) == 64, "the micro-log has its own cache line");
static_assert(offsetof(SplitLog, cur) == 0 && offsetof(SplitLog, nu) == 8);

//! The anchor block of a new pool: the anchor, then split logs 1 .. kSplitLogs-1. (`magic`
//! aliases anchor.magic: kit::create_anchor wants the word by name.)
struct alignas(64) AnchorBlock {
  union {
    std::uint64_t magic;
    Anchor anchor;
  };
  SplitLogLine more[kSplitLogs - 1];
};
static_assert(std::is_standard_layout_v<AnchorBlock> && offsetof(AnchorBlock, anchor) == 0);
static_assert(offsetof(AnchorBlock, more) == 128 && sizeof(AnchorBlock) == 64 * (1 + kSplitLogs));

//! Where the leaves of a LeafGroup lie (every group of a tree has the same).
struct GroupGeometry {
  std::uint32_t leaves = 0;  //!< per group; 0 = no groups
  std::uint32_t stride = 0;  //!< leaf bytes rounded up to 64
  std::uint64_t bytes = 0;   //!< the whole group block

  static constexpr std::uint32_t kLeavesOff = 64;
  static GroupGeometry of(std::uint32_t n, std::uint32_t leaf_bytes) noexcept {
    GroupGeometry g;
    g.leaves = n;
    g.stride = (leaf_bytes + 63) / 64 * 64;
    g.bytes = n == 0 ? 0 : kLeavesOff + std::uint64_t{n} * g.stride;
    return g;
  }
  std::uint64_t leaf(std::uint64_t group, std::uint32_t i) const noexcept {
    return group + kLeavesOff + std::uint64_t{i} * stride;
  }
};

//! One slot: key word (inline key or KeyBlock offset) and value.
struct Slot {
  std::uint64_t key;
  std::uint64_t value;
};
static_assert(std::is_standard_layout_v<Slot> && sizeof(Slot) == 16);

//! Where each leaf field lies for a given capacity (every leaf of a tree has the same).
struct LeafGeometry {
  std::uint32_t capacity;
  std::uint32_t next_off;    //!< offset of `next`
  std::uint32_t inline_off;  //!< offset of `inline_map`
  std::uint32_t lock_off;    //!< offset of `lock`
  std::uint32_t slots_off;   //!< offset of slot 0
  std::uint32_t bytes;       //!< whole leaf

  static constexpr std::uint32_t kBitmapOff = 0;
  static constexpr std::uint32_t kFingerprintOff = 8;

  static constexpr LeafGeometry of(std::uint32_t c) noexcept {
    LeafGeometry g{};
    g.capacity = c;
    g.next_off = kFingerprintOff + (c + 7) / 8 * 8;
    g.inline_off = g.next_off + 8;
    g.lock_off = g.inline_off + 8;
    g.slots_off = (g.lock_off + 8 + 15) / 16 * 16;
    g.bytes = g.slots_off + 16 * c;
    return g;
  }
  //! Bits of the bitmap that name slots.
  constexpr std::uint64_t mask() const noexcept {
    return capacity == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << capacity) - 1;
  }
};

// The paper's leaf: bitmap and the 56 fingerprints share cache line 0 (a lookup reads one
// line before it touches a key); slots are 16-aligned, so no slot straddles a line.
static_assert(LeafGeometry::of(56).next_off == 64, "C = 56: bitmap + fingerprints = line 0");
static_assert(LeafGeometry::of(56).slots_off == 96 && LeafGeometry::of(56).bytes == 992);
static_assert(LeafGeometry::of(64).slots_off % 16 == 0);
static_assert(LeafGeometry::of(2).slots_off % 16 == 0);

//! Fixed part of a leaf group; its leaves follow at GroupGeometry::kLeavesOff.
struct LeafGroupHeader {
  std::uint64_t next;  //!< next group of the list, 0 at the end
};
static_assert(sizeof(LeafGroupHeader) == 8);

//! Fixed part of a key block; the key bytes follow.
struct KeyBlock {
  std::uint64_t length;
};
static_assert(sizeof(KeyBlock) == 8);

}  // namespace wort::fptree_index
