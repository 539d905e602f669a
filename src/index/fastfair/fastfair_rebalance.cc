// FAST&FAIR rebalancing after a remove (FAIR node merge, §4.2: "performed in the reverse
// order of the split"). A node left with fewer than slots/2 records is paired with its
// neighbour under the same parent (its left neighbour; the parent's first child pairs
// with the second). The right node of the pair is first detached from the parent (a FAST
// delete: the pair becomes one virtual node, the right one reached through the sibling
// pointer), then
//   merge  (both fit in one node): the right node's records are appended to the left one
//          (one commit), the left node's sibling pointer skips it, it is freed;
//   borrow (they do not): a fresh right node gets the upper half of the pair's records;
//          the left node either gives its upper records (link the fresh node, then cut,
//          as a split) or takes the lower ones of the right node (append, then link); the
//          old right node is freed and the fresh one inserted into the parent.
// Every intermediate state is one the readers already handle (a sibling missing from its
// parent; a left node holding copies of its sibling's first records) and the writers
// repair (repair_node, link_in_parent). The parent then rebalances the same way; a root
// left with one child is replaced by it (one commit of the anchor's root word).
#include "index/fastfair/fastfair_tree.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace fastfair;

// Appends n records (n >= 1) after the last one of nr in one commit: the slots past the
// end are written first (invisible: the end is the first kEmpty key), then the first
// slot's key makes them all live. The end moves right, so after the commit the switch
// counter changes (+2): every lock-free read of the node that began before the commit is
// repeated. A right-to-left reader finds the end before it reads the slots, and one that
// found it before the append would take the slot before it — which a later delete of the
// node's last record turns into the dead left copy of the first appended key (that
// record's value under that key) — for the live record; and a reader that saw a split's
// cut of this node and ended its read there must not take the sibling word this merge then
// restores (the unlink, after this) for its next node (README "Concurrency").
void FastFairTree::append(NodeRef nr, const Record* recs, unsigned n,
                          bool /*unfenced: the fence before the commit orders it*/) {
  WORT_DCHECK(n >= 1 && nr.end() + n <= slots_);
  // Appended records sort after the node's last key (the right node of a pair).
  WORT_DCHECK(nr.end() == 0 || kr_.compare_words(nr.last_key(), recs[0].key) < 0);
  Record* r = nr.rec();
  const unsigned end = nr.end();
  for (unsigned i = 1; i < n; ++i) {
    pm::store_release(&r[end + i].ptr, recs[i].ptr);
    pm::store_release(&r[end + i].key, recs[i].key);
  }
  const bool sentinel = end + n < slots_ && r[end + n].key != kEmpty;
  if (sentinel) pm::store(&r[end + n].key, kEmpty);
  pm::store_release(&r[end].ptr, recs[0].ptr);
  // The commit is non-temporal: the lines past the commit word's (records 1.., the
  // sentinel) are written back, and fenced by the commit's leading fence (which also orders
  // a fresh node written back before, a borrow's); the commit's own line (the first slot's
  // pointer, records sharing it) persists no later than the movnti and needs neither. An
  // append that fits in the commit's line with nothing else pending would need no fence,
  // but it appends at most 4 records, which no rebalance does (a node merges once it is one
  // record under half full; only a crash leaves one smaller): not worth its own branch.
  const auto line_end = (reinterpret_cast<std::uintptr_t>(&r[end]) | 63u) + 1;
  const auto stop = reinterpret_cast<std::uintptr_t>(&r[end + n + (sentinel ? 1 : 0)]);
  if (stop > line_end) pm::flush(reinterpret_cast<const void*>(line_end), stop - line_end);
  pm::publish_nt(&r[end].key, recs[0].key);  // commit: the appended records become live
  // Before the unlink that follows (faults: the broken variant).
  if (!(faults::active & faults::append_keeps_counter)) [[likely]] bump_after_append(nr);
}

bool FastFairTree::collapse_root() {
  NodeRef root = ref(anchor_->root);
  if (root.leaf() || root.end() != 0) return false;  // (a dead slot is never the last one)
  const std::uint64_t child = root.n->h.leftmost;
  if (child == 0 || node(child)->h.sibling != 0) return false;  // a dangling sibling: later
  const std::uint64_t old = anchor_->root;
  pm::commit_nt(&anchor_->root, child);  // commit of the collapse
  retire_node(old);
  ++rebalances_.root_collapses;
  return true;
}

