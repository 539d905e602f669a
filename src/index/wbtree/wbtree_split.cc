// wB+Tree node splits under the redo micro-log (anchor->log), root growth, and the redo of
// an interrupted split at open. Every step here is structural (the key set does not
// change); the insert that needed the split commits afterwards, in its leaf.
//
// Split of a full node N under a parent P with room (README.md, "Splits"):
//   0. if N is P's first entry and its key sorts at or above S's separator (a stale lower
//      bound: README.md, "Stale first keys"), that entry becomes "" -> N   (structural)
//   1. log.node = N, log.parent = P                        (stored; written back with 2)
//   2. S = fresh node with N's upper half, flushed; fence; log.sibling = S (persisted)
//   3. P gets the entry (first key of S -> S)              (bitmap+slot protocol)
//   4. N drops the entries S holds                         (truncate_entries)
//   5. log cleared                                         (persisted)
// A crash before 2 leaves S unreachable (the trace frees it); from 2 on, open() redoes 3
// (if P lacks S) and 4 (idempotent: entries of N that S holds) and clears the log.
#include <array>
#include <cstring>

#include "index/wbtree/wbtree_tree.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace wbtree;

Status WbTree::grow_root() {
  // A full root (put grows the tree only when every node of its path is full), no split
  // in flight.
  WORT_DCHECK(anchor_->root != 0 && count_of(node(anchor_->root)) == node(anchor_->root)->capacity);
  WORT_DCHECK(anchor_->log.sibling == 0);
  const std::uint64_t old = anchor_->root;
  std::uint64_t off = 0;
  if (Status s = pool_.allocator().allocate(node_bytes(anchor_->inner_capacity), &off); s != Status::ok)
    return s;
  const Entry first{0, 0, old};  // the empty key: minus infinity
  init_node(node(off), node(old)->level + 1, anchor_->inner_capacity, &first, 1);
  pm::fence();
  pm::store_persist(&anchor_->root, off);  // structural: the key set is unchanged
  return Status::ok;
}

// The separator entry for S in its parent: S's first key (a copy of its key block: a block
// has one owner) -> S. Allocates the copy of a long key.
Status WbTree::separator_for(const Entry& first, std::uint64_t s_off, Entry* e) {
  std::array<std::byte, 8> buf;
  return make_entry(Probe(entry_key(base(), first, buf)), s_off, e);
}

void WbTree::attach_sibling(Node* p, const Entry& sep) {
  WORT_DCHECK(p->level >= 1 && sep.value != 0 && sep.value % 64 == 0);  // a node, into an inner node
  std::array<std::byte, 8> buf;
  const Probe probe(entry_key(base(), sep, buf));
  const View pv = sorted_view(base(), p);
  insert_entry(p, pv, lower_bound(base(), p, pv, probe), sep, Finish::structural);
}

// Drops from N every entry S also holds (same key form: prefix and meta): step 4, and its
// redo. Entries are matched by key form so the redo needs no key comparison.
void WbTree::drop_moved_entries(Node* n, const Node* s) {
  const View nv = sorted_view(base(), n);
  // S holds N's upper part: find the first of N's entries that S holds.
  unsigned keep = 0;
  for (; keep < nv.n; ++keep) {
    const Entry& e = n->entries()[nv.pos[keep]];
    bool in_s = false;
    for (std::uint64_t b = s->bitmap & ~kSlotsValid; b && !in_s; b &= b - 1) {
      const Entry& o = s->entries()[__builtin_ctzll(b)];
      in_s = o.prefix == e.prefix && o.meta == e.meta;
    }
    if (in_s) break;
  }
  if (keep < nv.n) truncate_entries(n, nv, keep);
}

void WbTree::clear_log() {
  pm::store(&anchor_->log.sibling, std::uint64_t{0});
  pm::store(&anchor_->log.parent, std::uint64_t{0});
  pm::store(&anchor_->log.node, std::uint64_t{0});
  pm::persist(&anchor_->log, sizeof(MicroLog));
}

