// FPTree recovery states, built directly in the pool: each state an interrupted split can
// leave behind (micro-log {cur, new} at every step of Alg. 3), an interrupted insert whose
// key block was allocated but never published (App. C's leak case, which the allocator's
// trace reclaims), and damaged pools (every bad word a corrupt, never a crash). Each state is
// reopened from a copy of the pool bytes (as after a crash) and checked: contents, verify(),
// the allocator audit, the split-recovery count, and one more insert.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <vector>
#include <string>

#include "index/fptree/fptree_tree.h"
#include "pm/allocator.h"
#include "support/keygen.h"
#include "support/tree_fixture.h"
#include "index/fptree/fptree_reopen.h"

namespace wort::test {
namespace {

using namespace fptree_index;

class FPTreeRecovery : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kCap = 4;

  void SetUp() override {
    IndexOptions io;
    io.words = {kCap, 3, 0, 0};
    ASSERT_NO_FATAL_FAILURE(make_memory_tree(&pool_, &tree_, io, 4u << 20, 64u << 10));
    // keys 10, 20, 30, 40 into slots 0..3 of one full leaf
    for (std::uint64_t k = 10; k <= 40; k += 10) put(k);
    cur_ = anchor()->head;
    ASSERT_NE(cur_, 0u);
    ASSERT_TRUE(leaf(cur_).full());
  }

  void put(std::uint64_t k) {
    ASSERT_EQ(tree_->insert(Key(u64_key(k)), k), Status::ok);
    ref_[u64_str(k)] = k;
  }
  Anchor* anchor() { return pool_->at<Anchor>(pool_->root()); }
  LeafRef leaf(std::uint64_t off) { return LeafRef(pool_->base(), off, geo_); }
  std::uint64_t alloc(std::size_t n) {
    std::uint64_t off = 0;
    EXPECT_EQ(pool_->allocator().allocate(n, &off), Status::ok);
    return off;
  }
  //! A new leaf written as step 2 of the split of cur_ would write it: slots 2, 3 (30, 40).
  std::uint64_t written_new_leaf() {
    const std::uint64_t n = alloc(geo_.bytes);
    std::memcpy(pool_->at<std::byte>(n), pool_->at<std::byte>(cur_), geo_.bytes);
    *leaf(n).bitmap_word() = 0b1100;
    return n;
  }

  //! Drops the tree, copies the pool bytes (no clean shutdown), reopens: recovery runs.
  Result<std::unique_ptr<FPTree>> reopen() {
    tree_.reset();
    return reopen_from_copy(pool_, image_);
  }

  //! A split of C into a new leaf N, written and named by the log, interrupted when C's
  //! next word (`linked`) and C's bitmap (`bitmap`, the moved keys cleared) had reached PM
  //! or not: open() finishes it.
  void expect_interrupted_split_recovers(bool linked, bool bitmap) {
    const std::uint64_t n = written_new_leaf();
    anchor()->log = {cur_, n};
    if (linked) *leaf(cur_).next_word() = n;
    if (bitmap) *leaf(cur_).bitmap_word() = 0b0011;
    expect_recovers(2, 1);
  }

  //! Reopens and checks contents, verify, audit, log clear, the leaf count and one insert.
  void expect_recovers(std::uint64_t leaves, std::uint64_t splits) {
    auto t = reopen();
    ASSERT_TRUE(t) << t.error().message;
    tree_ = std::move(t).value();
    EXPECT_EQ(tree_->splits_recovered(), splits);
    EXPECT_EQ(anchor()->log.cur, 0u);
    EXPECT_EQ(anchor()->log.nu, 0u);
    for (const auto& [k, v] : ref_) EXPECT_EQ(tree_->lookup(as_key(k)), std::optional<Value>(v)) << k;
    std::size_t n = 0;
    tree_->scan(Key{}, 100, [&](Key, Value) { return ++n, true; });
    EXPECT_EQ(n, ref_.size());
    EXPECT_EQ(tree_->stats().nodes.at("leaf"), leaves);
    auto r = tree_->verify();
    EXPECT_TRUE(r) << r.error().message;
    const auto audit = pool_->allocator().audit([&](pm::BlockVisitor v) { return tree_->visit_blocks(v); });
    EXPECT_TRUE(audit.ok()) << audit.describe();
    put(25);
    put(45);
    r = tree_->verify();
    EXPECT_TRUE(r) << r.error().message;
  }

