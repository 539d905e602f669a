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

#include "index/kit/checked_walk.h"
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

//! The state of one walk_leaves: the checked walk, the leaf positions, the pending splits.
class LeafWalk {
 public:
  LeafWalk(const Pool& pool, const Anchor* a, const LeafGeometry& g, BlockVisitorFn visit)
      : pool_(pool), a_(a), g_(g), visit_(std::move(visit)),
        w_(pool, "fptree", static_cast<std::uint32_t>(pool.size() / 64)),
        leaves_(pool, g, group_geometry(a, g)) {}

  //! The groups, the logs, the list, then the new leaves the list did not reach.
  template <class OnLeaf>
  Result<void> run(OnLeaf& on_leaf) {
    if (leaves_.grouped()) {
      if (auto r = walk_groups(); !r) return r;
    }
    auto logs = read_logs(pool_, a_, g_, leaves_);
    if (!logs) return logs.error();
    pending_ = std::move(*logs);
    if (auto r = w_.run(a_->head, [&](std::uint64_t off, std::uint32_t level) {
          if (const std::uint64_t bits = list_leaf(off); bits != 0) {
            on_leaf(off, bits);
            if (const std::uint64_t next = leaf(off).next(); next != 0) w_.push(next, level + 1);
          }
        });
        !r)
      return r;
    return walk_new_leaves();
  }

 private:
  LeafRef leaf(std::uint64_t off) const { return LeafRef(pool_.base(), off, g_); }

  // Group mode: the group list from the anchor, each group a block; the leaf positions.
  Result<void> walk_groups() {
    const GroupGeometry gg = group_geometry(a_, g_);
    std::vector<std::uint64_t> groups;
    auto r = w_.run(a_->groups, [&](std::uint64_t grp, std::uint32_t level) {
      if (!w_.enter(grp, gg.bytes, 64, "leaf group")) return;
      visit_(grp);
      groups.push_back(grp);
      if (const std::uint64_t next = pool_.at<LeafGroupHeader>(grp)->next; next != 0)
        w_.push(next, level + 1);
    });
    if (r) leaves_.set_groups(std::move(groups));
    return r;
  }

  // The key blocks of the live slots `bits` of l that hold no inline key: entered, their
  // length checked against kMaxKeyLength and the block.
  void keys(const LeafRef& l, std::uint64_t bits) {
    for (std::uint64_t m = bits & ~*l.inline_word(); m != 0; m &= m - 1) {
      const std::uint64_t ko = l.slot(std::countr_zero(m))->key;
      if (!w_.enter(ko, sizeof(KeyBlock), 16, "key block")) return;
      const std::uint64_t len = pool_.at<KeyBlock>(ko)->length;
      if (len > kMaxKeyLength) {
        w_.fail("key block at " + kit::CheckedWalk::hex(ko) + " has length " + std::to_string(len));
        return;
      }
      if (!w_.fits(ko, ko, sizeof(KeyBlock) + len, "key")) return;
      visit_(ko);
    }
  }

  // A leaf of the list: entered, its lock word and bitmap checked, its live bits as the
  // pending splits say (C: mask & ~N.bitmap, N: N.bitmap), its key blocks walked. Returns
  // the live bits, or 0 once the walk has failed.
  std::uint64_t list_leaf(std::uint64_t off) {
    if (!leaves_.enter(w_, off, "leaf")) return 0;
    const LeafRef l = leaf(off);
    if (!w_.lock_word(__atomic_load_n(l.lock_word(), __ATOMIC_RELAXED), off, "lock word")) return 0;
    std::uint64_t bits = l.bitmap();
    if ((bits & ~g_.mask()) != 0) {
      w_.fail("leaf at " + kit::CheckedWalk::hex(off) + " has bits beyond its capacity");
      return 0;
    }
    for (PendingSplit& p : pending_) {  // usually none
      if (off == p.cur) {
        p.cur_seen = true;
        if (p.state == LogState::link_pending) bits = g_.mask() & ~p.new_bits;
      } else if (p.state == LogState::link_pending && off == p.nu) {
        p.new_seen = true;
        bits = p.new_bits;
      }
    }
    if (bits == 0) {
      w_.fail("empty leaf at " + kit::CheckedWalk::hex(off) + " in the list");
      return 0;
    }
    if (!leaves_.grouped()) visit_(off);
    keys(l, bits);
    return w_.failed() ? 0 : bits;
  }

  // Each log's C must have been met in the list; a new leaf N the list did not reach is
  // entered (and its key blocks walked when the log says N is written).
  Result<void> walk_new_leaves() {
    for (const PendingSplit& p : pending_) {
      if (!p.cur_seen)
        return Error{Status::corrupt, "fptree: split log names a leaf that is not in the list"};
      if (p.state == LogState::unallocated || p.new_seen) continue;
      auto r = w_.run(p.nu, [&](std::uint64_t off, std::uint32_t) {
        if (!leaves_.enter(w_, off, "new leaf")) return;
        if (!leaves_.grouped()) visit_(off);
        if (p.state == LogState::link_pending) keys(leaf(off), p.new_bits);
      });
      if (!r) return r;
    }
    return {};
  }

  const Pool& pool_;
  const Anchor* a_;
  const LeafGeometry& g_;
  BlockVisitorFn visit_;
  kit::CheckedWalk w_;
  LeafPositions leaves_;
  std::vector<PendingSplit> pending_;
};

//! Walks the list and the log's blocks (see the file comment). Calls visit(block) for every
//! block reached (not the anchor), and on_leaf(leaf offset, live bitmap) for each leaf of
//! the list, in list order. Fails with corrupt at the first bad word.
template <class OnLeaf>
Result<void> walk_leaves(const Pool& pool, const Anchor* a, const LeafGeometry& g,
                         BlockVisitorFn visit, OnLeaf&& on_leaf) {
  return LeafWalk(pool, a, g, std::move(visit)).run(on_leaf);
}

}  // namespace wort::fptree_index
