// pm/persist.h — the persistence primitives. Every store to pool memory goes through
// pm::store (one aligned store of at most 8 bytes that the compiler may not tear) or
// pm::copy / pm::fill (bulk, for fresh memory nobody can reach yet); every write-back and
// fence through pm::flush / pm::fence / pm::persist.
//
// Cost on the fast path (mode real, no tracer): one thread-local load and test for the
// tracer, a thread-local counter increment, the instruction. The mode is a process-wide
// setting read with one load.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pm/check.h"
#include "pm/faults.h"
#include "pm/tracer.h"
#include "pm/x86_64/flush.h"
#include "wort/persist.h"

namespace wort::pm {

inline constexpr std::size_t kCacheLine = 64;

namespace detail {
//! Resolved process-wide settings on the hot path (written by configure()).
struct HotConfig {
  Mode mode = Mode::real;
  FlushInsn insn = FlushInsn::clflush;     // resolved at startup to the best available
  std::uint64_t flush_delay_cycles = 0;   // emulated: TSC cycles per flushed line
  std::uint64_t fence_delay_cycles = 0;   // emulated: TSC cycles per fence
};
extern HotConfig hot;
inline thread_local Counters tls_counters;

//! Busy-waits `cycles` TSC cycles (PM latency emulation).
void spin_cycles(std::uint64_t cycles) noexcept;

#if WORT_FAULTS
//! Tests only: makes cpu_has() (and so configure() and `automatic`) act as if this CPU
//! lacked `insn` (hidden = true) or restores it. Not thread-safe.
void hide_insn_for_testing(FlushInsn insn, bool hidden) noexcept;
#endif

template <std::size_t N>
struct UintOf;
template <> struct UintOf<1> { using type = std::uint8_t; };
template <> struct UintOf<2> { using type = std::uint16_t; };
template <> struct UintOf<4> { using type = std::uint32_t; };
template <> struct UintOf<8> { using type = std::uint64_t; };
}  // namespace detail

namespace detail {
//! pm::store with the memory order of the final atomic store (one mov on x86-64 either way).
template <int Order, class T>
inline void store_ordered(T* dst, const T& v) noexcept {
  static_assert(std::is_trivially_copyable_v<T>, "pm::store needs a trivially copyable T");
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "pm::store writes at most 8 bytes in one store");
  WORT_DCHECK(reinterpret_cast<std::uintptr_t>(dst) % sizeof(T) == 0);
  using U = typename UintOf<sizeof(T)>::type;
  U bits;
  std::memcpy(&bits, &v, sizeof(T));
  if (Tracer* t = tls_tracer) [[unlikely]]
    t->on_store(dst, &v, sizeof(T));
  __atomic_store_n(reinterpret_cast<U*>(dst), bits, Order);
}
}  // namespace detail

//! One failure-atomic store of a trivially copyable T of 1, 2, 4 or 8 bytes to pool
//! memory. `dst` must be aligned to sizeof(T). The compiler cannot tear or elide it.
template <class T>
inline void store(T* dst, const T& v) noexcept {
  detail::store_ordered<__ATOMIC_RELAXED>(dst, v);
}

//! pm::store with release ordering (the same instruction on x86-64): for a word a lock-free
//! reader loads with acquire and then follows (a key word naming a key block, a child or
//! sibling pointer copied by an in-place shift), so the reader also sees the block's bytes
//! written before it by any writer this one synchronised with (FAST&FAIR's shifts).
template <class T>
inline void store_release(T* dst, const T& v) noexcept {
  detail::store_ordered<__ATOMIC_RELEASE>(dst, v);
}

namespace detail {
//! The stores of a store run (pm::store_run) on a thread without a tracer: the store
//! instruction alone.
struct PlainStores {
  template <class T>
  void release(T* dst, const T& v) const noexcept {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) == 8,
                  "a store run writes 8-byte words");
    WORT_DCHECK(reinterpret_cast<std::uintptr_t>(dst) % 8 == 0);
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    __atomic_store_n(reinterpret_cast<std::uint64_t*>(dst), bits, __ATOMIC_RELEASE);
  }
};
//! The same on a thread with a tracer: each store reported first, in program order, as
//! pm::store reports it.
struct TracedStores {
  Tracer* t;
  template <class T>
  void release(T* dst, const T& v) const noexcept {
    t->on_store(dst, &v, sizeof(T));
    PlainStores{}.release(dst, v);
  }
};
}  // namespace detail

