// roart/roart_epoch.h — epoch-based reclamation of unlinked blocks (ROART's DCMM uses
// epochs for lock-free readers, §3.4.2). Readers and writers pin the epoch for the length of
// an operation; a writer that unlinks a block (its unlinking commit already durable) retires
// it; a retired block is freed once every thread pinned when it was retired has unpinned.
//
// A crash meanwhile leaks nothing: a retired block is unreachable from the root, so the
// allocator's trace at the next open frees it. All state is DRAM.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace wort::pm {
class Allocator;
}

namespace wort::roart {

class Epochs {
 public:
  static constexpr unsigned kMaxThreads = 256;  //!< threads pinned at once (process-wide ids)

  explicit Epochs(pm::Allocator& al) : al_(al) {}
  ~Epochs() { drain(); }
  Epochs(const Epochs&) = delete;
  Epochs& operator=(const Epochs&) = delete;

  //! RAII pin for one operation (the public entry points; they never nest). Inline: a
  //! thread-local offset, one exchange, one store.
  class Guard {
   public:
    explicit Guard(Epochs& e) noexcept : e_(e) {
      std::size_t off = tls_slot_offset;
      if (off == 0) [[unlikely]] off = e.register_thread();
      slot_ = reinterpret_cast<std::atomic<std::uint64_t>*>(reinterpret_cast<char*>(&e) + off);
      // An RMW: the tree reads that follow cannot be ordered before the announcement.
      slot_->exchange(e.global_.load(std::memory_order_relaxed), std::memory_order_seq_cst);
    }
    ~Guard() {
      slot_->store(0, std::memory_order_release);
      if (e_.pending_.load(std::memory_order_relaxed) != 0) [[unlikely]] e_.reclaim();
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Epochs& e_;
    std::atomic<std::uint64_t>* slot_;
  };

  //! Frees the block at `off` once no thread that may still hold it is pinned.
  void retire(std::uint64_t off);
  //! Frees every retired block (no thread may be pinned: the tree is going away).
  void drain();
  //! Blocks retired and not yet freed.
  std::size_t pending() const noexcept { return pending_.load(std::memory_order_relaxed); }
  //! Waits until every thread pinned when it is called has unpinned (a grace period): an
  //! operation running then has finished, its unlinked blocks retired. The caller must not
  //! be pinned.
  void synchronize() noexcept;
  //! Calls f(offset) for each block retired and not yet freed (under the lock that frees
  //! them: none is freed meanwhile). f must not call into this Epochs.
  template <class F>
  void for_each_retired(F&& f) {
    std::lock_guard<std::mutex> g(m_);
    for (const auto& r : retired_) f(r.second);
  }

 private:
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> epoch{0};  //!< 0 = not pinned
  };
  void reclaim();
  //! Byte offset of this thread's slot in any Epochs (0: no id yet; slot 0 is never at
  //! offset 0). The id is process-wide and returned when the thread ends.
  static inline thread_local std::size_t tls_slot_offset = 0;
  std::size_t register_thread();  // (the offset is the same in every Epochs)

  pm::Allocator& al_;
  std::atomic<std::uint64_t> global_{1};
  Slot slots_[kMaxThreads];
  std::atomic<std::size_t> pending_{0};
  std::mutex m_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> retired_;  // (epoch, offset)
};

}  // namespace wort::roart
