// artcommon/node_lock.h — the per-node writer locks of the ART engine (ROWEX, issue 13 stage
// 2; README "Concurrency").
//
// Every inner node's lock word is the 8-byte word at offset 8 of its block: the node's type
// byte and the seven pad bytes after it (art_layout.h, NodeBase). No node type had eight
// spare aligned bytes elsewhere without a larger size class (NODE4 is exactly the 64-byte
// class), and this word sits in line 0, which every descent reads anyway.
//
//   63                                        10    9        8 7          0
//   +-------------------------------------------+----------+--------+------------+
//   |      pool generation of the last holder   | obsolete | locked | node type  |
//   +-------------------------------------------+----------+--------+------------+
//
// It is kit::gen_lock's protocol (index/common/gen_lock.h) shifted past the type byte: a word
// whose generation is not the pool's current one is free and not obsolete, whatever a crash
// left there, so a restart never sees a lock held. The type byte is written when the block is
// built (part of the node's image, pm::copy_changed, which also clears the lock bits of a
// reused block: line 0 is always written, so this costs no write-back) and never changes; a
// lock or unlock stores the whole word with the type byte unchanged, through
// pm::cas_volatile / pm::store_volatile_release only: volatile state, never flushed on
// purpose, never a commit. Readers never look at the lock bits; they read the type byte with
// a relaxed atomic byte load (type_of: one movzbl, as a plain load), so a concurrent lock
// CAS on the word is not a data race.
//
// The anchor's root slot has its lock in DRAM (ArtTree::root_lock_), same format, type 0.
#pragma once

#include <cstdint>

#include "index/artcommon/art_layout.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort::artcommon {

inline constexpr std::uint64_t kLockTypeMask = 0xff, kLockLocked = 0x100,
                               kLockObsolete = 0x200;
inline constexpr unsigned kLockGenShift = 10;

//! The node's type byte, read atomically (a writer's lock CAS may store the word it is in).
inline NodeType type_of(const NodeBase* n) noexcept {
  return static_cast<NodeType>(
      __atomic_load_n(reinterpret_cast<const std::uint8_t*>(&n->type), __ATOMIC_RELAXED));
}

//! The lock word of node n (its type byte and pad).
inline std::uint64_t* lock_word(NodeBase* n) noexcept {
  static_assert(offsetof(NodeBase, type) == 8 && sizeof(NodeBase::pad) == 7);
  return reinterpret_cast<std::uint64_t*>(&n->type);
}

//! node_lock after a first attempt failed: spins while another writer holds w.
[[gnu::noinline]] inline bool node_lock_slow(std::uint64_t* w, std::uint64_t gen) noexcept {
  for (;;) {
    const std::uint64_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    const bool current = (v >> kLockGenShift) == gen;
    if (current && (v & kLockObsolete) != 0) return false;
    if (current && (v & kLockLocked) != 0) {
      __builtin_ia32_pause();
      continue;
    }
    if (pm::cas_volatile(w, v, (v & kLockTypeMask) | gen << kLockGenShift | kLockLocked))
      return true;
  }
}

//! Takes the lock word w in generation gen, spinning while another writer holds it. False,
//! not held, if the node is obsolete (unlinked): the caller restarts. The free case inline:
//! one load and one CAS.
[[gnu::always_inline]] inline bool node_lock(std::uint64_t* w, std::uint64_t gen) noexcept {
  const std::uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
  if ((v >> kLockGenShift) != gen || (v & (kLockLocked | kLockObsolete)) == 0) [[likely]] {
    if (pm::cas_volatile(w, v, (v & kLockTypeMask) | gen << kLockGenShift | kLockLocked))
      [[likely]] return true;
  }
  return node_lock_slow(w, gen);
}

//! Releases w (held by the caller); `obsolete` marks the node unlinked for good.
[[gnu::always_inline]] inline void node_unlock(std::uint64_t* w, std::uint64_t gen, bool obsolete) noexcept {
  const std::uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
  WORT_DCHECK((v >> kLockGenShift) == gen && (v & kLockLocked) != 0);
  pm::store_volatile_release(
      w, (v & kLockTypeMask) | gen << kLockGenShift | (obsolete ? kLockObsolete : 0));
}

//! The locks one write holds (at most three: the owner of the slot it commits, the node
//! below it, and a merge's node survivor), taken top-down, released in reverse order when
//! it goes out of scope, the ones marked obsolete as obsolete.
class NodeLocks {
 public:
  explicit NodeLocks(std::uint64_t gen) noexcept : gen_(gen) {}
  ~NodeLocks() { release(); }
  NodeLocks(const NodeLocks&) = delete;
  NodeLocks& operator=(const NodeLocks&) = delete;

  //! Takes w; false (not held) if its node is obsolete: the caller restarts.
  [[gnu::always_inline]] bool lock(std::uint64_t* w) noexcept {
    WORT_DCHECK(n_ < 3);
    if (!node_lock(w, gen_)) return false;
    word_[n_++] = w;
    return true;
  }
  //! The node whose lock word w is held was unlinked by the write: released obsolete.
  void obsolete(const std::uint64_t* w) noexcept {
    for (unsigned i = 0; i < n_; ++i)
      if (word_[i] == w) obsolete_ |= 1u << i;
  }
  //! Releases every lock held (bottom-up).
  void release() noexcept {
    for (unsigned i = n_; i-- > 0;) node_unlock(word_[i], gen_, (obsolete_ >> i & 1u) != 0);
    n_ = 0;
    obsolete_ = 0;
  }

 private:
  std::uint64_t gen_;
  std::uint64_t* word_[3];
  unsigned n_ = 0;
  unsigned obsolete_ = 0;
};

//! One lock word held for a scope: NodeLocks without its bookkeeping. A write that stores
//! into one node (an in-place add or remove, a leaf split, an end-of-key slot, a value)
//! holds one; a grow or copy holds two, owner's constructed first (released last).
class OneLock {
 public:
  [[gnu::always_inline]] OneLock(std::uint64_t* w, std::uint64_t gen) noexcept
      : w_(node_lock(w, gen) ? w : nullptr), gen_(gen) {}
  [[gnu::always_inline]] ~OneLock() {
    if (w_ != nullptr) node_unlock(w_, gen_, obsolete_);
  }
  OneLock(const OneLock&) = delete;
  OneLock& operator=(const OneLock&) = delete;
  //! False: the node is obsolete (unlinked); the caller restarts.
  bool held() const noexcept { return w_ != nullptr; }
  //! The write unlinked the node: its lock is released obsolete.
  void obsolete() noexcept { obsolete_ = true; }

 private:
  std::uint64_t* w_;
  std::uint64_t gen_;
  bool obsolete_ = false;
};

//! What one attempt of a write returns when it must start again from the root (a lock found
//! its node obsolete, or what the descent saw changed): never returned to a caller.
inline constexpr Status kRestart = static_cast<Status>(0xff);

}  // namespace wort::artcommon
