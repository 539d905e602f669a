// tests/support/toy_hash.h — a small persistent chained hash table, correct and with
// deliberate crash-consistency bugs, to prove the crash simulator catches each bug for the
// right reason (layout and commit stores: toy_hash_layout.h).
//
// Variants (template parameter ToyBug, each registered under its own kind):
//   none            correct
//   missing_flush   insert never flushes the new node            -> MISSING_FLUSH, LOST_ACK
//   missing_fence   insert's commit store is flushed, not fenced  -> MISSING_FENCE, LOST_ACK
//   commit_first    insert publishes the node before writing it  -> LOST_ACK / EXTRA_KEY
//   torn16          {head, count} written as two stores, read as one (walks `count` nodes;
//                   recovery does not recompute counts)           -> LOST_ACK (line prefixes)
//   leak_dead       remove marks the node dead, then unlinks; recovery never sweeps dead
//                   nodes, so a crash in between keeps a dead block forever  -> DRAIN
//   untracked       update writes the value with a plain store   -> UNTRACKED_STORE
//   redundant       insert persists the bucket twice             -> REDUNDANT_FLUSH/FENCE
//   no_free         remove never frees the unlinked node: a leak of the running program,
//                   not of a crash (recovery's trace frees it)    -> AUDIT after continuation
//   unsafe_repair   recovery fixes a wrong count by emptying the bucket, persisting, then
//                   relinking: a crash in between loses the chain -> SECOND_CRASH
//   unfenced_publish insert writes the node back but commits with pm::commit instead of
//                   pm::publish (no fence between)  -> MISSING_FENCE at the commit, no ack lint
//   store_after_commit insert stores the bucket count after the commit (harmless: recovery
//                   recomputes counts)               -> STORE_AFTER_COMMIT only
//   extra_commit    insert commits the count too    -> COMMIT_COUNT only
//   hang_recovery / oom_recovery / recurse_recovery  recovery, on finding a count to
//                   repair, spins forever / allocates without end / recurses without end
//                                                  -> RECOVERY_HUNG / RECOVERY_HUNG /
//                                                     RECOVERY_CRASHED (crashsim/isolate.h)
//   unpersisted_root create publishes the root offset before the root block is written
//                   back                           -> only with Options::trace_create
//
// The correct table commits every change with one pm::commit / pm::publish (the bucket head,
// the value word, the unlinking link) and creates through Pool::set_root (pm::publish).
// missing_fence, torn16 and untracked write their commit by hand, so they also make no commit
// store (COMMIT_COUNT).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>

#include "support/toy_hash_layout.h"
#include "wort/index.h"

namespace wort::test {

enum class ToyBug : std::uint8_t {
  none,
  missing_flush,
  missing_fence,
  commit_first,
  torn16,
  leak_dead,
  untracked,
  redundant,
  no_free,
  unsafe_repair,
  unfenced_publish,
  store_after_commit,
  extra_commit,
  unpersisted_root,
  hang_recovery,
  oom_recovery,
  recurse_recovery
};

constexpr std::string_view toy_kind(ToyBug b) {
  switch (b) {
    case ToyBug::none: return "toy_hash";
    case ToyBug::missing_flush: return "toy_hash_missing_flush";
    case ToyBug::missing_fence: return "toy_hash_missing_fence";
    case ToyBug::commit_first: return "toy_hash_commit_first";
    case ToyBug::torn16: return "toy_hash_torn16";
    case ToyBug::leak_dead: return "toy_hash_leak_dead";
    case ToyBug::untracked: return "toy_hash_untracked";
    case ToyBug::redundant: return "toy_hash_redundant";
    case ToyBug::no_free: return "toy_hash_no_free";
    case ToyBug::unsafe_repair: return "toy_hash_unsafe_repair";
    case ToyBug::unfenced_publish: return "toy_hash_unfenced_publish";
    case ToyBug::store_after_commit: return "toy_hash_store_after_commit";
    case ToyBug::extra_commit: return "toy_hash_extra_commit";
    case ToyBug::unpersisted_root: return "toy_hash_unpersisted_root";
    case ToyBug::hang_recovery: return "toy_hash_hang_recovery";
    case ToyBug::oom_recovery: return "toy_hash_oom_recovery";
    case ToyBug::recurse_recovery: return "toy_hash_recurse_recovery";
  }
  return "toy_hash_unknown";
}

template <ToyBug B>
class ToyHash {
 public:
  static constexpr std::string_view kKind = toy_kind(B);
  static constexpr std::size_t kMaxKeySize = kMaxKeyLength;
  //! Callers run at once (no lock in the Index handle): the crash simulator interleaves
  //! writers, and lock-free readers with them, to catch the broken variants.
  static constexpr bool kConcurrent = true;

  static Result<std::unique_ptr<ToyHash>> create(Pool& pool, const IndexOptions& opts);
  static Result<std::unique_ptr<ToyHash>> open(Pool& pool);

  Status insert(Key k, Value v);
  Status upsert(Key k, Value v);
  Status update(Key k, Value v);
  std::optional<Value> lookup(Key k) const;
  Status remove(Key k);
  std::size_t scan(Key from, std::size_t max, Visitor v) const;
  std::size_t range(Key lo, Key hi, Visitor v) const;
  IndexStats stats() const;
  Result<void> verify() const;
  void dump(std::ostream& os) const;
  Result<void> visit_blocks(BlockVisitorFn v) const;

 private:
  ToyHash(Pool& pool, std::uint64_t root) : pool_(pool), root_off_(root) {}

  toy::Root* root() const { return pool_.at<toy::Root>(root_off_); }
  toy::Bucket* bucket_of(Key k) const;
  toy::NodeHeader* node(std::uint64_t off) const { return pool_.at<toy::NodeHeader>(off); }
  //! True if `off` can be read as a node with its key (bounds only; garbage stays safe).
  bool readable(std::uint64_t off) const;
  //! Calls fn(link, node offset) along a bucket's chain as readers see it; fn returns false
  //! to stop.
  template <class Fn>
  void walk(const toy::Bucket* b, Fn fn) const;
  //! Offset of the live node holding `k` (and the link pointing at it), or 0.
  std::uint64_t find(const toy::Bucket* b, Key k, std::uint64_t** link = nullptr) const;
  Status add_node(toy::Bucket* b, Key k, Value v);
  void commit_head(toy::Bucket* b, std::uint64_t head, std::uint64_t count);
  void write_value(toy::NodeHeader* n, Value v);
  //! Recovery: recompute each bucket's count from its chain (not in torn16).
  void repair_counts();

  Pool& pool_;
  std::uint64_t root_off_;
};

using ToyHashCorrect = ToyHash<ToyBug::none>;

}  // namespace wort::test
