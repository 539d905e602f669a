// baseline/art/node.h — the header every inner node starts with, and the operations that
// dispatch on the node type (ART has no virtual calls: the type byte selects the layout).
//
// Every inner node, whatever its type:
//
//   +------+-----+-------+------------+--------------------+-----------+-------------------
//   | type | pad | count | prefix_len | prefix[8] (inline) | terminal  | type-specific ...
//   | 1    | 1   | 2     | 4          | 8                  | Leaf* 8   |
//   +------+-----+-------+------------+--------------------+-----------+-------------------
//
// count        number of children (the terminal leaf is not counted)
// prefix_len   length of the compressed path below the parent's branch byte; only the first
//              min(prefix_len, 8) bytes are stored inline (hybrid path compression, prefix.h)
// terminal     the leaf of the key that ends exactly at this node (after the prefix), or
//              null. It is how one key can be a prefix of another: "ab" and "abc" share a
//              node whose terminal is "ab" and whose child 'c' is "abc". It sorts first.
//
// Invariant: every inner node has at least two entries (children + terminal); a node left
// with one is collapsed into its parent's slot by remove.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "baseline/art/arena.h"
#include "baseline/art/ref.h"

namespace wort::art {

enum class NodeType : std::uint8_t { node4, node16, node48, node256 };

//! Bytes of a compressed path stored in the node itself (the rest is read from a leaf).
inline constexpr std::size_t kInlinePrefix = 8;

struct Node {
  NodeType type;
  std::uint8_t reserved = 0;
  std::uint16_t count = 0;           //!< children, not counting the terminal leaf
  std::uint32_t prefix_len = 0;      //!< full length of the compressed path
  std::array<std::byte, kInlinePrefix> prefix{};  //!< its first min(prefix_len, 8) bytes
  Leaf* terminal = nullptr;          //!< the key ending at this node, if any

  explicit Node(NodeType t) noexcept : type(t) {}
  //! Children plus the terminal leaf.
  std::size_t entries() const noexcept { return count + (terminal != nullptr ? 1u : 0u); }
};

static_assert(sizeof(Node) == 24, "node header is three words");

inline Ref Ref::of(Node* n) noexcept {
  const auto addr = reinterpret_cast<std::uintptr_t>(n);
  assert((addr & kNodeTagMask) == 0 && "nodes are 64-aligned (kNodeBlock)");
  const std::uintptr_t plen = n->prefix_len < kLongPrefix ? n->prefix_len : kLongPrefix;
  return Ref(addr | (static_cast<std::uintptr_t>(n->type) << 1) | (plen << 3));
}

//! Arena bytes of a node of type T: sizeof(T) rounded up to whole cache lines, so that
//! every node is 64-aligned (the arena aligns a block whose size is a multiple of 64) and
//! a reference to it has six low bits for its tag (ref.h).
template <class T>
inline constexpr std::size_t kNodeBlock = (sizeof(T) + 63) & ~std::size_t{63};

//! A new node of type T from `arena` (T's constructor sets its type).
template <class T>
T* new_node(Arena& arena) {
  return new (arena.allocate(kNodeBlock<T>)) T;
}

//! One child as an iteration step yields it.
struct Child {
  std::uint8_t byte = 0;
  Ref ref;
};

// find_child(n, byte), the child slot for `byte` or nullptr, is in nodes.h: inline, it
// needs all four layouts.
//! The child with the smallest byte >= `from` (0..256), if any.
std::optional<Child> next_child(const Node* n, unsigned from) noexcept;
//! True if add_child would need a bigger node type.
bool is_full(const Node* n) noexcept;
//! Adds a child (preconditions: !is_full(n), no child for `byte` yet).
void add_child(Node* n, std::uint8_t byte, Ref child) noexcept;
//! Removes the child for `byte` (precondition: present).
void remove_child(Node* n, std::uint8_t byte) noexcept;
//! A node of the next bigger type from `arena` with the same contents; frees `n`.
Node* grow(Arena& arena, Node* n);
//! True if `n` has few enough children to move to the next smaller type.
bool should_shrink(const Node* n) noexcept;
//! A node of the next smaller type from `arena` with the same contents; frees `n`
//! (precondition: should_shrink(n)).
Node* shrink(Arena& arena, Node* n);
//! A new, empty Node4 from `arena`.
Node* make_node4(Arena& arena);
//! Gives the node itself (not its children or terminal) back to `arena`.
void free_node(Arena& arena, Node* n) noexcept;
//! DRAM bytes of the node itself.
std::size_t node_bytes(const Node* n) noexcept;
//! "node4", "node16", "node48", "node256".
std::string_view type_name(NodeType t) noexcept;
//! Copies prefix and terminal (not the children) from `src` to `dst`.
void copy_header(Node* dst, const Node* src) noexcept;
//! Empty if the node's type invariants hold (child counts, key order, index
//! consistency, at least two entries), else what is wrong.
std::string invariant_error(const Node* n);

}  // namespace wort::art
