// art_engine/art_tree_read.h — ArtEngine lookups and ordered scans.
//
// Lookups are optimistic about compressed paths: they jump to each node's branch position
// (depth + prefix length, unchanged by an interrupted split) and compare the whole key at
// the leaf, so they never read a prefix byte.
//
// Readers take no lock: they pin the epoch (unlinked blocks stay allocated until they
// unpin), read every word a writer may change with one atomic load (a header's depth and
// prefix length together, a NODE4 slot word whole), and accept a leaf found through a node
// that reuses slots only after re-reading its commit word (Ops::find, checked_leaf); a scan
// follows a child its walk of a node reports only once the commit word, read again, still
// names it (Ops::for_each_from): else another key byte's subtree could be visited in that
// entry's place, out of order. A writer's uncommitted stores are then never followed. What a reader returns is durable:
// removes and updates commit non-temporally, and a leaf an insert's cached commit has just
// published is fresh until that commit's fence — a reader that meets it makes it durable
// first (help_fresh). The lookup itself is in art_tree.h (always inlined).
#pragma once

#include <limits>

#include "index/art_engine/art_tree.h"
#include "index/kit/anchor.h"

namespace wort::art_engine {

template <ArtFlavor F>
const Leaf* ArtEngine<F>::find_leaf(Key k) const {
  Ref r = load(&anchor_->root);
  while (r != kNull && !is_leaf(r)) {
    const NodeBase* n = node(r);
    const unsigned pos = load_branch_pos(n);
    if (k.size() < pos) return nullptr;
    r = k.size() == pos ? load(&n->eok) : find_child(n, key_byte(k, pos));
  }
  if (r == kNull) return nullptr;
  const Leaf* l = leaf(r);
  return leaf_matches(l, k) ? l : nullptr;
}

// A lookup whose leaf compare met a leaf of k's length with a mark (under the lookup's pin):
// the lookup again; at a leaf of k with a mark, help_fresh before its value is returned.
template <ArtFlavor F>
const Leaf* ArtEngine<F>::marked_leaf(Key k) const {
  const Leaf* l = find_leaf(k);
  if (l != nullptr) help_if_marked(l);
  return l;
}

// The insert that published l may not be durable. Its publishing store is l's commit word
// in the node holding l's slot (an in-place add: the slot word, bitmap, index byte or child
// word; eok; the root) or the pointer word naming that node (a leaf split's NODE4, a prefix
// split's parent, a grown or copied node, written back and fenced before that pointer
// store). While l is fresh neither can change: the inserting writer holds the stripe of the
// node holding l's slot (the node it added into, or its new node, born locked) and, when it
// published a new node, of the node holding the pointer word, until after its commit's
// fence. So a descent by l's key (branch positions only, as the lookup) reaches l through
// both; writing them back and fencing makes the commit durable. If the writer has finished
// meanwhile and l has moved or gone, its commit was durable before it cleared the mark:
// the write-backs are then harmless. Then the mark is cleared (volatile, as the writer does).
template <ArtFlavor F>
void ArtEngine<F>::help_fresh(const Leaf* l) const {
  if (WORT_FAULT(g_broken_reader_ignores_fresh)) [[unlikely]] return;
  if (mark_of(l) != fresh_mark_) {  // an earlier session's mark (or cleared meanwhile)
    clear_fresh(l);
    return;
  }
  const Key k = leaf_key(l);
  const void* above = nullptr;        // the pointer word naming the node that holds word
  const void* word = &anchor_->root;  // l's commit word
  const Ref* ptr = &anchor_->root;    // the pointer word r was read from
  Ref r = load(ptr);
  while (r != kNull && !is_leaf(r)) {
    NodeBase* n = node(r);
    const unsigned pos = load_branch_pos(n);
    if (k.size() < pos) break;  // not l's path any more (l moved: its commit is durable)
    above = ptr;
    if (k.size() == pos) {
      ptr = &n->eok;
      word = ptr;
    } else {
      const std::uint8_t b = key_byte(k, pos);
      with_ops(type_of(n), [&](auto ops) {
        using Ops = decltype(ops);
        ptr = Ops::slot(n, b);
        if constexpr (Ops::kInPlace) word = Ops::add_word(n, b);
        else word = ptr;
      });
      if (ptr == nullptr) break;  // gone: l's commit is durable
    }
    r = load(ptr);
  }
  if (word != nullptr) pm::flush(word, 1);
  if (above != nullptr && (reinterpret_cast<std::uintptr_t>(above) / pm::kCacheLine !=
                           reinterpret_cast<std::uintptr_t>(word) / pm::kCacheLine))
    pm::flush(above, 1);
  pm::fence();
  clear_fresh(l);
}

// `l` (in a slot of `owner`) has a mark. This session's: the insert that published it holds
// owner's stripe (the slot's owner, or the new node it was born holding) until after its
// commit's fence; taking that stripe waits for it (the caller holds no lock). An earlier
// session's: durable.
template <ArtFlavor F>
void ArtEngine<F>::wait_durable(const NodeBase* owner, const Leaf* l) {
  if (WORT_FAULT(g_broken_reader_ignores_fresh)) [[unlikely]] return;
  if (mark_of(l) == fresh_mark_) {
    LockTable::Word* w = locks_.stripe(owner);
    LockTable::acquire(w);
    LockTable::release(w);
  }
  clear_fresh(l);
}

//! The smallest leaf under r, for a quiescent check (verify, open: nothing changes).
template <ArtFlavor F>
const Leaf* ArtEngine<F>::min_leaf(Ref r) const {
  while (r != kNull && !is_leaf(r)) {
    const NodeBase* n = node(r);
    if (const Ref e = load(&n->eok); e != kNull) return leaf(e);
    Ref first = kNull;
    for_each_child(n, 0, [&](std::uint8_t, Ref c) {
      first = c;
      return false;
    });
    if (first == kNull) return nullptr;  // a quiescent tree never has an empty node
    r = first;
  }
  return r == kNull ? nullptr : leaf(r);
}

//! Some leaf under r, the one each level finds cheapest (a witness of r's compressed path:
//! every leaf under r shares it), or nullptr if r's subtree is damaged. Lock-free: a leaf
//! under a node that reuses slots is re-checked (checked_leaf), and an entry removed under
//! the walk (the re-check found it gone) sends it back to read the node again. A node the
//! walk reaches always has an entry, in the tree or unlinked (a remove never empties a node
//! in place: it merges the node away at one entry left, and an unlinked node keeps its
//! entries), so a node that names none is damage (a pool that opened, failed verify() and
//! was written), and so is a node read again kWitnessRereads times in a row: each re-read
//! needs a remove of the very entry chosen, committed in the few loads between the choice
//! and its re-check, which a healthy run does not repeat thousands of times in a row.
template <ArtFlavor F>
const Leaf* ArtEngine<F>::witness_leaf(Ref r) const {
  unsigned rereads = 0;
  while (r != kNull && !is_leaf(r)) {
    const NodeBase* n = node(r);
    if (const Ref e = load(&n->eok); e != kNull) return leaf(e);
    Ref next = kNull;
    Ref named = kNull;  // the child chosen, before its re-check
    if (type_of(n) == NodeType::node256) {  // most levels of a large tree: no call per child
      // (NODE256 entries change only by commits: no re-check, NodeOps::kReusesSlots)
      const Ref* c = reinterpret_cast<const Node256*>(n)->child;
      for (unsigned b = 0; b < 256 && next == kNull; ++b) next = load(&c[b]);
      named = next;
    } else {
      std::uint8_t b = 0;
      if (named = any_child(n, &b); named != kNull) next = checked_leaf(n, b, named);
    }
    if (next == kNull) [[unlikely]] {
      if (named == kNull || ++rereads >= kWitnessRereads) return nullptr;  // damage
      continue;
    }
    r = next;
  }
  return r == kNull ? nullptr : leaf(r);
}

template <ArtFlavor F>
Status ArtEngine<F>::update(Key k, Value v) {
  return run_write([&] { return update_once(k, v); });
}

//! One attempt: a lock-free descent to the key's leaf (not_found linearized at the load that
//! showed it), then the lock of the node holding its slot (the anchor's root lock for a root
//! leaf) and a re-check that the slot still holds that leaf.
template <ArtFlavor F>
Status ArtEngine<F>::update_once(Key k, Value v) {
  NodeBase* owner = nullptr;
  int ob = 0;
  Ref r = load(&anchor_->root);
  while (r != kNull && !is_leaf(r)) {
    NodeBase* n = node(r);
    const unsigned pos = load_branch_pos(n);
    if (k.size() < pos) return Status::not_found;
    owner = n;
    if (k.size() == pos) {
      ob = kEok;
      r = load(&n->eok);
    } else {
      ob = key_byte(k, pos);
      r = find_child(n, static_cast<std::uint8_t>(ob));
    }
  }
  if (r == kNull || !leaf_matches(leaf(r), k)) return Status::not_found;
  detail::before_locking();
  OneLock lk(locks_, owner, gen_);
  if (!lk.held()) return kRestart;
  if (!slot_holds(owner, ob, r) && detail::changed()) return kRestart;
  kit::commit_value_nt(pool_, &leaf(r)->value, v);
  return Status::ok;
}

//! State of one ascending scan: lower bound, optional upper bound, budget, visitor.
template <ArtFlavor F>
struct ArtEngine<F>::ScanState {
  Key lo;
  Key hi;
  bool has_hi = false;
  std::size_t max = 0;
  std::size_t count = 0;
  Visitor* visit = nullptr;
};

//! Visits the subtree at r in order; `bounded` means keys below st.lo may still occur.
//! Returns false once the scan is finished.
template <ArtFlavor F>
bool ArtEngine<F>::scan_ref(Ref r, unsigned depth, bool bounded, ScanState& st) const {
  if (!is_leaf(r)) return scan_node(node(r), depth, bounded, st);
  const Leaf* l = leaf(r);
  const Key k = leaf_key(l);
  if (bounded && compare_keys(k, st.lo) < 0) return true;
  if (st.has_hi && compare_keys(k, st.hi) >= 0) return false;
  help_if_marked(l);  // durable before it is returned
  ++st.count;
  if (!(*st.visit)(k, load(&l->value))) return false;
  return st.count < st.max;
}

template <ArtFlavor F>
bool ArtEngine<F>::scan_node(const NodeBase* n, unsigned depth, bool bounded, ScanState& st) const {
  const unsigned pos = load_branch_pos(n);
  unsigned from = 0;
  int bound_byte = -1;  // the child that stays bounded
  if (bounded) {
    // Compare the lower bound with the node's compressed path (bytes from any leaf).
    Key w;
    if (pos > depth) {
      const Leaf* wl = witness_leaf(node_ref(pool_.offset_of(n)));
      if (wl == nullptr) [[unlikely]] return true;  // damage: no leaf to visit below n
      w = leaf_key(wl);
    }
    for (unsigned i = depth; i < pos; ++i) {
      if (i >= st.lo.size()) return scan_node(n, depth, false, st);  // lo is a prefix
      if (st.lo[i] != w[i]) {
        if (key_byte(st.lo, i) > key_byte(w, i)) return true;  // whole subtree below lo
        return scan_node(n, depth, false, st);                 // whole subtree above lo
      }
    }
    if (st.lo.size() == pos) {
      bounded = false;  // the end-of-key leaf equals lo, everything else is above it
    } else {
      bound_byte = key_byte(st.lo, pos);
      from = static_cast<unsigned>(bound_byte);
    }
  }
  if (const Ref e = load(&n->eok); e != kNull && !bounded && !scan_ref(e, pos, false, st))
    return false;
  // (for_each_child reports an entry only if it still named the pointer once read: node_ops.h)
  return for_each_child(n, from, [&](std::uint8_t b, Ref c) {
    return scan_ref(c, pos + 1, bounded && b == bound_byte, st);
  });
}

template <ArtFlavor F>
std::size_t ArtEngine<F>::scan(Key from, std::size_t max, Visitor v) const {
  kit::EpochReclaimer::NestablePin pin(epochs_);  // the visitor may call back in
  const Ref root = load(&anchor_->root);
  if (max == 0 || root == kNull) return 0;
  ScanState st;
  st.lo = from;
  st.max = max;
  st.visit = &v;
  scan_ref(root, 0, true, st);
  return st.count;
}

template <ArtFlavor F>
std::size_t ArtEngine<F>::range(Key lo, Key hi, Visitor v) const {
  kit::EpochReclaimer::NestablePin pin(epochs_);  // the visitor may call back in
  const Ref root = load(&anchor_->root);
  if (root == kNull || compare_keys(lo, hi) >= 0) return 0;
  ScanState st;
  st.lo = lo;
  st.hi = hi;
  st.has_hi = true;
  st.max = std::numeric_limits<std::size_t>::max();
  st.visit = &v;
  scan_ref(root, 0, true, st);
  return st.count;
}

}  // namespace wort::art_engine
