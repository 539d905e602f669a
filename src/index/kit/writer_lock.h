// index/kit/writer_lock.h — one writer at a time: a DRAM spin lock, outside the pool, so
// a restart can never see it held (FAST&FAIR's and FPTree's structure locks, the ART
// engine's lock of remove's reserve).
#pragma once

#include <sched.h>

#include <atomic>

#include "pm/persist.h"

namespace wort::kit {

class WriterMutex {
 public:
  //! One exchange when free; otherwise, out of line, test-and-test-and-set with pause,
  //! then sched_yield after 64 spins. Each attempt is announced to a tracer first
  //! (pm::before_lock_attempt: the crash simulator orders lock attempts by its schedule).
  void lock() noexcept {
    pm::before_lock_attempt(&held_);
    if (held_.exchange(true, std::memory_order_acquire)) [[unlikely]] contended(held_);
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  [[gnu::noinline, gnu::cold]] static void contended(std::atomic<bool>& held) noexcept {
    do {
      for (unsigned spins = 0; held.load(std::memory_order_relaxed); ++spins) {
        pm::waiting(&held);
        if (spins < 64) __builtin_ia32_pause();
        else sched_yield();
      }
      pm::before_lock_attempt(&held);
    } while (held.exchange(true, std::memory_order_acquire));
  }
  std::atomic<bool> held_{false};
};

}  // namespace wort::kit
