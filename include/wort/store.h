// wort/store.h — an embeddable persistent key-value store: byte-string keys and values of
// any size up to Store::kMaxValueSize over one persistent index kind, crash-atomic, every
// value checksummed, ordered cursors and atomic batches.
//
//   auto db = wort::Store::open("/dev/shm/my.pool", {.kind = "wort", .size = 256 << 20});
//   (*db)->put("k", "v");               // durable when it returns
//   auto v = (*db)->get("k");           // Result<std::optional<std::string>>
//
// Each value is one pool block (a *value blob*: header, CRC32C, key, value) written and
// written back before the index's commit names it; a replaced or removed blob is freed after
// the commit returned, once no reader can still be reading it. docs/DESIGN.md, "The store",
// has the layout, the commit order and the recovery.
//
// Threads: every member may be called from many threads at once. Reads take no lock (an
// epoch pin); writes of one key are serialised by a per-key stripe lock; the index's own
// concurrency does the rest (a kind without it is serialised by its handle). A WriteBatch
// runs alone: single writes wait while it applies; readers do not (see Store::write).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wort/function_ref.h"
#include "wort/status.h"

namespace wort {

struct StoreOptions {
  //! Index kind of a new pool ("" = "wort"); for an existing pool, "" accepts any kind and
  //! a name must match (else wrong_kind). Any persistent kind of Index::kinds() (not `art`).
  std::string kind;
  std::uint64_t size = 64ull << 20;  //!< bytes of a new pool
};

//! Puts and removes applied all-or-nothing by Store::write (later entries of one key win).
class WriteBatch {
 public:
  void put(std::string_view key, std::string_view value);
  void remove(std::string_view key);
  void clear() noexcept { ops_.clear(); }
  std::size_t count() const noexcept { return ops_.size(); }
  bool empty() const noexcept { return ops_.empty(); }

  struct Op {
    bool remove = false;
    std::string key;
    std::string value;
  };
  const std::vector<Op>& ops() const noexcept { return ops_; }

 private:
  std::vector<Op> ops_;
};

class Store;

//! Ascending keys in [lo, hi) (either bound optional), read from the index in batches.
//! Under concurrent writers it sees each key at most once, in ascending order: a key
//! written after the cursor passed it is not seen, one written ahead of it may be or not,
//! and each value is one that key held (whole) at some moment during the cursor's life.
//! A cursor must not outlive its Store.
//!
//! Ascending only: the indexes scan upwards (Index::scan), and a step back by a search for
//! the last key below the current one is not offered (it would cost a scan from the range's
//! start per step). To walk a range downwards, collect it and reverse it.
class Cursor {
 public:
  bool valid() const noexcept { return pos_ < entries_.size(); }
  //! The key, a view valid until the next next() / seek() or the cursor's end.
  std::string_view key() const noexcept {
    const Entry& e = entries_[pos_];
    return {buf_.data() + e.at, e.key_len};
  }
  //! The value (its checksum checked), a view valid until the next next() / seek() or the
  //! cursor's end.
  std::string_view value() const noexcept {
    const Entry& e = entries_[pos_];
    return {buf_.data() + e.at + e.key_len, e.value_len};
  }
  void next();
  //! Moves to the first key >= k (and >= the lower bound, < the upper bound).
  void seek(std::string_view k);
  //! ok, or corrupt when a value failed its checksum (the cursor then stops: valid() false).
  Status status() const noexcept { return status_; }

 private:
  friend class Store;
  //! One key and value in buf_: the key's bytes at `at`, the value's right after.
  struct Entry {
    std::size_t at;
    std::uint32_t key_len, value_len;
  };
  Cursor(const Store& s, std::optional<std::string> lo, std::optional<std::string> hi);
  void fill(std::string_view from, bool inclusive);

  const Store* store_;
  std::optional<std::string> lo_, hi_;
  std::string buf_;  //!< the batch's keys and values, copied out of the pool under a pin
  std::vector<Entry> entries_;
  std::size_t pos_ = 0;
  bool exhausted_ = false;  //!< the last fill reached the end of the range
  Status status_ = Status::ok;
};

class Store {
 public:
  //! Longest value (bytes) put() and WriteBatch accept; longer ones are invalid_argument.
  static constexpr std::size_t kMaxValueSize = std::size_t{256} << 20;  // 256 MiB

  //! Creates the pool at `path` when it does not exist (options.kind, options.size), else
  //! opens it and recovers (a committed batch is replayed). A pool of another kind than a
  //! named options.kind: wrong_kind; a wort pool that is no Store's (a bare index, a
  //! `wort serve` pool): not_a_pool; the volatile `art`: invalid_argument.
  static Result<std::unique_ptr<Store>> open(const std::string& path,
                                             const StoreOptions& options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  //! Inserts or replaces. ok, invalid_argument (key longer than max_key_size(), value
  //! longer than kMaxValueSize), out_of_space (nothing changed).
  Status put(std::string_view key, std::string_view value);
  //! The value, std::nullopt when absent; corrupt when the stored value fails its check.
  Result<std::optional<std::string>> get(std::string_view key) const;
  //! Zero-copy read: calls fn with the value's bytes in the pool, valid only during the call
  //! (the value cannot be freed meanwhile, whatever writers do). ok; not_found or corrupt
  //! (fn not called). fn must not call back into this Store.
  Status read(std::string_view key, FunctionRef<void(std::string_view)> fn) const;
  //! True if the key was there (and is now gone).
  Result<bool> remove(std::string_view key);
  bool contains(std::string_view key) const;
  //! Keys stored (exact when no write runs meanwhile).
  std::size_t size() const noexcept;
  //! Applies every entry of `batch`, all or none across a crash. Isolation: none beyond
  //! each key's own atomicity — a reader during write() may see some of the batch's keys
  //! changed and others not yet; single writes wait for it. Empty batch: ok.
  //! invalid_argument (a key or value too long) and out_of_space while the batch's blocks
  //! are allocated change nothing; out_of_space from the index while the committed batch
  //! applies leaves it to the next write() or open, which replay it whole first.
  Status write(const WriteBatch& batch);
  //! Keys in [lo, hi), ascending; std::nullopt bounds are open.
  Cursor cursor(std::optional<std::string_view> lo = std::nullopt,
                std::optional<std::string_view> hi = std::nullopt) const;

  std::string_view kind() const noexcept;
  //! Longest key put() accepts: the index kind's max_key_size() minus one byte.
  std::size_t max_key_size() const noexcept;
  //! The index's verify(), and every value blob's checksum.
  Result<void> verify() const;

  struct Impl;
  Impl& impl() noexcept { return *impl_; }
  const Impl& impl() const noexcept { return *impl_; }
  explicit Store(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace wort
