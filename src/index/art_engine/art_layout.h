// art_engine/art_layout.h — persistent layouts shared by WOART and ART+CoW: child references,
// the 8-byte node header, the common node base, leaves, NODE48, NODE256 and the tree anchor.
//
// Child reference (one 8-byte word, the unit of every pointer swap):
//
//   63                                                    4 3  1  0
//   +------------------------------------------------------+----+--+
//   |            pool offset of the block (16-aligned)      |0000|L |   L=1: leaf, L=0: node
//   +------------------------------------------------------+----+--+   0 = no child
//
// Node header (the word WORT adds the depth to; an in-place split or merge rewrites it with
// one 8-byte store, and recovery detects a stale one by its depth):
//
//   byte  0    1    2    3    4    5    6    7
//       +---------+---------+-------------------+
//       |  depth  | pfx_len | prefix[0..3]      |   depth: key bytes consumed above the node
//       +---------+---------+-------------------+   pfx_len: compressed path length (may be
//                                                  > 4: bytes past 4 are read from a leaf)
// The node branches on key byte `depth + pfx_len`; a key of exactly that length lives in
// the node's end-of-key slot (`eok`), so a key may be a prefix of another.
//
// Node base (first 24 bytes of every inner node):
//   [ header 8 | type 1 | pad 7 | eok leaf ref 8 ]
//
// Leaf (an allocator block of 16 + key_len bytes):
//   [ value 8 | key_len 4 | fresh 4 | key bytes ... ]   value: the commit word of upsert
//   fresh: fresh_mark(generation) in the image an insert writes back before its cached
//   commit, cleared (a volatile store, never written back) once the commit's fence has
//   passed; a reader that meets a mark of this generation makes the commit durable first
//   (leaf.h, README "No dirty reads"). key_len and fresh are one 8-byte word: the lookup
//   compares both with the key's length in one compare.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace wort::art_engine {

//! A tagged child reference (see the diagram above).
using Ref = std::uint64_t;
inline constexpr Ref kNull = 0;
inline bool is_leaf(Ref r) noexcept { return (r & 1u) != 0; }
inline Ref leaf_ref(std::uint64_t off) noexcept { return off | 1u; }
inline Ref node_ref(std::uint64_t off) noexcept { return off; }
inline std::uint64_t ref_offset(Ref r) noexcept { return r & ~std::uint64_t{1}; }

//! Longest key accepted: depth and prefix length are 16-bit fields.
inline constexpr std::size_t kMaxArtKey = 65000;
//! Prefix bytes held in the header; longer compressed paths are checked against a leaf.
inline constexpr unsigned kHeaderPrefix = 4;

//! The 8-byte node header: written whole with one pm::store.
struct alignas(8) NodeHeader {
  std::uint16_t depth = 0;       //!< key bytes consumed by the ancestors
  std::uint16_t prefix_len = 0;  //!< bytes of compressed path below `depth`
  std::uint8_t prefix[kHeaderPrefix] = {};  //!< first min(prefix_len, 4) of those bytes
  //! Key position the node branches on.
  unsigned branch_pos() const noexcept { return unsigned{depth} + prefix_len; }
  //! Same depth, path length and prefix bytes: one 8-byte compare.
  friend bool operator==(const NodeHeader& a, const NodeHeader& b) noexcept {
    return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
  }
};
static_assert(sizeof(NodeHeader) == 8 && alignof(NodeHeader) == 8);
static_assert(std::is_trivially_copyable_v<NodeHeader>);

//! Node type codes (immutable after a node is built). WOART and ART+CoW have their own
//! NODE4/NODE16 layouts and share NODE48/NODE256.
enum class NodeType : std::uint8_t {
  woart_node4 = 1,
  woart_node16 = 2,
  node48 = 3,
  node256 = 4,
  cow_node4 = 5,
  cow_node16 = 6,
};

//! The first 24 bytes of every inner node.
struct NodeBase {
  NodeHeader hdr;          //!< commit word of an in-place split/merge (WOART)
  NodeType type;           //!< written once when the node is built
  std::uint8_t pad[7];
  Ref eok;                 //!< leaf whose key ends at branch_pos(), or 0
};
static_assert(std::is_standard_layout_v<NodeBase>);
static_assert(offsetof(NodeBase, hdr) == 0 && offsetof(NodeBase, type) == 8);
static_assert(offsetof(NodeBase, eok) == 16 && sizeof(NodeBase) == 24);

//! A leaf: value, key length, fresh mark, key bytes.
struct Leaf {
  std::uint64_t value;    //!< commit word of upsert/update
  std::uint32_t key_len;
  std::uint32_t fresh;    //!< fresh_mark(gen) until the publishing commit is durable, then 0
  std::byte key[];        // NOLINT: flexible array, key_len bytes
};
static_assert(offsetof(Leaf, value) == 0 && offsetof(Leaf, key) == 16);
static_assert(offsetof(Leaf, key_len) == 8 && offsetof(Leaf, fresh) == 12,
              "key_len and fresh are one 8-byte word (little-endian: fresh in the high half)");

//! NODE48: child index by key byte (0 = none, else slot + 1), 48 pointer slots.
//! Add: pointer first, index byte last (the commit); the free slot is found through the
//! index array, never by looking for a null pointer (which a crash may leave non-null).
struct Node48 {
  NodeBase base;
  std::uint8_t index[256];
  Ref child[48];
};
static_assert(std::is_standard_layout_v<Node48>);
static_assert(offsetof(Node48, index) == 24 && offsetof(Node48, child) == 280);
static_assert(sizeof(Node48) == 664);

//! NODE256: one pointer per key byte; the pointer store is the commit.
struct Node256 {
  NodeBase base;
  Ref child[256];
};
static_assert(std::is_standard_layout_v<Node256>);
static_assert(offsetof(Node256, child) == 24 && sizeof(Node256) == 2072);

//! The tree anchor the pool root points at: the root reference is swapped like any
//! parent pointer.
//! `spare` is remove's reserve: one block per node type (NODE4, NODE16, NODE48, NODE256; 0 =
//! none), so that a remove that must build a node (a shrink, a copy-on-write edit, a merge's
//! copy) succeeds in a full pool. Not part of the tree; the recovery trace keeps the blocks.
struct Anchor {
  std::uint64_t magic;   //!< kAnchorMagic xor the flavor's tag
  Ref root;              //!< 0 = empty tree
  std::uint64_t spare[4];
  std::uint64_t pad[2];
};
static_assert(sizeof(Anchor) == 64 && offsetof(Anchor, root) == 8);
static_assert(offsetof(Anchor, spare) == 16);

}  // namespace wort::art_engine
