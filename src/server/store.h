// server/store.h — the cache's items in a pool: memcached's storage semantics (set, add,
// replace, append, prepend, cas, delete, incr/decr, touch, flush_all) over one persistent
// index that maps key -> item block (item_layout.h).
//
// Threads: the indexes are single-threaded, so the whole index is guarded by ONE
// reader/writer lock (a striped lock would still let two writers restructure the same tree
// at once): lookups and the copy of a value into a reply run under the shared side,
// every change under the exclusive side. A set builds and flushes its new item before it
// takes the lock. A replaced or deleted item is freed under the exclusive lock after the
// index's commit returned (durable), so no reader can still be copying it.
//
// Durability: every mutating call returns only after its commit store is durable.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "pm/allocator.h"
#include "pm/size_classes.h"
#include "server/item_layout.h"
#include "wort/function_ref.h"
#include "wort/index.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::server {

struct StoreOptions {
  std::string pool_path;              //!< created if missing, else opened and recovered
  std::string kind = "wort";          //!< index kind for a new pool (persistent kinds only)
  std::uint64_t pool_bytes = 64ull << 20;
  std::size_t max_item_size = 1u << 20;  //!< -I: largest value + key + header
  bool no_evict = false;              //!< -M: answer out of memory instead of evicting
};

//! A read-only view of a live item, valid only inside the callback that receives it.
struct ItemView {
  std::string_view key;
  std::string_view value;
  std::uint32_t flags = 0;
  std::int64_t exptime = 0;  //!< absolute, 0 = never
  std::uint64_t cas = 0;
  bool was_hit_before = false;  //!< the CLOCK bit was set before this access
};
using ItemFn = FunctionRef<void(const ItemView&)>;

enum class StoreMode : std::uint8_t { set, add, replace, append, prepend, cas };
enum class StoreResult : std::uint8_t { stored, not_stored, exists, not_found, too_large, no_memory };
enum class DeltaResult : std::uint8_t { ok, not_found, non_numeric, exists, no_memory };

struct StoreCounters {
  std::atomic<std::uint64_t> curr_items{0}, total_items{0}, bytes{0}, evictions{0},
      expired_unfetched{0}, reclaimed{0}, cmd_touch{0}, touch_hits{0}, touch_misses{0};
};

class Store {
 public:
  //! Creates or opens (and recovers) the pool. Refuses volatile index kinds.
  static Result<std::unique_ptr<Store>> open(const StoreOptions& opts);
  ~Store();

  //! Unix seconds now (the clock every expiry is measured against).
  static std::int64_t now() noexcept;
  //! memcached's exptime rule: <0 expired, 0 never, <= 30 days relative, else absolute.
  static std::int64_t absolute_exptime(std::int64_t exptime) noexcept;

  //! Looks up `key`; if live, calls fn under the shared lock and returns true. `touch`
  //! (gat) sets a new absolute exptime first (a commit; exclusive lock).
  bool get(std::string_view key, ItemFn fn, const std::int64_t* touch = nullptr);
  //! set/add/replace/append/prepend/cas. `cas_in` is compared for StoreMode::cas (and for
  //! any mode when non-zero: the meta protocol's C flag). `exptime` is absolute.
  StoreResult store(StoreMode mode, std::string_view key, std::uint32_t flags,
                    std::int64_t exptime, std::string_view value, std::uint64_t cas_in = 0,
                    std::uint64_t* cas_out = nullptr);
  //! delete; with cas_in != 0 only if the cas matches (exists otherwise).
  StoreResult remove(std::string_view key, std::uint64_t cas_in = 0);
  //! incr (incr = true) or decr by `delta`; `result` receives the new number. With
  //! `create`, a miss stores `initial` (meta ma's N flag) with `create_exptime`.
  DeltaResult delta(std::string_view key, bool incr, std::uint64_t delta, std::uint64_t* result,
                    std::uint64_t* cas_out = nullptr, std::uint64_t cas_in = 0,
                    bool create = false, std::uint64_t initial = 0,
                    std::int64_t create_exptime = 0);
  //! Sets a live item's absolute exptime (one commit store). False if absent.
  bool touch(std::string_view key, std::int64_t exptime);
  //! flush_all: at = 0 now, else a pending flush at absolute unix time `at`.
  void flush_all(std::int64_t at);
  //! Removes expired and flushed items (at most `budget` visited); applies a due delayed
  //! flush. Returns the number reclaimed.
  std::size_t sweep(std::size_t budget);

