// roart/roart_restart.cc — instant restart (paper 001 §3.4.2): open_instant checks the anchor
// and returns; a background thread runs the checked walk open() runs (visit_reachable), then
// the allocator's recovery trace, while the tree serves requests. Node metadata is rebuilt on
// first touch (the generation check) and interrupted splits/merges are repaired by the next
// writer, as after any open. Chunks carved before the crash stay frozen (they hand out
// nothing) until the trace ends, and allocations come from fresh chunks meanwhile
// (pm::Allocator::recover_concurrent).
//
// Until the checked walk has passed (mode_ == kChecking), no request follows a word the walk
// has not checked: readers take the checked paths below, which check each word as the walk
// does before following it and use no metadata, rebuild none and take no lock (they write
// nothing, so the walk reads the pool open() would have read), answering nothing where they
// meet damage; writers wait for the walk (await_walk). A walk that fails refuses the index
// (kRefused): writers answer corrupt, readers nothing, wait_trace() the walk's error. Once
// it has passed (kServing), every request takes its unchecked path: one load and one branch.
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
// Trade-offs. Reads are answered at once (checked, slower than the unchecked path); writes
// wait for the checked walk, about as long as open()'s; a damaged pool is refused when the
// walk meets the damage, not at the open. The trace's walk checks what it follows again (a
// bad word ends the trace with corrupt, wait_trace() says why, and the frozen chunks stay
// frozen: nothing is reused, nothing lost). While the trace runs: blocks freed are not
// reused (they wait for it), unlinked blocks are not freed (the walk's pin holds the epoch),
// and allocations come from chunks above the high-water mark only, so a nearly full pool can
// report out_of_space until the trace ends.
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "index/kit/anchor.h"
#include "index/kit/checked_walk.h"
#include "index/roart/roart_tree.h"
#include "pm/allocator.h"

namespace wort::roart {

#if WORT_FAULTS
std::atomic<bool> g_broken_trace_skips_session_blocks{false};

std::atomic<bool> g_broken_trace_skips_retired_blocks{false};
#endif

std::atomic<bool> g_hold_instant_check{false};

Result<std::unique_ptr<Roart>> Roart::open_instant(Pool& pool, const std::atomic<bool>* hold) {
  if (pool.values_are_blocks())  // the value blocks are found by a scan: not concurrent here
    return open(pool);
  auto a = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!a) return a.error();
  if (((*a)->flags & ~kAllFlags) != 0)
    return Error{Status::corrupt, "roart: anchor holds unknown option bits"};
  std::unique_ptr<Roart> t(new Roart(pool, *a));
  // Before the first request: from here on frees of the traced chunks' blocks are recorded.
  if (!pool.allocator().begin_concurrent_recovery()) {
    // No trace pending (the pool's recovery ran already): the checked walk, here.
    if (auto r = t->visit_reachable([](std::uint64_t) {}); !r) return r.error();
    t->trace_state_.store(kTraceDone, std::memory_order_release);
    return t;
  }
  // Until the background walk has passed, requests check what they follow (readers) or
  // wait for it (writers): see the file comment.
  t->mode_.store(kChecking, std::memory_order_release);
  t->trace_state_.store(kTraceWalking, std::memory_order_release);
  Roart* self = t.get();
  t->trace_thread_ = std::thread([self, hold] {
    while (g_hold_instant_check.load(std::memory_order_acquire))
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    auto r = self->pool_.allocator().recover_concurrent([&](pm::BlockVisitor v) -> Result<void> {
      // The checked walk open() runs. Nothing writes the tree meanwhile (writers wait, the
      // checked readers write nothing), so it reads what open() would have read.
      if (auto c = self->visit_reachable([](std::uint64_t) {}); !c) {
        self->mode_.store(kRefused, std::memory_order_release);
        self->mode_.notify_all();
        return c;
      }
      self->mode_.store(kServing, std::memory_order_release);
      self->mode_.notify_all();
      return self->trace_live(v, hold);
    });
    if (!r) self->trace_error_ = r.error();
    self->trace_state_.store(r ? kTraceDone : kTraceFailed, std::memory_order_release);
  });
  return t;
}

