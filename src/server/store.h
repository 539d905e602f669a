// server/store.h — the cache's items in a pool: memcached's storage semantics (set, add,
// replace, append, prepend, cas, delete, incr/decr, touch, flush_all) over one persistent
// index that maps key -> item block (item_layout.h).
//
// Threads. Two paths, chosen at open from the index kind (registry Entry::concurrent):
//
// A concurrent index (wort, woart, artcow, fastfair, fptree, roart: T::kConcurrent) is
// called with no lock around it.
//   - Reads (get, gets, mg without T/N/R, me) take no lock: they pin an epoch of the
//     store's own kit::EpochReclaimer (`items_`) for the lookup and the copy of the item
//     into the reply.
//   - Every write of a key (set ... cas, append/prepend, incr/decr, touch, gat, delete, md,
//     ms, ma, mg with T/N/R) holds that key's stripe lock (kStripes DRAM futex words, chosen by
//     the key's hash) from before it builds its item until its commit returned: the
//     read-modify-write of one key is atomic, two keys of different stripes never wait for
//     each other. Only a thread holding a key's stripe replaces, removes or frees that
//     key's item, so a writer reads the current item of its key without a pin.
//   - A replaced or removed item block is retired to `items_` after the index's commit
//     returned (durable) and freed once no reader pinned before the retire is still pinned.
//     A crash while blocks wait leaks nothing: they are unreachable, and the allocator's
//     trace at the next open (items are values of a values_are_blocks pool) frees them.
//   - The evictor (under `evict_lock_`, which guards the CLOCK hand) collects candidates
//     while pinned, then try-locks each victim's stripe (never the stripe its caller holds;
//     a busy stripe is skipped), re-checks under it that the key still names that block, and
//     unlinks it. The chunk eviction (evict_chunk, under evict_lock_ too) finds a chunk's
//     items by an index scan and reads no item block. The sweeper (`sweep_lock_` guards its hand) does the same with a blocking
//     stripe lock (it holds no other). flush_all and a due delayed flush commit the meta
//     block's words under `flush_lock_`; readers and writers see a flush through the atomic
//     flush_cas_ (an item with cas <= it is dead).
//   - audit() and verify() take every stripe (no item is built, committed or freed
//     meanwhile), wait for a grace period and free the retired blocks no reader can hold;
//     the audit counts those still retired (a get pinned since) as the store's.
//
// A non-concurrent index (wbtree, nvtree), or StoreOptions::global_lock, is guarded by ONE
// reader/writer lock, as before the indexes were concurrent: lookups and the copy into a
// reply under the shared side, every change under the exclusive side; a set builds and
// flushes its item before it takes the lock; a replaced or deleted item is freed under the
// exclusive lock after the index's commit returned.
//
// DRAM side state is thread-safe without a lock on either path: the CLOCK bits, fetched /
// last-access words and recache-token bits are relaxed atomics per pool granule, the
// counters are atomics, and cas uniques come from an atomic counter (a mutex only around
// the durable high-water-mark bump, once per 65536 uniques).
//
// Durability: every mutating call returns only after its commit store is durable.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "index/kit/epoch.h"
#include "index/kit/zeroed_array.h"
#include "pm/allocator.h"
#include "pm/faults.h"
#include "pm/size_classes.h"
#include "server/item_layout.h"
#include "wort/function_ref.h"
#include "wort/index.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::server {

//! The index kinds `wort serve` accepts: those whose commits order an item's pending
//! write-back before the index names it (tests/server/item_crash_test.cc runs each).
inline constexpr std::string_view kServableKinds[] = {"wort",   "woart",  "artcow", "fastfair",
                                                      "fptree", "wbtree", "nvtree", "roart"};
//! kServableKinds joined with ", ".
std::string servable_kinds();

