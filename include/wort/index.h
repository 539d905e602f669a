// wort/index.h — the common index API and the type-erased handle.
//
// Every index kind is a concrete, non-virtual class with the members listed in
// `IndexConcept` below; `wort::Index` is a thin virtual adapter over it, used by the
// registry, the benchmark, the CLI and the server.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "wort/function_ref.h"
#include "wort/key.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort {

//! Called for each key/value in order; return false to stop early. It must not call the
//! index's writing operations (on a kind serialised by its handle, that would wait forever).
using Visitor = FunctionRef<bool(Key, Value)>;
//! Walks blocks for the allocator (see pm/allocator.h).
using BlockVisitorFn = FunctionRef<void(std::uint64_t)>;

//! Per-index creation options (stored in the pool header's index_options words).
struct IndexOptions {
  std::array<std::uint64_t, 4> words{};  //!< index-specific; 0 means the index's default
};

//! What an index reports about itself.
struct IndexStats {
  std::uint64_t keys = 0;
  double avg_leaf_depth = 0;          //!< mean depth of a key's leaf; each index's README
                                      //!< says what it counts (the papers differ)
  std::uint64_t max_leaf_depth = 0;
  std::uint64_t pm_bytes = 0;         //!< bytes of pool blocks in use
  std::uint64_t dram_bytes = 0;       //!< bytes of DRAM the index holds (0 for pure-PM)
  std::map<std::string, std::uint64_t> nodes;  //!< node count by type name ("node16": 12)
};

// clang-format off
//! The members every concrete index class provides.
template <class T>
concept IndexConcept = requires(T& t, const T& ct, Pool& pool, const IndexOptions& o,
                                Key k, Value v, Visitor vis, BlockVisitorFn bv, std::ostream& os) {
  { T::kKind } -> std::convertible_to<std::string_view>;          // registry name
  { T::kMaxKeySize } -> std::convertible_to<std::size_t>;         // longest key it stores
  { T::create(pool, o) } -> std::same_as<Result<std::unique_ptr<T>>>;  // new index in an empty pool
  { T::open(pool) } -> std::same_as<Result<std::unique_ptr<T>>>;       // recovery happens here
  { t.insert(k, v) } -> std::same_as<Status>;    // exists if present
  { t.upsert(k, v) } -> std::same_as<Status>;    // insert or overwrite
  { t.update(k, v) } -> std::same_as<Status>;    // not_found if absent
  { ct.lookup(k) } -> std::same_as<std::optional<Value>>;
  { t.remove(k) } -> std::same_as<Status>;       // not_found if absent
  { ct.scan(k, std::size_t{}, vis) } -> std::same_as<std::size_t>;   // ascending from k inclusive, at most n
  { ct.range(k, k, vis) } -> std::same_as<std::size_t>;              // [lo, hi) ascending
  { ct.stats() } -> std::same_as<IndexStats>;
  { ct.verify() } -> std::same_as<Result<void>>;  // full structural check
  { ct.dump(os) };                                // human-readable picture
  { ct.visit_blocks(bv) } -> std::same_as<Result<void>>;  // every pool block reachable from
                                                  // the root, each word checked first, and
                                                  // those unlinked and not yet freed
};
// clang-format on

//! How Index::open recovers a pool.
struct OpenOptions {
  //! Serve before recovery ends (ROART's instant restart, paper 001 §3.4.2): open returns
  //! once the anchor is checked; the checked walk of the synchronous open, then the
  //! allocator's trace, run on a background thread (Index::wait_recovery waits for them).
  //! Until the walk has passed, readers check every word they follow (damage: nothing found,
  //! a scan stops) and writers wait for it; if it fails, every request answers corrupt
  //! (readers: nothing) and wait_recovery returns its error. Chunks carved before the crash
  //! hand out nothing until the trace ends. Only indexes that implement it
  //! (Entry::open_instant: roart) do so; the others open synchronously.
  bool instant_restart = false;
};

//! Type-erased handle over any index kind.
class Index {
 public:
  virtual ~Index();
  //! Creates an index of `kind` in a fresh pool whose header names the same kind. A volatile
  //! kind (`art`: its tree lives in DRAM, nothing in the pool) is refused with
  //! invalid_argument in a file pool, whose data would be gone at the next open; it runs in
  //! a Pool::create_in_memory pool.
  static Result<std::unique_ptr<Index>> create(Pool& pool, std::string_view kind,
                                               const IndexOptions& opts = {});
  //! Opens the index the pool holds (its kind comes from the header); runs recovery (all of
  //! it before returning, unless `o.instant_restart` and the index supports it).
  //! One handle per Pool at a time: while a handle from create() or open() lives, another
  //! open() or create() on the same Pool fails with invalid_argument (two handles would
  //! each keep their own DRAM state of one tree, and the second's recovery would run
  //! under the first's writers). The handle keeps its Pool alive: deleting the Pool first
  //! leaves it open until the handle goes (see Pool's operator delete).
  static Result<std::unique_ptr<Index>> open(Pool& pool, const OpenOptions& o = {});
  //! Names of every registered kind, sorted.
  static std::vector<std::string> kinds();