void FastFairTree::rebalance(const Path& path, unsigned level) {
  for (unsigned l = level;; ++l) {
    const std::uint64_t xoff = path.at[l];
    NodeRef x = ref(xoff);
    if (l == path.height) {
      while (collapse_root()) {
      }
      return;
    }
    if (x.live_count() >= slots_ / 2) return;
    NodeRef p = ref(path.at[l + 1]);
    // Nothing is stored until the pair is known to merge or borrow (a store with no commit
    // after it would follow the remove's commit): a state a crash left is left as it is,
    // the tree is valid with it; a later writer repairs it.
    if (uncut_at(p) >= 0) return;
    const unsigned pend = p.end();
    // x's place among p's children: -1 leftmost, else its record (a dead slot's pointer is
    // not a child: it may name a node already merged away).
    int j = -2;
    if (p.n->h.leftmost == xoff) j = -1;
    for (unsigned i = 0; i < pend && j == -2; ++i)
      if (!p.dead(i, pend) && p.rec()[i].ptr == xoff) j = static_cast<int>(i);
    if (j == -2) return;  // x is not in its parent (a crash left it so): leave it
    // x's right neighbour under p: the next live record.
    auto next_live = [&](unsigned i) {
      while (i < pend && p.dead(i, pend)) ++i;
      return i;
    };
    const unsigned first_live = next_live(0);
    const bool first = j == -1 || (static_cast<unsigned>(j) == first_live && p.n->h.leftmost == 0);
    std::uint64_t left, right;
    if (!first) {
      right = xoff;
      int lj = j - 1;
      while (lj >= 0 && p.dead(static_cast<unsigned>(lj), pend)) --lj;
      left = lj < 0 ? p.n->h.leftmost : p.rec()[lj].ptr;
    } else {
      const unsigned rj = next_live(static_cast<unsigned>(j + 1));
      if (rj >= pend) continue;  // p has one child: p is short too, rebalance it
      left = xoff;
      right = p.rec()[rj].ptr;
    }
    if (!rebalance_pair(p, left, right)) return;
  }
}

// Decides (reading only) whether the pair merges or borrows and reserves what it needs;
// only then repairs what is in the way (the dead slots of p, left and right; an empty node
// a crashed merge left between them) — stores that precede the pair's commits.
bool FastFairTree::rebalance_pair(NodeRef p, std::uint64_t left, std::uint64_t right) {
  NodeRef l = ref(left), r = ref(right);
  if (l.leaf()) {  // both leaves locked before they are read (one is already: x)
    hold(left);
    hold(right);
  }
  if (uncut_at(l) >= 0 || uncut_at(r) >= 0) return false;
  // Chain adjacency: an empty node between them is one a crashed merge detached.
  for (std::uint64_t d = l.n->h.sibling; d != right; d = node(d)->h.sibling) {
    if (d == 0 || node(d)->h.level != l.n->h.level) return false;
    if (l.leaf()) hold(d);
    if (ref(d).end() != 0) return false;
  }
  const unsigned nl = l.live_count(), nr = r.live_count();
  const bool merge = nl + nr <= slots_;
  std::uint64_t fresh = 0, sep_block = 0;
  if (!merge) {
    if ((nl + nr) / 2 == nl) return false;
    // Both blocks before anything changes; the separator block is written after the detach.
    if (pool_.allocator().allocate(node_size_, &fresh) != Status::ok) return false;
    const unsigned t = (nl + nr) / 2;  // the t-th live record of the pair: the separator
    std::uint64_t tw = 0;
    for (unsigned i = 0, seen = 0, e = l.end(); i < e; ++i)
      if (!l.dead(i, e) && seen++ == t) tw = l.rec()[i].key;
    for (unsigned i = 0, seen = nl, e = r.end(); i < e && t >= nl; ++i)
      if (!r.dead(i, e) && seen++ == t) tw = r.rec()[i].key;
    if (Status st = reserve_key_copy(tw, &sep_block); st != Status::ok) {
      pool_.allocator().free(fresh);
      return false;
    }
  }
  while (l.n->h.sibling != right) {  // unlink the empty nodes (repairs, not commits)
    const std::uint64_t d = l.n->h.sibling;
    pm::store_release(&l.n->h.sibling, node(d)->h.sibling);
    pm::persist(&l.n->h.sibling, sizeof(std::uint64_t));
    retire_node(d);
    ++repairs_.unlinked;
  }
  compact(p);
  compact(l);
  compact(r);
  const unsigned pend = p.end();
  unsigned rj = 0;
  while (rj < pend && p.rec()[rj].ptr != right) ++rj;  // p has no dead slot now
  if (merge) {
    merge_pair(p, rj, l, r);
  } else {
    borrow_pair(p, rj, l, r, fresh, sep_block);
  }
  return true;
}

