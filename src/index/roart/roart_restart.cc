// roart/roart_restart.cc — instant restart (paper 001 §3.4.2): open_instant checks the anchor
// and the tree (the checked walk open() runs) and returns; the allocator's recovery trace
// runs on a background thread while
// the tree serves requests. Node metadata is rebuilt on first touch (the generation check)
// and interrupted splits/merges are repaired by the next writer, as after any open, so the
// trace is the only recovery work left, and nothing waits for it: chunks carved before the
// crash stay frozen (they hand out nothing) until it ends, and allocations come from fresh
// chunks meanwhile (pm::Allocator::recover_concurrent).
//
// Which blocks of the traced chunks are live (the allocator's contract: every block that is
// reachable, or unlinked and not yet freed, when the walk returns must be reported):
//  - Reachable. The walk pins the epoch for its whole length, so no block unlinked meanwhile
//    is freed (or reused) while it may still read it; blocks of the frozen chunks are never
//    reused before the trace ends anyway. Whatever it reads holds what it held when it was
//    unlinked (writers never change a block's child words after unlinking it). Every write
//    that moves a block re-links it from the new contents of the very slot whose old
//    contents held it (grow, shrink, array split, array grow/shrink, prefix split,
//    leaf→array: the replacement holds the old children; merge: the survivor was a child of
//    the node the slot held), and every in-place write either adds a block made this
//    session or unlinks one for good (an in-place remove never moves another entry). So the
//    walk, reading each slot once, reaches a moved block through the old contents (intact)
//    or the new ones. A block of the traced chunks, once unreachable, never becomes
//    reachable again (nothing re-links an unlinked block), so "reachable at the end" is
//    covered by "reachable at some point of the walk through what it read".
//  - Unlinked, not yet freed (retired, roart_epoch.h). After the walk it unpins and waits
//    for a grace period (Epochs::synchronize): every operation that overlapped the walk has
//    finished and retired what it unlinked. Then it reports every block still retired
//    (for_each_retired also waits for reclaims under way: a block out of its list and not
//    yet freed would be in neither place, made free here and freed again by the reclaim). A
//    block retired later was unlinked by an operation that began after the walk ended, so it
//    was reachable then, and the walk reached it.
//  - Blocks it reached or reported that are freed before the allocator decides are recorded
//    by the allocator and end up free.
// Blocks at or above the allocator's trace_boundary() are this session's: walked through (old
// blocks hang below them after a move) but not reported.
//
// Trade-offs. Both opens run the checked walk (visit_reachable) BEFORE serving, so a damaged
// pool fails there and no request follows a word it has not checked; open_instant saves the
// allocator's side of the trace (the block map, the decision), not the walk. The background
// walk checks what it follows again (a bad word ends the trace with corrupt, wait_trace()
// says why, and the frozen chunks stay frozen: nothing is reused, nothing lost). While the
// trace runs: blocks freed are not reused (they wait for it), unlinked blocks are not freed
// (the walk's pin holds the epoch), and allocations come from chunks above the high-water
// mark only, so a nearly full pool can report out_of_space until the trace ends.
#include <chrono>
#include <thread>
#include <vector>

#include "index/common/anchor.h"
#include "index/roart/roart_tree.h"
#include "pm/allocator.h"

namespace wort::roart {

std::atomic<bool> g_broken_trace_skips_session_blocks{false};

std::atomic<bool> g_broken_trace_skips_retired_blocks{false};

Result<std::unique_ptr<Roart>> Roart::open_instant(Pool& pool, const std::atomic<bool>* hold) {
  if (pool.values_are_blocks())  // the value blocks are found by a scan: not concurrent here
    return open(pool);
  auto a = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!a) return a.error();
  if (((*a)->flags & ~kAllFlags) != 0)
    return Error{Status::corrupt, "roart: anchor holds unknown option bits"};
  std::unique_ptr<Roart> t(new Roart(pool, *a));
  // The checked walk open() runs, before the first request: a pool it refuses is refused
  // here too (no request ever follows a word it has not checked), and what the background
  // trace still decides is only which blocks of the old chunks are free.
  if (auto r = t->visit_reachable([](std::uint64_t) {}); !r) return r.error();
  // Before the first request: from here on frees of the traced chunks' blocks are recorded.
  if (!pool.allocator().begin_concurrent_recovery()) {
    t->trace_state_.store(kTraceDone, std::memory_order_release);
    return t;
  }
  t->trace_state_.store(kTraceWalking, std::memory_order_release);
  Roart* self = t.get();
  t->trace_thread_ = std::thread([self, hold] {
    auto r = self->pool_.allocator().recover_concurrent(
        [&](pm::BlockVisitor v) { return self->trace_live(v, hold); });
    if (!r) self->trace_error_ = r.error();
    self->trace_state_.store(r ? kTraceDone : kTraceFailed, std::memory_order_release);
  });
  return t;
}

