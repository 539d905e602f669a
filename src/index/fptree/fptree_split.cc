// FPTree leaf split under the micro-log (paper Alg. 3) and its recovery (Alg. 4).
//
//   before:  ... -> C [full: a c e g b d f h] -> X
//   after:   ... -> C [a b c d] -> N [e f g h] -> X      separator "e" into the DRAM parent
//
// Steps (log = one of the anchor's split logs {cur, new}, one cache line each; README
// "Concurrency": splits of different leaves run in parallel, each in the log it claimed):
//   1. allocate N; log.cur := C, log.new := N (same line, cur first); write back   Alg. 3:2-5
//   2. N := copy of C with bitmap = the upper half by key, next = C.next; write back  3:6-10
//      FENCE (the log and N are durable before C changes)
//   3. C.bitmap := mask & ~N.bitmap; C.next := N; write back both               3:11-14
//      FENCE (C is final before the log may read as clear)
//   4. log := {0, 0}; write back; the caller's commit (pm::publish) fences it     3:15
// No step is an operation's commit: the insert or update that needed the split commits
// afterwards with its bitmap store. A crash before that commit leaves the key absent.
//
// Recovery (open, after the checked walk, for every log; fptree_walk.h reads them the same way):
//   log.cur == 0 or log.new == 0   nothing was changed in any leaf: clear the log.
//   C full and C.next != N         step 2 may be partial: redo from step 2.
//   otherwise                      N is durable (fenced before step 3 began): redo step 3.
// Steps 2 and 3 are idempotent, so a crash during recovery recovers the same way again.
// Paper deviations: the allocator does not persist N's address into the log (our allocator
// recovers by tracing: a block allocated but not logged is unreachable and freed at open),
// so cur and new are written together; the paper's five persists become two fences, and the
// log reset shares the commit's fence (a crash before it redoes step 3, a no-op).
#include <algorithm>
#include <bit>
#include <cstring>
#include <thread>
#include <vector>

#include "index/kit/gen_lock.h"
#include "index/fptree/fptree_tree.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace fptree_index;

namespace {

//! A slot and its key's key_head (fptree_inner.h): ordering by the head orders
//! by key wherever heads differ (a shorter key pads with zeros, below any longer key that
//! shares its bytes); equal heads fall back to compare_keys.
struct HeadSlot {
  std::uint64_t head;
  int slot;
};

}  // namespace

// Writes N as C's upper half (step 2, without the fence); returns the separator, N's
// smallest key. Precondition: C is full. The upper half is the slots from the median up
// by key: nth_element (linear) on heads, not a sort — the split only needs the set and the
// median (a full sort with memcmp comparisons was 26% of an insert's instructions at 1M
// keys, README "Where an insert's time goes"). Keys of a leaf are distinct, so the set is
// the same as a sort's; recovery's redo computes it again from the same slots.
std::string FPTree::split_copy(LeafRef cur, LeafRef nu, std::uint64_t lock_word) const {
  WORT_DCHECK(cur.full() && nu.offset() != cur.offset() && nu.offset() % 64 == 0);
  HeadSlot order[kMaxLeafCapacity];
  std::size_t n = 0;
  for (std::uint64_t m = cur.bitmap(); m != 0; m &= m - 1) {
    const int s = std::countr_zero(m);
    order[n++] = {key_head(cur.key(s)), s};
  }
  std::nth_element(order, order + n / 2, order + n, [&](const HeadSlot& a, const HeadSlot& b) {
    if (a.head != b.head) return a.head < b.head;
    return compare_keys(cur.key(a.slot), cur.key(b.slot)) < 0;
  });
  std::uint64_t upper = 0;
  for (std::size_t i = n / 2; i < n; ++i) upper |= std::uint64_t{1} << order[i].slot;
  // C's bytes but its lock word, which other writers may be trying (cas) meanwhile.
  std::vector<std::byte> image(geo_.bytes);
  const std::byte* c = pool_.at<std::byte>(cur.offset());
  std::memcpy(image.data(), c, geo_.lock_off);
  std::memcpy(image.data() + geo_.lock_off + 8, c + geo_.lock_off + 8, geo_.bytes - geo_.lock_off - 8);
  std::memcpy(image.data() + LeafGeometry::kBitmapOff, &upper, 8);
  std::memcpy(image.data() + geo_.lock_off, &lock_word, 8);
  pm::copy(pool_.at<std::byte>(nu.offset()), image.data(), geo_.bytes);
  pm::flush(pool_.at<std::byte>(nu.offset()), geo_.bytes);
  return std::string(as_string(cur.key(order[n / 2].slot)));
}

