// roart/roart_insert.cc — insert / upsert, one case per function. Every path writes its new
// blocks first (unreachable, written back), then commits with one 8-byte store:
//   new key in a leaf array with room   the array slot                pm::publish_nt
//   new child under a node with room    the Zentry (N256: reference)  pm::publish_nt
//   key ending at a node                the node's eok reference      pm::publish_nt
//   full array (split), full node (grow), leaf split (LC off), prefix split
//                                       the parent's slot             pm::publish_nt
//   existing key (upsert)               the leaf's value word         pm::commit_nt
#include <algorithm>
#include <bit>

#include "index/roart/roart_tree.h"
#include "index/roart/roart_lock.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort::roart {

//! ROWEX (§3.4.1): the write walks down like a reader (no locks), then locks the slot's
//! owner and the block the change is at, checks that neither was unlinked meanwhile and that
//! the slot still names that block, and decides again under the locks. Anything changed:
//! it restarts from the root.
Status Roart::put(Key k, Value v, bool overwrite) {
  if (k.size() > kMaxRoartKey) return Status::invalid_argument;
  if (mode_.load(std::memory_order_acquire) != kServing) [[unlikely]]
    if (const Status s = await_walk(); s != Status::ok) return s;
  OpPin g(epochs_);
  Status s = Status::ok;
#if WORT_FAULTS
  if (WORT_FAULT_HOOK_SET(g_write_descended_hook)) [[unlikely]] {
    while (!put_once<true>(k, v, overwrite, &s)) {  // (tests: the copy that calls the hook)
    }
    return s;
  }
#endif
  while (!put_once<false>(k, v, overwrite, &s)) {
  }
  return s;
}

//! One attempt; false: restart (a lock found its block obsolete, or a slot changed). The
//! steps: at an array, add the key under the array's lock alone; at an empty slot, a leaf or
//! a full array, change the owner's slot; at a node, go down without locks while the key
//! continues through a child, else change the node under its owner's lock and its own.
template <bool kHooked>
bool Roart::put_once(Key k, Value v, bool overwrite, Status* out) {
  NodeBase* owner = nullptr;  // the node holding `slot` (nullptr: the anchor)
  ChildSlot slot{&anchor_->root.raw, false};
  unsigned depth = 0;
  for (;;) {
    const Ref r = slot.get();
    // Only the anchor's slot is ever empty: an empty slot in a node means the child this
    // write went down to was removed meanwhile. Restart: taken as an empty tree, the child
    // would be published into the node with no count update (and a Zentry without its key
    // byte) — the first churn race ("volatile count != entries").
    // (The broken variant, g_broken_write_takes_empty_slot, goes on instead: in the hooked
    // copy only, so the production copy is the same code as before the hooks.)
    if (r == kNull && owner != nullptr &&
        !(kHooked && WORT_FAULT(g_broken_write_takes_empty_slot)))
      return false;
    if (is_array(r)) {  // the common case: the array's lock alone, unless it is full
      if (const WriteStep st = put_in_array_with_room(r, k, v, overwrite, out);
          st != WriteStep::go_on)
        return st == WriteStep::done;
    }
    if (r == kNull || is_leaf(r) || is_array(r))  // (a full array: grow or split)
      return put_at_slot(owner, slot, r, depth, k, v, overwrite, out);
    NodeBase* n = touch(r);
    const unsigned pos = n->level;
    if (pos < depth) {
      *out = Status::corrupt;
      return true;
    }
    if (descend_unlocked(n, pos, k, owner, slot, depth)) {
#if WORT_FAULTS
      // Tests only: the window of the second churn race (the child removed now).
      if constexpr (kHooked) call_race_hook(g_write_descended_hook, g_write_descended_ctx);
#endif
      continue;
    }
    if (const WriteStep st = put_at_node(owner, slot, r, n, pos, depth, k, v, overwrite, out);
        st != WriteStep::go_on)
      return st == WriteStep::done;
  }
}

