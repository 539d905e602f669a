// Crash-simulator tests of the FPTree (crashsim::run_kv): every commit path — the first
// insert (anchor head), insert into a leaf with room (inline key and key block), insert and
// update into a full leaf (the split under the micro-log: every step's crash states), update
// and upsert (new slot + one bitmap store), remove in place, remove of a leaf's last key (the
// unlink, head and non-head) — each with zero findings and zero lints. The simulator's
// SECOND_CRASH oracle crashes again inside open()'s replay of an interrupted split. Plus a
// sampled mixed batch and reopen after a real kill -9.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/fptree/fptree_tree.h"
#include "support/crash_ops.h"
#include "support/keygen.h"
#include "support/kill_reopen.h"

namespace wort::test {
namespace {

using crashsim::KvOp;

crashsim::Factory fptree_with(std::uint64_t leaf, std::uint64_t fanout, std::uint64_t hash = 0) {
  return crashsim::Factory{
      "fptree",
      [=](Pool& p) {
        IndexOptions o;
        o.words = {leaf, fanout, hash, 0};
        return adapt<FPTree>(FPTree::create(p, o));
      },
      [](Pool& p) { return adapt<FPTree>(FPTree::open(p)); }};
}

// Leaves of 4 slots and inner nodes of 3 children: a handful of keys reach every path.
crashsim::Report run(const std::vector<KvOp>& setup, const std::vector<KvOp>& ops,
                     crashsim::Options o = {}) {
  return run_and_print(fptree_with(4, 3), setup, ops, o);
}

std::string k8(std::uint64_t i) { return u64_str(i); }  // inline key
std::string ks(std::uint64_t i) { return "key-" + std::to_string(i); }  // key block

//! A full leaf of the paper's size (56 slots): keys 0, 3, 6, ...
std::vector<KvOp> paper_leaf_setup() {
  std::vector<KvOp> setup;
  for (int i = 0; i < 56; ++i) setup.push_back(ins(k8(static_cast<std::uint64_t>(i) * 3)));
  return setup;
}

TEST(FPTreeCrash, FirstInsertPublishesHead) {
  EXPECT_CLEAN(run({}, {ins(k8(5), 50)}));
  EXPECT_CLEAN(run({}, {ins(ks(5), 50)}));
  EXPECT_CLEAN(run({}, {ins("", 1)}));  // the empty key, in a key block
}

// Index::create traced (crashsim::Options::trace_create): a crash point at every fence of
// creation, and the COMMIT_COUNT table's create row (one commit: the pool root); checks in
// expect_clean_creation (tests/support/crash_ops.h).
TEST(FPTreeCrash, CreateIsTraced) {
  crashsim::Options o;
  o.trace_create = true;
  expect_clean_creation(run({}, {ins(k8(5), 50), ins(k8(6), 60)}, o));
}

TEST(FPTreeCrash, InsertIntoLeafWithRoom) {
  EXPECT_CLEAN(run({ins(k8(1))}, {ins(k8(2), 2), ins(ks(3), 3), ins(k8(4), 4)}));
}

// The leaf is full: split under the micro-log, then the insert's bitmap commit. Crash
// points fall before each fence of the split (log + new leaf; old leaf's bitmap + next) and
// of the commit; the second crash falls inside open()'s replay.
TEST(FPTreeCrash, InsertIntoFullLeafSplits) {
  const std::vector<KvOp> full = {ins(k8(10)), ins(k8(20)), ins(k8(30)), ins(k8(40))};
  EXPECT_CLEAN(run(full, {ins(k8(5), 1)}));   // goes left
  EXPECT_CLEAN(run(full, {ins(k8(35), 1)}));  // goes right
  const std::vector<KvOp> strs = {ins(ks(10)), ins(ks(20)), ins(ks(30)), ins(ks(40))};
  EXPECT_CLEAN(run(strs, {ins(ks(25), 1)}));
  // the split leaf is not the head; and a split that splits the DRAM inner node too
  std::vector<KvOp> many;
  for (int i = 1; i <= 16; ++i) many.push_back(ins(k8(static_cast<std::uint64_t>(i) * 10)));
  EXPECT_CLEAN(run(many, {ins(k8(125), 1), ins(k8(126), 2), ins(k8(127), 3)}));
}

// Alg. 8: the new pair in a free slot, one bitmap store sets it and clears the old; in a full
// leaf the update splits first.
TEST(FPTreeCrash, UpdateAndUpsert) {
  EXPECT_CLEAN(run({ins(k8(1)), ins(ks(2))}, {upd(k8(1), 11), ups(ks(2), 22), ups(k8(3), 33),
                                               upd(k8(4), 44)}));
  const std::vector<KvOp> full = {ins(k8(10)), ins(ks(20)), ins(k8(30)), ins(ks(40))};
  EXPECT_CLEAN(run(full, {upd(ks(40), 7), ups(k8(10), 8)}));
}

TEST(FPTreeCrash, RemoveInPlaceAndUnlink) {
  EXPECT_CLEAN(run({ins(k8(1)), ins(ks(2)), ins(k8(3))}, {rem(ks(2)), rem(k8(9))}));
  // last key of the only leaf: the head goes to 0
  EXPECT_CLEAN(run({ins(ks(7))}, {rem(ks(7))}));
  // two leaves: empty the second (previous leaf's next), then the first (the head)
  const std::vector<KvOp> two = {ins(k8(10)), ins(k8(20)), ins(k8(30)), ins(k8(40)),
                                 ins(k8(50))};
  crashsim::Options drain;
  drain.drain = true;
  EXPECT_CLEAN(run(two, {rem(k8(50)), rem(k8(40)), rem(k8(30)), rem(k8(20)), rem(k8(10))}, drain));
  EXPECT_CLEAN(run(two, {rem(k8(10)), rem(k8(20))}, drain));
}

// Every fingerprint equal: lookups after recovery must still compare whole keys.
TEST(FPTreeCrash, ForcedFingerprintCollisions) {
  std::vector<KvOp> setup;
  for (int i = 0; i < 7; ++i) setup.push_back(ins(ks(static_cast<std::uint64_t>(i))));
  EXPECT_CLEAN(run_and_print(fptree_with(4, 3, 1), setup,
                             {ins(ks(100), 1), upd(ks(3), 2), rem(ks(4)), ins(k8(9), 3)}, {}));
}

// The paper's leaf (56 slots): a split copies a 992-byte leaf.
TEST(FPTreeCrash, PaperLeafSplit) {
  const std::vector<KvOp> setup = paper_leaf_setup();
  const crashsim::Options o = capped_options();
  EXPECT_CLEAN(run_and_print(fptree_with(0, 0), setup, {ins(k8(100), 1), ins(k8(1), 2)}, o));
}

// Write-backs an insert makes outside the bitmap's line, which the small and the paper's
// leaves never need: (a) a 56-slot leaf keeps `inline_map` in line 1, so an insert into a
// slot >= 2 (outside that line) whose inline bit flips (a key block where an 8-byte key
// was) writes it back by itself; (b) a 64-slot leaf keeps fingerprints 56..63 in line 1.
TEST(FPTreeCrash, InlineWordAndFingerprintOutsideTheBitmapLine) {
  const crashsim::Options o = capped_options();
  const std::vector<KvOp> three{ins(k8(1)), ins(k8(2)), ins(k8(3))};
  EXPECT_CLEAN(run_and_print(fptree_with(56, 0), three, {rem(k8(3)), ins(ks(4), 4)}, o));
  std::vector<KvOp> setup;
  for (int i = 0; i < 57; ++i) setup.push_back(ins(k8(static_cast<std::uint64_t>(i) * 3)));
  EXPECT_CLEAN(run_and_print(fptree_with(64, 0), setup, {ins(k8(1000), 1), ins(ks(1), 2)}, o));
}

// An update's one bitmap store sets the new slot's bit and clears the old one; in a leaf of
// more than 32 slots the two bits can lie in different 4-byte halves of the bitmap word
// (here: old slot 0, new slot 40), so only an 8-byte store keeps the update atomic.
TEST(FPTreeCrash, UpdateAcrossTheBitmapHalves) {
  std::vector<KvOp> setup;
  for (int i = 0; i < 40; ++i) setup.push_back(ins(k8(static_cast<std::uint64_t>(i))));
  const crashsim::Options o = capped_options();
  EXPECT_CLEAN(run_and_print(fptree_with(56, 0), setup, {upd(k8(0), 7), ups(k8(1), 8)}, o));
}

TEST(FPTreeCrash, SampledMixedOperations) {
  expect_clean_sampled_mixes(fptree_with(6, 4), 120, 80, 24);
}

// --- leaf groups
// Crash-simulator tests of the FPTree's leaf groups (paper §4.3, App. B; IndexOptions word 3,
// src/index/fptree/fptree_groups.h): every path that gets or frees a leaf, crashed at every
// fence — GetLeaf allocating a group (header written back and fenced, then the anchor's
// `groups` word persisted, both before the operation's commit), GetLeaf popping a free leaf
// (no store at all), FreeLeaf (DRAM only), and the release of an emptied group (the list
// store persisted, then the block freed) by the next GetLeaf and by open(). After every
// crash the group list and the tree must agree (verify(): every leaf of a listed group in
// the tree or free, never both) and the allocator audit must pass (a group allocated but
// not yet listed, or unlisted but not yet freed, is unreachable: the trace frees it).
// Commit counts are the one-commit table's (tests/support/crash_ops.h): the group list is
// allocator metadata, never a commit. The simulator's DRAIN oracle (an emptied index holds
// what a new one holds) does not apply: a group emptied by removes is released by the next
// GetLeaf or open(), not by the remove (that would be a store after its commit), so a
// drained tree still holds it; FPTreeGroups.* in tests/index/fptree/fptree_groups_test.cc shows
// when it goes.
crashsim::Factory fptree_groups(std::uint64_t leaf, std::uint64_t fanout, std::uint64_t group) {
  return crashsim::Factory{
      "fptree",
      [=](Pool& p) {
        IndexOptions o;
        o.words = {leaf, fanout, 0, group};
        return adapt<FPTree>(FPTree::create(p, o));
      },
      [](Pool& p) { return adapt<FPTree>(FPTree::open(p)); }};
}

// Leaves of 4 slots, inner nodes of 3, groups of 2 leaves: every second split needs a group.
crashsim::Report run_groups(const std::vector<KvOp>& setup, const std::vector<KvOp>& ops,
                     crashsim::Options o = {}) {
  return run_and_print(fptree_groups(4, 3, 2), setup, ops, o);
}


// The first leaf of an empty tree comes from a new group (GetLeaf's allocation path, then
// the head's commit).
TEST(FPTreeGroupsCrash, FirstLeafAllocatesAGroup) {
  EXPECT_CLEAN(run_groups({}, {ins(k8(5), 50)}));
  EXPECT_CLEAN(run_groups({}, {ins(ks(5), 50), ins(ks(6), 60)}));
}

// 50: the split takes the group's second leaf (a pop); 70: the next split allocates a
// second group inside the split, before the insert's commit.
TEST(FPTreeGroupsCrash, SplitsPopAndAllocate) {
  const std::vector<KvOp> full = {ins(k8(10)), ins(k8(20)), ins(k8(30)), ins(k8(40))};
  EXPECT_CLEAN(run_groups(full, {ins(k8(50), 1), ins(k8(60), 2), ins(k8(70), 3)}));
  const std::vector<KvOp> strs = {ins(ks(10)), ins(ks(20)), ins(ks(30)), ins(ks(40))};
  EXPECT_CLEAN(run_groups(strs, {ins(ks(25), 1), upd(ks(40), 2), ins(ks(45), 3), ins(ks(47), 4)}));
}

// Emptying the only leaf of the second group returns it (FreeLeaf: DRAM only, after the
// unlink's commit); the next split releases that group (its list store persisted before
// the split's commit, then the block freed) and allocates a new one. A crash after the
// unlink leaves a listed group with no leaf in the tree: open() releases it.
TEST(FPTreeGroupsCrash, EmptiedGroupIsReleased) {
  const std::vector<KvOp> setup = {ins(k8(10)), ins(k8(20)), ins(k8(30)), ins(k8(40)),
                                   ins(k8(50)), ins(k8(60)), ins(k8(70))};
  EXPECT_CLEAN(run_groups(setup, {rem(k8(50)), rem(k8(60)), rem(k8(70)), ins(k8(15), 1),
                           ins(k8(17), 2), ins(k8(18), 3)}));
}

// Empty the tree (every leaf unlinked, the head too), then grow again: the first leaf's
// GetLeaf releases the emptied groups and allocates a new one.
TEST(FPTreeGroupsCrash, EmptyAndRefill) {
  std::vector<KvOp> setup;
  for (int i = 1; i <= 12; ++i) setup.push_back(ins(k8(static_cast<std::uint64_t>(i) * 10)));
  std::vector<KvOp> ops;
  for (int i = 1; i <= 12; ++i) ops.push_back(rem(k8(static_cast<std::uint64_t>(i) * 10)));
  for (int i = 1; i <= 6; ++i) ops.push_back(ins(ks(static_cast<std::uint64_t>(i)), i));
  const crashsim::Options o = capped_options();
  EXPECT_CLEAN(run_groups(setup, ops, o));
}

// The paper's leaf (56 slots) in groups of 16.
TEST(FPTreeGroupsCrash, PaperLeafInGroups) {
  const std::vector<KvOp> setup = paper_leaf_setup();
  const crashsim::Options o = capped_options();
  EXPECT_CLEAN(run_and_print(fptree_groups(0, 0, 16), setup, {ins(k8(100), 1), ins(k8(1), 2)}, o));
}

TEST(FPTreeGroupsCrash, SampledMixedOperations) {
  for (Gen g : {Gen::random_u64, Gen::shared_prefix}) {
    SCOPED_TRACE(std::string(to_string(g)));
    const MixedBatch b = sampled_mix(make_keys(g, 120, 11), 80, 24);
    crashsim::Options o;
    o.seed = 3;
    o.pool_size = 4u << 20;
    o.exhaustive_cap = 16;
    o.random_samples = 4;
    EXPECT_CLEAN(run_and_print(fptree_groups(4, 3, 3), b.setup, b.ops, sanitizer_sample(o)));
  }
}

#if WORT_FAULTS  // the tree's split hook (test_on_split_copied)
// --- two splits in flight (the array of split micro-logs, §4.4) --------------------------
// Single-threaded, the steps of one split run inside the other's: the tree's test hook
// (test_on_split_copied, after the first split's copy is durable and before its leaf
// changes) runs an update of 60 into the other full leaf, which splits it in a second log
// and commits. Every crash point of that inner split finds two logs set (the outer one with
// its copy done), and open() must replay both. The inner update rewrites 60's value, so
// the oracle's expected contents are the outer insert's alone; the outer insert makes two
// commits (the inner update's and its own) and stores after the inner commit by
// construction, so the commit table is {2, 2} for it and the commit lints are off here.
crashsim::Factory fptree_nested_splits() {
  return crashsim::Factory{
      "fptree",
      [](Pool& p) {
        IndexOptions o;
        o.words = {4, 3, 0, 0};
        auto r = FPTree::create(p, o);
        if (r) {
          FPTree* t = r->get();
          auto splits = std::make_shared<int>(0);
          t->test_on_split_copied([t, splits] {
            if (++*splits != 2) return;  // the setup makes one split; the traced insert the second
            Value v = 0;  // 60's value as it is (scan's pin nests; lookup's would not)
            t->scan(Key(u64_key(60)), 1, [&](Key, Value x) { return v = x, false; });
            (void)t->test_update_from_split_pause(Key(u64_key(60)), v);
          });
        }
        return adapt<FPTree>(std::move(r));
      },
      [](Pool& p) { return adapt<FPTree>(FPTree::open(p)); }};
}

TEST(FPTreeCrash, TwoSplitLogsInFlight) {
  // leaves [10 15 17 20] and [30 40 50 60], both full
  const std::vector<KvOp> setup = {ins(k8(10), 10), ins(k8(20), 20), ins(k8(30), 30),
                                   ins(k8(40), 40), ins(k8(50), 50), ins(k8(60), 60),
                                   ins(k8(15), 15), ins(k8(17), 17)};
  crashsim::Options o;
  o.commit_lints = false;
  crashsim::CommitTable t = *commit_table_for("fptree");
  t.insert = {1, 2};  // the traced insert: 2; continuation inserts after a crash: 1
  o.commits = t;
  const crashsim::Report r = run_and_print(fptree_nested_splits(), setup, {ins(k8(12), 12)}, o);
  EXPECT_CLEAN(r);
}
#endif  // WORT_FAULTS

// --- reopen after a real process kill (tests/support/kill_reopen.h) ---------------------

// The commit stores at pool offsets above 2^32 (run_above_4gib: every block above, and
// the two blocks of each commit that swaps one for another on either side of 2^32), where
// a commit word split into two 4-byte stores shows torn: the first leaf (the head),
// splits, the last key of a leaf removed (the previous leaf's next, or the head).
TEST(FPTreeCrash, CommitStoresAboveFourGiB) {
  const crashsim::Factory f = fptree_with(4, 3);
  expect_clean_above_4gib(f, {}, {ins(k8(5), 50)});
  expect_clean_above_4gib(f, {}, {ins(ks(5), 50)});
  const std::vector<KvOp> full = {ins(k8(10)), ins(k8(20)), ins(k8(30)), ins(k8(40))};
  expect_clean_above_4gib(f, full, {ins(k8(5), 1), ins(k8(35), 2)});
  expect_clean_above_4gib(f, {ins(ks(7))}, {rem(ks(7))});
  const std::vector<KvOp> two = {ins(k8(10)), ins(k8(20)), ins(k8(30)), ins(k8(40)),
                                 ins(k8(50))};
  expect_clean_above_4gib(f, two, {rem(k8(50)), rem(k8(40)), rem(k8(30)), rem(k8(20)), rem(k8(10))});
  expect_clean_above_4gib(f, two, {rem(k8(10)), rem(k8(20))});
}

TEST(FPTreeCrash, ReopenAfterKill9) {
  kill_and_reopen_random_bytes(crashsim::factory_of<FPTree>(), 30000);
}

TEST(FPTreeCrash, ReopenAfterKill9InlineKeys) {
  kill_and_reopen_each_key(crashsim::factory_of<FPTree>(), Gen::random_u64, 18);
}

}  // namespace
}  // namespace wort::test
