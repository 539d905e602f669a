// baseline/art/iterator.h — in-order iteration from a lower bound, for scan and range.
//
// Order within an inner node: its terminal leaf first (that key is a proper prefix of every
// other key below the node, so it is the smallest), then the children by ascending byte.
// The iterator keeps the path from the root as a stack of (node, next position) frames;
// position -1 means "terminal not yet visited", 0..256 the next branch byte to try.
#pragma once

#include <cstddef>
#include <vector>

#include "baseline/art/leaf.h"
#include "baseline/art/node.h"

namespace wort::art {

class Iterator {
 public:
  explicit Iterator(Ref root) noexcept : root_(root) {}

  //! Positions at the smallest key >= `from`.
  void seek(Key from);
  //! True while positioned at a key.
  bool valid() const noexcept { return leaf_ != nullptr; }
  Key key() const noexcept { return leaf_->key(); }
  Value value() const noexcept { return leaf_->value; }
  //! Moves to the next key in order (precondition: valid()).
  void next() { advance(); }

 private:
  struct Frame {
    const Node* node;
    int next;  //!< -1: terminal pending; else the next branch byte to look at (256 = done)
  };

  //! Whole-subtree comparison of node `n` at `depth` against `from`: <0 every key below
  //! is smaller, >0 every key below is >= from, 0 `from` continues past the equal prefix.
  static int compare_prefix(const Node* n, Key from, std::size_t depth) noexcept;
  //! Resumes the walk on the stack until it reaches a leaf (or the stack empties).
  void advance();

  Ref root_;
  std::vector<Frame> stack_;
  const Leaf* leaf_ = nullptr;
};

}  // namespace wort::art
