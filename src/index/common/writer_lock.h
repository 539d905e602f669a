// index/common/writer_lock.h — one writer at a time per tree, for indexes whose readers
// take no lock (WORT, the ART engine, FAST&FAIR): a DRAM spin lock, outside the pool, so a
// restart can never see it held, and the guard a write holds for its whole length, which on
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
    if (held_.exchange(true, std::memory_order_acquire)) [[unlikely]] contended();
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  [[gnu::noinline, gnu::cold]] void contended() noexcept {
    do {
      for (unsigned spins = 0; held_.load(std::memory_order_relaxed); ++spins) {
        if (spins < 64) __builtin_ia32_pause();
        else sched_yield();
      }
    } while (held_.exchange(true, std::memory_order_acquire));
  }
  std::atomic<bool> held_{false};
};

//! Holds a tree's WriterMutex for one whole write; on release, reclaims first (still the
//! only writer), then unlocks.
class WriteGuard {
 public:
  WriteGuard(WriterMutex& m, EpochReclaimer& e) noexcept : m_(m), e_(e) { m_.lock(); }
  ~WriteGuard() {
    e_.reclaim();
    m_.unlock();
  }
  WriteGuard(const WriteGuard&) = delete;
  WriteGuard& operator=(const WriteGuard&) = delete;

 private:
  WriterMutex& m_;
  EpochReclaimer& e_;
};

}  // namespace wort::kit