//! A run of pm::store_release calls that tests for the thread's tracer once instead of at
//! every store: `body(st)` is called with `st.release(dst, v)`, which is pm::store_release
//! of an 8-byte word (the same instruction; under a tracer the same report, in program
//! order). For loops that move many words (FAST&FAIR's shifts); any other pm call inside
//! the body (a write-back, a fence) is traced as usual. The body is compiled twice.
template <class F>
inline void store_run(F&& body) noexcept {
  if (Tracer* t = detail::tls_tracer) [[unlikely]]
    body(detail::TracedStores{t});
  else
    body(detail::PlainStores{});
}

//! pm::store to a pool field that is never written back on purpose: metadata that the index
//! recomputes after every restart (a node whose generation differs from the pool's is
//! rebuilt on first touch), so no crash state depends on it. Same atomicity as pm::store;
//! the crash simulator models it like any store but does not ask for its flush.
template <class T>
inline void store_volatile(T* dst, const T& v) noexcept {
  static_assert(std::is_trivially_copyable_v<T>, "pm::store_volatile needs a trivially copyable T");
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "pm::store_volatile writes at most 8 bytes in one store");
  using U = typename detail::UintOf<sizeof(T)>::type;
  U bits;
  std::memcpy(&bits, &v, sizeof(T));
  if (Tracer* t = detail::tls_tracer) [[unlikely]]
    t->on_volatile_store(dst, &v, sizeof(T));
  __atomic_store_n(reinterpret_cast<U*>(dst), bits, __ATOMIC_RELAXED);
}

namespace detail {
//! cas_volatile with a tracer: Tracer::on_before_cas, the CAS, and on success
//! on_volatile_store. Out of line and cold: the untraced path stays the tracer test and the
//! CAS (the test now before the CAS instead of after a success).
[[gnu::noinline, gnu::cold]] inline bool cas_volatile_traced(Tracer* t, std::uint64_t* dst,
                                                             std::uint64_t expected,
                                                             std::uint64_t desired) noexcept {
  t->on_before_cas(dst);
  if (!__atomic_compare_exchange_n(dst, &expected, desired, false, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED))
    return false;
  t->on_volatile_store(dst, &desired, sizeof desired);
  return true;
}
}  // namespace detail

//! Compare-and-swap of a volatile pool word (a writers' lock word that a restart can never
//! see held: the index tags it with the pool generation). Acquire on success. Traced: the
//! tracer hears of every attempt before it is made (Tracer::on_before_cas: the crash
//! simulator's scheduler makes the writer wait for its turn there, so which of two writers
//! gets a lock is part of the schedule) and of a success like store_volatile (never
//! written back).
inline bool cas_volatile(std::uint64_t* dst, std::uint64_t expected,
                         std::uint64_t desired) noexcept {
  if (Tracer* t = detail::tls_tracer) [[unlikely]]
    return detail::cas_volatile_traced(t, dst, expected, desired);
  return __atomic_compare_exchange_n(dst, &expected, desired, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED);
}

namespace detail {
[[gnu::noinline, gnu::cold]] inline void before_lock_attempt_traced(Tracer* t, void* lock) noexcept {
  t->on_before_cas(lock);
}
}  // namespace detail

//! Before an attempt to take a writers' lock that is not a pool word (a DRAM spin lock or
//! claim bit: kit::WriterMutex, the ART engine's lock stripes, FPTree's split-log bits):
//! tells the tracer as pm::cas_volatile does (Tracer::on_before_cas), so the crash
//! simulator's scheduler decides which writer gets such a lock too. Untraced: a thread-local
//! load and a test.
inline void before_lock_attempt(void* lock) noexcept {
  if (Tracer* t = detail::tls_tracer) [[unlikely]] detail::before_lock_attempt_traced(t, lock);
}

namespace detail {
[[gnu::noinline, gnu::cold]] inline void waiting_traced(Tracer* t, const void* word) noexcept {
  t->on_wait(word);
}
}  // namespace detail