  void expect_corrupt(const std::string& needle) {
    auto t = reopen();
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status(), Status::corrupt);
    EXPECT_NE(t.error().message.find(needle), std::string::npos) << t.error().message;
  }

  std::unique_ptr<std::byte, FreeAligned> image_;  // outlives pool_ (declared first)
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<FPTree> tree_;
  std::map<std::string, Value> ref_;
  LeafGeometry geo_ = LeafGeometry::of(kCap);
  std::uint64_t cur_ = 0;
};

TEST_F(FPTreeRecovery, CleanReopen) { expect_recovers(1, 0); }

// Alg. 3:2 done, 3:4 not: the log names C only; N, if allocated, is unreachable and freed.
TEST_F(FPTreeRecovery, LogCurrentOnly) {
  alloc(geo_.bytes);
  anchor()->log.cur = cur_;
  expect_recovers(1, 0);
}

// N allocated and logged, its copy not (or partly) written: redo from the copy.
TEST_F(FPTreeRecovery, LogBothNewLeafGarbage) {
  const std::uint64_t n = alloc(geo_.bytes);
  std::memset(pool_->at<std::byte>(n), 0xab, geo_.bytes);
  anchor()->log = {cur_, n};
  expect_recovers(2, 1);
}

TEST_F(FPTreeRecovery, LogBothNewLeafWrittenOldUntouched) {
  anchor()->log = {cur_, written_new_leaf()};
  expect_recovers(2, 1);
}

// C's bitmap reached PM, its next did not: N is reachable only through the log.
TEST_F(FPTreeRecovery, OldBitmapInvertedNotLinked) {
  expect_interrupted_split_recovers(/*linked=*/false, /*bitmap=*/true);
}

// C's next reached PM, its bitmap did not: N is in the list and C still looks full; the walk
// must take C's live set from the log, or keys 30 and 40 would be seen twice.
TEST_F(FPTreeRecovery, LinkedOldBitmapStillFull) {
  expect_interrupted_split_recovers(/*linked=*/true, /*bitmap=*/false);
}

// Everything but the log reset.
TEST_F(FPTreeRecovery, SplitDoneLogNotReset) {
  expect_interrupted_split_recovers(/*linked=*/true, /*bitmap=*/true);
}

// Half of the reset reached PM (cur cleared first): the stale new word is ignored.
TEST_F(FPTreeRecovery, HalfResetLog) {
  anchor()->log = {0, alloc(geo_.bytes)};
  expect_recovers(1, 0);
}

// --- the array of split logs (§4.4): two splits in flight at the crash ---------------------

// Two full leaves, C = cur_ [10 20 15 17] and L1 [50 60 30 40] (slots 0..3). Log 0: C's
// split with its new leaf unwritten (redo from the copy); log 1: L1's split with its new
// leaf written and linked, L1's bitmap not yet inverted (redo the link). Both replayed.
TEST_F(FPTreeRecovery, TwoLogsBothReplayed) {
  put(50);  // splits C: C [10 20], L1 [30 40 50]
  put(15);
  put(17);
  put(60);
  const std::uint64_t l1 = leaf(cur_).next();
  ASSERT_TRUE(leaf(cur_).full() && leaf(l1).full());
  const std::uint64_t na = alloc(geo_.bytes);
  std::memset(pool_->at<std::byte>(na), 0xab, geo_.bytes);
  const std::uint64_t nb = alloc(geo_.bytes);
  std::memcpy(pool_->at<std::byte>(nb), pool_->at<std::byte>(l1), geo_.bytes);
  *leaf(nb).bitmap_word() = 0b0011;  // 50, 60: L1's upper half by key
  *leaf(l1).next_word() = nb;
  *anchor()->split_log(0) = {cur_, na};
  *anchor()->split_log(1) = {l1, nb};
  expect_recovers(4, 2);
  EXPECT_EQ(tree_->split_logs(), kSplitLogs);
}

// A pool made before the log array: log_count 0, one log (line 1 of a 128-byte anchor). It
// opens, recovers its one log and splits with it.
TEST_F(FPTreeRecovery, PoolWithoutLogArrayOpensWithOneLog) {
  anchor()->log_count = 0;
  anchor()->log = {cur_, written_new_leaf()};
  expect_recovers(2, 1);
  EXPECT_EQ(tree_->split_logs(), 1u);
}

TEST_F(FPTreeRecovery, LogCountBeyondTheBlockIsCorrupt) {
  anchor()->log_count = kSplitLogs + 1;
  expect_corrupt("split logs");
}