Status Roart::await_walk() const noexcept {
  std::uint8_t m;
  while ((m = mode_.load(std::memory_order_acquire)) == kChecking)
    mode_.wait(kChecking, std::memory_order_acquire);
  return m == kServing ? Status::ok : Status::corrupt;
}

// --- the checked paths: each check is one visit_reachable makes of the same word (no
// stricter: a request must not refuse what the walk lets through; no looser: it must not
// follow what the walk would refuse). Shared blocks and cycles, which the walk finds by
// marking what it reached, are harmless to a request: levels grow strictly down every path
// a request follows, so none loops.

namespace {
//! The Zentries of an N4/N16/N48 (the node's last 8 * capacity bytes).
const Shared<Zentry>* zentry_words(const NodeBase* n) noexcept {
  return reinterpret_cast<const Shared<Zentry>*>(reinterpret_cast<const std::byte*>(n) +
                                                 node_bytes(n->type) -
                                                 8 * node_capacity(n->type));
}
//! The child for byte b from the persistent words alone (no metadata), or kNull.
Ref child_of(const NodeBase* n, std::uint8_t b) noexcept {
  if (n->type == NodeType::n256) return reinterpret_cast<const Node256*>(n)->child[b].get();
  const Shared<Zentry>* e = zentry_words(n);
  for (unsigned i = 0, cap = node_capacity(n->type); i < cap; ++i)
    if (const Zentry z = e[i].get(); z != 0 && zentry_byte(z) == b) return zentry_ref(z);
  return kNull;
}
//! Some child of n (any: every leaf below n holds n's compressed path), or kNull.
Ref some_child(const NodeBase* n) noexcept {
  if (n->type == NodeType::n256) {
    for (const Shared<Ref>& c : reinterpret_cast<const Node256*>(n)->child)
      if (const Ref r = c.get(); r != kNull) return r;
    return kNull;
  }
  const Shared<Zentry>* e = zentry_words(n);
  for (unsigned i = 0, cap = node_capacity(n->type); i < cap; ++i)
    if (const Zentry z = e[i].get(); z != 0) return zentry_ref(z);
  return kNull;
}
}  // namespace

//! A generation-tagged word (lock word: shift 2, flags 3; generation: shift 0): held or
//! stamped in this session's generation is damage while the walk has not passed (nothing
//! of this session has written one yet: CheckedWalk::tagged_word); once it has, it is a
//! writer's or a metadata rebuild's (a checked request still running then sees them).
bool Roart::tag_ok(std::uint64_t w, unsigned shift, std::uint64_t flags) const noexcept {
  if (w >> shift != gen_ || (w & flags) == 0) return true;
  return mode_.load(std::memory_order_acquire) == kServing;
}

//! An inner node reached at key position `depth`: a 64-aligned block of its type's size,
//! a valid type, lock word and generation, a level at or past depth (and below the key
//! limit), a leaf (or nothing) as eok, every Zentry empty or used with a non-null reference.
const NodeBase* Roart::checked_node(Ref r, unsigned depth) const noexcept {
  if (!ref_ok(r) || !is_node(r)) return nullptr;
  const std::uint64_t off = ref_offset(r);
  const kit::BlockCheck bc(pool_);
  if (!bc.holds(off, sizeof(NodeBase), 64)) return nullptr;
  const NodeBase* n = node(r);
  const NodeType t = n->type;
  if (!is_inner_type(t) || !bc.holds(off, node_bytes(t), 64)) return nullptr;
  if (!tag_ok(n->lock.get(), 2, 3) || !tag_ok(n->generation.get(), 0, ~std::uint64_t{0}))
    return nullptr;
  if (const std::uint32_t at = n->level; at < depth || at >= kMaxRoartKey) return nullptr;
  if (const Ref e = n->eok; e != kNull && !is_leaf(e)) return nullptr;
  if (t != NodeType::n256) {
    const Shared<Zentry>* e = zentry_words(n);
    for (unsigned i = 0, cap = node_capacity(t); i < cap; ++i)
      if (const Zentry z = e[i].get(); z != 0 && ((z >> 56) != 1 || zentry_ref(z) == kNull))
        return nullptr;
  }
  return n;
}