// Detaches the right node of a pair from the parent (FAST delete: commit; p keeps the dead
// slot) and frees the parent's copy of its separator.
void FastFairTree::detach(NodeRef p, unsigned rj) {
  const std::uint64_t sep = p.rec()[rj].key;
  fast_remove(p, p.end(), rj);  // commit: the right node leaves the parent
  if (is_indirect(sep)) retire(sep & kOffsetMask);
}

void FastFairTree::merge_pair(NodeRef p, unsigned rj, NodeRef l, NodeRef r) {
  // r is l's chain neighbour and p's record rj; a right node never has a leftmost child
  // (it would be lost: only a record can hold r's first child).
  WORT_DCHECK(l.n->h.sibling == off_of(r.n) && l.n->h.level == r.n->h.level);
  WORT_DCHECK(rj < p.end() && p.rec()[rj].ptr == off_of(r.n) && r.n->h.leftmost == 0);
  detach(p, rj);
  if (faults::active & faults::stop_after_detach) [[unlikely]] return;
  if (const unsigned nr = r.end(); nr != 0) append(l, r.rec(), nr, false);  // commit: records join
  pm::commit_nt(&l.n->h.sibling, r.n->h.sibling);  // commit: it leaves the chain
  retire_node(off_of(r.n));
  ++rebalances_.merges;
}

// The left node keeps t = total/2 records, the fresh right node takes the rest.
void FastFairTree::borrow_pair(NodeRef p, unsigned rj, NodeRef l, NodeRef r,
                               std::uint64_t fresh, std::uint64_t sep_block) {
  WORT_DCHECK(l.n->h.sibling == off_of(r.n) && l.n->h.level == r.n->h.level);
  WORT_DCHECK(rj < p.end() && p.rec()[rj].ptr == off_of(r.n) && r.n->h.leftmost == 0);
  WORT_DCHECK(fresh != 0 && fresh % 64 == 0);
  const unsigned nl = l.end(), nr = r.end(), total = nl + nr, t = total / 2;
  std::vector<Record> all(l.rec(), l.rec() + nl);
  all.insert(all.end(), r.rec(), r.rec() + nr);
  detach(p, rj);
  fresh_node(fresh, r.n->h.level, 0, r.n->h.sibling, &all[t], total - t);
  // The separator for the parent: the fresh node's first key (its block, if any, is
  // written back here and fenced by the link's or the append's fence below).
  const std::uint64_t sep = sep_block ? fill_key_copy(all[t].key, sep_block) : all[t].key;
  if (t < nl) {  // the left node gives its upper records: a split of the left node
    pm::fence();
    pm::store_release(&l.n->h.sibling, fresh);
    pm::flush(&l.n->h.sibling, sizeof(std::uint64_t));
    pm::publish_nt(&l.rec()[t].key, kEmpty);  // commit: the cut
  } else {  // the left node takes the right node's lower records
    append(l, &all[nl], t - nl, true);  // commit (its fence orders the fresh node too)
    pm::commit_nt(&l.n->h.sibling, fresh);  // commit: the old right node leaves the chain
  }
  retire_node(off_of(r.n));
  // The parent learns of the fresh node (it has room: it just lost a record). Its dead
  // slot (the detach's) goes first.
  compact(p);
  const unsigned pend = p.end();
  unsigned pos = 0;
  while (pos < pend && kr_.compare_words(p.rec()[pos].key, sep) < 0) ++pos;
  fast_insert(p, pend, pos, sep, fresh, false);  // commit (everything before it is fenced)
  ++rebalances_.borrows;
}

}  // namespace wort