TEST_F(FPTreeRecovery, TwoLogsNamingOneLeafAreCorrupt) {
  *anchor()->split_log(0) = {cur_, 0};
  *anchor()->split_log(3) = {cur_, 0};
  expect_corrupt("two split logs");
}

// App. C: an insert allocated and wrote a key block and the slot, crashed before the bitmap.
// The paper's RebuildInnerNodes_String frees such blocks by hand (Alg. 17); here the trace
// never reaches a dead slot's key word, so the block is free after open and audit agrees.
TEST_F(FPTreeRecovery, UnpublishedKeyBlockIsReclaimed) {
  ASSERT_EQ(tree_->remove(Key(u64_key(20))), Status::ok);
  ref_.erase(u64_str(20));
  const std::uint64_t kb = alloc(sizeof(KeyBlock) + 5);
  pool_->at<KeyBlock>(kb)->length = 5;
  std::memcpy(pool_->at<KeyBlock>(kb) + 1, "hello", 5);
  const int s = std::countr_zero(~leaf(cur_).bitmap() & geo_.mask());
  leaf(cur_).slot(s)->key = kb;
  *leaf(cur_).inline_word() &= ~(std::uint64_t{1} << s);
  bool reached = false;
  ASSERT_TRUE(tree_->visit_blocks([&](std::uint64_t b) { reached |= b == kb; }));
  EXPECT_FALSE(reached) << "a dead slot's key block must not be traced";
  auto t = reopen();
  ASSERT_TRUE(t) << t.error().message;
  tree_ = std::move(t).value();
  // The trace freed it: the allocator holds exactly the blocks the tree reaches.
  std::uint64_t blocks = 0;
  ASSERT_TRUE(tree_->visit_blocks([&](std::uint64_t) { ++blocks; }));
  EXPECT_EQ(pool_->allocator().stats().blocks_allocated, blocks);
  EXPECT_FALSE(tree_->lookup(as_key(std::string("hello"))).has_value());
}

// --- damaged pools: corrupt with a message, never a crash ------------------------------

TEST_F(FPTreeRecovery, DamagedLogWordIsCorrupt) {
  anchor()->log = {cur_ + 8, 0};
  expect_corrupt("split log");
}

TEST_F(FPTreeRecovery, LogNewEqualsCurrentIsCorrupt) {
  anchor()->log = {cur_, cur_};
  expect_corrupt("split log");
}

TEST_F(FPTreeRecovery, LogNamesLeafOutsideListIsCorrupt) {
  const std::uint64_t stray = written_new_leaf();
  anchor()->log = {stray, written_new_leaf()};
  *leaf(stray).bitmap_word() = 0b0111;
  expect_corrupt("not in the list");
}

TEST_F(FPTreeRecovery, CycleInLeafListIsCorrupt) {
  *leaf(cur_).next_word() = cur_;
  expect_corrupt("reached twice");
}

TEST_F(FPTreeRecovery, BitsBeyondCapacityAreCorrupt) {
  *leaf(cur_).bitmap_word() |= std::uint64_t{1} << 9;
  expect_corrupt("beyond its capacity");
}

TEST_F(FPTreeRecovery, EmptyLeafInListIsCorrupt) {
  *leaf(cur_).bitmap_word() = 0;
  expect_corrupt("empty leaf");
}

TEST_F(FPTreeRecovery, BadKeyBlockWordIsCorrupt) {
  *leaf(cur_).inline_word() &= ~std::uint64_t{1};  // slot 0's key word read as an offset
  expect_corrupt("key block");
}

TEST_F(FPTreeRecovery, OverlongKeyBlockIsCorrupt) {
  ASSERT_EQ(tree_->insert(as_key(std::string("long-key")), 1), Status::ok);  // 8 bytes: inline
  ASSERT_EQ(tree_->insert(as_key(std::string("k")), 1), Status::ok);         // a key block
  std::uint64_t kb = 0;
  for (std::uint64_t off = anchor()->head; off != 0 && kb == 0; off = leaf(off).next()) {
    const LeafRef l = leaf(off);
    for (std::uint64_t m = l.bitmap() & ~*l.inline_word(); m != 0; m &= m - 1)
      kb = l.slot(std::countr_zero(m))->key;
  }
  ASSERT_NE(kb, 0u);
  pool_->at<KeyBlock>(kb)->length = 1u << 20;
  expect_corrupt("length");
}

TEST_F(FPTreeRecovery, BadAnchorOptionsAreCorrupt) {
  anchor()->leaf_capacity = 65;
  expect_corrupt("leaf capacity");
}