//! put_once at a leaf array: the key's leaf updated, or a new leaf added while the array has
//! room, under the array's lock alone; go_on: the array is full.
inline Roart::WriteStep Roart::put_in_array_with_room(Ref r, Key k, Value v, bool overwrite,
                                                      Status* out) {
  LeafArray* a = touch_array(r);
  WriteLocks l(gen_);
  if (!l.lock(&a->lock)) return WriteStep::restart;  // replaced meanwhile (grow, split, shrink)
  // Not obsolete under its lock: still linked (only its lock holder unlinks it).
  const std::uint16_t fp = fingerprint(k);
  if (const int i = find_in_array(a, k, fp); i >= 0) {
    if (!overwrite) {
      *out = Status::exists;
    } else {
      commit_value(pool_, slot_leaf_ptr(a->slot[i].get()), v);
      *out = Status::ok;
    }
    return WriteStep::done;
  }
  if (std::popcount(a->bitmap.get()) < static_cast<int>(a->cap)) {
    std::uint64_t fresh;
    *out = make_leaf(pool_, k, v, &fresh);
    if (*out == Status::ok && !add_to_array(a, fp, fresh, node_flags()))
      *out = Status::corrupt;  // unreachable: room was checked under the lock
    return WriteStep::done;
  }
  return WriteStep::go_on;
}

//! put_once at an empty tree, a bare leaf or a full array: a change of the owner's slot,
//! under the owner's lock (and the array's); false: restart.
inline bool Roart::put_at_slot(NodeBase* owner, ChildSlot slot, Ref r, unsigned depth, Key k,
                               Value v, bool overwrite, Status* out) {
  WriteLocks l(gen_);
  if (!l.lock(owner_lock(owner)) || slot.get() != r) return false;
  if (r == kNull) {  // empty tree
    Ref c;
    if (Status s = new_child(k, v, &c); s != Status::ok) {
      *out = s;
      return true;
    }
    pm::publish_nt(slot.word, slot.encode(c));
    *out = Status::ok;
    return true;
  }
  if (is_leaf(r)) {
    *out = put_at_leaf(slot, depth, k, v, overwrite);
    return true;
  }
  if (!l.lock(&touch_array(r)->lock)) return false;
  *out = put_in_array(l, slot, depth, k, v, overwrite);
  return true;
}

//! Without locks: whether k continues through the compressed path of n (at level pos) to an
//! existing child; if so, (owner, slot, depth) move to that child's slot.
inline bool Roart::descend_unlocked(NodeBase* n, unsigned pos, Key k, NodeBase*& owner,
                                    ChildSlot& slot, unsigned& depth) const {
  const PrefixWord p = n->prefix;  // one load: a split may change it meanwhile
  if (depth + p.len != pos || k.size() <= pos ||
      (p.len != 0 && prefix_mismatch(n, p, depth, k) != p.len))
    return false;
  const ChildSlot cs = find_child(n, key_byte(k, pos));
  if (cs.word == nullptr) return false;
  owner = n;
  slot = cs;
  depth = pos + 1;
  return true;
}

//! put_once at node n (in `slot`, at `depth`; its level `pos`), where the key leaves the
//! path the descent took: under the locks of n's owner and n, decided again — a prefix
//! split, the key's eok, or a new child; go_on: a child for the key byte arrived meanwhile,
//! and (owner, slot, depth) move to it (the locks are released).
inline Roart::WriteStep Roart::put_at_node(NodeBase*& owner, ChildSlot& slot, Ref r,
                                           NodeBase* n, unsigned pos, unsigned& depth,
                                           Key k, Value v, bool overwrite, Status* out) {
  WriteLocks l(gen_);
  if (!l.lock(owner_lock(owner)) || slot.get() != r || !l.lock(&n->lock))
    return WriteStep::restart;
  if (!prefix_consistent(n, depth)) repair_prefix(n, depth);
  const PrefixWord lp = n->prefix;  // stable now: only lock holders change it
  const unsigned m = prefix_mismatch(n, lp, depth, k);
  if (m < lp.len) {
    *out = split_prefix(slot, n, depth, m, k, v);
    return WriteStep::done;
  }
  if (k.size() == pos) {
    *out = put_at_eok(n, k, v, overwrite);
    return WriteStep::done;
  }
  const std::uint8_t b = key_byte(k, pos);
  const ChildSlot cs = find_child(n, b);
  if (cs.word == nullptr) {
    *out = add_child(l, slot, n, b, k, v);
    return WriteStep::done;
  }
  owner = n;
  slot = cs;
  depth = pos + 1;
  return WriteStep::go_on;
}

