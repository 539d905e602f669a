// index/common/writer_lock.h — one writer at a time: a DRAM spin lock, outside the pool, so
// a restart can never see it held (the ART engine's per-tree writer lock; FAST&FAIR's and
// FPTree's structure locks), and the guard a write holds for its whole length, which on
// release frees the retired blocks no reader can hold any more (epoch.h).
#pragma once

#include <sched.h>

#include <atomic>

#include "index/common/epoch.h"

namespace wort::kit {

class WriterMutex {
 public:
  //! One exchange when free; otherwise, out of line, test-and-test-and-set with pause,
  //! then sched_yield after 64 spins.
  void lock() noexcept {
    if (held_.exchange(true, std::memory_order_acquire)) [[unlikely]] contended(held_);
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  [[gnu::noinline, gnu::cold]] static void contended(std::atomic<bool>& held) noexcept {
    do {
      for (unsigned spins = 0; held.load(std::memory_order_relaxed); ++spins) {
        if (spins < 64) __builtin_ia32_pause();
        else sched_yield();
      }
    } while (held.exchange(true, std::memory_order_acquire));
  }
  std::atomic<bool> held_{false};
};

//! Holds a tree's WriterMutex (`writer_`) for one whole write; on release, reclaims first
//! (still the only writer: `epochs_`), then unlocks. One reference to the tree, as each
//! tree's own guard had (two references cost every insert 4 instructions more). The tree
//! declares it a friend.
template <class Tree>
class WriteGuard {
 public:
  explicit WriteGuard(Tree& t) noexcept : t_(t) { t_.writer_.lock(); }
  ~WriteGuard() {
    t_.epochs_.reclaim();
    t_.writer_.unlock();
  }
  WriteGuard(const WriteGuard&) = delete;
  WriteGuard& operator=(const WriteGuard&) = delete;

 private:
  Tree& t_;
};

}  // namespace wort::kit