//! A leaf array: a 64-aligned block of its size, the type byte, a valid size, its lock word.
const LeafArray* Roart::checked_array(Ref r) const noexcept {
  if (!ref_ok(r) || !is_array(r)) return nullptr;
  const std::uint64_t off = ref_offset(r);
  const kit::BlockCheck bc(pool_);
  if (!bc.holds(off, offsetof(LeafArray, slot), 64)) return nullptr;
  const LeafArray* a = array(r);
  if (a->type != NodeType::leaf_array || !valid_array_cap(a->cap) ||
      !bc.holds(off, array_bytes(a->cap), 64) || !tag_ok(a->lock.get(), 2, 3))
    return nullptr;
  return a;
}

//! A leaf hanging at key position `depth`: a 16-aligned block holding its key, whose
//! length is at least depth and at most the key limit.
const Leaf* Roart::checked_leaf(Ref r, unsigned depth) const noexcept {
  if (!ref_ok(r) || !is_leaf(r)) return nullptr;
  const std::uint64_t off = ref_offset(r);
  const kit::BlockCheck bc(pool_);
  if (!bc.holds(off, sizeof(Leaf), 16)) return nullptr;
  const Leaf* l = leaf(r);
  const std::uint32_t len = l->key_len;
  if (len < depth || len > kMaxRoartKey || !bc.holds(off, leaf_bytes(len), 16)) return nullptr;
  return l;
}

//! The leaf a used array slot names (its offset 16-aligned: the walk's check).
const Leaf* Roart::checked_slot_leaf(LeafSlot s, unsigned depth) const noexcept {
  if ((slot_leaf(s) & kTagMask) != 0) return nullptr;
  return checked_leaf(slot_leaf(s) | kTagLeaf, depth);
}

//! Some leaf below the checked node n (at least n->level bytes long), or nullptr on damage.
const Leaf* Roart::checked_any_leaf(const NodeBase* n) const noexcept {
  for (;;) {
    const unsigned at = n->level;
    if (const Ref e = n->eok; e != kNull) return checked_leaf(e, at);
    const Ref c = some_child(n);
    if (!ref_ok(c) || c == kNull) return nullptr;
    if (is_leaf(c)) return checked_leaf(c, at + 1);
    if (is_array(c)) {
      const LeafArray* a = checked_array(c);
      if (a == nullptr) return nullptr;
      for (unsigned i = 0; i < a->cap; ++i)
        if (const LeafSlot s = a->slot[i].get(); s != 0) return checked_slot_leaf(s, at + 1);
      return nullptr;
    }
    n = checked_node(c, at + 1);  // a level past n's: the loop ends
    if (n == nullptr) return nullptr;
  }
}

//! find_leaf with every word checked before it is followed; nullptr: not found, or damage.
const Leaf* Roart::find_leaf_checked(Key k) const {
  Ref r = anchor_->root;
  unsigned depth = 0;
  while (r != kNull) {
    if (!ref_ok(r)) return nullptr;
    if (is_leaf(r)) {
      const Leaf* l = checked_leaf(r, depth);
      return l != nullptr && leaf_matches(l, k) ? l : nullptr;
    }
    if (is_array(r)) {
      const LeafArray* a = checked_array(r);
      if (a == nullptr) return nullptr;
      const std::uint16_t fp = fingerprint(k);
      for (unsigned i = 0; i < a->cap; ++i) {
        const LeafSlot s = a->slot[i].get();
        if (s == 0 || slot_fp(s) != fp) continue;
        const Leaf* l = checked_slot_leaf(s, depth);
        if (l == nullptr) return nullptr;
        if (leaf_matches(l, k)) return l;
      }
      return nullptr;
    }
    const NodeBase* n = checked_node(r, depth);
    if (n == nullptr) return nullptr;
    const PrefixWord p = n->prefix;  // compared only when consistent (as find_leaf)
    if (p.len != 0 && depth + p.len == n->level) {
      for (unsigned i = 0; i < std::min<unsigned>(p.len, kStoredPrefix); ++i)
        if (depth + i >= k.size() || key_byte(k, depth + i) != p.bytes[i]) return nullptr;
    }
    const unsigned pos = n->level;
    if (k.size() < pos) return nullptr;
    if (k.size() == pos) {
      r = n->eok;
      depth = pos;
      continue;
    }
    r = child_of(n, key_byte(k, pos));
    depth = pos + 1;
  }
  return nullptr;
}