//! Writers repair a prefix word an interrupted split or merge left (level is constant, so
//! the right prefix is key bytes [depth, level) of any leaf below). A repair, not a commit.
void Roart::repair_prefix(NodeBase* n, unsigned depth) {
  const Leaf* l = any_leaf(pool_.offset_of(n));
  pm::store(&n->prefix.raw, prefix_from(leaf_key(l), depth, n->level));
  pm::persist(&n->prefix, sizeof(PrefixWord));
  repairs_.fetch_add(1, std::memory_order_relaxed);
}

//! First position (relative to depth) where k leaves n's compressed path; its length if k
//! follows all of it. Bytes past the prefix word's six come from a leaf.
unsigned Roart::prefix_mismatch(const NodeBase* n, const PrefixWord& p, unsigned depth,
                                Key k) const {
  const unsigned plen = p.len;
  const unsigned stored = std::min(plen, kStoredPrefix);
  for (unsigned i = 0; i < stored; ++i)
    if (depth + i >= k.size() || key_byte(k, depth + i) != p.bytes[i]) return i;
  if (plen <= kStoredPrefix) return plen;
  const Key w = leaf_key(any_leaf(pool_.offset_of(n)));
  for (unsigned i = stored; i < plen; ++i)
    if (depth + i >= k.size() || k[depth + i] != w[depth + i]) return i;
  return plen;
}

//! A child for a new key under an empty byte: its leaf alone (a one-leaf subtree needs no
//! array; the second key to arrive turns it into an array of two, put_at_leaf). Written
//! back, not fenced.
Status Roart::new_child(Key k, Value v, Ref* out) {
  std::uint64_t l;
  if (Status s = make_leaf(pool_, k, v, &l); s != Status::ok) return s;
  *out = l | kTagLeaf;
  return Status::ok;
}

//! A new array of the smallest size that holds the n items (written back, not fenced).
Status Roart::make_array(const ArrayItem* items, unsigned n, Ref* out) {
  const unsigned cap = array_cap_for(n);
  std::uint64_t off;
  if (Status s = pool_.allocator().allocate(array_bytes(cap), &off); s != Status::ok) return s;
  build_array(pool_.at<LeafArray>(off), cap, items, n, gen_);
  *out = off | kTagArray;
  return Status::ok;
}

Status Roart::make_node(NodeType t, std::uint32_t level, const PrefixWord& p, Ref eok,
                        const Children& c, Ref* out) {
  std::uint64_t off;
  if (Status s = pool_.allocator().allocate(node_bytes(t), &off); s != Status::ok) return s;
  build_node(pool_.at<void>(off), t, level, p, eok, c, gen_);
  *out = off;
  return Status::ok;
}

//! Frees a child made by new_child that was never published (a leaf).
static void free_unpublished(Pool& pool, Ref c) { pool.allocator().free(ref_offset(c)); }

//! The slot holds a bare leaf (LC off, or a merge left one): same key → exists/overwrite;
//! otherwise a leaf array of both (LC) or an N4 at their first differing byte (leaf split).
Status Roart::put_at_leaf(ChildSlot slot, unsigned depth, Key k, Value v, bool overwrite) {
  const Ref old = slot.get();
  Leaf* l = leaf(old);
  if (leaf_matches(l, k)) {
    if (!overwrite) return Status::exists;
    commit_value(pool_, l, v);
    return Status::ok;
  }
  std::uint64_t fresh;
  if (Status s = make_leaf(pool_, k, v, &fresh); s != Status::ok) return s;
  Ref repl;
  Status s;
  if (lc()) {
    const ArrayItem items[2] = {{fingerprint(leaf_key(l)), ref_offset(old)},
                                {fingerprint(k), fresh}};
    s = make_array(items, 2, &repl);
  } else {
    const unsigned m = static_cast<unsigned>(common_prefix(leaf_key(l), k, depth));
    Children c;
    Ref eok = kNull;
    for (auto [key, ref] : {std::pair{leaf_key(l), old}, std::pair{k, fresh | kTagLeaf}}) {
      if (key.size() == m) eok = ref;
      else c.insert(key_byte(key, m), ref);
    }
    s = make_node(NodeType::n4, m, prefix_from(k, depth, m), eok, c, &repl);
  }
  if (s != Status::ok) {
    pool_.allocator().free(fresh);
    return s;
  }
  pm::publish_nt(slot.word, slot.encode(repl));
  return Status::ok;
}

