// index/kit/epoch.h — epoch-based reclamation of pool blocks for indexes whose readers
// take no lock. A reader (or a writer that follows pointers another writer may unlink) pins
// the epoch for one operation; a writer that has unlinked a block with a durable commit
// retires it; reclaim() frees the retired blocks that no pinned thread can still hold.
//
// Protocol (all DRAM, nothing in the pool):
//   pin:     slot[me] = global  (sequentially consistent store: a full barrier, so the
//            tree reads that follow cannot be ordered before the announcement). Each thread
//            has two words: Pin's (operations that call no user code) and NestablePin's
//            (scans, whose visitor may call back into the index: a pin inside keeps it)
//   retire:  alone in the process (or paced by the crash simulator): a full barrier (the
//            unlinking commit before the epoch read: an RMW of the thread's list word);
//            free at once if no slot is pinned, else remember (global, off) in the calling
//            thread's own list. With other threads about: no barrier, no read
//            of their pin words — append (unstamped, off) to its own list (its own latch:
//            two writers never share a line to retire)
//   reclaim: when the thread's list holds kBatch blocks, or when it is alone and nobody is
//            pinned: stamp every list's unstamped blocks with global, read under the
//            list's latch; global += 1; oldest = min over pinned slots; free every block
//            stamped at an epoch < oldest, in every list, in address order (its `freeing`
//            word odd from before it takes blocks out of the lists until the last free
//            returns: for_each_retired waits for it, so a block is always in a list or freed)
//   unpin:   slot[me] = 0 (release)
// A thread pinned at p read the tree no earlier than its load of p; a block stamped r was
// unlinked before r was read (at retire; or at reclaim, under a latch its retiring thread
// released after the unlinking commit — x86 makes that commit visible to every core
// before); so a thread that may hold the block has p <= r and keeps it alive. A crash while
// blocks wait leaks nothing: they are unreachable from the root, and the allocator's trace
// at the next open frees them. Until freed they are still the index's: its visit_blocks
// reports them (for_each_retired), so an audit while blocks wait finds no leak.
//
// Single-threaded, retire() frees at once (nobody is pinned), so frees happen when they did
// without epochs and no list is kept. Used by every concurrent index (WORT, the ART engine,
// ROART, the B+-trees).
//
// One thread alone pays no barrier (`solo`). The full barriers of pin and retire
// only order one thread's store before its load against ANOTHER thread doing the same; while
// a single thread of the process holds an id, nobody else can pin or retire. So: a thread
// that registers (takes an id) while another holds one first runs membarrier(2)
// (MEMBARRIER_CMD_PRIVATE_EXPEDITED: every running thread of the process executes a full
// barrier before it returns), and only then pins or reads anything. Pin stores its word,
// then reads the count of threads holding ids; one (itself): no barrier. Retire reads the
// count after its unlinking commit; one, and its own thread not pinned: free at once. Why
// that is safe, for the newcomer T and the solo thread S (barrier point P: where S executes
// the barrier membarrier forces on it):
//   - S's count load before P: S's pin store (or unlinking commit) is before P too, so it is
//     visible once T's membarrier returns: T's scans see S's pin, T's reads see S's unlink.
//   - S's count load after P: T's increment was made before T called membarrier, so the
//     load sees two threads and S takes the barrier path.
// A whole write may be solo too (SoloWrite: the ART engine then takes no lock
// and marks no leaf fresh): its thread sets its `busy` flag, then reads the count; the
// newcomer, after its membarrier, waits until every busy flag is clear. The same two cases:
// a count load before P puts the flag store before P too (the newcomer sees it and waits);
// a load after P sees two threads, and the write is not solo.
// Where membarrier is refused (old kernel, seccomp), or under ThreadSanitizer (which does
// not model it), every pin and retire takes the barrier path, as before.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "pm/allocator.h"
#include "pm/faults.h"
#include "pm/persist.h"
#include "pm/tracer.h"

namespace wort::kit {

//! The FreeFn for blocks of a pool (ctx: its pm::Allocator): what every index passes.
inline void free_to_allocator(void* allocator, std::uint64_t off) {
  static_cast<pm::Allocator*>(allocator)->free(off);
}

class EpochReclaimer {
 public:
#if WORT_FAULTS  // test builds only (pm/faults.h)
  //! Tests only — the broken variant tests/index/kit/epoch_solo_concurrency_test.cc must catch: a
  //! thread that takes an id while another holds one does not wait for that thread's solo
  //! write to end.
  static inline std::atomic<bool> g_broken_arrival_skips_wait{false};
  //! Tests only — the broken variant tests/index/kit/epoch_reclaim_concurrency_test.cc must
  //! catch: for_each_retired returns without waiting for the reclaims under way.
  static inline std::atomic<bool> g_broken_retired_skips_reclaims_under_way{false};
#endif
  //! Threads that may pin at once, process-wide (ids are given back when a thread ends).
  static constexpr unsigned kMaxThreads = 128;
  using FreeFn = void (*)(void* ctx, std::uint64_t off);

