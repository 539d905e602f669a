// art_engine/art_tree_insert.h — ArtEngine insert/upsert: one case per function.
//
// Every commit that makes a new leaf reachable is cached (release_to_readers + pm::publish: fence, store,
// write-back, fence; sync.h) and its leaf is born fresh (make_leaf with fresh_mark_), cleared
// (volatile) after the commit's fence while the write still holds its locks; every new node
// an insert publishes (a leaf split's NODE4, a prefix split's parent and ART+CoW's copy of
// the split node, a grown or copied node) is born locked: its stripe is taken before the
// publishing store and released after that fence. README "No dirty reads".
#pragma once

#include <algorithm>
#include <type_traits>

#include "index/art_engine/art_tree.h"
#include "index/kit/anchor.h"

namespace wort::art_engine {

template <ArtFlavor F>
Status ArtEngine<F>::put(Key k, Value v, bool overwrite) {
  if (k.size() > kMaxArtKey) return Status::invalid_argument;
  // One attempt: a lock-free descent (as a reader reads: every word a writer may change with
  // one atomic load, a child through its node type's reader-safe find), then the case's
  // locks and re-checks, out of line. A node whose header depth disagrees with the depth it
  // is reached at is inside another write's split or merge window (open() repaired every
  // crash's): restart.
  return run_write([&]() -> Status {
    NodeBase* owner = nullptr;  // the node holding the slot r was read from (nullptr: anchor)
    int ob = 0;                 // r's byte in owner
    Ref r = load(&anchor_->root);
    unsigned depth = 0;
    if (r == kNull) return put_empty(k, v);
    for (;;) {
      if (is_leaf(r)) return put_at_leaf(At{owner, ob, r, depth, {}}, k, v, overwrite);
      NodeBase* n = node(r);
      const NodeHeader hdr = load_word(&n->hdr);
      if (hdr.depth != depth) [[unlikely]] return kRestart;
      // (no call for a node without a compressed path: most levels of a large tree)
      const unsigned mismatch = hdr.prefix_len == 0 ? 0 : prefix_mismatch(n, hdr, depth, k);
      if (mismatch < hdr.prefix_len)
        return split_prefix(At{owner, ob, r, depth, hdr}, mismatch, k, v);
      const unsigned pos = hdr.branch_pos();
      if (k.size() == pos) return put_at_eok(At{owner, ob, r, depth, hdr}, k, v, overwrite);
      const std::uint8_t b = key_byte(k, pos);
      const Ref c = descend_child(n, b);
      if (c == kNull) return add_child(At{owner, ob, r, depth, hdr}, b, k, v);
      owner = n;
      ob = b;
      r = c;
      depth = pos + 1;
    }
  });
}

//! The tree is empty: the root slot := a new leaf. Locks: the anchor's root lock.
template <ArtFlavor F>
Status ArtEngine<F>::put_empty(Key k, Value v) {
  detail::before_locking();
  NodeLocks l = locks();
  if (!l.lock(nullptr)) return kRestart;
  if (load(&anchor_->root) != kNull && detail::changed()) return kRestart;
  Ref fresh;
  if (Status s = make_leaf(pool_, k, v, insert_mark(), &fresh); s != Status::ok) return s;
  release_to_readers(&anchor_->root);
  pm::publish(&anchor_->root, fresh);
  clear_own_fresh(leaf(fresh));
  return Status::ok;
}

//! First position (relative to depth) where k leaves the node's compressed path (header
//! snapshot hdr); the prefix length if it follows it all. Bytes past the header's four come
//! from a leaf below the node (any: they all share its path).
template <ArtFlavor F>
unsigned ArtEngine<F>::prefix_mismatch(const NodeBase* n, NodeHeader hdr, unsigned depth,
                                     Key k) const {
  const unsigned plen = hdr.prefix_len;
  const unsigned stored = std::min(plen, kHeaderPrefix);
  for (unsigned i = 0; i < stored; ++i)
    if (depth + i >= k.size() || key_byte(k, depth + i) != hdr.prefix[i]) return i;
  if (plen <= kHeaderPrefix) return plen;
  const Leaf* wl = witness_leaf(node_ref(pool_.offset_of(n)));
  // Damage below n: split_prefix, which takes the witness again, answers corrupt.
  if (wl == nullptr) [[unlikely]] return stored;
  const Key w = leaf_key(wl);
  for (unsigned i = stored; i < plen; ++i)
    if (depth + i >= k.size() || k[depth + i] != w[depth + i]) return i;
  return plen;
}

//! The slot (owner's, under ob) holds a leaf: same key → exists/overwrite; otherwise a
//! NODE4 holding both leaves replaces it (commit: the slot). Locks: the owner.
template <ArtFlavor F>
Status ArtEngine<F>::put_at_leaf(const At& at, Key k, Value v, bool overwrite) {
  NodeBase* const owner = at.owner;
  const int ob = at.ob;
  const Ref old = at.r;
  const unsigned depth = at.depth;
  Leaf* l = leaf(old);
  const bool same = leaf_matches(l, k);
  if (same && !overwrite) {  // linearized at the load of the slot
    // exists is a decision on the leaf: on a fresh one, only once its insert is durable.
    if (mark_of(l) != 0) [[unlikely]] wait_durable(owner, l);
    return Status::exists;
  }
  detail::before_locking();
  OneLock lk(locks_, owner, gen_);
  if (!lk.held()) return kRestart;
  if (!slot_holds(owner, ob, old) && detail::changed()) return kRestart;
  if (same) {
    // (a fresh leaf's insert held this lock until after its fence: it is durable now)
    kit::commit_value_nt(pool_, &l->value, v);
    return Status::ok;
  }
  const Key old_key = leaf_key(l);
  const unsigned m = static_cast<unsigned>(common_prefix(old_key, k, depth));
  Ref fresh;
  if (Status s = make_leaf(pool_, k, v, insert_mark(), &fresh); s != Status::ok) return s;
  Entries e;
  Ref eok = kNull;
  for (auto [key, ref] : {std::pair{old_key, old}, std::pair{k, fresh}}) {
    if (key.size() == m) eok = ref;
    else e.insert(key_byte(key, m), ref);
  }
  Ref n;
  if (Status s = build_node(F::Node4::kType, make_header(depth, m - depth, k), eok, e, &n);
      s != Status::ok) {
    free_ref(fresh);
    return s;
  }
  // Born locked: no other writer commits below the new node before its publishing store
  // is durable.
  BornLock born;
  if (!WORT_FAULT(g_broken_new_node_unlocked) &&
      !born.take(locks_, node(n), lk)) [[unlikely]] {
    free_ref(n);
    free_ref(fresh);
    return kRestart;
  }
  Ref* slot = slot_of(owner, ob);
  if (slot == nullptr) [[unlikely]] slot = &anchor_->root;  // only the broken variant
  release_to_readers(slot);
  pm::publish(slot, n);
  clear_own_fresh(leaf(fresh));
  return Status::ok;
}

//! The key ends at this node: its end-of-key slot (commit: the slot, in place). Locks: n.
template <ArtFlavor F>
Status ArtEngine<F>::put_at_eok(const At& at, Key k, Value v, bool overwrite) {
  NodeBase* const n = node(at.r);
  const NodeHeader hdr = at.hdr;
  const Ref e = load(&n->eok);
  if (e != kNull) {
    if (!leaf_matches(leaf(e), k)) return Status::corrupt;  // the path matched the whole key
    if (!overwrite) {
      if (mark_of(leaf(e)) != 0) [[unlikely]] wait_durable(n, leaf(e));  // as put_at_leaf
      return Status::exists;
    }
  }
  detail::before_locking();
  OneLock lk(locks_, n, gen_);
  if (!lk.held()) return kRestart;
  if ((load(&n->eok) != e || load_word(&n->hdr) != hdr) && detail::changed()) return kRestart;
  if (e != kNull) {
    kit::commit_value_nt(pool_, &leaf(e)->value, v);
    return Status::ok;
  }
  Ref fresh;
  if (Status s = make_leaf(pool_, k, v, insert_mark(), &fresh); s != Status::ok) return s;
  release_to_readers(&n->eok);
  pm::publish(&n->eok, fresh);
  clear_own_fresh(leaf(fresh));
  return Status::ok;
}

//! A new child under byte b of n (reached through owner's slot ob holding r): in place if
//! the node type allows and has room (locks: n), otherwise a copy — the same type for
//! ART+CoW edits, the next larger type when full (locks: owner, then n, released obsolete).
template <ArtFlavor F>
Status ArtEngine<F>::add_child(const At& at, std::uint8_t b, Key k, Value v) {
  detail::before_locking();
  const NodeType t = type_of(node(at.r));
  if (t == NodeType::node256) return add_as<Node256Ops>(at, b, k, v);
  if (t == F::Node16::kType) return add_as<typename F::Node16>(at, b, k, v);
  if (t == F::Node4::kType) return add_as<typename F::Node4>(at, b, k, v);
  if (t == NodeType::node48) return add_as<Node48Ops>(at, b, k, v);
  unknown_node_type(t);
}

template <ArtFlavor F>
template <class Ops>
Status ArtEngine<F>::add_as(const At& at, std::uint8_t b, Key k, Value v) {
  Ref fresh = kNull;
  if constexpr (Ops::kInPlace) {
    NodeBase* const n = node(at.r);
    OneLock l(locks_, n, gen_);
    if (!l.held()) return kRestart;
    bool taken;
    if constexpr (std::is_same_v<Ops, Node256Ops>)  // inline: the common case of a big tree
      taken = load(&reinterpret_cast<Node256*>(n)->child[b]) != kNull;
    else
      taken = Ops::slot(n, b) != nullptr;
    if ((taken || load_word(&n->hdr) != at.hdr) && detail::changed()) return kRestart;
    if (Status s = make_leaf(pool_, k, v, insert_mark(), &fresh); s != Status::ok) return s;
    if (Ops::add(n, b, fresh)) {  // the commit (cached), under n's lock
      clear_own_fresh(leaf(fresh));
      return Status::ok;
    }
  }  // full: it grows, which stores into owner's slot too (n's lock released first)
  return add_by_copy<Ops>(at, b, k, v, fresh);
}

//! add_child by a new node (grown, or an ART+CoW copy): locks owner, then n; `fresh` is
//! the new leaf if an in-place attempt made it already.
template <ArtFlavor F>
template <class Ops>
Status ArtEngine<F>::add_by_copy(const At& at, std::uint8_t b, Key k, Value v, Ref fresh) {
  NodeBase* const owner = at.owner;
  NodeBase* const n = node(at.r);
  const auto restart = [&] {
    if (fresh != kNull) free_ref(fresh);
    return kRestart;
  };
  NodeLocks lk = locks();
  if (!lk.lock(owner) || !lk.lock(n)) return restart();
  if ((!slot_holds(owner, at.ob, at.r) || Ops::slot(n, b) != nullptr ||
       load_word(&n->hdr) != at.hdr) && detail::changed())
    return restart();
  if (fresh == kNull) {
    if (Status s = make_leaf(pool_, k, v, insert_mark(), &fresh); s != Status::ok) return s;
  }
  Entries e;
  collect(n, e);
  const NodeType t = e.n < Ops::kCapacity ? Ops::kType : grown_type(Ops::kType);
  e.insert(b, fresh);
  Ref* slot = slot_of(owner, at.ob);
  if (slot == nullptr) [[unlikely]] slot = &anchor_->root;  // only the broken variant
  Ref copy;
  if (Status s = build_node(t, n->hdr, n->eok, e, &copy); s != Status::ok) {
    free_ref(fresh);
    return s;
  }
  if (!born_locked(lk, copy)) [[unlikely]] {  // born locked, as put_at_leaf's node
    free_ref(copy);
    return restart();
  }
  const Ref old = load(slot);
  release_to_readers(slot);
  pm::publish(slot, copy);
  clear_own_fresh(leaf(fresh));
  retire_ref(old);
  lk.obsolete(n);
  return Status::ok;
}

template <ArtFlavor F>
NodeType ArtEngine<F>::grown_type(NodeType t) {
  if (t == F::Node4::kType) return F::Node16::kType;
  if (t == F::Node16::kType) return NodeType::node48;
  return NodeType::node256;
}

//! Allocates and builds a node of type t (written back, not fenced).
template <ArtFlavor F>
Status ArtEngine<F>::build_node(NodeType t, const NodeHeader& hdr, Ref eok, const Entries& e,
                              Ref* out) {
  std::uint64_t off = 0;
  if (Status s = allocate_node(t, &off); s != Status::ok) return s;
  NodeBase* dst = pool_.at<NodeBase>(off);
  with_ops(t, [&](auto ops) { decltype(ops)::build(dst, hdr, eok, e); });
  *out = node_ref(off);
  return Status::ok;
}

template <ArtFlavor F>
NodeType ArtEngine<F>::spare_type(unsigned i) {
  static constexpr NodeType kTypes[4] = {F::Node4::kType, F::Node16::kType, NodeType::node48,
                                         NodeType::node256};
  return kTypes[i];
}

template <ArtFlavor F>
unsigned ArtEngine<F>::spare_index(NodeType t) {
  if (t == F::Node4::kType) return 0;
  if (t == F::Node16::kType) return 1;
  return t == NodeType::node48 ? 2 : 3;
}

//! A block for a node of type t. When the pool is full, a remove takes the anchor's spare of
//! that type (cleared, durably, before the block is written: a crash then leaves it
//! unreachable and the trace frees it); the next remove reserves a new one.
template <ArtFlavor F>
Status ArtEngine<F>::allocate_node(NodeType t, std::uint64_t* off) {
  const Status s = pool_.allocator().allocate(node_bytes(t), off);
  if (s != Status::out_of_space || !detail::t_removing) return s;
  spare_lock_.lock();  // the reserve is shared by every remove
  std::uint64_t* spare = &anchor_->spare[spare_index(t)];
  *off = *spare;
  if (*off != 0) pm::store_persist(spare, std::uint64_t{0});
  spare_lock_.unlock();
  return *off == 0 ? s : Status::ok;
}

//! Fills the empty spare slots (where the pool has room). Not a commit of any operation:
//! each slot is written and persisted on its own, and a block whose slot store a crash lost
//! is unreachable, so the trace frees it.
template <ArtFlavor F>
void ArtEngine<F>::reserve_spares() {
  // The common case, every slot filled: no lock (each slot is one 8-byte word, stored only
  // under the lock; a slot emptied by another remove just after this read is refilled by
  // the next remove, as one emptied just after the locked pass would be).
  bool filled = true;
  for (const std::uint64_t& spare : anchor_->spare)
    filled &= __atomic_load_n(&spare, __ATOMIC_RELAXED) != 0;
  if (filled) [[likely]] return;
  spare_lock_.lock();  // the reserve is shared by every remove (a DRAM lock, outside the pool)
  for (unsigned i = 0; i < 4; ++i) {
    const NodeType t = spare_type(i);
    std::uint64_t* spare = &anchor_->spare[i];
    if (*spare != 0) continue;
    std::uint64_t off = 0;
    if (pool_.allocator().allocate(node_bytes(t), &off) == Status::ok)
      pm::store_persist(spare, off);
  }
  spare_lock_.unlock();
}

//! A copy of n (same type, same children and end-of-key leaf) with another header.
template <ArtFlavor F>
Status ArtEngine<F>::copy_with_header(NodeBase* n, const NodeHeader& hdr, Ref* out) {
  Entries e;
  collect(n, e);
  return build_node(type_of(n), hdr, n->eok, e, out);
}

//! Replaces n by a fresh node of type t holding `e` (commit: the parent's pointer).
template <ArtFlavor F>
Status ArtEngine<F>::rebuild(Ref* slot, NodeBase* n, NodeType t, const Entries& e) {
  Ref fresh;
  if (Status s = build_node(t, n->hdr, n->eok, e, &fresh); s != Status::ok) return s;
  const Ref old = load(slot);
  pm::publish_nt(slot, fresh);
  retire_ref(old);
  return Status::ok;
}

//! k leaves n's compressed path after `mismatch` bytes: a new NODE4 takes the common part
//! and holds n (with the rest of its path) and the new leaf. Locks: owner (its slot is the
//! commit), then n (its header is rewritten, or it is replaced by its copy).
//!   WOART:   n's header is rewritten in place (depth and path together, one store), then
//!            the parent's pointer swapped; recovery repairs n if the swap was lost.
//!   ART+CoW: n is copied with the new header; the pointer swap publishes both; n is
//!            released obsolete.
template <ArtFlavor F>
Status ArtEngine<F>::split_prefix(const At& at, unsigned mismatch, Key k, Value v) {
  NodeBase* const owner = at.owner;
  const int ob = at.ob;
  const Ref r = at.r;
  NodeBase* const n = node(r);
  const NodeHeader hdr = at.hdr;
  const unsigned depth = at.depth;
  const Leaf* wl = witness_leaf(r);  // any leaf below n: they all share its path
  if (wl == nullptr) [[unlikely]] return Status::corrupt;  // damage below n
  const Key w = leaf_key(wl);
  detail::before_locking();
  NodeLocks lk = locks();
  if (!lk.lock(owner) || !lk.lock(n)) return kRestart;
  if ((!slot_holds(owner, ob, r) || load_word(&n->hdr) != hdr) && detail::changed())
    return kRestart;
  const unsigned cut = depth + mismatch;  // the new parent branches here
  const NodeHeader parent_hdr = make_header(depth, mismatch, w);
  const NodeHeader child_hdr = make_header(cut + 1, hdr.prefix_len - mismatch - 1, w);
  Ref fresh;
  if (Status s = make_leaf(pool_, k, v, insert_mark(), &fresh); s != Status::ok) return s;
  Ref child = r;
  if constexpr (!F::kDepthRepair) {
    if (Status s = copy_with_header(n, child_hdr, &child); s != Status::ok) {
      free_ref(fresh);
      return s;
    }
  }
  Entries e;
  Ref eok = kNull;
  e.push(key_byte(w, cut), child);
  if (k.size() == cut) eok = fresh;
  else e.insert(key_byte(k, cut), fresh);
  Ref parent;
  if (Status s = build_node(F::Node4::kType, parent_hdr, eok, e, &parent); s != Status::ok) {
    free_ref(fresh);
    if (child != r) free_ref(child);
    return s;
  }
  // Born locked: the new parent, and ART+CoW's copy of n (an in-place NODE48/256 add into
  // it would otherwise commit below a parent that is not yet durable).
  if (!born_locked(lk, parent) || (child != r && !born_locked(lk, child))) [[unlikely]] {
    free_ref(fresh);
    free_ref(parent);
    if (child != r) free_ref(child);
    return kRestart;
  }
  publish_split(lk, at, child_hdr, parent, fresh);
  return Status::ok;
}

//! split_prefix's commit: the new parent (holding n, or its copy, and the new leaf `fresh`)
//! published in owner's slot; WOART rewrites n's header to child_hdr first (written back,
//! ordered by the publish's fence), ART+CoW retires n.
template <ArtFlavor F>
void ArtEngine<F>::publish_split(NodeLocks& lk, const At& at, NodeHeader child_hdr, Ref parent,
                               Ref fresh) {
  NodeBase* const n = node(at.r);
  WORT_DCHECK(lk.holds(n) && lk.holds(at.owner));  // both locked, the case re-checked
  Ref* slot = slot_of(at.owner, at.ob);
  if (slot == nullptr) [[unlikely]] slot = &anchor_->root;  // only the broken variant
  if constexpr (F::kDepthRepair) {
    pm::store(&n->hdr, child_hdr);
    pm::flush(&n->hdr, sizeof(NodeHeader));
  }
  release_to_readers(slot);
  pm::publish(slot, parent);
  clear_own_fresh(leaf(fresh));
  if constexpr (!F::kDepthRepair) {
    retire_ref(at.r);
    lk.obsolete(n);
  }
}

}  // namespace wort::art_engine