//! Holds the owner's and the array's locks.
Status Roart::put_in_array(WriteLocks& l, ChildSlot slot, unsigned depth, Key k, Value v,
                           bool overwrite) {
  LeafArray* a = touch_array(slot.get());
  const std::uint16_t fp = fingerprint(k);
  if (const int i = find_in_array(a, k, fp); i >= 0) {
    if (!overwrite) return Status::exists;
    commit_value(pool_, slot_leaf_ptr(a->slot[i].get()), v);
    return Status::ok;
  }
  std::uint64_t fresh;
  if (Status s = make_leaf(pool_, k, v, &fresh); s != Status::ok) return s;
  if (add_to_array(a, fp, fresh, node_flags())) return Status::ok;
  if (a->cap < kArraySlots) return grow_array(l, slot, a, fresh, fp);
  return split_array(l, slot, a, depth, fresh, fp);
}

//! A full array smaller than 64 and the new leaf: a copy of the next size holding both,
//! published in the parent's slot (the leaves are not copied).
Status Roart::grow_array(WriteLocks& l, ChildSlot slot, LeafArray* a, std::uint64_t fresh,
                         std::uint16_t fp) {
  ArrayItem items[kArraySlots];
  unsigned n = array_items(a, items);
  items[n++] = {fp, fresh};
  Ref grown;
  if (Status s = make_array(items, n, &grown); s != Status::ok) {
    pool_.allocator().free(fresh);
    return s;
  }
  const Ref old = slot.get();
  pm::publish_nt(slot.word, slot.encode(grown));
  l.obsolete(&a->lock);
  free_ref(old);
  return Status::ok;
}

//! A full array and the new leaf: split at the first byte P where the 65 keys differ into
//! one array per byte value (a bare leaf for a group of one; the key of length P, if any,
//! as the eok) under a new node at level P. Leaves are reused; the parent's slot is the one commit.
Status Roart::split_array(WriteLocks& l, ChildSlot slot, LeafArray* a, unsigned depth,
                          std::uint64_t fresh, std::uint16_t fp) {
  ArrayItem items[kArraySlots + 1];
  unsigned n = array_items(a, items);
  items[n++] = {fp, fresh};
  auto key_of = [&](const ArrayItem& it) { return leaf_key(pool_.at<Leaf>(it.leaf)); };
  const Key k0 = key_of(items[0]);
  std::size_t p = k0.size();
  for (unsigned i = 1; i < n; ++i) p = std::min(p, common_prefix(k0, key_of(items[i]), depth));
  // The key that ends at P (at most one) first, then by byte P.
  auto rank = [&](const ArrayItem& it) {
    const Key k = key_of(it);
    return k.size() == p ? -1 : int{key_byte(k, p)};
  };
  std::sort(items, items + n, [&](const ArrayItem& x, const ArrayItem& y) { return rank(x) < rank(y); });
  Children c;
  Ref eok = kNull;
  Status st = Status::ok;
  for (unsigned i = 0; i < n && st == Status::ok;) {
    const int r = rank(items[i]);
    unsigned j = i;
    while (j < n && rank(items[j]) == r) ++j;
    if (r < 0) {
      eok = items[i].leaf | kTagLeaf;
    } else if (j - i == 1) {  // a one-leaf group hangs as a bare leaf
      c.insert(static_cast<std::uint8_t>(r), items[i].leaf | kTagLeaf);
    } else {
      Ref arr;
      st = make_array(items + i, j - i, &arr);
      if (st == Status::ok) c.insert(static_cast<std::uint8_t>(r), arr);
    }
    i = j;
  }
  Ref nn = kNull;
  if (st == Status::ok)
    st = make_node(type_for(c.n), static_cast<std::uint32_t>(p),
                   prefix_from(k0, depth, static_cast<unsigned>(p)), eok, c, &nn);
  if (st != Status::ok) {
    for (unsigned i = 0; i < c.n; ++i)  // never published: freed at once
      if (is_array(c.ref[i])) pool_.allocator().free(ref_offset(c.ref[i]));
    pool_.allocator().free(fresh);
    return st;
  }
  const Ref old = slot.get();
  pm::publish_nt(slot.word, slot.encode(nn));
  l.obsolete(&a->lock);
  free_ref(old);
  return Status::ok;
}

