// tests/support/toy_hash_layout.h — persistent layout of the toy hash table the crash
// simulator is tested on.
//
//   root block (pool.root()):
//   +-------+----------+------------------------------------------------+
//   | magic | nbuckets | bucket[0..15]: { head (node offset), count }   |
//   +-------+----------+------------------------------------------------+
//     8       8          16 x 16 bytes; a bucket never crosses a cache line
//
//   node block (one per key):
//   +------+-------+---------+-------+-------------------+
//   | next | value | key_len | flags | key bytes ...     |
//   +------+-------+---------+-------+-------------------+
//     8      8       4         4       key_len
//
// Commit stores: insert publishes a fully persisted node with the bucket's `head` (then
// `count`, in the same line, same flush); update / upsert of a present key is one 8-byte
// store to `value`; remove unlinks with one 8-byte store to the predecessor's link.
// `count` is a hint in the correct table (readers walk `next` to 0, recovery recomputes
// it); the torn16 variant trusts it, which makes {head, count} a 16-byte value written as
// two 8-byte stores and read as one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace wort::test::toy {

inline constexpr std::uint64_t kRootMagic = 0x544f59484153480aull;  // "TOYHASH\n"
inline constexpr std::size_t kBuckets = 16;
inline constexpr std::uint32_t kDead = 1;  //!< node flag: removed, awaiting unlink

struct Bucket {
  std::uint64_t head;   //!< offset of the first node, 0 if empty
  std::uint64_t count;  //!< nodes linked from head
};

struct Root {
  std::uint64_t magic;
  std::uint64_t nbuckets;
  Bucket buckets[kBuckets];
};

struct NodeHeader {
  std::uint64_t next;
  std::uint64_t value;
  std::uint32_t key_len;
  std::uint32_t flags;
  // key bytes follow
};

static_assert(std::is_standard_layout_v<Root> && std::is_standard_layout_v<NodeHeader>);
static_assert(sizeof(Bucket) == 16 && alignof(Bucket) == 8);
static_assert(offsetof(Root, buckets) == 16, "buckets start 16-aligned: none crosses a line");
static_assert(sizeof(Root) == 16 + 16 * kBuckets);
static_assert(sizeof(NodeHeader) == 24);
static_assert(offsetof(NodeHeader, value) == 8, "value: one aligned 8-byte commit store");
static_assert(offsetof(NodeHeader, flags) == 20);

}  // namespace wort::test::toy
