// index/kit/epoch.cc — the cold paths of the epoch reclaimer (index/kit/epoch.h): a thread's
// first pin, the solo-write handshake with membarrier, and the batched reclaim of the
// retired lists. The hot paths (pins, retire, the solo check) stay inline in the header.
#include "index/kit/epoch.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace wort::kit {

void EpochReclaimer::reclaim_lists() {
  // Odd from before the first list is taken from until the last free has returned: the
  // latches below publish it to for_each_retired, which waits for it.
  std::atomic<std::uint64_t>& freeing = my_slot().freeing;
  const std::uint64_t seq = freeing.load(std::memory_order_relaxed);
  freeing.store(seq + 1, std::memory_order_relaxed);
  const unsigned hi = ids().hi.load(std::memory_order_acquire);
  for (unsigned i = 0; i < hi && i < kMaxThreads; ++i) stamp(lists_[i]);
  const std::uint64_t now = global_.fetch_add(1, std::memory_order_seq_cst) + 1;
  std::uint64_t oldest = now;
  for (unsigned i = 0; i < hi && i < kMaxThreads; ++i) {
    for (const auto* w : {&slots_[i].epoch, &slots_[i].outer}) {
      const std::uint64_t p = w->load(std::memory_order_seq_cst);
      if (p != 0 && p < oldest) oldest = p;
    }
  }
  // Cleared before the lists are read: a block retired meanwhile is either seen here
  // (kept: set again below) or set by its retire after this store.
  waiting_.store(false, std::memory_order_relaxed);
  bool kept = false;
  std::vector<std::uint64_t>& out = t_freeing;
  out.clear();
  for (unsigned i = 0; i < hi && i < kMaxThreads; ++i) kept |= take_older(lists_[i], oldest, out);
  if (kept) waiting_.store(true, std::memory_order_relaxed);
  // In address order, not list by list: which thread holds which list (id) is up to
  // timing, and the order of frees decides what the allocator hands out next (a crash
  // simulator's replayed schedule must free exactly as the run it replays).
  std::sort(out.begin(), out.end());
  for (const std::uint64_t off : out) free_(ctx_, off);
  freeing.store(seq + 2, std::memory_order_release);
}

void EpochReclaimer::reclaim_waiting() {
  List& l = my_list();
  if (l.n.load(std::memory_order_relaxed) >= l.next.load(std::memory_order_relaxed) ||
      ((alone() || paced()) && !any_pinned()))
    reclaim_lists();
}

void EpochReclaimer::stamp(List& l) {
  if (l.n.load(std::memory_order_relaxed) == 0) return;
  Latch g(l.latch);
  std::uint64_t e = 0;
  for (auto& r : l.blocks) {
    if (r.first != kUnstamped) continue;
    if (e == 0) e = global_.load(std::memory_order_seq_cst);
    r.first = e;
  }
}

bool EpochReclaimer::take_older(List& l, std::uint64_t oldest, std::vector<std::uint64_t>& out) {
  Latch g(l.latch);
  std::size_t kept = 0;
  for (auto& r : l.blocks) {
    if (r.first < oldest) out.push_back(r.second);
    else l.blocks[kept++] = r;
  }
  l.blocks.resize(kept);
  l.n.store(kept, std::memory_order_relaxed);
  l.next.store(kept + kBatch, std::memory_order_relaxed);
  return kept != 0;
}

bool EpochReclaimer::membarrier_ready() noexcept {
  static const bool ok = [] {
#if defined(__SANITIZE_THREAD__)
    const bool usable = false;  // TSan does not model membarrier's ordering
#else
    const long cmds = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    const bool usable = cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
                        ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
    if (!usable) ids().live.fetch_add(kNoSolo, std::memory_order_acq_rel);
    return usable;
  }();
  return ok;
}

void EpochReclaimer::wait_for_solo_writes(unsigned me) noexcept {
  if (WORT_FAULT(g_broken_arrival_skips_wait)) [[unlikely]] return;
  Ids& g = ids();
  const unsigned hi = g.hi.load(std::memory_order_acquire);
  for (unsigned i = 0; i < hi && i < kMaxThreads; ++i) {
    if (i == me) continue;
    for (unsigned spins = 0;; ++spins) {
      if (g.busy[i].v.load(std::memory_order_acquire) == 0) {
        if (spins == 0) break;
        pm::after_wait(&g.busy[i].v);  // on in its turn (crash simulator): read again
        spins = ~0u;
        continue;
      }
      pm::waiting(&g.busy[i].v);
      if (spins < 128) __builtin_ia32_pause();
      else std::this_thread::yield();
    }
  }
}

void EpochReclaimer::barrier_everyone() noexcept {
#if !defined(__SANITIZE_THREAD__)
  if (::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) [[unlikely]]
    ids().live.fetch_or(kNoSolo, std::memory_order_acq_rel);  // cannot happen once registered
#endif
}

unsigned EpochReclaimer::take_id() noexcept {
  thread_local IdHolder holder;
  Ids& g = ids();
  for (;;) {
    for (unsigned i = 0; i < kMaxThreads; ++i) {
      bool f = false;
      if (!g.used[i].load(std::memory_order_relaxed) &&
          g.used[i].compare_exchange_strong(f, true, std::memory_order_acq_rel)) {
        unsigned h = g.hi.load(std::memory_order_relaxed);
        while (h < i + 1 && !g.hi.compare_exchange_weak(h, i + 1, std::memory_order_acq_rel)) {
        }
        holder.id = i + 1;
        // Counted before the thread's first pin; if another thread holds an id, it may be
        // running solo: make it pass a full barrier before this one reads anything.
        const bool ready = membarrier_ready();
        if (g.live.fetch_add(1, std::memory_order_acq_rel) % kNoSolo != 0 && ready) {
          barrier_everyone();
          wait_for_solo_writes(i);
        }
        tls_slot_bytes = slot_bytes(i + 1);
        return i + 1;
      }
    }
    std::this_thread::yield();  // all taken: wait for one
  }
}

}  // namespace wort::kit
