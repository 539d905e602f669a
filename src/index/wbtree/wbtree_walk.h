// index/wbtree/wbtree_walk.h — the checked walk over every wB+Tree block (kit::CheckedWalk),
// aware of the split micro-log: the trace, verify(), stats() and dump() go through it.
//
// Checked before a reader may trust them: each node block (aligned, carved, reached once),
// its capacity (4..63, the anchor's for its kind), its level (one below its parent's), its
// bitmap (no entry past the capacity), a valid slot array (count = valid entries, positions
// distinct, valid, inside the node), each key form (inline keys zero-padded; a key block
// carved, length 9..kMaxKeyLength, bytes inside the block, prefix equal to the entry's):
// comparisons, and so the sorts of readers, rely on one form per key.
//
// While log.sibling names S (a split past step 2), S is walked first and N's entries that S
// also holds (same prefix and meta) are not followed again, so every block is reached once
// in every crash state; the log's N and P must be in the tree, P N's parent with S or room.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "index/common/checked_walk.h"
#include "index/wbtree/wbtree_key.h"
#include "index/wbtree/wbtree_layout.h"
#include "wort/key.h"
#include "wort/pool.h"

namespace wort::wbtree {

inline constexpr std::uint32_t kMaxLevels = 63;

//! on_node(offset, node, depth) for every node (depth 0 = the root), parents first;
//! on_key(offset) for every key block.
template <class OnNode, class OnKey>
Result<void> walk_tree(const Pool& pool, const Anchor& a, OnNode&& on_node, OnKey&& on_key) {
  kit::CheckedWalk w(pool, "wbtree", (kMaxLevels + 2) << 8);  // pushes carry depth << 8 | level
  const MicroLog log = a.log;
  const bool in_split = log.sibling != 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> moved;  // key forms S holds
  std::int64_t n_level = -1, p_level = -1, s_level = -1;
  bool p_has_n = false, p_has_s = false, p_has_room = false;
  bool walking_s = false;

  auto expand = [&](std::uint64_t off, std::uint32_t depth_and_level) {
    const std::uint32_t depth = depth_and_level >> 8, want = depth_and_level & 0xff;
    if (!w.enter(off, sizeof(Node), 64, "node")) return;
    const Node* n = pool.at<Node>(off);
    const std::string at = " at " + kit::CheckedWalk::hex(off);
    if (n->level > kMaxLevels) { w.fail("node" + at + " has level " + std::to_string(n->level)); return; }
    if (want != 0xff && n->level != want) {
      w.fail("node" + at + " has level " + std::to_string(n->level) + ", its parent wants " +
             std::to_string(want));
      return;
    }
    const std::uint32_t cap = n->capacity;
    if (cap != (n->level == 0 ? a.leaf_capacity : a.inner_capacity)) {
      w.fail("node" + at + " has capacity " + std::to_string(cap));
      return;
    }
    if (!w.fits(off, off, node_bytes(cap), "node entries")) return;
    const std::uint64_t bits = n->bitmap & ~kSlotsValid;
    if (cap < 64 && (bits >> cap) != 0) { w.fail("node" + at + " bitmap names entries past its capacity"); return; }
    if (n->bitmap & kSlotsValid) {
      const unsigned cnt = n->slot[0];
      if (cnt != static_cast<unsigned>(__builtin_popcountll(bits))) { w.fail("node" + at + " slot count disagrees with its bitmap"); return; }
      std::uint64_t seen = 0;
      for (unsigned i = 1; i <= cnt; ++i) {
        const unsigned p = n->slot[i];
        if (p >= cap || !(bits >> p & 1) || (seen >> p & 1)) { w.fail("node" + at + " slot array names a bad entry"); return; }
        seen |= 1ull << p;
      }
    }
    if (walking_s) s_level = n->level;
    if (in_split && off == log.node) n_level = n->level;
    if (in_split && off == log.parent) {
      p_level = n->level;
      p_has_room = __builtin_popcountll(bits) < static_cast<int>(cap);
    }
    on_node(off, *n, depth);
    const bool skip_moved = in_split && off == log.node && !walking_s;
    for (std::uint64_t b = bits; b; b &= b - 1) {
      const Entry& e = n->entries()[__builtin_ctzll(b)];
      if (walking_s) moved.emplace_back(e.prefix, e.meta);
      if (skip_moved) {
        bool m = false;
        for (const auto& [pr, me] : moved) m |= pr == e.prefix && me == e.meta;
        if (m) continue;
      }
      if (e.meta <= kMaxInline) {  // canonical (zero-padded), or comparisons disagree
        if (e.meta < 8 && (e.prefix << (8 * e.meta)) != 0) { w.fail("node" + at + " has an inline key that is not zero-padded"); return; }
      } else {
        if (!w.enter(e.meta, sizeof(KeyBlock), 16, "key block")) return;
        const auto* kb = pool.at<KeyBlock>(e.meta);
        const std::uint64_t len = kb->len;
        if (len <= kMaxInline || len > kMaxKeyLength) { w.fail("key block at " + kit::CheckedWalk::hex(e.meta) + " has length " + std::to_string(len)); return; }
        if (!w.fits(e.meta, e.meta, sizeof(KeyBlock) + len, "key bytes")) return;
        if (key_prefix({reinterpret_cast<const std::byte*>(kb + 1), len}) != e.prefix) { w.fail("node" + at + " has an entry whose prefix disagrees with its key block"); return; }
        on_key(e.meta);
      }
      if (n->level == 0) continue;
      if (in_split && off == log.parent && e.value == log.node) p_has_n = true;
      if (in_split && e.value == log.sibling) {  // walked first
        p_has_s |= off == log.parent;
        continue;
      }
      w.push(e.value, ((depth + 1) << 8) | (n->level - 1));
    }
  };

  // The first expansion of a run is its root (any level); pushes carry depth << 8 | level.
  bool first = true;
  if (in_split) {
    walking_s = true;
    if (auto r = w.run(log.sibling, [&](std::uint64_t off, std::uint32_t dl) {
          expand(off, first ? 0xff : dl);
          first = walking_s = false;  // S's children are ordinary nodes
        });
        !r)
      return r;
    first = true;
  }
  if (auto r = w.run(a.root, [&](std::uint64_t off, std::uint32_t dl) {
        expand(off, first ? 0xff : dl);
        first = false;
      });
      !r)
    return r;
  if (in_split) {
    if (n_level < 0 || p_level < 0 || !p_has_n || s_level != n_level || p_level != n_level + 1 ||
        (!p_has_s && !p_has_room))
      return Error{Status::corrupt, "wbtree: the split micro-log does not match the tree"};
  }
  return {};
}

}  // namespace wort::wbtree