Result<void> Roart::wait_trace() {
  if (trace_thread_.joinable()) trace_thread_.join();
  if (trace_state_.load(std::memory_order_acquire) == kTraceFailed) return trace_error_;
  return {};
}

//! The walk behind recover_concurrent: what is reachable, then, after a grace period, what
//! is retired and not yet freed (see the file comment).
Result<void> Roart::trace_live(BlockVisitorFn v, const std::atomic<bool>* hold) {
  if (auto r = trace_walk(v, hold); !r) return r;
  if (g_broken_trace_skips_retired_blocks.load(std::memory_order_relaxed)) return {};
  trace_state_.store(kTraceSynchronizing, std::memory_order_release);
  epochs_.synchronize();
  const std::uint64_t boundary = pool_.allocator().trace_boundary();
  epochs_.for_each_retired([&](std::uint64_t off) {
    if (off < boundary) v(off);
  });
  return {};
}

//! The reachable part: reads every word it follows with one atomic load (the Shared<T>
//! fields), checks blocks of the traced chunks before it reads them (Allocator::holds:
//! their chunk kinds do not change while the trace runs), and expands each block once.
Result<void> Roart::trace_walk(BlockVisitorFn v, const std::atomic<bool>* hold) const {
  OpPin g(epochs_);  // for the whole walk: nothing unlinked meanwhile is freed
  const pm::Allocator& al = pool_.allocator();
  const std::uint64_t boundary = al.trace_boundary();
  std::vector<std::uint64_t> seen((pool_.size() / 16 + 63) / 64, 0);
  std::vector<Ref> stack;
  auto bad = [](const std::string& why) {
    return Error{Status::corrupt, "roart background trace: " + why};
  };
  const std::uint64_t anchor = pool_.offset_of(anchor_);
  if (anchor < boundary) v(anchor);
  if (const Ref root = anchor_->root; root != kNull) stack.push_back(root);
  std::uint64_t expanded = 0;
  while (!stack.empty()) {
    if (hold != nullptr && (++expanded & 63) == 0)
      while (hold->load(std::memory_order_acquire))
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    const Ref r = stack.back();
    stack.pop_back();
    if ((r & ~kRefMask) != 0 || (r & kTagMask) > kTagArray)
      return bad("bad reference " + kit::CheckedWalk::hex(r));
    const std::uint64_t off = ref_offset(r);
    if (off == 0 || off % 16 != 0 || !pool_.contains(off, 16))
      return bad("reference " + kit::CheckedWalk::hex(r) + " outside the pool");
    std::uint64_t& word = seen[off / 16 / 64];
    const std::uint64_t bit = 1ull << (off / 16 % 64);
    if (word & bit) continue;  // reached again through a moved block: expanded already
    word |= bit;
    const bool traced = off < boundary;
    if (!traced && g_broken_trace_skips_session_blocks.load(std::memory_order_relaxed))
      continue;  // the broken variant: old blocks moved under new ones are missed
    auto holds = [&](std::size_t len) { return !traced || al.holds(off, len); };
    if (is_leaf(r)) {
      if (!holds(sizeof(Leaf)) || !holds(leaf_bytes(leaf(r)->key_len)))
        return bad("leaf at " + kit::CheckedWalk::hex(off) + " is not a block");
      if (traced) v(off);
      continue;
    }
    if (is_array(r)) {
      if (!holds(offsetof(LeafArray, slot)))
        return bad("array at " + kit::CheckedWalk::hex(off) + " is not a block");
      const LeafArray* a = array(r);
      if (a->type != NodeType::leaf_array || !valid_array_cap(a->cap) ||
          !holds(array_bytes(a->cap)))
        return bad("bad leaf array at " + kit::CheckedWalk::hex(off));
      if (traced) v(off);
      for (unsigned i = 0; i < a->cap; ++i)
        if (const LeafSlot s = a->slot[i]; s != 0) stack.push_back(slot_leaf(s) | kTagLeaf);
      continue;
    }
    if (!holds(sizeof(NodeBase)))
      return bad("node at " + kit::CheckedWalk::hex(off) + " is not a block");
    const NodeBase* n = node(r);
    if (!is_inner_type(n->type) || !holds(node_bytes(n->type)))
      return bad("bad node at " + kit::CheckedWalk::hex(off));
    if (traced) v(off);
    if (const Ref e = n->eok; e != kNull) stack.push_back(e);
    Children c;
    collect_children(n, c);
    for (unsigned i = 0; i < c.n; ++i) stack.push_back(c.ref[i]);
  }
  return {};
}

}  // namespace wort::roart
