// Crash-simulator tests of NV-Tree (crashsim::run_kv) on 4-entry leaves and 2-leaf PLNs, so
// every path is short to reach: the first leaf, appends (insert, update = delete + insert,
// remove = delete), a split into two new leaves linked by one pointer store (at the head
// and after a predecessor), a compaction into one leaf, PLN overflows (whole DRAM rebuild),
// long keys (key blocks shared by a key's entries, freed when only dead entries named
// them), sampled mixed batches; each asserts report.correct() and no lint. Plus reopen
// after a real kill -9.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/nvtree/nvtree_tree.h"
#include "support/crash_ops.h"
#include "support/keygen.h"
#include "support/kill_reopen.h"

namespace wort::test {
namespace {

using crashsim::KvOp;

const SmallNodes<NvTree> small({4, 2, 2});  // 4-entry leaves, 2-leaf PLNs, inner fan-out 2

TEST(NvTreeCrash, FirstLeafAndAppends) {
  EXPECT_CLEAN(small.run({}, {ins(u64_str(5), 50)}));
  EXPECT_CLEAN(small.run(inserts(10, 1),
                         {ins(u64_str(11), 3), ups(u64_str(10), 4), rem(u64_str(11))}));
  EXPECT_CLEAN(small.run({ins("abc"), ins("ab")}, {ins("", 8), rem("ab"), ins("ab", 9)}));
}

// Index::create traced (crashsim::Options::trace_create): a crash point at every fence of
// creation, and the COMMIT_COUNT table's create row (one commit: the pool root); checks in
// expect_clean_creation (tests/support/crash_ops.h).
TEST(NvTreeCrash, CreateIsTraced) {
  crashsim::Options o;
  o.trace_create = true;
  expect_clean_creation(small.run({}, {ins(u64_str(5), 50), ins(u64_str(6), 60)}, o));
}

// A full first leaf splits (the anchor's head is the link), then a later leaf (a
// predecessor's next); with 2-leaf PLNs the second split overflows a PLN (rebuild).
TEST(NvTreeCrash, SplitsAtTheHeadAndAfterAPredecessor) {
  EXPECT_CLEAN(small.run(inserts(10, 4), {ins(u64_str(12) + "x", 1)}));
  EXPECT_CLEAN(small.run(inserts(10, 4),
                         {ins(u64_str(99), 1), ins(u64_str(98), 2), ins(u64_str(97), 3),
                          ins(u64_str(96), 4), ins(u64_str(1), 5)}));
}

// A remove in a full leaf compacts it without the key into one new leaf (its commit is the
// link store), so that a remove needs one block at most (the spare, in a full pool).
TEST(NvTreeCrash, RemoveInAFullLeafCompactsWithoutTheKey) {
  EXPECT_CLEAN(small.run(inserts(10, 4),
                         {rem(u64_str(11)), rem(u64_str(10)), ins(u64_str(11), 2)}));
  EXPECT_CLEAN(small.run(inserts(10, 8), {rem(u64_str(16)), rem(u64_str(12))}));
}

// Removing a leaf's last live key unlinks the leaf (its commit: the predecessor's next, or
// the anchor's head) and frees it with its key blocks; down to the empty tree.
TEST(NvTreeCrash, RemoveOfALeafsLastKeyUnlinksTheLeaf) {
  crashsim::Options drain;
  drain.drain = true;
  EXPECT_CLEAN(small.run(inserts(10, 6),
                         {rem(u64_str(13)), rem(u64_str(14)), rem(u64_str(15)), rem(u64_str(10)),
                          rem(u64_str(11)), rem(u64_str(12))},
                         drain));
}

// Updates fill a leaf with dead entries: the split finds at most half live and compacts.
TEST(NvTreeCrash, CompactionIntoOneLeaf) {
  EXPECT_CLEAN(small.run(inserts(10, 2),
                         {ups(u64_str(10), 1), ups(u64_str(10), 2), ups(u64_str(11), 3),
                          rem(u64_str(11)), rem(u64_str(10))}));
}

TEST(NvTreeCrash, LongKeysSharedAndFreedKeyBlocks) {
  MixedBatch b = long_key_batch(5);
  b.ops.push_back(ins(b.setup[1].key, 11));  // the removed key again
  crashsim::Options o = capped_options();
  o.pool_size = 4u << 20;
  EXPECT_CLEAN(small.run(b.setup, b.ops, o));
}

TEST(NvTreeCrash, SampledMixedOperations) {
  expect_clean_sampled_mixes(small.factory(), 160, 120, 24);
}

// A full pool: the split that finds only one free block takes the anchor's spare leaf as
// its second (anchor.spare := 0, persisted, before the new leaves are linked: the block must
// never be reachable twice), and the next operation re-reserves a spare from the old leaf
// the split freed (ensure_spare); a remove in a full leaf with no free block compacts into
// the spare. Setup fills a small pool with ascending keys up to the last insert that fits
// (probed without crash images); the last inserts and the removes run traced.
TEST(NvTreeCrash, FullPoolTakesAndReReservesTheSpareLeaf) {
  crashsim::Options o;
  o.chunk_size = 4096;
  o.pool_size = 4 * 4096;
  o.exhaustive_cap = 16;
  o.random_samples = 4;
  o.continuation_ops = 3;
  crashsim::Options probe = o;
  probe.explore = false;
  probe.lints = false;
  const std::vector<KvOp> all = inserts(1, 2000);
  auto fits = [&](std::size_t n) {
    const std::vector<KvOp> prefix(all.begin(), all.begin() + static_cast<long>(n));
    return crashsim::run_kv(small.factory(), prefix, {}, probe).correct();
  };
  std::size_t lo = 1, hi = all.size();  // fits(lo), and hi is past the last that fits
  ASSERT_TRUE(fits(lo));
  ASSERT_FALSE(fits(hi)) << "the pool is not full after " << hi << " inserts";
  while (hi - lo > 1) {
    const std::size_t mid = (lo + hi) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  ASSERT_GE(lo, 20u);
  const std::size_t traced = 5;  // covers the last split, which takes the spare
  const std::vector<KvOp> setup(all.begin(), all.begin() + static_cast<long>(lo - traced));
  std::vector<KvOp> ops(all.begin() + static_cast<long>(lo - traced), all.begin() + static_cast<long>(lo));
  for (std::uint64_t k = lo; k > lo - 3; --k) ops.push_back(rem(u64_str(k)));
  EXPECT_CLEAN(small.run(setup, ops, o));
}

#if WORT_FAULTS
// The deliberately broken variant (no fence between the new leaves' write-back and the
// store that links them): the simulator must report it, so these tests can fail.
TEST(NvTreeCrash, BrokenVariantWithoutTheSplitFenceIsCaught) {
  small.expect_caught([](NvTree& t) { t.omit_split_fence_for_testing(); }, inserts(10, 4),
                      {ins(u64_str(99), 1)});
}
#endif  // WORT_FAULTS

// The commit stores at pool offsets above 2^32 (run_above_4gib: every block above, and
// the two blocks of each commit that swaps one for another on either side of 2^32), where
// a commit word split into two 4-byte stores shows torn: the first leaf, splits at the
// head and after a predecessor, a full leaf compacted, leaves unlinked down to the empty tree.
TEST(NvTreeCrash, CommitStoresAboveFourGiB) {
  const crashsim::Factory f = small.factory();
  expect_clean_above_4gib(f, {}, {ins(u64_str(5), 50)});
  expect_clean_above_4gib(f, inserts(10, 4), {ins(u64_str(12) + "x", 1)});
  expect_clean_above_4gib(f, inserts(10, 4), {ins(u64_str(99), 1), ins(u64_str(98), 2),
                                              ins(u64_str(97), 3), ins(u64_str(96), 4),
                                              ins(u64_str(1), 5)});
  expect_clean_above_4gib(f, inserts(10, 4), {rem(u64_str(11)), rem(u64_str(10))});
  expect_clean_above_4gib(f, inserts(10, 6), {rem(u64_str(13)), rem(u64_str(14)), rem(u64_str(15)),
                                              rem(u64_str(10)), rem(u64_str(11)), rem(u64_str(12))});
}

TEST(NvTreeCrash, ReopenAfterKill9) {
  kill_and_reopen_random_bytes(crashsim::factory_of<NvTree>());
}

}  // namespace
}  // namespace wort::test
