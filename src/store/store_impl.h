// store/store_impl.h — wort::Store's internals, shared by store.cc and the store's tests
// (which open pool images in memory and switch on the deliberately broken variants).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "index/kit/epoch.h"
#include "pm/allocator.h"
#include "store/layout.h"
#include "wort/index.h"
#include "wort/pool.h"
#include "wort/store.h"

namespace wort {

//! Tests only: the broken variants the crash tests must catch.
enum class StoreBroken : std::uint8_t {
  none,
  blob_not_written_back,     //!< put: the value blob's pm::flush omitted
  log_commit_before_records  //!< write: "\0log" committed before the log's records are written
};

struct Store::Impl {
  static constexpr std::size_t kStripes = 256;

  std::unique_ptr<Pool> pool;
  std::unique_ptr<Index> index;
  //! Replaced and removed value blobs wait here until no reader pinned before can hold them.
  std::unique_ptr<kit::EpochReclaimer> retired;
  std::unique_ptr<std::mutex[]> stripes;
  //! Single writes take the shared side, a batch the exclusive one.
  mutable std::shared_mutex batch_lock;
  std::atomic<std::int64_t> count{0};
  std::size_t max_key = 0;
  StoreBroken broken = StoreBroken::none;
  bool replayed = false;  //!< the open replayed a committed batch log

  ~Impl();
  //! Opens (recovers) or initialises the store in `p`, which Store::open or a test made.
  static Result<std::unique_ptr<Store>> attach(std::unique_ptr<Pool> p, bool fresh,
                                               const std::string& name);

  std::mutex& stripe(std::string_view key) noexcept;
  //! Writes a blob for key -> value into a fresh block: pm::copy, then pm::flush (no fence:
  //! the index's commit in a values_are_blocks pool fences first).
  Status make_blob(std::string_view key, std::string_view value, std::uint64_t* off) noexcept;
  //! Checks the blob at `off` for `key` (bounds, magic, lengths, key, CRC-32C) and returns
  //! its value bytes; corrupt otherwise.
  Result<std::string_view> read_blob(std::uint64_t off, std::string_view key) const;
  //! put / remove with the key's writers excluded by the caller (stripe or batch lock).
  Status put_locked(std::string_view ikey, std::uint64_t blob);
  Result<bool> remove_locked(std::string_view ikey);
  //! The index's commits of a value, a removal (index key `ikey`).
  Status upsert_key(std::string_view ikey, Value v);
  Status remove_key(std::string_view ikey);
  //! Frees a blob the index no longer names (after the commit that unlinked it) once no
  //! reader pinned before can hold it; nothing for std::nullopt.
  void release(std::optional<Value> blob);
  //! Frees a block no reader can reach (never published, or a log).
  void free_block(std::uint64_t off) noexcept;

  //! One record of a committed redo log, viewing the log's block.
  struct LogOp {
    bool remove;
    std::string_view key, value;
  };
  //! The records of the log at `off`, each checked (bounds, checksum); corrupt otherwise.
  Result<std::vector<LogOp>> parse_log(std::uint64_t off) const;
  //! Applies one record of a committed log (its blob made afresh); *s: the outcome.
  void replay_record(const LogOp& op, Status* s);
  //! Replays and clears a committed redo log (at open, or before the next batch).
  Result<void> replay_log();

  //! A batch: every block first (its log of log_bytes, a blob per put; out_of_space frees
  //! them and changes nothing), then the commit, then the apply.
  Status allocate_batch(const WriteBatch& batch, std::size_t log_bytes, std::uint64_t* log,
                        std::vector<std::uint64_t>* blobs);
  //! Writes the log image into its block and writes it back (no fence).
  void write_log(std::uint64_t log, const std::string& img) noexcept;
  //! The batch's commit: the index's insert of "\0log" naming the log (it fences first).
  void insert_log(std::uint64_t log, Status* s);
  //! write_log, then insert_log (the broken variant: the other way round).
  Status commit_batch(std::uint64_t log, const std::string& img);
  //! Removes "\0log" (durably), then frees the log's block.
  Status clear_log(std::uint64_t log);
  //! Applies a committed batch's entries (blobs[i]: entry i's blob, 0 for a remove).
  Status apply_batch(const WriteBatch& batch, const std::vector<std::uint64_t>& blobs);
  //! Every block the store reaches: the index's, every value's, and blobs retired and not
  //! yet freed (the allocator's audit walker).
  Result<void> visit_blocks(pm::BlockVisitor v) const;
  pm::AuditReport audit() const;
};

//! The index key of user key `k`.
inline std::string data_key(std::string_view k) {
  std::string s;
  s.reserve(k.size() + 1);
  s += store::kDataTag;
  s += k;
  return s;
}

//! The index key of user key `k` followed by `suffix` (kDataTag + k + suffix), on the stack
//! when short: every read and write builds one.
class IndexKey {
 public:
  explicit IndexKey(std::string_view k, std::string_view suffix = {}) {
    n_ = 1 + k.size() + suffix.size();
    char* p = small_;
    if (n_ > sizeof small_) {
      big_.resize(n_);
      p = big_.data();
    }
    p[0] = store::kDataTag;
    if (!k.empty()) std::memcpy(p + 1, k.data(), k.size());
    if (!suffix.empty()) std::memcpy(p + 1 + k.size(), suffix.data(), suffix.size());
    p_ = p;
  }
  IndexKey(const IndexKey&) = delete;
  IndexKey& operator=(const IndexKey&) = delete;
  std::string_view view() const noexcept { return {p_, n_}; }
  Key key() const noexcept { return as_key(view()); }

 private:
  char small_[96];
  std::string big_;
  const char* p_ = nullptr;
  std::size_t n_ = 0;
};

namespace store {
//! The redo log of `batch` as its block holds it (layout.h), built in DRAM and copied into
//! the block whole.
std::string log_image(const WriteBatch& batch);
//! Tests: opens the store held by a pool image in memory (Pool::attach), recovering it.
Result<std::unique_ptr<Store>> open_image(std::span<std::byte> image, const std::string& name);
}  // namespace store

}  // namespace wort
