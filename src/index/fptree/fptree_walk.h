// index/fptree/fptree_walk.h — the checked walk over the persistent part of the FPTree:
// the leaf list from the anchor's head, every live key block, and the blocks a split
// micro-log names (kit::CheckedWalk: each block entered before it is read, the list may not
// cycle, key lengths checked against their blocks).
//
// The walk reads the micro-log first, because a crash inside a split leaves two leaves that
// must be seen as the log says, not as their bitmaps say:
//
//   log {cur C, new N}     C's state                 what the walk takes as live
//   -----------------------------------------------------------------------------------
//   {0, *} or {C, 0}       (no split, or N not yet allocated/logged)    the list as it is
//   {C, N}, C full and C.next != N    copy may be partial   C whole; N entered, not read
//   {C, N}, otherwise (N written and fenced, the link begun)
//                                     C: mask & ~N.bitmap; N (in the list or not) with N.bitmap
//
// So no key block is reached twice, and everything open()'s replay will use is reached
// (and kept by the allocator's trace). fptree_split.cc decides the same way.
#pragma once

#include <bit>
#include <cstdint>
#include <string>

#include "index/common/checked_walk.h"
#include "index/fptree/fptree_layout.h"
#include "index/fptree/fptree_leaf.h"
#include "wort/index.h"
#include "wort/key.h"

namespace wort::fptree_index {

//! What the split micro-log says (see the table above).
enum class LogState { none, unallocated, copy_pending, link_pending };

//! Classifies the anchor's log; fails with corrupt if it names blocks that are not leaves.
inline Result<LogState> read_log(const Pool& pool, const Anchor* a, const LeafGeometry& g) {
  const std::uint64_t cur = a->log.cur, nu = a->log.nu;
  if (cur == 0) return LogState::none;
  const kit::BlockCheck check(pool);
  auto bad = [&](const char* what, std::uint64_t off) {
    return Error{Status::corrupt, std::string("fptree: split log names ") + what + " at " +
                                      kit::CheckedWalk::hex(off) + ", not a leaf block"};
  };
  if (!check.holds(cur, g.bytes, 64)) return bad("current leaf", cur);
  if (nu == 0) return LogState::unallocated;
  if (!check.holds(nu, g.bytes, 64) || nu == cur) return bad("new leaf", nu);
  const LeafRef c(pool.base(), cur, g);
  if (c.full() && c.next() != nu) return LogState::copy_pending;
  return LogState::link_pending;
}

//! Walks the list and the log's blocks (see the file comment). Calls visit(block) for every
//! block reached (not the anchor), and on_leaf(leaf offset, live bitmap) for each leaf of
//! the list, in list order. Fails with corrupt at the first bad word.
template <class OnLeaf>
Result<void> walk_leaves(const Pool& pool, const Anchor* a, const LeafGeometry& g,
                         BlockVisitorFn visit, OnLeaf&& on_leaf) {
  auto st = read_log(pool, a, g);
  if (!st) return st.error();
  const LogState state = *st;
  const std::uint64_t mask = g.mask();
  std::uint64_t new_bits = 0;  // N's bitmap, when the log says N is written
  if (state == LogState::link_pending) {
    new_bits = LeafRef(pool.base(), a->log.nu, g).bitmap();
    if (new_bits == 0 || (new_bits & ~mask) != 0 || new_bits == mask)
      return Error{Status::corrupt, "fptree: split log's new leaf has bitmap " +
                                        kit::CheckedWalk::hex(new_bits)};
  }
  kit::CheckedWalk w(pool, "fptree", static_cast<std::uint32_t>(pool.size() / 64));
  bool cur_seen = false, new_seen = false;
  auto keys = [&](const LeafRef& l, std::uint64_t bits) {
    for (std::uint64_t m = bits & ~*l.inline_word(); m != 0; m &= m - 1) {
      const std::uint64_t ko = l.slot(std::countr_zero(m))->key;
      if (!w.enter(ko, sizeof(KeyBlock), 16, "key block")) return;
      const std::uint64_t len = pool.at<KeyBlock>(ko)->length;
      if (len > kMaxKeyLength) {
        w.fail("key block at " + kit::CheckedWalk::hex(ko) + " has length " + std::to_string(len));
        return;
      }
      if (!w.fits(ko, ko, sizeof(KeyBlock) + len, "key")) return;
      visit(ko);
    }
  };
  auto r = w.run(a->head, [&](std::uint64_t off, std::uint32_t level) {
    if (!w.enter(off, g.bytes, 64, "leaf")) return;
    const LeafRef l(pool.base(), off, g);
    std::uint64_t bits = l.bitmap();
    if ((bits & ~mask) != 0) {
      w.fail("leaf at " + kit::CheckedWalk::hex(off) + " has bits beyond its capacity");
      return;
    }
    if (state != LogState::none && off == a->log.cur) {
      cur_seen = true;
      if (state == LogState::link_pending) bits = mask & ~new_bits;
    }
    if (state == LogState::link_pending && off == a->log.nu) {
      new_seen = true;
      bits = new_bits;
    }
    if (bits == 0) {
      w.fail("empty leaf at " + kit::CheckedWalk::hex(off) + " in the list");
      return;
    }
    visit(off);
    keys(l, bits);
    if (w.failed()) return;
    on_leaf(off, bits);
    if (const std::uint64_t next = l.next(); next != 0) w.push(next, level + 1);
  });
  if (!r) return r;
  if (state == LogState::none) return {};
  if (!cur_seen)
    return Error{Status::corrupt, "fptree: split log names a leaf that is not in the list"};
  if (state == LogState::unallocated || new_seen) return {};
  return w.run(a->log.nu, [&](std::uint64_t off, std::uint32_t) {
    if (!w.enter(off, g.bytes, 64, "new leaf")) return;
    visit(off);
    if (state == LogState::link_pending) keys(LeafRef(pool.base(), off, g), new_bits);
  });
}

}  // namespace wort::fptree_index
