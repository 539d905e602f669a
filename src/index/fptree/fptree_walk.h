// index/fptree/fptree_walk.h — the checked walk over the persistent part of the FPTree:
// the leaf list from the anchor's head, every live key block, and the blocks a split
// micro-log names (kit::CheckedWalk: each block entered before it is read, the list may not
// cycle, key lengths checked against their blocks).
//
// The walk reads the split micro-logs first (every one of the anchor's array: each
// concurrent split has its own), because a crash inside a split leaves two leaves that must
// be seen as its log says, not as their bitmaps say:
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
//
// With leaf groups (anchor.group_leaves > 0) the group list is walked first: each group is
// an allocator block (entered and visited), and a leaf is not a block but a leaf position
// of a listed group (LeafPositions), reached at most once.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "index/common/checked_walk.h"
#include "index/fptree/fptree_layout.h"
#include "index/fptree/fptree_leaf.h"
#include "wort/index.h"
#include "wort/key.h"

namespace wort::fptree_index {

//! What the split micro-log says (see the table above).
enum class LogState { none, unallocated, copy_pending, link_pending };

//! Where leaves may lie: allocator blocks of the leaf size, or (with leaf groups) the leaf
//! positions of the groups the walk entered. Remembers the group leaves it has reached.
class LeafPositions {
 public:
  LeafPositions(const Pool& pool, const LeafGeometry& g, const GroupGeometry& gg)
      : check_(pool), g_(g), gg_(gg) {}
  //! Group mode: the list's groups (any order).
  void set_groups(std::vector<std::uint64_t> groups) {
    groups_ = std::move(groups);
    std::sort(groups_.begin(), groups_.end());
    seen_.assign(groups_.size() * gg_.leaves, false);
  }
  //! The index of the leaf position `off`, or -1 if `off` is not one (group mode).
  long position(std::uint64_t off) const noexcept {
    auto it = std::upper_bound(groups_.begin(), groups_.end(), off);
    if (it == groups_.begin()) return -1;
    --it;
    const std::uint64_t rel = off - *it;
    if (rel < GroupGeometry::kLeavesOff || rel >= gg_.bytes ||
        (rel - GroupGeometry::kLeavesOff) % gg_.stride != 0)
      return -1;
    return static_cast<long>(it - groups_.begin()) * gg_.leaves +
           static_cast<long>((rel - GroupGeometry::kLeavesOff) / gg_.stride);
  }
  //! True if a leaf may lie at `off` (no marking).
  bool holds(std::uint64_t off) const noexcept {
    if (gg_.leaves == 0) return check_.holds(off, g_.bytes, 64);
    return position(off) >= 0;
  }
  //! The walk's enter() for a leaf: checked and marked reached (a second visit fails).
  bool enter(kit::CheckedWalk& w, std::uint64_t off, const char* what) {
    if (gg_.leaves == 0) return w.enter(off, g_.bytes, 64, what);
    if (w.failed()) return false;
    const long p = position(off);
    if (p < 0)
      return w.fail(std::string(what) + " at " + kit::CheckedWalk::hex(off) +
                    " is not a leaf position of a listed leaf group");
    if (seen_[static_cast<std::size_t>(p)])
      return w.fail(std::string(what) + " at " + kit::CheckedWalk::hex(off) + " reached twice (a cycle?)");
    seen_[static_cast<std::size_t>(p)] = true;
    return true;
  }
  bool grouped() const noexcept { return gg_.leaves != 0; }

