// art_engine/art_tree_remove.h — ArtEngine remove: in-place removal, shrink, merge.
//
// Shrink thresholds (hysteresis against grow): NODE16 → NODE4 at 3 children, NODE48 →
// NODE16 at 12, NODE256 → NODE48 at 37. A node left with one entry is merged away: its
// survivor takes its place, absorbing its compressed path and branch byte.
#pragma once

#include "index/art_engine/art_tree.h"

namespace wort::art_engine {

//! Runs remove_once with the spares reserved (a full pool can always remove: see
//! allocate_node).
template <ArtFlavor F>
Status ArtEngine<F>::remove(Key k) {
  reserve_spares();
  detail::t_removing = true;
  const Status s = run_write([&] { return remove_once(k); });
  detail::t_removing = false;
  return s;
}

//! One attempt: a lock-free descent to the key's leaf (not_found is linearized at the load
//! that showed it), then remove_entry's locks.
template <ArtFlavor F>
Status ArtEngine<F>::remove_once(Key k) {
  const Ref root = load(&anchor_->root);
  if (root == kNull) return Status::not_found;
  if (is_leaf(root)) {
    if (!leaf_matches(leaf(root), k)) return Status::not_found;
    detail::before_locking();
    NodeLocks lk = locks();
    if (!lk.lock(nullptr)) return kRestart;
    if (load(&anchor_->root) != root && detail::changed()) return kRestart;
    pm::commit_nt(&anchor_->root, kNull);
    retire_ref(root);
    return Status::ok;
  }
  NodeBase* owner = nullptr;
  int ob = 0;
  Ref r = root;
  unsigned depth = 0;
  for (;;) {
    NodeBase* n = node(r);
    const NodeHeader hdr = load_word(&n->hdr);
    if (hdr.depth != depth) [[unlikely]] return kRestart;  // another write's window
    const unsigned pos = hdr.branch_pos();
    if (k.size() < pos) return Status::not_found;
    if (k.size() == pos) {
      const Ref e = load(&n->eok);
      if (e == kNull || !leaf_matches(leaf(e), k)) return Status::not_found;
      return remove_entry(At{owner, ob, r, depth, hdr}, kEok, e);
    }
    const std::uint8_t b = key_byte(k, pos);
    const Ref c = descend_child(n, b);
    if (c == kNull) return Status::not_found;
    if (is_leaf(c)) {
      if (!leaf_matches(leaf(c), k)) return Status::not_found;
      return remove_entry(At{owner, ob, r, depth, hdr}, b, c);
    }
    owner = n;
    ob = b;
    r = c;
    depth = pos + 1;
  }
}

template <ArtFlavor F>
NodeType ArtEngine<F>::shrunk_type(NodeType t, unsigned remaining) {
  if (t == F::Node16::kType && remaining <= 3) return F::Node4::kType;
  if (t == NodeType::node48 && remaining <= 12) return F::Node16::kType;
  if (t == NodeType::node256 && remaining <= 37) return NodeType::node48;
  return t;
}

//! Removes the leaf `victim` under byte b of n (kEok: n's end-of-key leaf); n was reached
//! through owner's slot ob holding r, at depth. In place when n keeps its type and >= 2
//! entries (locks: n); otherwise n is rebuilt smaller or copied (ART+CoW), or merged away
//! when one entry is left (locks: owner, then n, then a node survivor C, whose header is
//! rewritten or which is copied); n (and a copied C) released obsolete. The case is decided
//! again under the locks.
template <ArtFlavor F>
Status ArtEngine<F>::remove_entry(const At& at, int b, Ref victim) {
  NodeBase* const owner = at.owner;
  const int ob = at.ob;
  const Ref r = at.r;
  NodeBase* const n = node(r);
  const NodeHeader hdr = at.hdr;
  detail::before_locking();
  NodeLocks lk = locks();
  for (bool both = false;; both = true) {
    if (both && !lk.lock(owner)) return kRestart;
    if (!lk.lock(n)) return kRestart;
    if (((both && !slot_holds(owner, ob, r)) || !slot_holds(n, b, victim) ||
         load_word(&n->hdr) != hdr) && detail::changed())
      return kRestart;
    const Ref eok = n->eok;
    const unsigned children = child_count(n);
    const unsigned left = children + (eok != kNull) - 1;
    if (left == 1) {  // one entry left: merge n away
      if (!both) {
        lk.release();
        continue;
      }
      return merge_away(lk, at, b, victim);
    }
    if (b == kEok) {  // n keeps >= 2 children: its end-of-key slot is cleared in place
      pm::commit_nt(&n->eok, kNull);
      retire_ref(victim);
      return Status::ok;
    }
    const Status s = remove_child(lk, at, static_cast<std::uint8_t>(b), children, both);
    if (s == kRestart && !both) {
      lk.release();
      continue;
    }
    if (s == Status::ok) retire_ref(victim);
    return s;
  }
}

//! remove_entry's merge: n (at.r, locked with its owner) keeps one entry besides `victim`
//! under b; that survivor takes n's place (merge), n is released obsolete.
template <ArtFlavor F>
Status ArtEngine<F>::merge_away(NodeLocks& lk, const At& at, int b, Ref victim) {
  NodeBase* const n = node(at.r);
  WORT_DCHECK(lk.holds(n) && lk.holds(at.owner));  // the merge rewrites owner's slot
  Ref survivor = b == kEok ? kNull : n->eok;
  if (survivor == kNull) {
    for_each_child(n, 0, [&](std::uint8_t c, Ref x) {
      if (static_cast<int>(c) != b) survivor = x;
      return survivor == kNull;
    });
  }
  Ref* slot = slot_of(at.owner, at.ob);
  if (slot == nullptr) [[unlikely]] slot = &anchor_->root;  // only the broken variant
  if (Status s = merge(lk, slot, at.depth, survivor); s != Status::ok) return s;
  lk.obsolete(n);
  retire_ref(victim);
  return Status::ok;
}

//! remove_entry's child case: n (at.r, locked) loses its child under cb, in place when its
//! type keeps `children` - 1 children and allows it, else rebuilt smaller or copied — which
//! needs owner's lock too: kRestart when `both` is false (the caller takes both and comes
//! back). The victim is retired by the caller.
template <ArtFlavor F>
Status ArtEngine<F>::remove_child(NodeLocks& lk, const At& at, std::uint8_t cb, unsigned children,
                                bool both) {
  NodeBase* const n = node(at.r);
  WORT_DCHECK(lk.holds(n) && (!both || lk.holds(at.owner)));
  return with_ops(type_of(n), [&](auto ops) -> Status {
    using Ops = decltype(ops);
    const NodeType t = shrunk_type(Ops::kType, children - 1);
    if constexpr (Ops::kInPlace) {
      if (t == Ops::kType) {
        Ops::remove(n, cb);
        return Status::ok;
      }
    }
    if (!both) return kRestart;  // a copy: needs owner's lock too (below)
    Entries e;
    collect(n, e);
    e.erase(cb);
    Ref* slot = slot_of(at.owner, at.ob);
    if (slot == nullptr) [[unlikely]] slot = &anchor_->root;  // only the broken variant
    const Status st = rebuild(slot, n, t, e);
    if (st == Status::ok) lk.obsolete(n);
    return st;
  });
}

//! Replaces the node at slot (reached at depth) by its only remaining entry `survivor`,
//! under the locks of slot's owner and of that node. An inner survivor C is locked too (its
//! header is rewritten, or it is copied) and takes over the node's depth and a path
//! extended by the node's path and branch byte:
//!   WOART:   C's header is rewritten in place and the pointer swapped under one fence
//!            (recovery repairs a survivor reached at a depth its header disagrees with);
//!   ART+CoW: C is copied with the new header, the copy published, C released obsolete.
template <ArtFlavor F>
Status ArtEngine<F>::merge(NodeLocks& lk, Ref* slot, unsigned depth, Ref survivor) {
  const Ref old = load(slot);
  if (is_leaf(survivor)) {
    pm::commit_nt(slot, survivor);
    retire_ref(old);
    return Status::ok;
  }
  NodeBase* s = node(survivor);
  if (!lk.lock(s)) return kRestart;  // below the node: top-down
  const NodeHeader sh = load_word(&s->hdr);
  const Leaf* wl = witness_leaf(survivor);
  if (wl == nullptr) [[unlikely]] return Status::corrupt;  // damage below the survivor
  const NodeHeader hdr = make_header(depth, sh.branch_pos() - depth, leaf_key(wl));
  if constexpr (F::kDepthRepair) {
    // No new block to order first: either store alone leaves a survivor whose depth
    // disagrees with its place but whose branch position is unchanged, which recovery
    // repairs, so the header's write-back shares the pointer's fence.
    pm::store(&s->hdr, hdr);
    pm::flush(&s->hdr, sizeof(NodeHeader));
    pm::commit_nt_sharing_fence(slot, survivor);
  } else {
    Ref copy;
    if (Status st = copy_with_header(s, hdr, &copy); st != Status::ok) return st;
    pm::publish_nt(slot, copy);
    retire_ref(survivor);
    lk.obsolete(s);
  }
  retire_ref(old);
  return Status::ok;
}

}  // namespace wort::art_engine
