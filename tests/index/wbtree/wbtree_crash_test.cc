// Crash-simulator tests of wB+Tree (crashsim::run_kv) on 4-entry nodes, so that every path
// is short to reach: insert into an empty tree, into a leaf (bitmap+slot protocol), leaf
// split with root growth, leaf split under a parent with room, inner split, upsert/update,
// remove with and without unlinking a chain, root collapse, long keys (key blocks and
// separator copies), sampled mixed batches; each asserts report.correct() and no lint.
// Plus reopen after a real kill -9, and a broken variant the simulator must catch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/wbtree/wbtree_tree.h"
#include "support/crash_ops.h"
#include "support/keygen.h"
#include "support/kill_reopen.h"

namespace wort::test {
namespace {

using crashsim::KvOp;

const SmallNodes<WbTree> small({4, 4});  // 4-entry leaves and inner nodes

TEST(WbTreeCrash, InsertIntoEmptyTreeAndIntoALeaf) {
  EXPECT_CLEAN(small.run({}, {ins(u64_str(5), 50)}));
  EXPECT_CLEAN(small.run(inserts(10, 2), {ins(u64_str(11), 3), ins(u64_str(1), 4)}));
  EXPECT_CLEAN(small.run({ins("abc"), ins("ab")}, {ins("a", 7), ins("", 8)}));
}

// A full root leaf: the root grows, then the leaf splits under it (micro-log steps 1-5).
TEST(WbTreeCrash, LeafSplitWithRootGrowth) {
  EXPECT_CLEAN(small.run(inserts(10, 4), {ins(u64_str(12) + "x", 1)}));
  EXPECT_CLEAN(small.run(inserts(10, 4), {ins(u64_str(99), 1), ins(u64_str(1), 2)}));
}

// A full leaf under a parent with room; then an inner split (the parent full too).
TEST(WbTreeCrash, LeafAndInnerSplits) {
  EXPECT_CLEAN(small.run(inserts(100, 9, 10), {ins(u64_str(105), 1), ins(u64_str(195), 2)}));
  crashsim::Options o;
  o.exhaustive_cap = 16;
  o.random_samples = 4;
  EXPECT_CLEAN(small.run(inserts(100, 16, 10), inserts(101, 6, 10), o));
}

// Index::create traced (crashsim::Options::trace_create): a crash point at every fence of
// creation, and the COMMIT_COUNT table's create row (one commit: the pool root); checks in
// expect_clean_creation (tests/support/crash_ops.h).
TEST(WbTreeCrash, CreateIsTraced) {
  crashsim::Options o;
  o.trace_create = true;
  expect_clean_creation(small.run({}, {ins(u64_str(5), 50), ins(u64_str(6), 60)}, o));
}

TEST(WbTreeCrash, UpsertAndUpdate) {
  const std::vector<KvOp> setup = inserts(1, 6);
  EXPECT_CLEAN(small.run(setup, {ups(u64_str(1), 11), upd(u64_str(2), 22), ups(u64_str(30), 33),
                                 upd(u64_str(40), 44)}));
}

TEST(WbTreeCrash, RemoveWithAndWithoutUnlinking) {
  crashsim::Options drain;
  drain.drain = true;
  EXPECT_CLEAN(small.run(inserts(10, 3), {rem(u64_str(11)), rem(u64_str(99))}, drain));
  EXPECT_CLEAN(small.run({ins(u64_str(7))}, {rem(u64_str(7))}, drain));  // the root leaf
  // leaves emptied one by one: chains unlinked, the root collapses before the next write
  EXPECT_CLEAN(small.run(inserts(10, 10), {rem(u64_str(10)), rem(u64_str(11)), rem(u64_str(12)),
                                           rem(u64_str(13)), ins(u64_str(50)), rem(u64_str(19))},
                         drain));
}

// A split of a parent's first child whose entry key a remove left stale (at or above the
// separator): split step 0 makes that entry "" -> child first (a structural replacement in
// the parent), then the split. Short keys, and long ones (the stale key's block is freed).
TEST(WbTreeCrash, SplitOfAFirstChildWhoseKeyIsStale) {
  for (const std::string stem : {"", "a-long-stem:"}) {
    SCOPED_TRACE("stem '" + stem + "'");
    std::vector<KvOp> setup;
    for (const char* k : {"a", "b", "c", "d", "e", "f", "g"}) setup.push_back(ins(stem + k));
    setup.push_back(rem(stem + "a"));
    setup.push_back(rem(stem + "b"));  // root [c -> [c d], e -> [e f g]]: "c" is stale
    crashsim::Options o;
    o.pool_size = 4u << 20;
    o.drain = true;
    EXPECT_CLEAN(small.run(setup, {ins(stem + "a0", 1), ins(stem + "a1", 2), ins(stem + "a2", 3),
                                   ins(stem + "a3", 4)},
                           o));
  }
}

TEST(WbTreeCrash, LongKeysAndSeparatorCopies) {
  const MixedBatch b = long_key_batch(6);
  crashsim::Options o = capped_options();
  o.pool_size = 4u << 20;
  o.drain = true;
  EXPECT_CLEAN(small.run(b.setup, b.ops, o));
}

TEST(WbTreeCrash, SampledMixedOperations) {
  expect_clean_sampled_mixes(small.factory(), 160, 120, 24);
}

// The commit stores at pool offsets above 2^32 (run_above_4gib: every block above, and
// the two blocks of each commit that swaps one for another on either side of 2^32), where
// a commit word split into two 4-byte stores shows torn: the first leaf, root growth
// and splits, unlinked chains and the root's collapse.
TEST(WbTreeCrash, CommitStoresAboveFourGiB) {
  const crashsim::Factory f = small.factory();
  expect_clean_above_4gib(f, {}, {ins(u64_str(5), 50)});
  expect_clean_above_4gib(f, inserts(10, 4), {ins(u64_str(99), 1), ins(u64_str(1), 2)});
  expect_clean_above_4gib(f, inserts(100, 9, 10), {ins(u64_str(105), 1), ins(u64_str(195), 2)});
  expect_clean_above_4gib(f, {ins(u64_str(7))}, {rem(u64_str(7))});
  expect_clean_above_4gib(f, inserts(10, 10),
                          {rem(u64_str(10)), rem(u64_str(11)), rem(u64_str(12)), rem(u64_str(13)),
                           ins(u64_str(50)), rem(u64_str(19))});
}

TEST(WbTreeCrash, ReopenAfterKill9) {
  kill_and_reopen_random_bytes(crashsim::factory_of<WbTree>());
}

#if WORT_FAULTS
// The deliberately broken variant (no fence between the new sibling' write-back and the
// store that logs it): the simulator must report it, so these tests can fail.
TEST(WbTreeCrash, BrokenVariantWithoutTheSplitFenceIsCaught) {
  small.expect_caught([](WbTree& t) { t.omit_sibling_fence_for_testing(); }, inserts(10, 4),
                      {ins(u64_str(99), 1)});
}
#endif  // WORT_FAULTS

}  // namespace
}  // namespace wort::test
