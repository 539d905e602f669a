// index/wort/wort_iterator.h — in-order traversal from a lower bound (scan, range).
#pragma once

#include <cstdint>
#include <vector>

#include "index/wort/wort_node.h"

namespace wort::wort_index {

//! Walks leaves in key order. Read-only; tolerates headers awaiting repair.
class Cursor {
 public:
  Cursor(Blocks blocks, std::uint64_t root) noexcept : blocks_(blocks), root_(root) {}
  //! Positions the cursor so that next() returns the first key >= from.
  void seek(Key from);
  //! The next leaf in key order, or nullptr at the end.
  const LeafHeader* next();

 private:
  struct Frame {
    const Node* node;
    unsigned next;  //!< next ordered slot to visit (0 = end_child, 1 + p = child[p])
  };
  //! <0: `from` sorts before every key below n; >0: after every one; 0: it matches the
  //! node's whole prefix [depth, branch).
  int compare_with_prefix(const Node* n, const HeaderFields& h, Key from,
                          std::uint32_t depth) const;

  Blocks blocks_;
  std::uint64_t root_;
  std::vector<Frame> stack_;
  std::uint64_t pending_ = 0;  //!< a leaf word to return before resuming the stack
};

}  // namespace wort::wort_index