struct StoreOptions {
  std::string pool_path;              //!< created if missing, else opened and recovered
  std::string kind = "wort";          //!< index kind for a new pool (persistent kinds only)
  std::uint64_t pool_bytes = 64ull << 20;  //!< a new pool's file size (see pool_bytes_for)
  //! A new pool's item budget (`-m`): the bytes of item blocks it holds before a set evicts,
  //! stored in the meta block. 0: no budget, the pool's own room is the limit. An existing
  //! pool keeps the budget it was created with (0 if created before the budget existed).
  std::uint64_t item_limit = 0;
  std::size_t max_item_size = 1u << 20;  //!< -I: largest value + key + header
  bool no_evict = false;              //!< -M: answer out of memory instead of evicting
  //! Open an existing pool only (`--check`): a missing pool is an error, nothing created.
  bool open_only = false;
  //! If not empty: a mapping of the pool file `pool_path` to attach instead of opening the
  //! file (`wort check`'s private copy-on-write mapping: nothing reaches the file). Implies
  //! open_only; the mapping must outlive the Store.
  std::span<std::byte> image;
  //! Guard a concurrent index with the one reader/writer lock all the same (the path of the
  //! non-concurrent indexes): `wort serve --global-lock`, for A/B measurements.
  bool global_lock = false;
};

//! The pool file for an item budget of `item_limit` bytes (`-m`) and an index of `kind`:
//! the budget, room for the index beside it (per kind: its bytes per item at 32-byte keys
//! and 100 B values, with a margin), the allocator's partly used chunks and the ballast.
std::uint64_t pool_bytes_for(std::string_view kind, std::uint64_t item_limit);

//! A read-only view of a live item, valid only inside the callback that receives it.
struct ItemView {
  std::string_view key;
  std::string_view value;
  std::uint32_t flags = 0;
  std::int64_t exptime = 0;  //!< absolute, 0 = never
  std::uint64_t cas = 0;
  bool was_hit_before = false;  //!< fetched before this access (DRAM; false after a restart)
  std::uint32_t last_access = 0;  //!< seconds since the last access (DRAM; 0 after a restart)
  std::uint16_t iflags = 0;       //!< kItemStale | kItemKeyBinary
  bool token_sent = false;        //!< a recache token (meta W) went out already (DRAM only)
  bool created = false;           //!< vivified by this call (meta N)
  std::uint32_t block_bytes = 0;  //!< the item's block (meta `me` size; block_info only)
  std::uint32_t size_class = 0;   //!< 1-based small class, 0 = large span (block_info only)
};
using ItemFn = FunctionRef<void(const ItemView&)>;
//! Called with the item (under the key's write lock when the call may change the item);
//! returns true to claim the recache token (meta W): the store then marks it sent, so
//! exactly one caller wins.
using MetaItemFn = FunctionRef<bool(const ItemView&)>;

//! Meta get (mg) options. Times are absolute (Store::absolute_exptime).
struct MetaGetOptions {
  bool no_update = false;               //!< u: no access-time / fetched / CLOCK update
  bool may_win = false;                 //!< R given: the callback may claim the token
  const std::int64_t* ttl = nullptr;    //!< T: new exptime on a hit (a commit)
  const std::int64_t* vivify = nullptr; //!< N: on a miss create an empty item, this exptime
  bool ttl_after_vivify = false;        //!< T follows N in the request (a created item
                                        //!< gets the later of the two, as memcached)
  std::uint16_t key_iflags = 0;         //!< kItemKeyBinary for a created item
  bool block_info = false;              //!< fill ItemView::block_bytes / size_class (me)
};

//! Meta arithmetic (ma) options; the classic incr/decr use the defaults.
struct DeltaOptions {
  std::uint64_t cas_in = 0;             //!< C (0 = no check, as memcached)
  bool create = false;                  //!< N: a miss stores `initial`
  std::uint64_t initial = 0;            //!< J
  std::int64_t create_exptime = 0;      //!< N's exptime (absolute)
  const std::int64_t* ttl = nullptr;    //!< T: exptime on success
  bool ttl_after_create = false;        //!< T follows N in the request
  std::uint16_t key_iflags = 0;
};
struct DeltaOut {
  std::uint64_t value = 0;
  std::uint64_t cas = 0;
  std::int64_t old_exptime = 0;  //!< the exptime before this call (0 for a created item)
  std::int64_t exptime = 0;      //!< the exptime now
  bool created = false;
};