  EpochReclaimer(FreeFn free_fn, void* ctx) noexcept : free_(free_fn), ctx_(ctx) {}
  ~EpochReclaimer() { drain(); }
  EpochReclaimer(const EpochReclaimer&) = delete;
  EpochReclaimer& operator=(const EpochReclaimer&) = delete;

  //! RAII pin for one operation that calls no user code while pinned (a lookup): it owns
  //! the thread's `epoch` word, so it must not nest inside another Pin on this reclaimer.
  class Pin {
   public:
    explicit Pin(EpochReclaimer& e) noexcept : slot_(&e.my_slot().epoch) {
      announce(*slot_, e.global_.load(std::memory_order_relaxed));
    }
    ~Pin() { slot_->store(0, std::memory_order_release); }
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;

   private:
    std::atomic<std::uint64_t>* slot_;
  };

  //! RAII pin for an operation that calls user code while pinned (a scan's visitor), which
  //! may call back into the index: it holds the thread's second word, `outer`, so a Pin
  //! inside it does not end it, and a NestablePin inside it leaves the outer one in place.
  class NestablePin {
   public:
    explicit NestablePin(EpochReclaimer& e) noexcept : slot_(&e.my_slot().outer) {
      if (slot_->load(std::memory_order_relaxed) != 0) {  // an outer scan of this thread
        slot_ = nullptr;
        return;
      }
      announce(*slot_, e.global_.load(std::memory_order_relaxed));
    }
    ~NestablePin() {
      if (slot_ != nullptr) slot_->store(0, std::memory_order_release);
    }
    NestablePin(const NestablePin&) = delete;
    NestablePin& operator=(const NestablePin&) = delete;

   private:
    std::atomic<std::uint64_t>* slot_;
  };

  //! Marks one write of the calling thread (inside its pin) as *solo* when the thread is the
  //! only one holding an id and no tracer watches it that could let another thread in during
  //! the write (pm::Tracer::allows_solo_writes; the crash simulator's single-threaded runs
  //! allow it, its concurrent ones and its dirty-read probe do not): a solo write may skip
  //! its writer locks and its fresh marks, since no other thread can read or write until it
  //! ends — a thread that takes an id while another holds one runs membarrier, then waits
  //! until no write that began solo is still running (the header comment, "solo"). Nests:
  //! an inner guard leaves the outer one's state.
  class SoloWrite {
   public:
    //! `allowed` false: not solo whatever the thread count (a test hook that runs another
    //! thread's write inside this one, which would wait for this one to end).
    explicit SoloWrite(bool allowed = true) noexcept {
      if (!allowed || t_solo_write || tls_slot_bytes == 0) return;
      if (const pm::Tracer* t = pm::tracer(); t != nullptr && !t->allows_solo_writes()) return;
      my_busy().store(1, std::memory_order_relaxed);
      if (solo()) [[likely]] {
        t_solo_write = mine_ = true;
        return;
      }
      my_busy().store(0, std::memory_order_release);
    }
    ~SoloWrite() {
      if (!mine_) return;
      t_solo_write = false;
      my_busy().store(0, std::memory_order_release);
    }
    SoloWrite(const SoloWrite&) = delete;
    SoloWrite& operator=(const SoloWrite&) = delete;
    //! True while the calling thread runs a solo write.
    static bool active() noexcept { return t_solo_write; }

   private:
    bool mine_ = false;
  };