std::optional<Value> Roart::lookup_checked(Key k) const {
  OpPin g(epochs_);
  if (mode_.load(std::memory_order_acquire) == kRefused) return std::nullopt;
  const Leaf* l = find_leaf_checked(k);
  if (l == nullptr) return std::nullopt;
  return l->value.get();
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
  if (WORT_FAULT(g_broken_trace_skips_retired_blocks)) return {};
  trace_state_.store(kTraceSynchronizing, std::memory_order_release);
  epochs_.synchronize();
  const std::uint64_t boundary = pool_.allocator().trace_boundary();
  epochs_.for_each_retired([&](std::uint64_t off) {
    if (off < boundary) v(off);
  });
  return {};
}

namespace {
//! Marks the 16-byte unit at `off` in the trace's bitmap; false if it was marked already.
bool first_reach(std::vector<std::uint64_t>& seen, std::uint64_t off) {
  std::uint64_t& word = seen[off / 16 / 64];
  const std::uint64_t bit = 1ull << (off / 16 % 64);
  if (word & bit) return false;
  word |= bit;
  return true;
}

//! Expands one block of the trace: checks that it is a block of its kind (in a traced chunk:
//! `traced`, as Allocator::holds says), visits it if traced and pushes the words it holds.
//! Returns what is wrong, or an empty text.
std::string expand_block(const Pool& pool, Ref r, std::uint64_t off, bool traced,
                         BlockVisitorFn v, std::vector<Ref>& stack) {
  const pm::Allocator& al = pool.allocator();
  auto holds = [&](std::size_t len) { return !traced || al.holds(off, len); };
  if (is_leaf(r)) {
    if (!holds(sizeof(Leaf)) || !holds(leaf_bytes(pool.at<Leaf>(off)->key_len)))
      return "leaf at " + kit::CheckedWalk::hex(off) + " is not a block";
    if (traced) v(off);
    return {};
  }
  if (is_array(r)) {
    if (!holds(offsetof(LeafArray, slot)))
      return "array at " + kit::CheckedWalk::hex(off) + " is not a block";
    const LeafArray* a = pool.at<LeafArray>(off);
    if (a->type != NodeType::leaf_array || !valid_array_cap(a->cap) ||
        !holds(array_bytes(a->cap)))
      return "bad leaf array at " + kit::CheckedWalk::hex(off);
    if (traced) v(off);
    for (unsigned i = 0; i < a->cap; ++i)
      if (const LeafSlot s = a->slot[i]; s != 0) stack.push_back(slot_leaf(s) | kTagLeaf);
    return {};
  }
  if (!holds(sizeof(NodeBase))) return "node at " + kit::CheckedWalk::hex(off) + " is not a block";
  const NodeBase* n = pool.at<NodeBase>(off);
  if (!is_inner_type(n->type) || !holds(node_bytes(n->type)))
    return "bad node at " + kit::CheckedWalk::hex(off);
  if (traced) v(off);
  if (const Ref e = n->eok; e != kNull) stack.push_back(e);
  Children c;
  collect_children(n, c);
  for (unsigned i = 0; i < c.n; ++i) stack.push_back(c.ref[i]);
  return {};
}
}  // namespace

//! The reachable part: reads every word it follows with one atomic load (the Shared<T>
//! fields), checks blocks of the traced chunks before it reads them (Allocator::holds:
//! their chunk kinds do not change while the trace runs), and expands each block once.
Result<void> Roart::trace_walk(BlockVisitorFn v, const std::atomic<bool>* hold) const {
  OpPin g(epochs_);  // for the whole walk: nothing unlinked meanwhile is freed
  const std::uint64_t boundary = pool_.allocator().trace_boundary();
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
    if (!first_reach(seen, off)) continue;  // reached again through a moved block
    const bool traced = off < boundary;
    if (!traced && WORT_FAULT(g_broken_trace_skips_session_blocks))
      continue;  // the broken variant: old blocks moved under new ones are missed
    if (std::string why = expand_block(pool_, r, off, traced, v, stack); !why.empty())
      return bad(why);
  }
  return {};
}

}  // namespace wort::roart
