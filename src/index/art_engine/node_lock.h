// art_engine/node_lock.h — the writer locks of the ART engine (ROWEX; README
// "Concurrency").
//
// A node is locked through a DRAM lock stripe chosen by hashing its address
// (LockTable: 1024 spin locks, one cache line each, in the ArtEngine object, outside the
// pool, so a restart never sees one held); the anchor's root slot has a stripe of its own.
// Why not a lock word inside the node: the only spare aligned 8 bytes every node type has
// are at offset 8 (the type byte and its 7 pad bytes), in line 0, which also holds the
// commit words (NODE4's slot word and children, NODE16's bitmap, NODE48's first index
// bytes, eok). Every commit is a non-temporal store, which evicts the line; a lock word in
// it was dirtied by the lock's CAS just before (the movnti then waits for its write-back)
// and the unlock after the commit misses. Measured: +40% CPU time per Sparse insert
// (README "Single-thread cost"). NODE4 has no other room (it is exactly the 64-byte class).
//
// What stays in the node is its **obsolete mark**, the 8-byte word at offset 8:
//
//   63                                        10    9        8 7          0
//   +-------------------------------------------+----------+--------+------------+
//   |  pool generation when it was unlinked     | obsolete |   0    | node type  |
//   +-------------------------------------------+----------+--------+------------+
//
// stored once, by the write that unlinks the node, before it releases the node's stripe
// (pm::store_volatile_release: volatile, never flushed on purpose, never a commit). A mark
// of an older generation means nothing (kit::gen_lock's rule, index/kit/gen_lock.h), and
// a reused block's image copy (pm::copy_changed) rewrites line 0 with a clean word. A
// writer that has taken a node's stripe reads the mark: obsolete → restart. Readers never
// look at it; they read the type byte with a relaxed atomic byte load (type_of), so the
// mark's store is not a data race.
//
// Deadlock: a write takes its first stripe spinning (pause, then sched_yield) while holding
// none; every further stripe only by one try (a stripe it already holds is not taken
// again): on failure it releases everything and restarts. So no writer waits while holding
// a lock. The stripes of one write are still taken top-down (owner, node, survivor).
#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "index/art_engine/art_layout.h"
#include "index/kit/epoch.h"
#include "pm/check.h"
#include "pm/persist.h"
#include "wort/index.h"