// Open time against key count, by phase (checked walk + allocator trace, log replay, inner
// rebuild), beside the time to build a DRAM std::map of the same keys from scratch (the
// paper's "rebuild a transient B+-tree" baseline). Skipped unless WORT_FPTREE_RECOVERY_KEYS
// lists key counts:
//   WORT_FPTREE_RECOVERY_KEYS=100000,1000000,5000000 ./build/unit_fptree_recovery_test
//       --gtest_filter='*OpenTime*'
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

TEST(FPTreeRecoveryTime, OpenTimeByPhase) {
  const char* env = std::getenv("WORT_FPTREE_RECOVERY_KEYS");
  if (env == nullptr) GTEST_SKIP() << "set WORT_FPTREE_RECOVERY_KEYS=100000,1000000,...";
  std::string list = env;
  for (std::size_t pos = 0; pos < list.size();) {
    const std::size_t comma = list.find(',', pos);
    const std::size_t n = std::stoull(list.substr(pos, comma - pos));
    pos = comma == std::string::npos ? list.size() : comma + 1;
    const auto ints = paper_keys(Dist::sparse, n, 42);
    PoolOptions o;
    o.size = (64ull << 20) + 64ull * n;
    o.kind = "fptree";
    auto pool = std::move(Pool::create_in_memory(o)).value();
    auto tree = std::move(FPTree::create(*pool, {})).value();
    for (std::uint64_t k : ints) ASSERT_EQ(tree->insert(Key(u64_key(k)), k), Status::ok);
    tree.reset();
    std::unique_ptr<std::byte, FreeAligned> image(
        static_cast<std::byte*>(std::aligned_alloc(4096, pool->size())));
    std::memcpy(image.get(), pool->base(), pool->size());
    const std::uint64_t size = pool->size();
    pool.reset();
    auto p2 = std::move(Pool::attach({image.get(), size}, "fptree")).value();
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_ms();
    auto t = FPTree::open(*p2);
    const double open_cpu = thread_cpu_ms() - c0;
    const double open_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(t) << t.error().message;
    const auto& ph = (*t)->open_times();
    const double m0 = thread_cpu_ms();
    std::map<std::string, Value> dram;
    for (std::uint64_t k : ints) dram.emplace(u64_str(k), k);
    const double map_cpu = thread_cpu_ms() - m0;
    std::cout << "[fptree open] " << n << " keys: open " << open_ms << " ms (walk+trace "
              << ph.trace_ms << ", replay " << ph.replay_ms << ", rebuild " << ph.rebuild_ms
              << " wall ms); CPU: open " << open_cpu << " ms, std::map build " << map_cpu
              << " ms (" << map_cpu / open_cpu << "x)" << std::endl;
    EXPECT_EQ((*t)->stats().keys, n);
    t->reset();
    p2.reset();
  }
}