  //! The block at `off` was unlinked by a commit that is durable: free it once no pinned
  //! thread can hold it. A thread alone in the process frees it at once if no thread is
  //! pinned now (a thread that pins later reads the tree after the unlinking commit: both
  //! sides have a full barrier between their store and their load), so a single-threaded
  //! user pays no list. With other threads about, it only appends the block, unstamped, to
  //! its own list: no barrier, no read of the other threads' pin words (a line each writes
  //! at every pin) — the list is stamped and freed in batches (reclaim_lists).
  void retire(std::uint64_t off) {
    List& l = my_list();
    // Alone in the process and not pinned itself (a scan's visitor may write): nobody can
    // hold the block (the header comment, "solo").
    if (solo()) [[likely]] {
      const Slot& me = my_slot();
      if ((me.epoch.load(std::memory_order_relaxed) | me.outer.load(std::memory_order_relaxed)) == 0) {
        free_(ctx_, off);
        return;
      }
    }
    std::uint64_t e = kUnstamped;
    if (alone() || paced()) {  // alone but not solo (pinned; no membarrier; TSan): barrier
      // An RMW (a full barrier; no atomic_thread_fence, which TSan does not model): the
      // unlinking commit is ordered before the epoch read and the slot reads.
      l.n.fetch_add(0, std::memory_order_seq_cst);
      e = global_.load(std::memory_order_seq_cst);
      if (!any_pinned()) {
        free_(ctx_, off);
        return;
      }
    }
    Latch g(l.latch);
    l.blocks.emplace_back(e, off);
    l.n.store(l.blocks.size(), std::memory_order_relaxed);
    if (!waiting_.load(std::memory_order_relaxed)) waiting_.store(true, std::memory_order_relaxed);
  }

  //! Frees what no pinned thread can hold, in every list: once the thread's own list holds
  //! kBatch blocks (so writers do not advance the epoch and scan the pin words per write),
  //! or at once when the thread is alone in the process and nobody is pinned (so a write
  //! with no reader pinned frees everything retired, as a single thread's does).
  void reclaim() {
    // (a list holding blocks has set waiting_: one load when nothing waits)
    if (!waiting_.load(std::memory_order_relaxed)) [[likely]] return;
    reclaim_waiting();
  }

  //! Frees every retired block whose epoch no pinned thread can hold, in every thread's
  //! list (after synchronize(): everything retired before it).
  void reclaim_all() { reclaim_lists(); }

  //! synchronize(), then reclaim_all(): frees every block retired before the call (for a
  //! caller short of space). The caller must not be pinned.
  void reclaim_everything() {
    synchronize();
    reclaim_all();
  }

  //! Frees every retired block (nobody may be pinned: the index is going away).
  void drain() {
    for (List& l : lists_) {
      Latch g(l.latch);
      for (auto& r : l.blocks) free_(ctx_, r.second);
      l.blocks.clear();
      l.n.store(0, std::memory_order_relaxed);
    }
    waiting_.store(false, std::memory_order_relaxed);
  }

  //! Blocks retired and not yet freed.
  std::size_t pending() const noexcept {
    std::size_t n = 0;
    const unsigned hi = ids().hi.load(std::memory_order_acquire);
    for (unsigned i = 0; i < hi && i < kMaxThreads; ++i)
      n += lists_[i].n.load(std::memory_order_relaxed);
    return n;
  }

  //! Waits until every thread pinned when it is called has unpinned (a grace period): an
  //! operation running then has finished and retired what it unlinked. The caller must not
  //! be pinned. (ROART's instant restart: its background trace, then the retired list.)
  void synchronize() noexcept {
    // Advance past every epoch pinned so far (a pin announces the global it read before its
    // reads of the tree), then wait for each word to unpin or to hold a newer epoch: such a
    // thread pinned after this call began.
    const std::uint64_t now = global_.fetch_add(1, std::memory_order_seq_cst) + 1;
    const unsigned hi = ids().hi.load(std::memory_order_acquire);
    for (unsigned i = 0; i < hi && i < kMaxThreads; ++i)
      for (const auto* w : {&slots_[i].epoch, &slots_[i].outer})
        for (;;) {
          const std::uint64_t e = w->load(std::memory_order_seq_cst);
          if (e == 0 || e >= now) break;
          std::this_thread::yield();
        }
  }

  //! Calls f(offset) for each block retired and not yet freed (each list read under its
  //! latch), then waits for every reclaim under way to end: a reclaim takes its blocks out
  //! of the lists under their latches but frees them after, so a block taken before its
  //! list was read here is in neither place until that free returns. On return, every block
  //! retired before the call was reported or has been freed (ROART's background trace relies
  //! on it: a block in neither would be made free by the trace and then freed again). f
  //! must not call into this reclaimer, nor the caller be inside a reclaim.
  template <class F>
  void for_each_retired(F&& f) const {
    for (List& l : lists_) {
      Latch g(l.latch);
      for (const auto& r : l.blocks) f(r.second);
    }
    if (WORT_FAULT(g_broken_retired_skips_reclaims_under_way)) return;
    // A reclaim that took blocks from a list before the latch above read it had made its
    // word odd before it released that latch: seen odd here (or later, even: done).
    const unsigned hi = ids().hi.load(std::memory_order_acquire);
    for (unsigned i = 0; i < hi && i < kMaxThreads; ++i) {
      const std::uint64_t s = slots_[i].freeing.load(std::memory_order_acquire);
      if ((s & 1) == 0) continue;
      while (slots_[i].freeing.load(std::memory_order_acquire) == s) std::this_thread::yield();
    }
  }