namespace wort::art_engine {

inline constexpr std::uint64_t kLockTypeMask = 0xff, kLockObsolete = 0x200;
inline constexpr unsigned kLockGenShift = 10;

//! The node's type byte, read atomically (the obsolete mark's store writes the word it is in).
inline NodeType type_of(const NodeBase* n) noexcept {
  return static_cast<NodeType>(
      __atomic_load_n(reinterpret_cast<const std::uint8_t*>(&n->type), __ATOMIC_RELAXED));
}

//! The node's obsolete-mark word (its type byte and pad).
inline std::uint64_t* mark_word(NodeBase* n) noexcept {
  static_assert(offsetof(NodeBase, type) == 8 && sizeof(NodeBase::pad) == 7);
  return reinterpret_cast<std::uint64_t*>(&n->type);
}

//! True if n was unlinked in generation gen.
inline bool is_obsolete(NodeBase* n, std::uint64_t gen) noexcept {
  const std::uint64_t v = __atomic_load_n(mark_word(n), __ATOMIC_ACQUIRE);
  return (v >> kLockGenShift) == gen && (v & kLockObsolete) != 0;
}

//! Marks n unlinked (its stripe held by the caller).
inline void mark_obsolete(NodeBase* n, std::uint64_t gen) noexcept {
  std::uint64_t* w = mark_word(n);
  const std::uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
  pm::store_volatile_release(w, (v & kLockTypeMask) | gen << kLockGenShift | kLockObsolete);
}

//! The DRAM lock stripes of one tree.
class LockTable {
 public:
  static constexpr unsigned kStripes = 1024;
  using Word = std::atomic<std::uint64_t>;
  //! n's stripe; nullptr: the anchor's root slot.
  Word* stripe(const NodeBase* n) noexcept {
    if (n == nullptr) return &root_.w;
    const auto a = reinterpret_cast<std::uintptr_t>(n) >> 6;
    return &s_[(a * 0x9E3779B97F4A7C15ull) >> (64 - 10)].w;
  }
  //! Spins (pause, then sched_yield) until w is taken. (A solo write takes no stripe:
  //! its lock holders, NodeLocks, OneLock and BornLock, do not call these.)
  [[gnu::always_inline]] static void acquire(Word* w) noexcept {
    pm::before_lock_attempt(w);
    std::uint64_t z = 0;
    if (w->compare_exchange_strong(z, 1, std::memory_order_acquire, std::memory_order_relaxed))
      [[likely]] return;
    contended(w);
  }
  static bool try_acquire(Word* w) noexcept {
    pm::before_lock_attempt(w);
    std::uint64_t z = 0;
    return w->load(std::memory_order_relaxed) == 0 &&
           w->compare_exchange_strong(z, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  static void release(Word* w) noexcept {
    w->store(0, std::memory_order_release);
  }

 private:
  static_assert(kStripes == 1u << 10);
  [[gnu::noinline, gnu::cold]] static void contended(Word* w) noexcept {
    for (;;) {
      for (unsigned spins = 0; w->load(std::memory_order_relaxed) != 0; ++spins) {
        pm::waiting(w);
        if (spins < 64) __builtin_ia32_pause();
        else sched_yield();
      }
      pm::before_lock_attempt(w);
      std::uint64_t z = 0;
      if (w->compare_exchange_strong(z, 1, std::memory_order_acquire, std::memory_order_relaxed))
        return;
    }
  }
  struct alignas(64) Padded {
    Word w{0};
  };
  Padded s_[kStripes];
  Padded root_;
};

//! The locks one write holds (at most four nodes: the owner of the slot it commits, the
//! node below it, a merge's survivor; an insert's new nodes, born locked: a prefix split's
//! parent and ART+CoW's copy of the split node), taken top-down: the first spinning, the
//! others by one try each. Released when it goes out of scope: the nodes marked obsolete are marked,
//! then the stripes released in reverse order.
class NodeLocks {
 public:
  NodeLocks(LockTable& t, std::uint64_t gen) noexcept : t_(t), gen_(gen) {}
  ~NodeLocks() { release(); }
  NodeLocks(const NodeLocks&) = delete;
  NodeLocks& operator=(const NodeLocks&) = delete;

  //! Locks n (nullptr: the root slot). False — the caller restarts — if a further stripe
  //! is held by another writer, or n is obsolete (what it holds stays held until release).
  //! A solo write (kit::EpochReclaimer::SoloWrite: no other thread can read or write until
  //! it ends) takes no stripe and meets no obsolete node (nobody unlinks one under it, and
  //! no unlinked node is reachable): true at once, as in OneLock and BornLock. Always
  //! inlined: left to the inliner, whether it is depends on the size of the whole write
  //! path, and an out-of-line call costs the insert path instructions.
  [[gnu::always_inline]] bool lock(NodeBase* n) noexcept {
    if (kit::EpochReclaimer::SoloWrite::active()) return true;
    LockTable::Word* w = t_.stripe(n);
    bool mine = false;
    for (unsigned i = 0; i < ns_; ++i) mine |= stripe_[i] == w;
    if (!mine) {
      if (ns_ == 0) LockTable::acquire(w);
      else if (!LockTable::try_acquire(w)) return false;
      WORT_DCHECK(ns_ < 4);
      stripe_[ns_++] = w;
    }
    return n == nullptr || !is_obsolete(n, gen_);
  }
  //! True if n's stripe is one this write took (always in a solo write, which takes none):
  //! for the preconditions of a write's steps (WORT_DCHECK).
  bool holds(const NodeBase* n) const noexcept {
    if (kit::EpochReclaimer::SoloWrite::active()) return true;
    const LockTable::Word* w = t_.stripe(n);
    for (unsigned i = 0; i < ns_; ++i)
      if (stripe_[i] == w) return true;
    return false;
  }
  //! The write unlinked n (locked by it): marked obsolete at release.
  void obsolete(NodeBase* n) noexcept {
    if (kit::EpochReclaimer::SoloWrite::active()) return;  // marked only when not solo
    WORT_DCHECK(nd_ < 3);
    dead_[nd_++] = n;
  }
  void release() noexcept {
    for (unsigned i = 0; i < nd_; ++i) mark_obsolete(dead_[i], gen_);
    for (unsigned i = ns_; i-- > 0;) LockTable::release(stripe_[i]);
    ns_ = nd_ = 0;
  }

 private:
  LockTable& t_;
  std::uint64_t gen_;
  LockTable::Word* stripe_[4];
  NodeBase* dead_[3];
  unsigned ns_ = 0, nd_ = 0;
};

//! One node locked for a scope (the writes that store into one node: an in-place add or
//! remove, a leaf split, an end-of-key slot, a value): NodeLocks without its bookkeeping.
class OneLock {
 public:
  [[gnu::always_inline]] OneLock(LockTable& t, NodeBase* n, std::uint64_t gen) noexcept {
    if (kit::EpochReclaimer::SoloWrite::active()) return;  // held, nothing taken (NodeLocks::lock)
    w_ = t.stripe(n);
    LockTable::acquire(w_);
    held_ = n == nullptr || !is_obsolete(n, gen);
  }
  [[gnu::always_inline]] ~OneLock() {
    if (w_ != nullptr) LockTable::release(w_);
  }
  OneLock(const OneLock&) = delete;
  OneLock& operator=(const OneLock&) = delete;
  //! False: the node is obsolete (unlinked); the caller restarts.
  bool held() const noexcept { return held_; }
  LockTable::Word* stripe() const noexcept { return w_; }

 private:
  LockTable::Word* w_ = nullptr;  //!< the stripe taken (nullptr: none, a solo write)
  bool held_ = true;
};

//! An insert's new node born locked by a write that holds one OneLock (a leaf split: the
//! slot's owner): the node's stripe taken by one try (the write holds a lock: it must not
//! wait), unless it is the stripe already held; released when it goes out of scope.
class BornLock {
 public:
  BornLock() = default;
  ~BornLock() {
    if (w_ != nullptr) LockTable::release(w_);
  }
  BornLock(const BornLock&) = delete;
  BornLock& operator=(const BornLock&) = delete;
  //! False: another writer holds the stripe (the caller frees what it built and restarts).
  bool take(LockTable& t, const NodeBase* n, const OneLock& held) noexcept {
    if (kit::EpochReclaimer::SoloWrite::active()) return true;  // nothing taken (NodeLocks::lock)
    LockTable::Word* w = t.stripe(n);
    if (w == held.stripe()) return true;
    if (!LockTable::try_acquire(w)) return false;
    w_ = w;
    return true;
  }

 private:
  LockTable::Word* w_ = nullptr;
};

//! What one attempt of a write returns when it must start again from the root (a lock found
//! its node obsolete, or what the descent saw changed): never returned to a caller.
inline constexpr Status kRestart = static_cast<Status>(0xff);

}  // namespace wort::art_engine