Status WbTree::split(std::uint64_t n_off, std::uint64_t p_off) {
  Node* n = node(n_off);
  Node* p = node(p_off);
  WORT_DCHECK(count_of(n) == n->capacity && count_of(p) < p->capacity);
  WORT_DCHECK(n_off != p_off && p->level == n->level + 1);  // p is n's parent
  // One split at a time: the micro-log is clear (a stopped test split reopens first).
  WORT_DCHECK(anchor_->log.node == 0 && anchor_->log.parent == 0 && anchor_->log.sibling == 0);
  const View nv = sorted_view(base(), n);
  const unsigned keep = nv.n / 2;
  // Everything the split allocates, before anything is written: out of space changes nothing.
  std::uint64_t s_off = 0;
  if (Status st = pool_.allocator().allocate(node_bytes(n->capacity), &s_off); st != Status::ok)
    return st;
  Entry sep;
  if (Status st = separator_for(n->entries()[nv.pos[keep]], s_off, &sep); st != Status::ok) {
    pool_.allocator().free(s_off);
    return st;
  }
  // 0. S must go right after N in P. An inner node's first entry is a lower bound only:
  // when it names N because a remove unlinked the child before it, its key is still the one
  // N's entry had as the second, above keys that have routed to N since (the first entry
  // takes every key below the second's), and the separator can sort at or below it. Then N's entry becomes the
  // empty key (minus infinity, as grow_root writes it) first: a structural replacement
  // (same child, same place in P's key order, one bitmap store), before the log names the
  // split, so its redo at open finds P's key order right. P has room (put checks it).
  {
    const View pv = sorted_view(base(), p);
    const Entry first = p->entries()[pv.pos[0]];
    if (first.value == n_off && compare(base(), first, sep) >= 0) {
      replace_entry(p, pv, 0, Entry{0, 0, n_off}, Finish::structural);
      free_entry_key(first);  // its block, once the store naming "" is durable
      ++first_keys_cleared_;
    }
  }
  // 1. the log names N and P (log.sibling is 0 whenever no split is in flight). Not written
  // back here: the log is one line with log.sibling (wbtree_layout.h), whose write-back in
  // step 2 carries these stores, and a line persists in store order, so no image holds
  // log.sibling without N and P; until then recovery ignores them (sibling 0: log cleared).
  pm::store(&anchor_->log.node, n_off);
  pm::store(&anchor_->log.parent, p_off);
  if (stop_split_after_ == 1) return Status::io_error;
  // 2. S: N's upper half in key order, durable before the log names it
  Entry upper[kMaxCapacity];
  for (unsigned i = keep; i < nv.n; ++i) upper[i - keep] = n->entries()[nv.pos[i]];
  init_node(node(s_off), n->level, n->capacity, upper, nv.n - keep);
  if (!omit_sibling_fence_) pm::fence();
  pm::store_persist(&anchor_->log.sibling, s_off);
  if (stop_split_after_ == 2) return Status::io_error;
  // 3. P gets S
  attach_sibling(p, sep);
  if (stop_split_after_ == 3) return Status::io_error;
  // 4. N keeps its lower half
  truncate_entries(n, nv, keep);
  if (stop_split_after_ == 4) return Status::io_error;
  // 5.
  clear_log();
  return Status::ok;
}

// At open, after the checked walk and the trace (which kept S alive through log.sibling and
// checked N, P and S): finish a split the log names, or forget one that had not reached S.
Status WbTree::redo_logged_split() {
  const MicroLog& log = anchor_->log;
  if (log.node == 0 && log.parent == 0 && log.sibling == 0) return Status::ok;
  if (log.sibling != 0) {
    Node* p = node(log.parent);
    bool attached = false;
    for (std::uint64_t b = p->bitmap & ~kSlotsValid; b; b &= b - 1)
      attached |= p->entries()[__builtin_ctzll(b)].value == log.sibling;
    if (!attached) {
      const Node* s = node(log.sibling);
      Entry sep;
      const Entry& first = s->entries()[sorted_view(base(), s).pos[0]];
      if (Status st = separator_for(first, log.sibling, &sep); st != Status::ok) return st;
      attach_sibling(p, sep);
    }
    drop_moved_entries(node(log.node), node(log.sibling));
    ++splits_redone_;
  }
  clear_log();
  return Status::ok;
}

}  // namespace wort