//! On every turn of a loop that waits for another writer (spins on a lock word it holds, or
//! on a sequence its SMO keeps odd): tells the tracer (Tracer::on_wait), whose scheduler
//! hands the turn on at once. Called only on the waiting path; untraced, a thread-local load
//! and a test beside a `pause`.
inline void waiting(const void* word) noexcept {
  if (Tracer* t = detail::tls_tracer) [[unlikely]] detail::waiting_traced(t, word);
}

//! After a wait on a word another writer changes (a spin until an SMO ends, or until a
//! locked block turns out unlinked) and before acting on what the wait read: tells the
//! tracer as before_lock_attempt does. The crash simulator's scheduler lets a writer that
//! stalled spinning run loose, in parallel with the writer holding the turn; from here it
//! waits for its turn, so the reads that follow (a descent, a restart) do not race the turn
//! holder's stores and the schedule does not depend on OS timing. The caller then reads the
//! word again: what it read before may have changed by the time its turn came (a lock
//! attempt after the wait needs no call: pm::cas_volatile and before_lock_attempt wait for
//! the turn, and the attempt itself reads the word again). Untraced: a thread-local load
//! and a test.
inline void after_wait(const void* word) noexcept {
  if (Tracer* t = detail::tls_tracer) [[unlikely]]
    detail::before_lock_attempt_traced(t, const_cast<void*>(word));
}

//! store_volatile with release ordering: a lock word's unlock, or the stamp that tells
//! lock-free readers the volatile metadata written before it is complete.
template <class T>
inline void store_volatile_release(T* dst, const T& v) noexcept {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 8);
  if (Tracer* t = detail::tls_tracer) [[unlikely]]
    t->on_volatile_store(dst, &v, sizeof(T));
  __atomic_store_n(dst, v, __ATOMIC_RELEASE);
}

//! Bulk copy into pool memory that is not yet reachable (a fresh node). Not atomic.
inline void copy(void* dst, const void* src, std::size_t n) noexcept {
  if (Tracer* t = detail::tls_tracer) [[unlikely]]
    t->on_store(dst, src, n);
  std::memcpy(dst, src, n);
}

//! Fills fresh pool memory with byte `b` (for zeroing a new node).
void fill(void* dst, std::uint8_t b, std::size_t n) noexcept;

//! Copies src into [dst, dst+n), fresh memory no reader can reach yet (a new node), storing
//! and writing back only the cache lines whose bytes differ from src; not fenced. A block
//! of a never-used chunk reads zero, so a new node whose image is mostly empty slots costs
//! the lines its header and entries fill, not all its lines. A line skipped because it
//! already holds src's bytes is durable with them: memory that reads X is durably X unless
//! a store of this process still waits for its write-back — the crash simulator checks that
//! for every skipped line (Tracer::on_assume_durable, lint ASSUMED_DURABLE).
void copy_changed(void* dst, const void* src, std::size_t n) noexcept;

//! Non-temporal 8-byte store (movnti): bypasses the cache, durable at the next fence.
inline void nt_store(std::uint64_t* dst, std::uint64_t v) noexcept {
  ++detail::tls_counters.nt_stores;
  if (Tracer* t = detail::tls_tracer) [[unlikely]] {
    t->on_nt_store(dst, v);
    *reinterpret_cast<volatile std::uint64_t*>(dst) = v;
    return;
  }
  x86_64::movnti(dst, v);
}