 private:
  kit::BlockCheck check_;
  const LeafGeometry& g_;
  GroupGeometry gg_;
  std::vector<std::uint64_t> groups_;
  std::vector<bool> seen_;
};

//! Classifies one split log; fails with corrupt if it names blocks that are not leaves.
inline Result<LogState> read_log(const Pool& pool, const SplitLog& log, const LeafGeometry& g,
                                 const LeafPositions& leaves) {
  const std::uint64_t cur = log.cur, nu = log.nu;
  if (cur == 0) return LogState::none;
  auto bad = [&](const char* what, std::uint64_t off) {
    return Error{Status::corrupt, std::string("fptree: split log names ") + what + " at " +
                                      kit::CheckedWalk::hex(off) + ", not a leaf block"};
  };
  if (!leaves.holds(cur)) return bad("current leaf", cur);
  if (nu == 0) return LogState::unallocated;
  if (!leaves.holds(nu) || nu == cur) return bad("new leaf", nu);
  const LeafRef c(pool.base(), cur, g);
  if (c.full() && c.next() != nu) return LogState::copy_pending;
  return LogState::link_pending;
}

//! A split log that is not clear, as the walk reads it.
struct PendingSplit {
  LogState state;
  std::uint64_t cur, nu;
  std::uint64_t new_bits = 0;  //!< N's bitmap, when the log says N is written
  bool cur_seen = false;       //!< C met in the list
  bool new_seen = false;       //!< N met in the list
};

//! Every split log of the anchor that is not clear. Fails with corrupt if one names a
//! non-leaf, a bad new-leaf bitmap, or a leaf another log names too (each split held its
//! two leaves locked until its log was clear: two logs never share a leaf).
inline Result<std::vector<PendingSplit>> read_logs(const Pool& pool, const Anchor* a,
                                                   const LeafGeometry& g,
                                                   const LeafPositions& leaves) {
  std::vector<PendingSplit> out;
  for (std::uint32_t i = 0; i < a->logs(); ++i) {
    const SplitLog log = *a->split_log(i);
    auto st = read_log(pool, log, g, leaves);
    if (!st) return st.error();
    if (*st == LogState::none) continue;
    PendingSplit p{*st, log.cur, log.nu};
    if (p.state == LogState::link_pending) {
      p.new_bits = LeafRef(pool.base(), log.nu, g).bitmap();
      if (p.new_bits == 0 || (p.new_bits & ~g.mask()) != 0 || p.new_bits == g.mask())
        return Error{Status::corrupt, "fptree: split log's new leaf has bitmap " +
                                          kit::CheckedWalk::hex(p.new_bits)};
    }
    for (const PendingSplit& q : out) {
      const bool shared = q.cur == p.cur || (p.nu != 0 && (q.nu == p.nu || q.cur == p.nu)) ||
                          (q.nu != 0 && q.nu == p.cur);
      if (shared)
        return Error{Status::corrupt, "fptree: two split logs name leaf " +
                                          kit::CheckedWalk::hex(p.cur) + " or " +
                                          kit::CheckedWalk::hex(p.nu)};
    }
    out.push_back(p);
  }
  return out;
}

//! The group geometry the anchor declares (no groups: leaves == 0).
inline GroupGeometry group_geometry(const Anchor* a, const LeafGeometry& g) {
  return GroupGeometry::of(static_cast<std::uint32_t>(a->group_leaves), g.bytes);
}

//! Walks the list and the log's blocks (see the file comment). Calls visit(block) for every
//! block reached (not the anchor), and on_leaf(leaf offset, live bitmap) for each leaf of
//! the list, in list order. Fails with corrupt at the first bad word.
template <class OnLeaf>
Result<void> walk_leaves(const Pool& pool, const Anchor* a, const LeafGeometry& g,
                         BlockVisitorFn visit, OnLeaf&& on_leaf) {
  kit::CheckedWalk w(pool, "fptree", static_cast<std::uint32_t>(pool.size() / 64));
  const GroupGeometry gg = group_geometry(a, g);
  LeafPositions leaves(pool, g, gg);
  if (gg.leaves != 0) {
    std::vector<std::uint64_t> groups;
    auto r = w.run(a->groups, [&](std::uint64_t grp, std::uint32_t level) {
      if (!w.enter(grp, gg.bytes, 64, "leaf group")) return;
      visit(grp);
      groups.push_back(grp);
      if (const std::uint64_t next = pool.at<LeafGroupHeader>(grp)->next; next != 0)
        w.push(next, level + 1);
    });
    if (!r) return r;
    leaves.set_groups(std::move(groups));
  }
  auto logs = read_logs(pool, a, g, leaves);
  if (!logs) return logs.error();
  std::vector<PendingSplit>& pending = *logs;
  const std::uint64_t mask = g.mask();
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
    if (!leaves.enter(w, off, "leaf")) return;
    const LeafRef l(pool.base(), off, g);
    if (!w.lock_word(__atomic_load_n(l.lock_word(), __ATOMIC_RELAXED), off, "lock word")) return;
    std::uint64_t bits = l.bitmap();
    if ((bits & ~mask) != 0) {
      w.fail("leaf at " + kit::CheckedWalk::hex(off) + " has bits beyond its capacity");
      return;
    }
    for (PendingSplit& p : pending) {  // usually none
      if (off == p.cur) {
        p.cur_seen = true;
        if (p.state == LogState::link_pending) bits = mask & ~p.new_bits;
      } else if (p.state == LogState::link_pending && off == p.nu) {
        p.new_seen = true;
        bits = p.new_bits;
      }
    }
    if (bits == 0) {
      w.fail("empty leaf at " + kit::CheckedWalk::hex(off) + " in the list");
      return;
    }
    if (!leaves.grouped()) visit(off);
    keys(l, bits);
    if (w.failed()) return;
    on_leaf(off, bits);
    if (const std::uint64_t next = l.next(); next != 0) w.push(next, level + 1);
  });
  if (!r) return r;
  for (const PendingSplit& p : pending) {
    if (!p.cur_seen)
      return Error{Status::corrupt, "fptree: split log names a leaf that is not in the list"};
    if (p.state == LogState::unallocated || p.new_seen) continue;
    r = w.run(p.nu, [&](std::uint64_t off, std::uint32_t) {
      if (!leaves.enter(w, off, "new leaf")) return;
      if (!leaves.grouped()) visit(off);
      if (p.state == LogState::link_pending) keys(LeafRef(pool.base(), off, g), p.new_bits);
    });
    if (!r) return r;
  }
  return {};
}

}  // namespace wort::fptree_index
