#include "index/roart/roart_epoch.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <thread>

#include "pm/allocator.h"

namespace wort::roart {
namespace {

//! Process-wide thread ids 0..kMaxThreads-1, returned when the thread ends.
class ThreadIds {
 public:
  unsigned take() {
    for (;;)
      for (unsigned i = 0; i < Epochs::kMaxThreads; ++i) {
        bool f = false;
        if (!used_[i].load(std::memory_order_relaxed) &&
            used_[i].compare_exchange_strong(f, true)) {
          unsigned hi = hi_.load();
          while (hi < i + 1 && !hi_.compare_exchange_weak(hi, i + 1)) {
          }
          return i;
        }
      }
  }
  //! One past the highest id ever taken: reclaim scans only these slots.
  unsigned hi() const { return hi_.load(std::memory_order_acquire); }
  void give(unsigned i) { used_[i].store(false); }

 private:
  std::atomic<bool> used_[Epochs::kMaxThreads] = {};
  std::atomic<unsigned> hi_{0};
};
ThreadIds g_ids;

struct ThreadId {
  unsigned id = g_ids.take();
  ~ThreadId() { g_ids.give(id); }
};

}  // namespace

std::size_t Epochs::register_thread() {
  thread_local ThreadId t;  // gives the id back when the thread ends
  tls_slot_offset = static_cast<std::size_t>(reinterpret_cast<char*>(&slots_[t.id]) -
                                             reinterpret_cast<char*>(this));
  return tls_slot_offset;
}

void Epochs::retire(std::uint64_t off) {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the unlink before the epoch read
  std::lock_guard<std::mutex> g(m_);
  retired_.emplace_back(global_.load(std::memory_order_seq_cst), off);
  pending_.fetch_add(1, std::memory_order_relaxed);
}

//! Advances the epoch and frees what no pinned thread can hold: blocks retired before the
//! oldest epoch still pinned.
void Epochs::reclaim() {
  std::unique_lock<std::mutex> g(m_, std::try_to_lock);
  if (!g.owns_lock()) return;  // another thread is at it
  const std::uint64_t now = global_.fetch_add(1, std::memory_order_seq_cst) + 1;
  std::uint64_t oldest = now;
  const unsigned hi = g_ids.hi();
  for (unsigned i = 0; i < hi; ++i) {
    const std::uint64_t e = slots_[i].epoch.load(std::memory_order_seq_cst);
    if (e != 0) oldest = std::min(oldest, e);
  }
  std::size_t kept = 0;
  for (auto& r : retired_) {
    if (r.first < oldest) al_.free(r.second);
    else retired_[kept++] = r;
  }
  retired_.resize(kept);
  pending_.store(kept, std::memory_order_relaxed);
}

void Epochs::synchronize() noexcept {
  // Advance past every epoch pinned so far (a pin announces the global it read, before its
  // reads of the tree), then wait for each slot to unpin or to hold a newer epoch: such a
  // thread pinned after this call began.
  const std::uint64_t now = global_.fetch_add(1, std::memory_order_seq_cst) + 1;
  const unsigned hi = g_ids.hi();
  for (unsigned i = 0; i < hi; ++i)
    for (;;) {
      const std::uint64_t e = slots_[i].epoch.load(std::memory_order_seq_cst);
      if (e == 0 || e >= now) break;
      std::this_thread::yield();
    }
}

void Epochs::drain() {
  std::lock_guard<std::mutex> g(m_);
  for (auto& r : retired_) al_.free(r.second);
  retired_.clear();
  pending_.store(0, std::memory_order_relaxed);
}

}  // namespace wort::roart