enum class StoreMode : std::uint8_t { set, add, replace, append, prepend, cas };
enum class StoreResult : std::uint8_t { stored, not_stored, exists, not_found, too_large, no_memory };
enum class DeltaResult : std::uint8_t { ok, not_found, non_numeric, exists, no_memory };

struct StoreCounters {
  std::atomic<std::uint64_t> curr_items{0}, total_items{0}, bytes{0}, evictions{0},
      expired_unfetched{0}, reclaimed{0}, cmd_touch{0}, touch_hits{0}, touch_misses{0},
      items_corrupt{0};  // reads that found a damaged item (a miss, never its bytes)
  //! Sets refused with no_memory, by where: the item budget (-m) could not be met, the
  //! allocator found no block, the index found no node for the key.
  std::atomic<std::uint64_t> refused_budget{0}, refused_alloc{0}, refused_index{0};
};

//! A stripe's lock (DRAM): a futex word, 0 free, 1 held, 2 held and a thread may sleep on
//! it; a short spin before sleeping. Not std::mutex: audit() holds all of the stripes at
//! once, and ThreadSanitizer's deadlock detector tracks at most 64 mutexes held by a thread.
class StripeLock {
 public:
  void lock() noexcept {
    if (!try_lock()) [[unlikely]] contended();
  }
  bool try_lock() noexcept {
    std::uint32_t free = 0;
    return w_.compare_exchange_strong(free, 1, std::memory_order_acquire,
                                      std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (w_.exchange(0, std::memory_order_release) == 2) [[unlikely]] w_.notify_one();
  }

 private:
  [[gnu::noinline]] void contended() noexcept {
    for (int i = 0; i < 128; ++i) {
      __builtin_ia32_pause();
      if (w_.load(std::memory_order_relaxed) == 0 && try_lock()) return;
    }
    while (w_.exchange(2, std::memory_order_acquire) != 0) w_.wait(2, std::memory_order_relaxed);
  }
  std::atomic<std::uint32_t> w_{0};
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

  //! Looks up `key`; if live, calls fn (pinned, or under the shared lock) and returns true.
  //! `touch` (gat) sets a new absolute exptime first (a commit; the key's write lock).
  bool get(std::string_view key, ItemFn fn, const std::int64_t* touch = nullptr);
  //! set/add/replace/append/prepend/cas. `cas_in` is compared for StoreMode::cas (and for
  //! append/prepend when non-zero: the meta protocol's C flag). `exptime` is absolute.
  //! `stale_ok` (meta `ms I` in cas mode): a cas lower than the item's still stores, the
  //! new item marked stale with the old one's exptime. `key_iflags`: kItemKeyBinary.
  StoreResult store(StoreMode mode, std::string_view key, std::uint32_t flags,
                    std::int64_t exptime, std::string_view value, std::uint64_t cas_in = 0,
                    std::uint64_t* cas_out = nullptr, bool stale_ok = false,
                    std::uint16_t key_iflags = 0);
  //! delete; with cas_in != 0 only if the cas matches (exists otherwise).
  StoreResult remove(std::string_view key, std::uint64_t cas_in = 0);
  //! Meta delete (md): `has_cas` compares `cas_in` (even 0); `invalidate` (I) keeps the
  //! item but replaces it by a stale copy with a new cas (and exptime `*ttl` if given).
  //! stored = deleted/marked, exists = cas mismatch, not_found = miss.
  StoreResult meta_delete(std::string_view key, bool has_cas, std::uint64_t cas_in,
                          bool invalidate, const std::int64_t* ttl);
  //! Meta get (mg): calls fn with the live item (or the one created by N) under the
  //! lock. Returns false on a miss (fn not called).
  bool meta_get(std::string_view key, const MetaGetOptions& o, MetaItemFn fn);
  //! incr (incr = true) or decr by `delta` (classic incr/decr and meta ma).
  DeltaResult delta(std::string_view key, bool incr, std::uint64_t delta, DeltaOut* out,
                    const DeltaOptions& o = {});
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
    return n <= opts_.max_item_size && n <= item_limit() / 2;
  }
  //! The item budget (`-m` in bytes), or the pool's size for a pool without one.
  std::uint64_t item_limit() const noexcept { return item_limit_ ? item_limit_ : pool_->size(); }
  //! The bytes of item blocks held (and being built): what the budget limits.
  std::uint64_t item_block_bytes() const noexcept { return item_blocks_.load(); }
  const StoreCounters& counters() const noexcept { return counters_; }
  const StoreOptions& options() const noexcept { return opts_; }
  std::uint64_t pool_bytes() const noexcept { return pool_->size(); }
  //! The allocator's counts (blocks and bytes live, chunks), for the memory report.
  pm::AllocatorStats allocator_stats() const noexcept { return pool_->allocator().stats(); }
  std::uint64_t chunk_size() const noexcept { return classes_chunk_size_; }
  std::string_view kind() const noexcept { return index_->kind(); }
  //! The pool and the index the items live in (`wort check`'s statistics, `wort dump`).
  const Pool& pool() const noexcept { return *pool_; }
  const Index& index() const noexcept { return *index_; }
  bool recovered() const noexcept { return recovered_; }
  std::uint64_t next_cas_peek() const noexcept { return next_cas_.load(); }
  std::uint64_t evictions() const noexcept { return counters_.evictions.load(); }
  //! True when the index is called without the global lock (see the header comment).
  bool concurrent() const noexcept { return concurrent_; }
  //! Item blocks retired and not yet freed (0 on the global-lock path).
  std::size_t retired_pending() const noexcept { return items_ ? items_->pending() : 0; }
  //! Stripe locks of the concurrent path: enough that two of the (at most 120) workers
  //! writing different keys rarely share one (1/1024 for two), few enough to stay in L2
  //! (64 KiB, a cache line each) and for audit() to take them all.
  static constexpr std::size_t kStripes = 1024;

#if WORT_FAULTS
  //! Tests only: the concurrent path frees a replaced or removed item at once instead of
  //! retiring it to the epochs (the bug the concurrency test must catch). Not thread-safe
  //! against running operations: set it before they start.
  void free_without_epoch_for_testing(bool on) noexcept { broken_free_ = on; }
#endif

