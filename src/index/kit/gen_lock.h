// index/kit/gen_lock.h — a writers' lock word that may live inside a pool block because
// no restart can ever see it held: it is tagged with the pool's open generation
// (Pool::generation(), bumped on every open).
//
//   63                                            2      1        0
//   +----------------------------------------------+----------+--------+
//   |       pool generation of the last holder      | obsolete | locked |
//   +----------------------------------------------+----------+--------+
//
// A word tagged with an older generation is free and not obsolete, whatever a crash left in
// the pool. One tagged with the generation an open takes cannot be in the pool yet: the
// open's checked walk refuses a held or obsolete one (kit::CheckedWalk::lock_word), which
// would otherwise stop every writer that reached it. `obsolete` is set by the writer that unlinked the block as it unlocks; a writer
// that then tries the lock gets false and restarts from the root. Readers that take no lock
// never look at it. The word is volatile state: it is stored with pm::cas_volatile /
// pm::store_volatile_release (never written back on purpose, never a commit) and the crash
// simulator treats it so. Used by ROART (inner nodes, leaf arrays), WORT (nodes) and the
// B+-trees' leaves.
#pragma once

#include <sched.h>

#include <cstdint>

#include "pm/persist.h"

namespace wort::kit {

inline constexpr std::uint64_t kGenLocked = 1, kGenObsolete = 2;

//! True if lock word value `w` is held in generation `gen`.
inline bool gen_lock_held(std::uint64_t w, std::uint64_t gen) noexcept {
  return (w >> 2) == gen && (w & kGenLocked) != 0;
}

//! True if lock word value `w` marks its block unlinked in generation `gen`.
inline bool gen_lock_obsolete(std::uint64_t w, std::uint64_t gen) noexcept {
  return (w >> 2) == gen && (w & kGenObsolete) != 0;
}

//! Pauses a waiter spins before it yields its core (about a microsecond or a few: a leaf
//! write holds its lock for about that long; see gen_lock_contended).
inline constexpr unsigned kGenLockSpins = 128;

//! gen_lock's contended path, out of line so the uncontended acquire is unchanged: spins
//! with `pause` while the word is held, and after kGenLockSpins of them yields the core
//! (sched_yield) before it spins again, so a waiter on an oversubscribed machine (more
//! threads than cores: TSan runs, `wort serve -t 4` on 2 cores) lets a descheduled holder
//! run instead of burning its whole time slice. Same results as gen_lock.
[[gnu::cold, gnu::noinline]] inline bool gen_lock_contended(std::uint64_t* w,
                                                            std::uint64_t gen) noexcept {
  for (unsigned spins = 0;;) {
    const std::uint64_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    const bool current = (v >> 2) == gen;
    if (current && (v & kGenObsolete) != 0) {
      pm::after_wait(w);  // the caller restarts its descent: in its turn (crash simulator)
      return false;
    }
    if (current && (v & kGenLocked) != 0) {
      pm::waiting(w);
      if (++spins < kGenLockSpins) {
        __builtin_ia32_pause();
      } else {
        spins = 0;
        sched_yield();
      }
      continue;
    }
    if (pm::cas_volatile(w, v, gen << 2 | kGenLocked)) return true;
  }
}

//! Takes the lock at *w (spinning while another writer holds it, yielding the core now and
//! then: gen_lock_contended). False, without the lock, if the block is obsolete (unlinked):
//! the caller restarts.
inline bool gen_lock(std::uint64_t* w, std::uint64_t gen) noexcept {
  for (;;) {
    const std::uint64_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    const bool current = (v >> 2) == gen;
    if (current && (v & kGenObsolete) != 0) return false;
    if (current && (v & kGenLocked) != 0) return gen_lock_contended(w, gen);
    if (pm::cas_volatile(w, v, gen << 2 | kGenLocked)) return true;
  }
}

//! One attempt at the lock: true if taken; false if held by another writer or obsolete.
inline bool gen_try_lock(std::uint64_t* w, std::uint64_t gen) noexcept {
  const std::uint64_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
  if ((v >> 2) == gen && (v & (kGenLocked | kGenObsolete)) != 0) return false;
  return pm::cas_volatile(w, v, gen << 2 | kGenLocked);
}

//! Releases the lock at *w; `obsolete` marks the block unlinked for good.
inline void gen_unlock(std::uint64_t* w, std::uint64_t gen, bool obsolete = false) noexcept {
  pm::store_volatile_release(w, gen << 2 | (obsolete ? kGenObsolete : 0));
}

}  // namespace wort::kit