 private:
  //! True if the calling thread (which holds an id) is the only thread of the process that
  //! holds one, and membarrier is in use: then it needs no barrier to pin or retire. To be
  //! called after the store it orders (a pin's word, a retire's unlinking commit): the
  //! compiler fence keeps the load after it.
  static bool solo() noexcept {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return ids().live.load(std::memory_order_relaxed) == 1;
  }
  //! A pin's store of epoch e into word w: a plain store when the thread is alone (solo),
  //! else a sequentially consistent one (a full barrier before the tree reads).
  static void announce(std::atomic<std::uint64_t>& w, std::uint64_t e) noexcept {
    w.store(e, std::memory_order_relaxed);
    if (!solo()) [[unlikely]] w.store(e, std::memory_order_seq_cst);
  }

  //! The calling thread (which holds an id) is the only one of the process that does,
  //! whether or not solo() may be used (membarrier).
  static bool alone() noexcept {
    return (ids().live.load(std::memory_order_relaxed) & (kNoSolo - 1)) == 1;
  }
  //! Under a tracer that runs threads in turns (the crash simulator's concurrent runs): a
  //! retire then stamps and frees inside the write, in its thread's turn, as a lone
  //! thread's does — a batch stamped and freed in a write's untraced tail would make what
  //! the allocator hands out depend on timing, and a replayed schedule must repeat exactly.
  static bool paced() noexcept {
    const pm::Tracer* t = pm::tracer();
    return t != nullptr && !t->allows_solo_writes();
  }
  //! Some thread is pinned (seq_cst loads: see retire).
  bool any_pinned() const noexcept {
    const unsigned hi = ids().hi.load(std::memory_order_acquire);
    for (unsigned i = 0; i < hi && i < kMaxThreads; ++i)
      if (slots_[i].epoch.load(std::memory_order_seq_cst) != 0 ||
          slots_[i].outer.load(std::memory_order_seq_cst) != 0)
        return true;
    return false;
  }

  struct alignas(64) Slot {
    std::atomic<std::uint64_t> epoch{0};  //!< Pin's word; 0 = not pinned
    std::atomic<std::uint64_t> outer{0};  //!< NestablePin's word; 0 = not pinned
    //! Odd while the thread's reclaim_lists has blocks out of the lists and not yet freed
    //! (for_each_retired waits for it); counts up by one at each edge.
    std::atomic<std::uint64_t> freeing{0};
  };
  //! A thread's retired blocks, (epoch, offset): written by that thread under its latch,
  //! read by others (reclaim of every list, drain, for_each_retired) under it too.
  struct alignas(64) List {
    std::atomic_flag latch = ATOMIC_FLAG_INIT;
    std::atomic<std::size_t> n{0};  //!< blocks.size(), for pending() without the latch
    //! Size at which the owner reclaims its list again: kBatch more than it kept the last
    //! time (what a reclaim keeps was retired in the epoch it has just ended, which the
    //! other threads' current pins may still hold: freed by the next one).
    std::atomic<std::size_t> next{kBatch};
    std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks;
  };
  static_assert(sizeof(List) == sizeof(Slot));
  //! Blocks a thread lets wait before it reclaims while other threads are about.
  static constexpr std::size_t kBatch = 32;
  //! The stamp of a block retired with other threads about, until a reclaim stamps it.
  static constexpr std::uint64_t kUnstamped = ~std::uint64_t{0};
  //! The calling thread's slot (tls_slot_bytes: a byte offset into slots_, an add).
  Slot& my_slot() noexcept {
    std::size_t off = tls_slot_bytes;
    if (off == 0) [[unlikely]] off = slot_bytes(take_id());
    return reinterpret_cast<Slot*>(reinterpret_cast<char*>(slots_) + off)[-1];
  }
  //! The calling thread's list (the same index as its slot).
  List& my_list() noexcept {
    std::size_t off = tls_slot_bytes;
    if (off == 0) [[unlikely]] off = slot_bytes(take_id());
    return reinterpret_cast<List*>(reinterpret_cast<char*>(lists_) + off)[-1];
  }
  //! Stamps every list's unstamped blocks, advances the epoch and frees, in every list,
  //! the blocks no pinned thread can hold (a thread's last blocks, or an ended thread's,
  //! are freed by another's reclaim). Out of line: a write that retired nothing pays a load
  //! or two.
  //!
  //! A block is appended unstamped after its unlinking commit (retire). Its stamp is the
  //! epoch read under its list's latch, after the latch is taken: the owner's unlinking
  //! commit came before its release of that latch, so it is visible to every thread before
  //! that read (x86 stores become visible to all cores at once, in order). A thread pinned at
  //! a later epoch read the global epoch after an advance that followed this read, then
  //! fenced (announce) before it read the tree: it cannot reach the block. So the block is
  //! freed once every pinned epoch is later than its stamp — as for a block stamped at
  //! retire, only later.
  [[gnu::noinline]] void reclaim_lists();
  //! reclaim_lists' blocks to free (per thread: it does not nest).
  static inline thread_local std::vector<std::uint64_t> t_freeing;
  //! reclaim() when some list holds blocks (out of line).
  [[gnu::noinline]] void reclaim_waiting();
  //! Stamps l's unstamped blocks with the epoch read now, under its latch (reclaim_lists).
  void stamp(List& l);
  //! True if l keeps blocks.
  bool take_older(List& l, std::uint64_t oldest, std::vector<std::uint64_t>& out);