 private:
  Store() = default;
  //! The meta block: written (`fresh`, with the item budget) or checked and read.
  Result<void> init_meta(bool fresh, std::uint64_t item_limit);
  //! The meta block's item format `v` is this build's (kServerVersion); an error otherwise.
  Result<void> check_version(std::uint64_t v) const;
  //! Open's steps: the pool (created if missing; `fresh`), then the index (created if the
  //! pool's first start did not finish: `init`), then the DRAM state.
  Result<void> open_pool(bool* fresh);
  Result<void> open_index(bool fresh, bool* init);
  void init_dram_state();
  //! Recovery: checks every item, rebuilds the DRAM counters (and, at open, the item
  //! budget's count; verify() leaves that, items may be in flight on the global-lock path).
  Result<void> rebuild(bool at_open = false);
  std::uint64_t take_cas();
  const ItemHeader* item_at(std::uint64_t off) const noexcept;
  bool live(const ItemHeader* h, std::int64_t t) const noexcept;
  //! The item at `off` if its block checks whole for `key` (store::check_block: bounds,
  //! magic, lengths, key, checksum); else nullptr, counted in items_corrupt (a miss).
  const ItemHeader* checked_item(std::string_view key, std::uint64_t off) noexcept;
  const ItemHeader* find_live(std::string_view key, std::uint64_t* off);
  //! Allocates and fills a new item (flushed, not fenced). Evicts when full (global-lock
  //! path: the caller holds the exclusive lock iff `locked`; concurrent path: the caller
  //! may hold one stripe, which the evictor skips).
  StoreResult make_item(std::string_view key, std::uint32_t flags, std::int64_t exptime,
                        std::uint64_t cas, std::string_view v1, std::string_view v2,
                        std::uint64_t* off, bool locked, std::uint16_t iflags = 0);
  //! The locks an eviction runs under: evict_lock_ (concurrent path), or lock_ exclusively
  //! unless the caller holds it (`locked`).
  struct EvictLocks {
    std::unique_lock<std::shared_mutex> global;
    std::unique_lock<std::mutex> evict;
  };
  EvictLocks lock_for_eviction(bool locked);
  //! make_item's allocation of an n-byte item block, evicting when the pool has no room.
  Status allocate_item(std::size_t n, std::uint64_t* off, bool locked);
  //! The block an n-byte item takes (its apart class, or whole chunks).
  std::size_t block_for(std::size_t n) const noexcept;
  //! Evicts until an n-byte item fits the item budget: CLOCK victims of any size class,
  //! about as many bytes as it lacks (at least a batch). False if the budget still has no
  //! room (-M, or nothing left to evict).
  bool budget_room(std::size_t n, bool locked);
  //! An index insert or remove found the pool full: the blocks the index's writes retired
  //! and has not freed yet (Index::reclaim_retired), and on the global-lock path (the
  //! exclusive lock held) the free blocks other workers' allocator caches hold, go back to
  //! where this thread's retry finds them. Not from inside an index operation.
  void gather_free_blocks();
  //! Counts an item block in (+1) or out (-1) of the budget.
  void note_block(std::uint64_t off, int sign) noexcept;
  //! Frees a block of ours no index names and no reader saw (a set that failed).
  void free_unpublished(std::uint64_t off) noexcept;
  //! memcached's condition of a store mode on the key's live item (nullptr: none): stored
  //! if the store goes ahead (`mark_stale`: ms I's lower cas), else the answer.
  static StoreResult store_condition(StoreMode mode, const ItemHeader* live_item,
                                     std::uint64_t cas_in, bool stale_ok, bool* mark_stale);
  //! The item of an append or prepend to `o` (make_item, write lock held).
  StoreResult make_concat(StoreMode mode, std::string_view key, const ItemHeader* o,
                          std::uint64_t cas, std::string_view value, std::uint64_t* off);
  //! Commits key -> off, releases the replaced item `old` (0 = none). Write lock held.
  StoreResult commit(std::string_view key, std::uint64_t off, std::uint64_t old);
  //! Removes key (naming `off`) from the index and releases the block. False if the index
  //! did not remove it (out of space even with the ballast). Write lock held.
  bool unlink(std::string_view key, std::uint64_t off);
  //! index_->remove(key); on out_of_space (ART+CoW's remove copies a node) gives a ballast
  //! block back to the allocator and tries again.
  Status remove_key(std::string_view key);
  //! Allocates the missing ballast blocks (at open, and after an eviction used one).
  void take_ballast() noexcept;
  //! Frees one window of chunks for any size class by evicting the items in it
  //! (memcached's slab rebalancing): the window of `want_bytes`' span (one chunk for a small
  //! block) whose chunks are free, apart item chunks or large item blocks, with the fewest
  //! items (counted by a scan of the index; no item block is read). Its apart chunks are
  //! evacuated (pm::Allocator::evacuate) and each becomes a free chunk with its last free.
  //! Leaves out chunks of want_bytes' own class and the chunks in `tried` (evacuated by
  //! this caller before, not free yet), and adds the window's chunks to it.
  //! Returns 0 if no window can be freed (none but those in `tried`), else 1 + the items
  //! evicted. The caller holds what evict_some's caller holds.
  std::size_t evict_chunk(std::size_t want_bytes, std::vector<std::uint64_t>* tried = nullptr);
  //! evict_chunk's steps: the cost of freeing each chunk's unit for a window of `span`
  //! chunks, and the `windows` cheapest windows (cost, first chunk).
  struct ChunkCosts;
  ChunkCosts chunk_costs(std::size_t want_bytes, std::uint64_t span,
                         const std::vector<std::uint64_t>* tried);
  static std::vector<std::pair<std::uint64_t, std::uint64_t>> cheapest_windows(
      const ChunkCosts& m, std::uint64_t span, std::size_t windows);
  //! One victim of an eviction: evicts the item at `off` under key k if the index still
  //! names it (and, concurrent, its stripe is free and not the caller's own); stuck if the
  //! index cannot remove it (no space, no ballast left). `t` is now() for live().
  enum class Victim { skipped, evicted, stuck };
  //! Calls fn(key, item offset) for every item the index names (the meta block aside), in
  //! key order, in pinned batches on the concurrent path. Reads no item block.
  void scan_items(FunctionRef<void(std::string_view, std::uint64_t)> fn);
  Victim evict_one(const std::string& k, std::uint64_t off, std::int64_t t);
  //! Evicts one item among the keys that follow `key` (an index insert of `key` that found
  //! no space: they share its node). Returns 1 if one went.
  std::size_t evict_near(std::string_view key);
  //! A block no longer named by the index (the unlinking commit is durable): freed at once
  //! on the global-lock path, retired to the epochs on the concurrent one.
  void release_block(std::uint64_t off) noexcept;
  //! evict() or evict_concurrent(): the caller holds lock_ exclusively (global-lock path)
  //! or evict_lock_ (concurrent path).
  std::size_t evict_some(std::size_t want_bytes, bool any_class, std::size_t victims);
  //! touch, gat, mg T: the item's exptime word, one commit (write lock held).
  void set_exptime(std::uint64_t off, std::int64_t t) noexcept;
  //! Concurrent path: waits for a grace period and frees every retired item.
  void drain_retired();
  //! The lock a write of one key holds (see the header comment).
  class WriteLock;
  //! What a read holds: an epoch pin, or the shared side of the global lock.
  class ReadLock;
  //! Concurrent path: every stripe (audit, verify).
  class AllStripes;
  StripeLock& stripe_of(std::string_view key) noexcept;
  //! evict() for the concurrent path (see the header comment); frees what it retired
  //! (a grace period) before it returns. evict_lock_ held, no pin.
  std::size_t evict_concurrent(std::size_t want_bytes, bool any_class, std::size_t victims);
  std::size_t sweep_concurrent(std::size_t budget);
  //! The expired items among the next `budget` keys from sweep_hand_ (both sweeps' scan).
  std::vector<std::pair<std::string, std::uint64_t>> expired_from_hand(std::size_t budget);
  //! CLOCK: evicts up to `victims` items (dead ones reclaimed as found) of want_bytes
  //! size class (any class if any_class; want_bytes 0 = any). Global-lock path, exclusive
  //! lock held (evict_concurrent is the other path's).
  //! Returns how many went. Only reads set the CLOCK bit (a second chance).
  std::size_t evict(std::size_t want_bytes, bool any_class, std::size_t victims);
  void maybe_apply_flush();
  void mark_ref(std::uint64_t off) noexcept;
  bool test_clear_ref(std::uint64_t off) noexcept;
  //! DRAM per-item access state (memcached keeps it in the item; here it is not
  //! persistent): fetched bit + last access second, and the recache-token bit.
  void init_access(std::uint64_t off, bool token_sent) noexcept;
  void note_access(std::uint64_t off, bool update, ItemView* v) noexcept;
  bool token_sent(std::uint64_t off) const noexcept;
  void set_token(std::uint64_t off) noexcept;
  ItemView view_of(std::uint64_t off) const noexcept;
  void add_block_info(std::uint64_t off, ItemView* iv) const noexcept;
  //! Builds (make_item) and commits a copy of the live item at `off` with new iflags /
  //! cas / exptime (md I). Write lock held.
  StoreResult rewrite(std::string_view key, std::uint64_t off, std::uint16_t iflags,
                      std::int64_t exptime);

