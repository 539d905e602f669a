// art_engine/art_tree_base.h — ArtEngine: node-type dispatch, commit helpers, create/open.
// Included through art_tree_impl.h by the flavor's .cc that instantiates the template.
#pragma once

#include "index/art_engine/art_tree.h"
#include "index/kit/anchor.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::art_engine {

template <ArtFlavor F>
bool ArtEngine<F>::known_type(NodeType t) {
  return t == F::Node4::kType || t == F::Node16::kType || t == NodeType::node48 ||
         t == NodeType::node256;
}

template <ArtFlavor F>
template <class Fn>
decltype(auto) ArtEngine<F>::with_ops(NodeType t, Fn&& fn) {
  if (t == F::Node4::kType) return fn(typename F::Node4{});
  if (t == F::Node16::kType) return fn(typename F::Node16{});
  if (t == NodeType::node48) return fn(Node48Ops{});
  if (t == NodeType::node256) return fn(Node256Ops{});
  unknown_node_type(t);
}

template <ArtFlavor F>
std::size_t ArtEngine<F>::node_bytes(NodeType t) {
  return with_ops(t, [](auto ops) { return decltype(ops)::kBytes; });
}

template <ArtFlavor F>
const char* ArtEngine<F>::node_name(NodeType t) {
  return with_ops(t, [](auto ops) { return decltype(ops)::kName; });
}

//! The child under b. Safe for a lock-free reader: a node type that reuses slots re-checks
//! its commit word before it returns a leaf (NodeOps::kReusesSlots).
template <ArtFlavor F>
Ref ArtEngine<F>::find_child(const NodeBase* n, std::uint8_t b) const {
  return with_ops(type_of(n), [&](auto ops) { return decltype(ops)::find(n, b); });
}

template <ArtFlavor F>
Ref* ArtEngine<F>::child_slot(NodeBase* n, std::uint8_t b) const {
  return with_ops(type_of(n), [&](auto ops) { return decltype(ops)::slot(n, b); });
}

//! A child c that for_each_child reported under b, made safe for a reader to follow: a leaf
//! under a node that reuses slots is read again through find (kNull: removed since).
template <ArtFlavor F>
Ref ArtEngine<F>::checked_leaf(const NodeBase* n, std::uint8_t b, Ref c) const {
  if (!is_leaf(c)) return c;
  return with_ops(type_of(n), [&](auto ops) -> Ref {
    if constexpr (decltype(ops)::kReusesSlots) return decltype(ops)::find(n, b);
    else return c;
  });
}

template <ArtFlavor F>
unsigned ArtEngine<F>::child_count(const NodeBase* n) const {
  return with_ops(type_of(n), [&](auto ops) { return decltype(ops)::count(n); });
}

template <ArtFlavor F>
bool ArtEngine<F>::for_each_child(const NodeBase* n, unsigned from, ChildFn fn) const {
  return with_ops(type_of(n), [&](auto ops) { return decltype(ops)::for_each_from(n, from, fn); });
}

//! Some child of n and its key byte (kNull if none): a node type's `any_child` where it has
//! one (WOART's NODE16, whose entries are unsorted: its ordered walk sorts them first),
//! otherwise the first its ordered walk reports.
template <ArtFlavor F>
Ref ArtEngine<F>::any_child(const NodeBase* n, std::uint8_t* b) const {
  return with_ops(type_of(n), [&](auto ops) -> Ref {
    using Ops = decltype(ops);
    if constexpr (requires { Ops::any_child(n, b); }) {
      return Ops::any_child(n, b);
    } else {
      Ref first = kNull;
      Ops::for_each_from(n, 0, [&](std::uint8_t k, Ref c) {
        *b = k;
        first = c;
        return false;
      });
      return first;
    }
  });
}

template <ArtFlavor F>
void ArtEngine<F>::collect(const NodeBase* n, Entries& e) const {
  e.n = 0;
  for_each_child(n, 0, [&](std::uint8_t b, Ref r) {
    e.push(b, r);
    return true;
  });
}

template <ArtFlavor F>
void ArtEngine<F>::free_ref(Ref r) {
  pool_.allocator().free(ref_offset(r));
}

//! Noted for retire_pending: the block's obsolete mark may still be stored by this
//! write, so it is retired only once the write has released its locks and its pin.
template <ArtFlavor F>
void ArtEngine<F>::retire_ref(Ref r) {
  detail::Unlinked& u = detail::t_unlinked;
  WORT_DCHECK(u.n < 4);
  u.off[u.n++] = ref_offset(r);
}

template <ArtFlavor F>
void ArtEngine<F>::retire_pending() {
  detail::Unlinked& u = detail::t_unlinked;
  for (unsigned i = 0; i < u.n; ++i) epochs_.retire(u.off[i]);
  u.n = 0;
}

//! One write: attempts pinned (the descent reads nodes a concurrent write may unlink; a
//! NestablePin, as a write may run inside a scan's visitor), each releasing its locks when
//! it returns; then what it unlinked is retired (freed at once if no thread is pinned, as
//! single-threaded) and retired blocks no thread can hold any more are freed.
template <ArtFlavor F>
template <class Fn>
inline Status ArtEngine<F>::run_write(Fn&& fn) {
  for (;;) {
    Status s;
    {
      kit::EpochReclaimer::NestablePin pin(epochs_);
      // Alone in the process: no locks, no fresh marks (not while a test's locking hook
      // may run another thread's write inside this one: that thread would wait for it).
      kit::EpochReclaimer::SoloWrite solo(!WORT_FAULT_HOOK_SET(g_writer_locking_hook));
      s = fn();
    }
    if (detail::t_unlinked.n != 0) [[unlikely]] retire_pending();
    if (s != kRestart) [[likely]] {
      epochs_.reclaim();
      return s;
    }
    restarts_.fetch_add(1, std::memory_order_relaxed);
  }
}

template <ArtFlavor F>
Result<std::unique_ptr<ArtEngine<F>>> ArtEngine<F>::create(Pool& pool, const IndexOptions&) {
  // Remove's reserve goes into the anchor image, so the create commit (the pool root)
  // publishes it with the anchor: no store after the commit. A spare the pool has no room
  // for stays 0 (the first remove reserves it).
  Anchor img{};
  img.magic = F::kAnchorMagic;
  for (unsigned i = 0; i < 4; ++i)
    if (pool.allocator().allocate(node_bytes(spare_type(i)), &img.spare[i]) != Status::ok)
      img.spare[i] = 0;
  auto a = kit::create_anchor(pool, F::kKind, img);
  if (!a) {
    for (std::uint64_t spare : img.spare)
      if (spare != 0) pool.allocator().free(spare);
    return a.error();
  }
  return std::unique_ptr<ArtEngine>(new ArtEngine(pool, *a));
}

//! The checked walk (inside kit::recover) comes first: repair then follows only pointers
//! it has checked. Repair rewrites headers only, so the blocks the trace kept are the ones
//! the repaired tree reaches.
template <ArtFlavor F>
Result<std::unique_ptr<ArtEngine<F>>> ArtEngine<F>::open(Pool& pool) {
  auto a = kit::open_anchor<Anchor>(pool, F::kKind, F::kAnchorMagic);
  if (!a) return a.error();
  std::unique_ptr<ArtEngine> t(new ArtEngine(pool, *a));
  if (auto r = kit::recover(pool, *t); !r) return r.error();
  if ((*a)->root != kNull) {
    if (auto r = t->repair((*a)->root, 0); !r) return r.error();
  }
  return t;
}

}  // namespace wort::art_engine