  //! Process-wide thread ids 1..kMaxThreads.
  struct Ids {
    std::atomic<bool> used[kMaxThreads] = {};
    std::atomic<unsigned> hi{0};  //!< one past the highest index ever taken
    //! Threads holding an id, plus kNoSolo when solo() is never to hold (membarrier
    //! refused, or ThreadSanitizer): solo() is one load of this word.
    std::atomic<unsigned> live{0};
    //! Per id: 1 while that thread runs a solo write (SoloWrite). Its own line each.
    struct alignas(64) Busy {
      std::atomic<unsigned> v{0};
    } busy[kMaxThreads];
  };
  static constexpr unsigned kNoSolo = 1u << 20;
  //! The calling thread runs a solo write (SoloWrite::active).
  static inline thread_local bool t_solo_write = false;
  //! The calling thread's busy flag (it holds an id: tls_slot_bytes is id * sizeof(Slot)).
  static std::atomic<unsigned>& my_busy() noexcept {
    return ids().busy[tls_slot_bytes / sizeof(Slot) - 1].v;
  }
  static Ids& ids() noexcept {
    static Ids g;
    return g;
  }
  struct IdHolder {
    unsigned id = 0;
    ~IdHolder() {
      if (id == 0) return;
      ids().live.fetch_sub(1, std::memory_order_acq_rel);
      ids().used[id - 1].store(false, std::memory_order_release);
    }
  };
  //! Makes membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) usable by this process (once), or
  //! switches solo() off for good if the kernel refuses it.
  static bool membarrier_ready() noexcept;
  //! After barrier_everyone: waits until no other thread runs a write that began solo (a
  //! write that sees this thread's id count after the barrier is not solo).
  static void wait_for_solo_writes(unsigned me) noexcept;
  //! A thread taking an id while another holds one: every running thread of the process
  //! executes a full barrier before this returns (the header comment, "solo").
  static void barrier_everyone() noexcept;
  //! slot_bytes(the thread's id), 0 before the thread's first pin.
  static inline thread_local std::size_t tls_slot_bytes = 0;
  static constexpr std::size_t slot_bytes(unsigned id) noexcept { return id * sizeof(Slot); }
  //! A thread's first pin (out of line and cold: every later pin reads tls_slot_bytes).
  [[gnu::noinline, gnu::cold]] static unsigned take_id() noexcept;

  //! A spin latch over one thread's retired list (taken by others only to reclaim every
  //! list, drain or read them).
  class Latch {
   public:
    explicit Latch(std::atomic_flag& f) noexcept : f_(f) {
      while (f_.test_and_set(std::memory_order_acquire)) {
        while (f_.test(std::memory_order_relaxed)) __builtin_ia32_pause();
      }
    }
    ~Latch() { f_.clear(std::memory_order_release); }

   private:
    std::atomic_flag& f_;
  };

  FreeFn free_;
  void* ctx_;
  std::atomic<std::uint64_t> global_{1};
  Slot slots_[kMaxThreads];
  mutable List lists_[kMaxThreads];  // (mutable: for_each_retired takes their latches)
  //! Some list may hold blocks (reclaim()'s one load when its own list is short).
  std::atomic<bool> waiting_{false};
};

}  // namespace wort::kit