  StoreOptions opts_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Index> index_;
  std::unique_ptr<pm::SizeClasses> classes_;
  std::uint64_t classes_chunk_size_ = 0;  // the pool's chunk size
  std::uint64_t item_limit_ = 0;          // meta_->item_limit (0: no budget)
  std::atomic<std::uint64_t> item_blocks_{0};  // bytes of item blocks counted in
  MetaBlock* meta_ = nullptr;
  bool recovered_ = false;

  bool concurrent_ = false;  // the index is called without lock_ (header comment)
#if WORT_FAULTS
  bool broken_free_ = false;  // free_without_epoch_for_testing
#else
  static constexpr bool broken_free_ = false;  // no faults in this build (pm/faults.h)
#endif
  mutable std::shared_mutex lock_;  // global-lock path: guards the index
  // Global-lock path: held shared by a store() from the allocation of its item (outside
  // lock_) until its commit; audit() takes it exclusively so that no allocated-but-
  // unpublished item is in flight (it would look leaked). The concurrent path builds under
  // the key's stripe, which audit() takes.
  std::shared_mutex build_gate_;
  // Concurrent path.
  struct alignas(64) Stripe {
    StripeLock m;
  };
  std::unique_ptr<Stripe[]> stripes_;
  std::unique_ptr<kit::EpochReclaimer> items_;  // retired item blocks (after pool_: freed first)
  std::mutex evict_lock_;  // the CLOCK hand
  std::mutex sweep_lock_;  // the sweep hand
  std::mutex flush_lock_;  // flush_all and a due delayed flush
  std::mutex cas_lock_;             // guards the cas_hwm bump
  std::atomic<std::uint64_t> next_cas_{1};
  std::atomic<std::uint64_t> cas_limit_{0};  // == meta_->cas_hwm
  std::atomic<std::uint64_t> flush_cas_{0};
  std::atomic<std::int64_t> flush_at_{0};
  std::string clock_hand_;  // CLOCK: the key the eviction scan resumes from
  // Ballast: whole-chunk blocks allocated at open and linked nowhere (a crash's recovery
  // trace frees them; the audit counts them as the store's). One is given back when a
  // remove fails for lack of space, so that eviction can always remove (ART+CoW). 0 = given.
  std::mutex ballast_lock_;
  std::vector<std::uint64_t> ballast_;
  std::atomic<bool> ballast_short_{false};  // a ballast block was given back
  std::string sweep_hand_;
  // The side tables are ZeroedArrays: resident only where items have been
  // (index/kit/zeroed_array.h).
  kit::ZeroedArray<std::uint64_t> ref_bits_;    // CLOCK bit per 16-byte granule
  kit::ZeroedArray<std::uint64_t> token_bits_;  // recache token sent, per granule
  // Per 32-byte granule (two items never share one: an item block is >= 48 bytes):
  // bit 31 = fetched, bits 0..30 = second of the last access since `epoch_` (0 = unknown).
  kit::ZeroedArray<std::uint32_t> access_;
  std::int64_t epoch_ = 0;
  StoreCounters counters_;

 public:
  //! Read-only, for `stats slabs` / `stats items` / `stats sizes`: calls fn(item bytes,
  //! block bytes) for every item, in one walk of the index as a read (pinned, or the
  //! shared side of the global lock). O(items).
  void for_each_item_size(FunctionRef<void(std::uint32_t item, std::uint32_t block)> fn);
  //! The allocator's size classes (block size, blocks per chunk).
  const pm::SizeClasses& size_classes() const noexcept { return *classes_; }
};

}  // namespace wort::server