  //! The allocator's audit against every block the index and its items reach.
  pm::AuditReport audit();
  //! Every item is well formed and the index verifies.
  Result<void> verify();

  //! An item of this key and value size may be stored (memcached's -I limit; at most half
  //! the pool).
  bool fits(std::size_t key_len, std::size_t value_len) const noexcept {
    const std::size_t n = item_bytes(key_len, value_len);
    return n <= opts_.max_item_size && n <= pool_->size() / 2;
  }
  const StoreCounters& counters() const noexcept { return counters_; }
  const StoreOptions& options() const noexcept { return opts_; }
  std::uint64_t pool_bytes() const noexcept { return pool_->size(); }
  std::string_view kind() const noexcept { return index_->kind(); }
  bool recovered() const noexcept { return recovered_; }
  std::uint64_t next_cas_peek() const noexcept { return next_cas_.load(); }
  std::uint64_t evictions() const noexcept { return counters_.evictions.load(); }

 private:
  Store() = default;
  Result<void> init_meta(bool fresh);
  Result<void> rebuild();  // recovery: checks every item, rebuilds the DRAM counters
  std::uint64_t take_cas();
  const ItemHeader* item_at(std::uint64_t off) const noexcept;
  bool live(const ItemHeader* h, std::int64_t t) const noexcept;
  const ItemHeader* find_live(std::string_view key, std::uint64_t* off);
  //! Allocates and fills a new item (flushed, not fenced). Evicts when full (the caller
  //! holds the exclusive lock iff `locked`).
  StoreResult make_item(std::string_view key, std::uint32_t flags, std::int64_t exptime,
                        std::uint64_t cas, std::string_view v1, std::string_view v2,
                        std::uint64_t* off, bool locked);
  //! Commits key -> off, frees the replaced item `old` (0 = none). Exclusive lock held.
  StoreResult commit(std::string_view key, std::uint64_t off, std::uint64_t old);
  void unlink(std::string_view key, std::uint64_t off);  // exclusive lock held
  bool evict_one(std::size_t want_bytes, bool any_class);  // exclusive lock held
  void maybe_apply_flush();
  void mark_ref(std::uint64_t off) noexcept;
  bool test_clear_ref(std::uint64_t off) noexcept;

  StoreOptions opts_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Index> index_;
  std::unique_ptr<pm::SizeClasses> classes_;
  MetaBlock* meta_ = nullptr;
  bool recovered_ = false;

  mutable std::shared_mutex lock_;  // guards the index (see the header comment)
  // Held shared by a store() from the allocation of its item (outside lock_) until its
  // commit; audit() takes it exclusively so that no allocated-but-unpublished item is in
  // flight (it would look leaked).
  std::shared_mutex build_gate_;
  std::mutex cas_lock_;             // guards the cas_hwm bump
  std::atomic<std::uint64_t> next_cas_{1};
  std::atomic<std::uint64_t> cas_limit_{0};  // == meta_->cas_hwm
  std::atomic<std::uint64_t> flush_cas_{0};
  std::atomic<std::int64_t> flush_at_{0};
  std::string clock_hand_;  // CLOCK: the key the eviction scan resumes from
  std::string sweep_hand_;
  std::vector<std::atomic<std::uint64_t>> ref_bits_;  // CLOCK bit per 16-byte granule
  StoreCounters counters_;
};

}  // namespace wort::server
