// index/wort/wort_walk.h — pre-order, key-ordered walk over every block below a child word,
// each word checked before it is followed (kit::CheckedWalk: a block of this pool, aligned,
// reached once, no deeper than a key can make a path), with an explicit stack (paths can be
// thousands of nodes deep with long keys).
#pragma once

#include <cstdint>

#include "index/kit/checked_walk.h"
#include "index/wort/wort_node.h"

namespace wort::wort_index {

//! Calls visit(word, level) for every non-empty child word below and including `root`, in
//! key order, parents before children; `level` counts the nodes above the word. Stops with
//! corrupt at the first word that is not a node or leaf block of `pool` (a leaf must also
//! hold its key), before reading anything in it.
template <class F>
Result<void> walk_preorder(const Pool& pool, const Blocks& blocks, std::uint64_t root,
                           F&& visit) {
  kit::CheckedWalk w(pool, "wort", kMaxDepth + 1);
  return w.run(root, [&](std::uint64_t word, std::uint32_t level) {
    if (is_leaf(word)) {
      const std::uint64_t off = block_of(word);
      if (!w.enter(off, sizeof(LeafHeader), 16, "leaf")) return;
      const std::uint64_t len = blocks.leaf(word)->key_len;
      if (len > kMaxKeyLength) {
        w.fail("leaf at " + kit::CheckedWalk::hex(off) + " has key length " + std::to_string(len));
        return;
      }
      if (!w.fits(off, off, leaf_bytes(len), "leaf key")) return;
      visit(word, level);
      return;
    }
    if (!w.enter(word, sizeof(Node), 64, "node")) return;
    const Node* n = blocks.node(word);
    if (!w.lock_word(__atomic_load_n(&n->lock, __ATOMIC_RELAXED), word, "lock word")) return;
    // Readers and writers take a node's leftmost leaf, and a remove's merge expects two
    // children where it finds fewer than three: every state a crash can leave has two or
    // more (a remove merges a node away at two, by one commit in its parent).
    if (child_count(n) < 2) {
      w.fail("node at " + kit::CheckedWalk::hex(word) + " has fewer than two children");
      return;
    }
    visit(word, level);
    for (unsigned i = kOrderedSlots; i-- > 0;) {
      if (const std::uint64_t c = *ordered_slot(n, i); c != 0) w.push(c, level + 1);
    }
  });
}

}  // namespace wort::wort_index
