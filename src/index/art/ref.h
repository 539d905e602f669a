// index/art/ref.h — a tagged child reference: an inner node or a leaf, in one word.
//
// ART's lazy expansion hangs a single key's leaf directly where a child pointer goes, so a
// child slot must say which of the two it holds. Leaves and nodes come from operator new
// (aligned to at least 8), so bit 0 is free to carry the tag:
//
//   63                                       1   0
//   +-----------------------------------------+---+
//   |          DRAM address >> 1              | L |   L = 1: Leaf*, L = 0: Node*
//   +-----------------------------------------+---+
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
  //! Reference to an inner node.
  static Ref of(Node* n) noexcept { return Ref(reinterpret_cast<std::uintptr_t>(n)); }

  bool empty() const noexcept { return bits_ == 0; }
  bool is_leaf() const noexcept { return (bits_ & 1u) != 0; }
  //! The leaf (precondition: is_leaf()).
  Leaf* leaf() const noexcept { return reinterpret_cast<Leaf*>(bits_ & ~std::uintptr_t{1}); }
  //! The inner node (precondition: !empty() && !is_leaf()).
  Node* node() const noexcept { return reinterpret_cast<Node*>(bits_); }

  friend bool operator==(Ref a, Ref b) noexcept { return a.bits_ == b.bits_; }

 private:
  explicit Ref(std::uintptr_t bits) noexcept : bits_(bits) {}
  std::uintptr_t bits_ = 0;
};

static_assert(sizeof(Ref) == 8, "a child slot is one word");

}  // namespace wort::art
