// index/wort/wort_walk.h — pre-order, key-ordered walk over every block below a child word,
// with an explicit stack (paths can be thousands of nodes deep with long keys).
#pragma once

#include <cstdint>
#include <vector>

#include "index/wort/wort_node.h"

namespace wort::wort_index {

//! Calls visit(word, level) for every non-empty child word below and including `root`, in
//! key order, parents before children; `level` counts the nodes above the word.
template <class F>
void walk_preorder(const Blocks& blocks, std::uint64_t root, F&& visit) {
  struct Item {
    std::uint64_t word;
    std::uint32_t level;
  };
  std::vector<Item> stack;
  if (root != 0) stack.push_back({root, 0});
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    visit(it.word, it.level);
    if (is_leaf(it.word)) continue;
    const Node* n = blocks.node(it.word);
    for (unsigned i = kOrderedSlots; i-- > 0;) {
      if (const std::uint64_t w = *ordered_slot(n, i); w != 0) stack.push_back({w, it.level + 1});
    }
  }
}

}  // namespace wort::wort_index