  virtual std::string_view kind() const noexcept = 0;
  //! The longest key this kind stores (bytes): insert and upsert refuse a longer one with
  //! invalid_argument (lookup finds nothing, update and remove answer not_found). At least
  //! kMaxKeyLength for every kind; registry::Entry::max_key_size and `wort list` say the same.
  virtual std::size_t max_key_size() const noexcept = 0;
  //! True if threads may call this handle's operations at once without a lock of their own
  //! (the kind's own protocol: lock-free readers, node locks). A handle of any other kind is
  //! safe to share too: it serialises its callers itself (readers together, a writer alone).
  virtual bool concurrent() const noexcept = 0;
  virtual Status insert(Key k, Value v) = 0;
  virtual Status upsert(Key k, Value v) = 0;
  virtual Status update(Key k, Value v) = 0;
  virtual std::optional<Value> lookup(Key k) const = 0;
  virtual Status remove(Key k) = 0;
  virtual std::size_t scan(Key from, std::size_t max, Visitor v) const = 0;
  virtual std::size_t range(Key lo, Key hi, Visitor v) const = 0;
  virtual IndexStats stats() const = 0;
  virtual Result<void> verify() const = 0;
  virtual void dump(std::ostream& os) const = 0;
  //! Reports every pool block reachable from the root (the allocator's recovery trace and
  //! audit), and every block a concurrent index has unlinked and not yet freed (waiting for
  //! readers: still the index's); a word that is not a block of this pool stops the walk
  //! with corrupt.
  virtual Result<void> visit_blocks(BlockVisitorFn v) const = 0;
  //! Waits for a recovery still running in the background (OpenOptions::instant_restart)
  //! and returns its result; at once, with success, when there is none.
  virtual Result<void> wait_recovery() { return {}; }
  //! Frees every block this index's writes have unlinked and not yet freed (a concurrent
  //! kind frees them once no reader can hold them: in batches, per writer thread), waiting
  //! for the readers pinned at the call to finish. For a caller short of space, e.g. before
  //! it retries an insert or a remove that answered out_of_space. Other threads' operations
  //! may run meanwhile; the caller must not be inside one of this index's operations (a
  //! scan's visitor). Nothing for a kind that frees at once.
  virtual void reclaim_retired() {}

 private:
  friend struct IndexClaim;  // create() and open(): the one-handle-per-Pool rule
  //! The Pool this handle holds, when create() or open() made it: released at destruction.
  Pool* claimed_ = nullptr;
};

//! The adapter the registry instantiates for each concrete index. A kind without its own
//! concurrency (no `T::kConcurrent`, or false) gets a reader/writer lock here, so that every
//! handle is safe to share between threads.
template <IndexConcept T>
class IndexAdapter final : public Index {
  static constexpr bool kOwnConcurrency = [] {
    if constexpr (requires { T::kConcurrent; }) return bool(T::kConcurrent);
    else return false;
  }();
  //! The lock a call takes: none for a concurrent kind, else shared or exclusive.
  struct NoLock {
    explicit NoLock(const IndexAdapter&) noexcept {}
  };
  struct Shared {
    explicit Shared(const IndexAdapter& a) : g(a.serial_) {}
    std::shared_lock<std::shared_mutex> g;
  };
  struct Exclusive {
    explicit Exclusive(const IndexAdapter& a) : g(a.serial_) {}
    std::unique_lock<std::shared_mutex> g;
  };
  using ReadLock = std::conditional_t<kOwnConcurrency, NoLock, Shared>;
  using WriteLock = std::conditional_t<kOwnConcurrency, NoLock, Exclusive>;

 public:
  explicit IndexAdapter(std::unique_ptr<T> impl) : impl_(std::move(impl)) {}
  T& impl() noexcept { return *impl_; }
  const T& impl() const noexcept { return *impl_; }
  std::string_view kind() const noexcept override { return T::kKind; }
  std::size_t max_key_size() const noexcept override { return T::kMaxKeySize; }
  bool concurrent() const noexcept override { return kOwnConcurrency; }
  Status insert(Key k, Value v) override { WriteLock l(*this); return impl_->insert(k, v); }
  Status upsert(Key k, Value v) override { WriteLock l(*this); return impl_->upsert(k, v); }
  Status update(Key k, Value v) override { WriteLock l(*this); return impl_->update(k, v); }
  std::optional<Value> lookup(Key k) const override { ReadLock l(*this); return impl_->lookup(k); }
  Status remove(Key k) override { WriteLock l(*this); return impl_->remove(k); }
  std::size_t scan(Key f, std::size_t n, Visitor v) const override {
    ReadLock l(*this);
    return impl_->scan(f, n, v);
  }
  std::size_t range(Key lo, Key hi, Visitor v) const override {
    ReadLock l(*this);
    return impl_->range(lo, hi, v);
  }
  IndexStats stats() const override { ReadLock l(*this); return impl_->stats(); }
  Result<void> verify() const override { ReadLock l(*this); return impl_->verify(); }
  void dump(std::ostream& os) const override { ReadLock l(*this); impl_->dump(os); }
  Result<void> visit_blocks(BlockVisitorFn v) const override {
    ReadLock l(*this);
    return impl_->visit_blocks(v);
  }
  Result<void> wait_recovery() override {
    if constexpr (requires(T& t) { { t.wait_trace() } -> std::same_as<Result<void>>; })
      return impl_->wait_trace();
    else
      return {};
  }
  void reclaim_retired() override {
    if constexpr (requires(T& t) { t.reclaim_retired(); }) impl_->reclaim_retired();
  }

 private:
  std::unique_ptr<T> impl_;
  //! Serialises the callers of a kind without its own concurrency (nothing for the others).
  struct NoMutex {};
  [[no_unique_address]] mutable std::conditional_t<kOwnConcurrency, NoMutex, std::shared_mutex>
      serial_;
};

//! Wraps a concrete index (or its error) in the type-erased handle: what the registry and
//! the crash simulator's factories do with T::create / T::open.
template <IndexConcept T>
Result<std::unique_ptr<Index>> adapt(Result<std::unique_ptr<T>> r) {
  if (!r) return r.error();
  return std::unique_ptr<Index>(new IndexAdapter<T>(std::move(r).value()));
}

}  // namespace wort