//! Writes back the cache lines overlapping [addr, addr+len). Not ordered until fence().
inline void flush(const void* addr, std::size_t len) noexcept {
  const auto first = reinterpret_cast<std::uintptr_t>(addr) & ~(kCacheLine - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(addr) + (len ? len : 1);
  const std::uint64_t lines = (end - first + kCacheLine - 1) / kCacheLine;
  Counters& c = detail::tls_counters;
  ++c.flushes;
  c.lines_flushed += lines;
  if (Tracer* t = detail::tls_tracer) [[unlikely]]
    t->on_flush(addr, len);
  const detail::HotConfig& h = detail::hot;
  if (h.mode == Mode::none || h.mode == Mode::trace) return;
  for (std::uintptr_t p = first; p < end; p += kCacheLine)
    x86_64::flush_line(h.insn, reinterpret_cast<const void*>(p));
  if (h.mode == Mode::emulated) detail::spin_cycles(h.flush_delay_cycles * lines);
}

//! Store fence: orders (and, with the flushes before it, makes durable) earlier writes.
inline void fence() noexcept {
  ++detail::tls_counters.fences;
  if (Tracer* t = detail::tls_tracer) [[unlikely]]
    t->on_fence();
  const detail::HotConfig& h = detail::hot;
  if (h.mode == Mode::none || h.mode == Mode::trace) return;
  x86_64::sfence();
  if (h.mode == Mode::emulated) detail::spin_cycles(h.fence_delay_cycles);
}

//! flush + fence.
inline void persist(const void* addr, std::size_t len) noexcept {
  flush(addr, len);
  fence();
}

//! pm::store followed by persist of the stored word, for a store that is not an
//! operation's commit (a repair, allocator metadata written before its own commit).
template <class T>
inline void store_persist(T* dst, const T& v) noexcept {
  store(dst, v);
  persist(dst, sizeof(T));
}

// --- the commit primitive ------------------------------------------------------------
// Every operation of every index becomes durable and visible through one of these two: a
// failure-atomic store of at most 8 bytes, written back and fenced. The tracer sees it as a
// commit (Tracer::on_commit), so the crash simulator checks that an acknowledged operation
// made exactly the commit stores its index's README declares, that nothing flushed before
// it is still unfenced (commit) and that no pool store follows it within the operation.

namespace detail {
template <class T>
inline void commit_store(T* dst, const T& v, bool shares_fence) noexcept {
  ++tls_counters.commits;
  if (Tracer* t = tls_tracer) [[unlikely]]
    t->on_commit(dst, sizeof(T), shares_fence);
  store(dst, v);
  persist(dst, sizeof(T));
}
}  // namespace detail

//! Commit store: everything the commit depends on is already durable (fenced).
template <class T>
inline void commit(T* dst, const T& v) noexcept {
  detail::commit_store(dst, v, false);
}

//! Commit store whose fence also ends write-backs issued just before it that may become
//! durable in either order with the commit (each order is one the index's recovery
//! repairs: WORT's and WOART's merge rewrite the survivor's header and swap the pointer
//! under one fence). The index's README names every such site and the repair.
template <class T>
inline void commit_sharing_fence(T* dst, const T& v) noexcept {
  detail::commit_store(dst, v, true);
}

//! Fence, then commit: for a commit whose data (a new node) was flushed but not yet fenced.
//! The leading fence orders those write-backs before the commit store.
template <class T>
inline void publish(T* dst, const T& v) noexcept {
  fence();
  commit(dst, v);
}

//! Commit store for indexes whose readers take no lock (ROWEX: ROART, P-ART): a
//! non-temporal store (movnti) and a fence. The new value bypasses the cache, so no other
//! thread can read it before it is durable (no dirty read, ROART §3.4.1); the fence makes it
//! durable and visible. Under ThreadSanitizer (which does not see inline asm) it is a release
//! store + write-back + fence instead, so the sanitizer sees the publication.
namespace detail {
inline void commit_nt_store(std::uint64_t* dst, std::uint64_t v, bool shares_fence) noexcept {
  ++tls_counters.commits;
  if (Tracer* t = tls_tracer) [[unlikely]]
    t->on_commit(dst, sizeof v, shares_fence);
#if defined(__SANITIZE_THREAD__)
  __atomic_store_n(dst, v, __ATOMIC_RELEASE);
  flush(dst, sizeof v);
#else
  nt_store(dst, v);
#endif
  fence();
}
}  // namespace detail

inline void commit_nt(std::uint64_t* dst, std::uint64_t v) noexcept {
  detail::commit_nt_store(dst, v, false);
}

//! commit_nt whose fence also ends write-backs issued just before it that may become durable
//! in either order with the commit (as commit_sharing_fence; ROART's merge: the survivor's
//! prefix word and the parent's slot, either order exposed by the level check and repaired).
inline void commit_nt_sharing_fence(std::uint64_t* dst, std::uint64_t v) noexcept {
  detail::commit_nt_store(dst, v, true);
}

//! Fence, then commit_nt: for a commit whose data (a new node) was flushed but not fenced.
inline void publish_nt(std::uint64_t* dst, std::uint64_t v) noexcept {
  fence();
  commit_nt(dst, v);
}

}  // namespace wort::pm
