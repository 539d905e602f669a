// baseline/art/ref.h — a tagged child reference: an inner node or a leaf, in one word.
//
// ART's lazy expansion hangs a single key's leaf directly where a child pointer goes, so a
// child slot must say which of the two it holds. Leaves are at least 8-aligned, so bit 0
// can carry that. Nodes are 64-aligned (whole cache lines from the arena, node.h), so a
// reference to a node also carries the node's type and the length of its prefix:
//
//   63                               6   5       3   2   1   0
//   +---------------------------------+-----------+-------+---+
//   |  Node* (64-aligned)             | plen      | type  | 0 |   plen = prefix_len if < 7,
//   +---------------------------------+-----------+-------+---+          7 = 7 or more
//   |  Leaf*                                              | 1 |
//   +-----------------------------------------------------+---+
//
// A lookup (optimistic: it needs only a prefix's length, not its bytes) then reads no
// node's header when the prefix is shorter than 7 bytes, which is every node of 8-byte
// keys: the child slot's address follows from the reference, the depth and the key byte
// (an N4's and N16's keys share the header's line anyway). The header line is no longer a
// miss in front of the slot's miss (lookups at 10M keys). Inserts skip the header
// when the prefix is empty. The tag is set by Ref::of(Node*) (node.h) from the node's type
// and prefix_len when the reference is made: code that changes a linked node's type or
// prefix must store a fresh Ref::of (growing and shrinking make a new node anyway;
// collapse re-makes it after merge_prefix; verify() checks every tag).
//
// The all-zero word is the empty reference (only the tree root is ever empty).
#pragma once

#include <cstdint>

namespace wort::art {

struct Leaf;
struct Node;

class Ref {
 public:
  Ref() = default;
  //! Reference to a leaf.
  static Ref of(Leaf* l) noexcept { return Ref(reinterpret_cast<std::uintptr_t>(l) | 1u); }
  //! Reference to an inner node, tagged with its type and whether its prefix is empty
  //! (defined in node.h: it reads the node).
  static Ref of(Node* n) noexcept;

  bool empty() const noexcept { return bits_ == 0; }
  bool is_leaf() const noexcept { return (bits_ & 1u) != 0; }
  //! The leaf (precondition: is_leaf()).
  Leaf* leaf() const noexcept { return reinterpret_cast<Leaf*>(bits_ & ~std::uintptr_t{1}); }
  //! The inner node (precondition: !empty() && !is_leaf()).
  Node* node() const noexcept { return reinterpret_cast<Node*>(bits_ & ~kNodeTagMask); }
  //! The node's type as tagged, NodeType's value (precondition: a node).
  unsigned node_type() const noexcept { return static_cast<unsigned>(bits_ >> 1) & 3u; }
  //! The node's prefix_len if below kLongPrefix, else kLongPrefix (precondition: a node).
  unsigned prefix_tag() const noexcept { return static_cast<unsigned>(bits_ >> 3) & 7u; }
  //! prefix_tag() of a node whose prefix is this long or longer: read its header.
  static constexpr unsigned kLongPrefix = 7;

  friend bool operator==(Ref a, Ref b) noexcept { return a.bits_ == b.bits_; }

 private:
  static constexpr std::uintptr_t kNodeTagMask = 63;  // bits 0-5 of a node reference
  explicit Ref(std::uintptr_t bits) noexcept : bits_(bits) {}
  std::uintptr_t bits_ = 0;
};

static_assert(sizeof(Ref) == 8, "a child slot is one word");

}  // namespace wort::art
