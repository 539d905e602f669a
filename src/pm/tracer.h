// pm/tracer.h — the hook through which the crash simulator observes persistence events.
//
// A Tracer is installed per thread. When one is installed, pm::store / pm::copy /
// pm::nt_store / pm::flush / pm::fence report to it *before* they take effect (so on_fence
// is a crash point "before the fence"). The tracer itself filters by address range: events
// outside the pool it watches are ignored, which lets the simulator open a crash image in a
// second pool (recovery) while the first is paused inside on_fence.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wort::pm {

class Tracer {
 public:
  virtual ~Tracer() = default;
  //! `len` bytes from `src` are about to be stored at `dst` (one store of <= 8 bytes from
  //! pm::store, or a bulk copy from pm::copy / pm::fill).
  virtual void on_store(void* dst, const void* src, std::size_t len) = 0;
  //! A pm::store_volatile: a store to a pool field that is rebuilt after every restart and
  //! so never written back on purpose (ROART's selective metadata persistence). A crash may
  //! keep it or not like any store; only the missing-flush check ignores it.
  virtual void on_volatile_store(void* dst, const void* src, std::size_t len) {
    on_store(dst, src, len);
  }
  //! pm::cas_volatile is about to try a compare-and-swap of the volatile word at `dst` (a
  //! writers' lock word); called before every attempt, whatever its outcome. A success is
  //! then reported by on_volatile_store. Not a store: the crash simulator's scheduler uses it
  //! only to make a writer wait for its turn before it may take a lock.
  virtual void on_before_cas(void* dst) { (void)dst; }
  //! The thread waits for another writer: called on every turn of a wait loop (a spin on a
  //! lock word another writer holds, or on a sequence an SMO keeps odd), outside any store.
  //! The crash simulator's scheduler hands the turn on here at once, so where a writer
  //! blocks is part of the schedule rather than found by timing.
  virtual void on_wait(const void* word) { (void)word; }
  //! A non-temporal 8-byte store: written back without a flush, ordered by the next fence.
  virtual void on_nt_store(void* dst, std::uint64_t value) = 0;
  //! Write-back of the cache lines overlapping [addr, addr+len).
  virtual void on_flush(const void* addr, std::size_t len) = 0;
  //! A store fence is about to be issued.
  virtual void on_fence() = 0;
  //! pm::commit / pm::publish is about to store `len` bytes at `dst` as an operation's
  //! commit store. Called before the store's own on_store (and, for publish, after its
  //! leading fence), so a tracer can check ordering (every line flushed earlier must be
  //! fenced by now, unless `shares_fence`: the index declared that write-backs still
  //! pending may become durable in either order with the commit, pm::commit_sharing_fence)
  //! and count commits per operation against the index's README.
  virtual void on_commit(void* dst, std::size_t len, bool shares_fence) {
    (void)dst, (void)len, (void)shares_fence;
  }
  //! The allocator handed out the block [p, p+len) (len = its class size). Its bytes are
  //! whatever the allocator guarantees (today: unspecified; see Allocator::allocate).
  virtual void on_alloc(void* p, std::size_t len) { (void)p, (void)len; }
  //! pm::copy_changed skipped [p, p+len) because it already holds the bytes to be written,
  //! assuming them durable (no store waiting for its write-back there).
  virtual void on_assume_durable(void* p, std::size_t len) { (void)p, (void)len; }
  //! The block [p, p+len) is being returned to the allocator (called at the start of free).
  virtual void on_free(void* p, std::size_t len) { (void)p, (void)len; }
  //! May a write of this thread run *solo* (kit::EpochReclaimer::SoloWrite: no writer locks,
  //! no fresh marks) while this tracer watches it? Not by default: a tracer that lets another
  //! thread in during a write (the crash simulator's concurrent writers, its dirty-read probe)
  //! would wait for the solo write to end while that write waits for it. A tracer that keeps
  //! the write's thread alone says yes, so what it checks is the path a lone thread runs.
  virtual bool allows_solo_writes() const noexcept { return false; }
};

namespace detail {
inline thread_local Tracer* tls_tracer = nullptr;
}  // namespace detail

//! Installs `t` for this thread (nullptr to remove); returns the previous tracer.
inline Tracer* set_tracer(Tracer* t) noexcept {
  Tracer* prev = detail::tls_tracer;
  detail::tls_tracer = t;
  return prev;
}
//! This thread's tracer, or nullptr.
inline Tracer* tracer() noexcept { return detail::tls_tracer; }

}  // namespace wort::pm