// Step 3 without the fence: C keeps the lower half and links N.
void FPTree::split_link(LeafRef cur, LeafRef nu) const {
  // N holds the upper half (step 2 is durable): a non-empty subset of the slots.
  WORT_DCHECK(nu.offset() != cur.offset() && nu.bitmap() != 0);
  WORT_DCHECK((nu.bitmap() & ~geo_.mask()) == 0);
  pm::store(cur.bitmap_word(), geo_.mask() & ~nu.bitmap());
  pm::store(cur.next_word(), nu.offset());
  pm::flush(cur.bitmap_word(), geo_.next_off + 8);  // lines of bitmap .. next
}

// Step 4 without the fence.
void FPTree::reset_log(std::uint32_t i) const noexcept {
  SplitLog* log = anchor_->split_log(i);
  pm::store(&log->cur, std::uint64_t{0});
  pm::store(&log->nu, std::uint64_t{0});
  pm::flush(log, sizeof(SplitLog));
}

// A free split log (§4.4: the paper's array of micro-logs handed out by a lock-free queue):
// a DRAM bit per log, claimed with a volatile CAS, so no word in the pool is ever held. With
// every log taken the writer waits for one (it holds only its leaf's lock, which no split
// holding a log waits for).
std::uint32_t FPTree::claim_log() noexcept {
  const std::uint32_t n = anchor_->logs();
  for (unsigned spins = 0;; ++spins) {
    std::uint64_t busy = logs_busy_.load(std::memory_order_relaxed);
    const std::uint64_t free = ~busy & (n == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1);
    if (free != 0) {
      const std::uint64_t bit = free & (~free + 1);
      pm::before_lock_attempt(&logs_busy_);
      if (logs_busy_.compare_exchange_weak(busy, busy | bit, std::memory_order_acquire))
        return static_cast<std::uint32_t>(std::countr_zero(bit));
      continue;
    }
    pm::waiting(&logs_busy_);
    if (spins < 64)
      __builtin_ia32_pause();
    else
      std::this_thread::yield();
  }
}

void FPTree::release_log(std::uint32_t i) noexcept {
  logs_busy_.fetch_and(~(std::uint64_t{1} << i), std::memory_order_release);
}

// Concurrent form: the caller holds C's lock and has claimed split log `i` (claim_log); no
// structure lock: splits of different leaves run their micro-log steps in parallel, each
// in its own log line. N is born locked by this writer (its lock word in the image, tagged
// with this generation; a restart never sees it held). Both leaves' writer sections begin
// before C changes (step 3), so readers of either wait until the caller's commit and its
// parent update are done; the caller ends them, unlocks both and releases the log after its
// commit has fenced the log's reset.
Status FPTree::split_leaf(LeafRef l, std::uint32_t i, std::uint64_t* right, std::string* sep) {
  WORT_DCHECK(l.full());
  SplitLog* log = anchor_->split_log(i);
  WORT_DCHECK(log->cur == 0 && log->nu == 0);  // the log is ours, and clear
  std::uint64_t nu = 0;
  if (Status s = new_leaf(&nu); s != Status::ok) return s;
  pm::store(&log->cur, l.offset());
  pm::store(&log->nu, nu);
  pm::flush(log, sizeof(SplitLog));
  const LeafRef n = leaf(nu);
  *sep = split_copy(l, n, gen_ << 2 | kit::kGenLocked);
  pm::fence();
#if WORT_FAULTS
  if (split_pause_) split_pause_();  // tests: another split runs here (a second log in use)
#endif
  leaf_begin(l.offset());
  leaf_begin(nu);
  split_link(l, n);
  pm::fence();
  reset_log(i);
  *right = nu;
  return Status::ok;
}

// Alg. 4 for every log (Alg. 9: each non-empty micro-log of the array), on the state the
// checked walk accepted (every leaf a log names is a checked leaf, no leaf named twice).
// The logs' splits touch disjoint leaves (each held its C and N locked until its log was
// clear), so they are replayed one after the other in any order.
Result<void> FPTree::replay_split_logs() {
  for (std::uint32_t i = 0; i < anchor_->logs(); ++i) {
    const SplitLog log = *anchor_->split_log(i);
    if (log.cur == 0 && log.nu == 0) continue;
    if (log.cur != 0 && log.nu != 0) {
      const LeafRef c = leaf(log.cur), n = leaf(log.nu);
      if (c.full() && c.next() != log.nu) {
        (void)split_copy(c, n, 0);  // N's lock word free (any older generation is)
        pm::fence();
      }
      split_link(c, n);
      pm::fence();
      ++splits_recovered_;
    }
    reset_log(i);
    pm::fence();
  }
  return {};
}

}  // namespace wort