// Regression (found when main added values_are_blocks pools): the recovery trace of such a
// pool walks every value through scan(), and the FPTree's scan routes through the DRAM inner
// nodes, which open() used to rebuild only after the trace; the scan found nothing and the
// trace freed every value block. open() now validates, replays and rebuilds first there.
// With leaf groups (of 2) too, and the last 100 keys removed (their value blocks freed), so
// open() also releases emptied groups — after the trace, which must not see them freed.
TEST(FPTreeValuesAreBlocks, RecoveryTraceKeepsValueBlocks) {
  for (std::uint64_t group : {0, 2}) {
  SCOPED_TRACE("leaves per group " + std::to_string(group));
  PoolOptions o;
  o.size = 8u << 20;
  o.kind = "fptree";
  o.values_are_blocks = true;
  auto pool = std::move(Pool::create_in_memory(o)).value();
  IndexOptions io;
  io.words = {4, 3, 0, group};
  auto tree = std::move(FPTree::create(*pool, io)).value();
  constexpr int kAll = 300, kKeys = 200;
  for (int i = 0; i < kAll; ++i) {
    std::uint64_t item = 0;
    ASSERT_EQ(pool->allocator().allocate(32, &item), Status::ok);
    ASSERT_EQ(tree->insert(as_key("item-" + std::to_string(i)), item), Status::ok);
  }
  for (int i = kKeys; i < kAll; ++i) {
    const auto v = tree->lookup(as_key("item-" + std::to_string(i)));
    ASSERT_TRUE(v.has_value());
    ASSERT_EQ(tree->remove(as_key("item-" + std::to_string(i))), Status::ok);
    pool->allocator().free(*v);
  }
  const std::uint64_t groups_before = tree->leaf_groups();
  tree.reset();
  const std::uint64_t size = pool->size();
  std::unique_ptr<std::byte, FreeAligned> image(static_cast<std::byte*>(std::aligned_alloc(4096, size)));
  std::memcpy(image.get(), pool->base(), size);
  pool.reset();
  auto p2 = std::move(Pool::attach({image.get(), size}, "fptree")).value();
  auto t = FPTree::open(*p2);
  ASSERT_TRUE(t) << t.error().message;
  std::uint64_t blocks = 0;
  ASSERT_TRUE((*t)->visit_blocks([&](std::uint64_t) { ++blocks; }));
  EXPECT_EQ(p2->allocator().stats().blocks_allocated, blocks + kKeys)
      << "value blocks freed by the recovery trace";
  std::printf("[fptree values-are-blocks] leaf groups %llu before the reopen, %llu after\n",
              static_cast<unsigned long long>(groups_before),
              static_cast<unsigned long long>((*t)->leaf_groups()));
  if (group != 0) {
    EXPECT_LT((*t)->leaf_groups(), groups_before) << "open() released no group";
  }
  const auto audit = p2->allocator().audit([&](pm::BlockVisitor v) { return (*t)->visit_blocks(v); });
  EXPECT_EQ(audit.leaked.size(), std::size_t{kKeys}) << audit.describe();  // the value blocks
  EXPECT_TRUE(audit.doubly_used.empty() && audit.not_allocated.empty()) << audit.describe();
  auto r = (*t)->verify();
  EXPECT_TRUE(r) << r.error().message;
  t->reset();
  p2.reset();
  }
}

// Damaged pools: random bytes of reachable blocks (anchor, leaves, key blocks) overwritten,
// then open; a pool that opens must verify (or report corrupt) and answer lookups, scans,
// inserts and removes without crashing (run under ASan by make test). Seeded; the failing
// seed and round are in the trace.
TEST(FPTreeDamage, RandomBytesInReachableBlocksNeverCrash) {
  PoolOptions o;
  o.size = 4u << 20;
  o.kind = "fptree";
  auto pool = std::move(Pool::create_in_memory(o)).value();
  IndexOptions io;
  io.words = {4, 3, 0, 0};
  auto tree = std::move(FPTree::create(*pool, io)).value();
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i)
    keys.push_back(i % 2 ? u64_str(static_cast<std::uint64_t>(i) * 7919) : "key-" + std::to_string(i));
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(tree->insert(as_key(keys[i]), i), Status::ok);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks;  // offset, size
  ASSERT_TRUE(tree->visit_blocks([&](std::uint64_t b) {
    blocks.emplace_back(b, pool->allocator().block_size(b));
  }));
  tree.reset();
  const std::uint64_t size = pool->size();
  std::vector<std::byte> clean(pool->base(), pool->base() + size);
  pool.reset();
  std::unique_ptr<std::byte, FreeAligned> image(static_cast<std::byte*>(std::aligned_alloc(4096, size)));
  std::mt19937_64 rng(2026);
  int opened = 0;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("seed 2026 round " + std::to_string(round));
    std::memcpy(image.get(), clean.data(), size);
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const auto& [b, len] = blocks[rng() % blocks.size()];
      const std::uint64_t at = b + (rng() % std::max<std::uint64_t>(len, 1));
      image.get()[at] = static_cast<std::byte>(rng() % 4 == 0 ? 0 : rng());
    }
    auto p = Pool::attach({image.get(), size}, "fptree");
    ASSERT_TRUE(p) << p.error().message;
    auto t = FPTree::open(**p);
    if (!t) {
      EXPECT_EQ(t.status(), Status::corrupt) << t.error().message;
      continue;
    }
    ++opened;
    FPTree& x = **t;
    (void)x.verify();
    for (const auto& k : keys) (void)x.lookup(as_key(k));
    x.scan(Key{}, SIZE_MAX, [](Key, Value) { return true; });
    for (int i = 0; i < 40; ++i) (void)x.insert(as_key("new-" + std::to_string(i)), 1);
    for (std::size_t i = 0; i < keys.size(); i += 3) (void)x.remove(as_key(keys[i]));
    std::ostringstream os;
    x.dump(os);
    t->reset();
  }
  std::cout << "[fptree damage] " << opened << " of 300 damaged pools opened" << std::endl;
}

}  // namespace
}  // namespace wort::test