//! The key ends at this node: its eok reference (commit: eok, in place).
Status Roart::put_at_eok(NodeBase* n, Key k, Value v, bool overwrite) {
  WORT_DCHECK(k.size() == n->level && lock_held(n->lock.get(), gen_));  // k ends at n
  if (const Ref e = n->eok; e != kNull) {
    Leaf* l = leaf(e);
    if (!leaf_matches(l, k)) return Status::corrupt;  // the path matched the whole key
    if (!overwrite) return Status::exists;
    commit_value(pool_, l, v);
    return Status::ok;
  }
  std::uint64_t fresh;
  if (Status s = make_leaf(pool_, k, v, &fresh); s != Status::ok) return s;
  pm::publish_nt(&n->eok.raw, fresh | kTagLeaf);
  return Status::ok;
}

//! A new child under byte b: in place if the node has a free slot (the Zentry commit),
//! otherwise a copy of the next larger type published in the parent's slot.
Status Roart::add_child(WriteLocks& l, ChildSlot slot, NodeBase* n, std::uint8_t b, Key k,
                        Value v) {
  Ref c;
  if (Status s = new_child(k, v, &c); s != Status::ok) return s;
  if (add_child_in_place(n, b, c, node_flags())) return Status::ok;
  Children ch;
  collect_children(n, ch);
  ch.insert(b, c);
  Ref grown;
  if (Status s = make_node(type_for(ch.n), n->level, n->prefix, n->eok, ch, &grown);
      s != Status::ok) {
    free_unpublished(pool_, c);
    return s;
  }
  const Ref old = slot.get();
  pm::publish_nt(slot.word, slot.encode(grown));
  l.obsolete(&n->lock);
  free_ref(old);
  return Status::ok;
}

//! Minimally ordered split (§3.3.2): k leaves n's compressed path after `mismatch` bytes.
//! (i) the new leaf (array), (ii) a new N4 at the mismatch holding n and it, (iv) n's
//! trimmed prefix word are written back under ONE fence, then (iii) the parent's slot is
//! committed: 2 fences. A crash between leaves n with a prefix its constant level exposes
//! (depth + prefix.len != level): readers skip it, the next writer repairs it. MO off: a
//! fence after each step (4).
Status Roart::split_prefix(ChildSlot slot, NodeBase* n, unsigned depth, unsigned mismatch,
                           Key k, Value v) {
  // k leaves n's (consistent, locked) compressed path inside it.
  WORT_DCHECK(lock_held(n->lock.get(), gen_) && slot.get() == pool_.offset_of(n));
  WORT_DCHECK(mismatch < n->prefix.get().len && depth + n->prefix.get().len == n->level);
  const bool mo = (flags_ & kNoMinimalOrder) == 0;
  const Key w = leaf_key(any_leaf(slot.get()));
  const unsigned cut = depth + mismatch;  // the new node branches here
  Ref c = kNull, eok = kNull;
  if (k.size() == cut) {
    std::uint64_t l;
    if (Status s = make_leaf(pool_, k, v, &l); s != Status::ok) return s;
    eok = l | kTagLeaf;
  } else if (Status s = new_child(k, v, &c); s != Status::ok) {
    return s;
  }
  if (!mo) pm::fence();
  Children ch;
  ch.insert(key_byte(w, cut), slot.get());
  if (c != kNull) ch.insert(key_byte(k, cut), c);
  Ref nn;
  if (Status s = make_node(NodeType::n4, cut, prefix_from(w, depth, cut), eok, ch, &nn);
      s != Status::ok) {
    if (c != kNull) free_unpublished(pool_, c);
    if (eok != kNull) free_unpublished(pool_, eok);
    return s;
  }
  if (!mo) pm::fence();
  pm::store(&n->prefix.raw, prefix_from(w, cut + 1, n->level));
  pm::flush(&n->prefix, sizeof(PrefixWord));
  if (mo) {
    pm::publish_nt(slot.word, slot.encode(nn));
  } else {
    pm::fence();
    pm::commit_nt(slot.word, slot.encode(nn));
  }
  return Status::ok;
}

}  // namespace wort::roart
