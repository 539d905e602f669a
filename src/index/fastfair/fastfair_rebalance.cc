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
#include "pm/persist.h"

namespace wort {

using namespace fastfair;

// Appends n records (n >= 1) after the last one of nr in one commit: the slots past the
// end are written first (invisible: the end is the first kEmpty key), then the first
// slot's key makes them all live.
void FastFairTree::append(NodeRef nr, const Record* recs, unsigned n, bool unfenced) {
  Record* r = nr.rec();
  const unsigned end = nr.end();
  for (unsigned i = 1; i < n; ++i) {
    pm::store(&r[end + i].ptr, recs[i].ptr);
    pm::store(&r[end + i].key, recs[i].key);
  }
  const bool sentinel = end + n < slots_ && r[end + n].key != kEmpty;
  if (sentinel) pm::store(&r[end + n].key, kEmpty);
  pm::store(&r[end].ptr, recs[0].ptr);
  const unsigned tail = n - 1 + (sentinel ? 1 : 0);
  if (tail != 0) pm::flush(&r[end + 1], tail * sizeof(Record));
  if (tail != 0 || unfenced) {
    pm::publish(&r[end].key, recs[0].key);  // commit: the appended records become live
  } else {
    pm::commit(&r[end].key, recs[0].key);
  }
}

bool FastFairTree::collapse_root() {
  NodeRef root = ref(anchor_->root);
  if (root.leaf() || root.end() != 0) return false;
  const std::uint64_t child = root.n->h.leftmost;
  if (child == 0 || node(child)->h.sibling != 0) return false;  // a dangling sibling: later
  const std::uint64_t old = anchor_->root;
  pm::commit(&anchor_->root, child);  // commit of the collapse
  pool_.allocator().free(old);
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
    if (repair_node(p)) return;  // the tree is valid as it is; rebalance another time
    const unsigned pend = p.end();
    // x's place among p's children: -1 leftmost, else its record.
    int j = -2;
    if (p.n->h.leftmost == xoff) j = -1;
    for (unsigned i = 0; i < pend && j == -2; ++i)
      if (p.rec()[i].ptr == xoff) j = static_cast<int>(i);
    if (j == -2) return;  // x is not in its parent (a crash left it so): leave it
    const bool first = j == -1 || (j == 0 && p.n->h.leftmost == 0);
    unsigned rj;
    std::uint64_t left, right;
    if (!first) {
      rj = static_cast<unsigned>(j);
      right = xoff;
      left = j == 0 ? p.n->h.leftmost : p.rec()[j - 1].ptr;
    } else {
      rj = static_cast<unsigned>(j + 1);
      if (rj >= pend) continue;  // p has one child: p is short too, rebalance it
      left = xoff;
      right = p.rec()[rj].ptr;
    }
    if (!rebalance_pair(p, rj, left, right)) return;
  }
}

bool FastFairTree::rebalance_pair(NodeRef p, unsigned rj, std::uint64_t left,
                                  std::uint64_t right) {
  NodeRef l = ref(left), r = ref(right);
  if (repair_node(l) || repair_node(r)) return false;
  // Chain adjacency: an empty node between them is one a crashed merge detached; unlink it.
  while (l.n->h.sibling != right) {
    const std::uint64_t d = l.n->h.sibling;
    if (d == 0 || ref(d).end() != 0 || node(d)->h.level != l.n->h.level) return false;
    pm::store_persist(&l.n->h.sibling, node(d)->h.sibling);  // repair, not a commit
    pool_.allocator().free(d);
    ++repairs_.unlinked;
  }
  if (l.end() + r.end() <= slots_) {  // no dead slot after repair_node
    merge_pair(p, rj, l, r);
    return true;
  }
  return borrow_pair(p, rj, l, r);
}

// Detaches the right node of a pair from the parent (FAST remove: commit) and frees the
// parent's copy of its separator.
void FastFairTree::detach(NodeRef p, unsigned rj) {
  const std::uint64_t sep = p.rec()[rj].key;
  fast_remove(p, p.end(), rj);  // commit: the right node leaves the parent
  if (is_indirect(sep)) pool_.allocator().free(sep & kOffsetMask);
}

void FastFairTree::merge_pair(NodeRef p, unsigned rj, NodeRef l, NodeRef r) {
  detach(p, rj);
  if (faults::active & faults::stop_after_detach) [[unlikely]] return;
  if (const unsigned nr = r.end(); nr != 0) append(l, r.rec(), nr, false);  // commit: records join
  pm::store_persist(&l.n->h.sibling, r.n->h.sibling);  // unlink it from the chain
  pool_.allocator().free(off_of(r.n));
  ++rebalances_.merges;
}

// The left node keeps t = total/2 records, a fresh right node takes the rest.
bool FastFairTree::borrow_pair(NodeRef p, unsigned rj, NodeRef l, NodeRef r) {
  const unsigned nl = l.end(), nr = r.end(), total = nl + nr, t = total / 2;
  if (t == nl) return false;
  std::vector<Record> all(l.rec(), l.rec() + nl);
  all.insert(all.end(), r.rec(), r.rec() + nr);
  std::uint64_t fresh = 0, sep = 0;  // both allocated before anything changes
  if (pool_.allocator().allocate(node_size_, &fresh) != Status::ok) return false;
  if (copy_key_word(all[t].key, &sep) != Status::ok) {
    pool_.allocator().free(fresh);
    return false;
  }
  detach(p, rj);
  fresh_node(fresh, r.n->h.level, 0, r.n->h.sibling, &all[t], total - t);
  if (t < nl) {  // the left node gives its upper records: a split of the left node
    pm::fence();
    pm::store(&l.n->h.sibling, fresh);
    pm::flush(&l.n->h.sibling, sizeof(std::uint64_t));
    pm::publish(&l.rec()[t].key, kEmpty);  // commit: the cut
  } else {  // the left node takes the right node's lower records
    append(l, &all[nl], t - nl, true);  // commit (its fence orders the fresh node too)
    pm::store_persist(&l.n->h.sibling, fresh);
  }
  pool_.allocator().free(off_of(r.n));
  // the parent learns of the fresh node (it has room: it just lost a record)
  const unsigned pend = p.end();
  unsigned pos = 0;
  while (pos < pend && kr_.compare_words(p.rec()[pos].key, sep) < 0) ++pos;
  fast_insert(p, pend, pos, sep, fresh, is_indirect(sep));
  ++rebalances_.borrows;
  return true;
}

}  // namespace wort
