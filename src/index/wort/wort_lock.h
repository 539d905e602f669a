// index/wort/wort_lock.h — the locks one WORT write holds (ROWEX, README "Concurrency").
//
// A write descends without locks, then locks the nodes whose words it will store — at most
// three: the owner of the slot it commits, the node below it, and (a merge with a node
// survivor) that node's child whose header it rewrites — always top-down, parent before
// child, so two writers never wait for each other in a cycle (a node's path, the partial
// keys before its branch position, is fixed for as long as it is linked: a node above
// another never comes below it). Each lock is the node's kit::gen_lock word (the anchor's
// root slot: a DRAM word of the tree); locking a node that a merge has unlinked fails (its
// word is obsolete) and the write restarts from the root. Released in reverse order when
// the Locks goes out of scope, the merged-away node's as obsolete. In a solo write
// (kit::EpochReclaimer::SoloWrite: the thread is alone in the process, and no other thread
// can read or write until the write ends) nothing is taken and every lock succeeds.
#pragma once

#include <cstdint>

#include "index/kit/epoch.h"
#include "index/kit/gen_lock.h"
#include "index/wort/wort_tree.h"
#include "pm/check.h"

namespace wort {

class WortTree::Locks {
 public:
  explicit Locks(std::uint64_t gen) noexcept : gen_(gen) {}
  ~Locks() {
    for (unsigned i = n_; i-- > 0;) kit::gen_unlock(word_[i], gen_, i == obsolete_);
  }
  Locks(const Locks&) = delete;
  Locks& operator=(const Locks&) = delete;

  //! Takes the lock word `w` (spinning while another writer holds it); false, not held, if
  //! its node is obsolete: the caller restarts.
  bool lock(std::uint64_t* w) noexcept {
    WORT_DCHECK(n_ < 3);
    if (kit::EpochReclaimer::SoloWrite::active()) return true;
    if (!kit::gen_lock(w, gen_)) return false;
    word_[n_++] = w;
    return true;
  }
  //! The node whose lock word `w` is held has been unlinked: released as obsolete.
  void obsolete(const std::uint64_t* w) noexcept {
    for (unsigned i = 0; i < n_; ++i)
      if (word_[i] == w) obsolete_ = i;
  }

 private:
  std::uint64_t gen_;
  std::uint64_t* word_[3];
  unsigned n_ = 0;
  unsigned obsolete_ = 3;  //!< index of the one word released as obsolete (3: none)
};

//! One lock word held for a scope (the writes that store into one node: an insert into an
//! empty slot, a leaf split, an upsert's value): Locks without its bookkeeping.
class WortTree::OneLock {
 public:
  OneLock(std::uint64_t* w, std::uint64_t gen) noexcept : gen_(gen) {
    if (kit::EpochReclaimer::SoloWrite::active()) held_ = true;
    else if (kit::gen_lock(w, gen)) word_ = w, held_ = true;
  }
  ~OneLock() {
    if (word_ != nullptr) kit::gen_unlock(word_, gen_);
  }
  OneLock(const OneLock&) = delete;
  OneLock& operator=(const OneLock&) = delete;
  //! False: the node is obsolete (merged away); the caller restarts.
  bool held() const noexcept { return held_; }

 private:
  std::uint64_t* word_ = nullptr;  //!< the word taken (nullptr: none: obsolete, or solo)
  std::uint64_t gen_;
  bool held_ = false;
};

namespace wort_index {

//! What one attempt of a write returns when it must start again from the root (a lock found
//! its node obsolete, or what the descent saw has changed): not a Status a caller sees.
inline constexpr Status kRestart = static_cast<Status>(0xff);

//! Tests only: g_writer_locking_hook, between a write's lock-free decision and its locks.
inline void before_locking() noexcept {
  WORT_FAULT_HOOK(g_writer_locking_hook, g_writer_locking_ctx);
}

//! May this write be solo (kit::EpochReclaimer::SoloWrite)? Not while a test's hook may run
//! another thread's read or write inside it (g_writer_locking_hook, g_header_window_hook):
//! that thread would wait for this write to end while this write waits for it.
inline bool hooks_allow_solo() noexcept {
  return !WORT_FAULT_HOOK_SET(g_writer_locking_hook) &&
         !WORT_FAULT_HOOK_SET(g_header_window_hook);
}

//! Called when, under its locks, a write finds that what its descent saw has changed: true,
//! restart — false only in the broken variant (g_broken_writer_skips_validation), which
//! stores anyway. Out of line: the common path (nothing changed) never calls it.
[[gnu::noinline, gnu::cold]] inline bool changed() noexcept {
  return !WORT_FAULT(g_broken_writer_skips_validation);
}

}  // namespace wort_index
}  // namespace wort
