// Crash-simulator tests of WOART and ART+CoW (crashsim::run_kv), one typed test over both
// trees (tests/support/art_engine_trees.h; names PmartCrash/woart.*, PmartCrash/artcow.*): every
// operation path — insert into an empty tree, add a child to each node type, grow
// 4→16→48→256, shrink back, leaf split, prefix split (in the header, past it, key ending
// inside it, one level down), end-of-key slot, upsert/update, remove with and without merge,
// an interrupted split repaired on open — each asserting report.correct() and no lint
// (report.clean()) and printing the crash states explored. Plus reopen after a real kill -9
// of a process writing to a file pool (tests/support/kill_reopen.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "support/crash_ops.h"
#include "support/keygen.h"
#include "support/kill_reopen.h"
#include "support/art_engine_trees.h"

namespace wort::test {
namespace {

using crashsim::KvOp;

template <class Tree>
crashsim::Report run(const std::vector<KvOp>& setup, const std::vector<KvOp>& ops,
                     crashsim::Options o = {}) {
  if (o.pool_size < (4u << 20)) o.pool_size = 4u << 20;
  return run_and_print(crashsim::factory_of<Tree>(), setup, ops, o);
}

template <class Tree>
class PmartCrash : public ::testing::Test {};
TYPED_TEST_SUITE(PmartCrash, PmartTrees, KindName);

//! n keys under one node: u64 0x1000 + i*step, so the node branches on the last byte.
std::vector<KvOp> node_with(unsigned n, unsigned step = 1) {
  std::vector<KvOp> v;
  for (unsigned i = 0; i < n; ++i) v.push_back(ins(u64_str(0x1000 + i * step), i));
  return v;
}
std::string child_key(unsigned i, unsigned step = 1) { return u64_str(0x1000 + i * step); }

TYPED_TEST(PmartCrash, InsertIntoEmptyTree) {
  EXPECT_CLEAN(run<TypeParam>({}, {ins(u64_str(5), 50)}));
}

// A new child in a node with room: NODE4 slot word, NODE16 bitmap, NODE48 index byte,
// NODE256 pointer (each the commit store of its node type).
TYPED_TEST(PmartCrash, AddChildToEachNodeType) {
  for (unsigned n : {2u, 3u, 5u, 10u, 17u, 30u, 49u, 100u}) {
    SCOPED_TRACE("node with " + std::to_string(n) + " children");
    EXPECT_CLEAN(run<TypeParam>(node_with(n, 2),
                                {ins(child_key(n, 2), 7), ins(child_key(1, 2) + "x", 8)}));
  }
}

// A full node is copied into the next larger type and the parent's pointer swapped.
TYPED_TEST(PmartCrash, GrowEachNodeType) {
  for (unsigned n : {4u, 16u, 48u}) {
    SCOPED_TRACE("grow a node of " + std::to_string(n));
    EXPECT_CLEAN(run<TypeParam>(node_with(n), {ins(child_key(n), 7)}));
  }
  // grow below the root: the parent's child pointer is the commit
  std::vector<KvOp> setup = node_with(16);
  setup.push_back(ins(u64_str(0x99000000), 1));
  EXPECT_CLEAN(run<TypeParam>(setup, {ins(child_key(16), 7)}));
}

// Removal down to a shrink threshold: 16→4 at 3, 48→16 at 12, 256→48 at 37; and removal
// above it (in place).
TYPED_TEST(PmartCrash, ShrinkEachNodeType) {
  // {children to grow to (reaching the type), children to come back down to}
  for (auto [grow, n] : {std::pair{5u, 4u}, std::pair{17u, 13u}, std::pair{49u, 38u}}) {
    SCOPED_TRACE("shrink a node of " + std::to_string(n) + " grown to " + std::to_string(grow));
    std::vector<KvOp> setup = node_with(grow);
    for (unsigned i = grow; i-- > n;) setup.push_back(rem(child_key(i)));
    EXPECT_CLEAN(run<TypeParam>(setup, {rem(child_key(0)), rem(child_key(2))}));
  }
}

// One node taken through every type and back, every step traced: leaf split, adds,
// 4→16→48→256, in-place removes, 256→48→16→4, the final merge and the empty tree.
TYPED_TEST(PmartCrash, WholeLifeOfOneNode) {
  std::vector<KvOp> up, down;
  for (unsigned i = 0; i < 60; ++i) up.push_back(ins(child_key(i, 3), i));
  for (unsigned i = 0; i < 60; ++i) down.push_back(rem(child_key((i * 7) % 60, 3)));
  crashsim::Options o;
  o.exhaustive_cap = 16;
  o.random_samples = 4;
  EXPECT_CLEAN(run<TypeParam>({}, up, o));
  EXPECT_CLEAN(run<TypeParam>(up, down, o));
}

TYPED_TEST(PmartCrash, RemoveInPlaceFromEachNodeType) {
  for (unsigned n : {4u, 10u, 30u, 100u}) {
    SCOPED_TRACE("remove from a node of " + std::to_string(n));
    EXPECT_CLEAN(run<TypeParam>(node_with(n), {rem(child_key(1)), rem(u64_str(0x99))}));
  }
}

TYPED_TEST(PmartCrash, LeafSplit) {
  EXPECT_CLEAN(run<TypeParam>({ins(u64_str(0x0123456789abcdefull))},
                              {ins(u64_str(0x0123456789abcdeeull), 9)}));
  EXPECT_CLEAN(run<TypeParam>({ins(u64_str(1))}, {ins(u64_str(1ull << 63), 9)}));
  // one key a proper prefix of the other: the new NODE4's end-of-key slot
  EXPECT_CLEAN(run<TypeParam>({ins("prefix-and-more")}, {ins("prefix", 2)}));
  EXPECT_CLEAN(run<TypeParam>({ins("pre")}, {ins("prefix", 2)}));
}

// The key leaves a compressed path: inside the header's 4 bytes, beyond them (hybrid), by
// ending inside it, and one level down. Before swapping the parent's pointer WOART rewrites
// the old node's header in place; ART+CoW copies the old node with its new header.
TYPED_TEST(PmartCrash, PrefixSplit) {
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;  // 7-byte path
  for (unsigned m : {0u, 1u, 3u, 4u, 5u, 6u}) {
    SCOPED_TRACE("mismatch at prefix byte " + std::to_string(m));
    const std::uint64_t k = a ^ (std::uint64_t{0x10} << (56 - 8 * m));
    EXPECT_CLEAN(run<TypeParam>({ins(u64_str(a)), ins(u64_str(b))}, {ins(u64_str(k), 4)}));
  }
  const std::uint64_t c = 0x1bcdef0123456700ull;
  EXPECT_CLEAN(run<TypeParam>({ins(u64_str(a)), ins(u64_str(b)), ins(u64_str(c))},
                              {ins(u64_str(a ^ (1ull << 40)), 4)}));
  EXPECT_CLEAN(run<TypeParam>({ins("common-prefix-one"), ins("common-prefix-two")},
                              {ins("common", 5)}));
  EXPECT_CLEAN(run<TypeParam>({ins("common-prefix-one"), ins("common-prefix-two")},
                              {ins("commonality", 5), ins("c", 6)}));
}

TYPED_TEST(PmartCrash, EndOfKeySlot) {
  EXPECT_CLEAN(run<TypeParam>({ins("abc"), ins("abd")}, {ins("ab", 7), ups("ab", 8), rem("ab")}));
  EXPECT_CLEAN(run<TypeParam>({ins("ab"), ins("abc"), ins("abd")}, {rem("ab"), rem("abc")}));
  EXPECT_CLEAN(run<TypeParam>({ins("ab"), ins("abc")}, {rem("abc")}));  // end-of-key leaf survives
  EXPECT_CLEAN(run<TypeParam>({ins("ab"), ins("abc")}, {rem("ab")}));   // child leaf survives
}

TYPED_TEST(PmartCrash, UpsertAndUpdate) {
  const std::vector<KvOp> setup = {ins(u64_str(1)), ins(u64_str(2)), ins("xyz")};
  EXPECT_CLEAN(run<TypeParam>(setup, {ups(u64_str(1), 11), upd(u64_str(2), 22), ups("xyz", 33),
                                      ups(u64_str(3), 44), upd(u64_str(4), 55),
                                      ins(u64_str(1), 9)}));
}

TYPED_TEST(PmartCrash, RemoveWithoutMerge) {
  EXPECT_CLEAN(run<TypeParam>(node_with(3), {rem(child_key(1)), rem(u64_str(0x99))}));
  EXPECT_CLEAN(run<TypeParam>({ins(u64_str(7))}, {rem(u64_str(7))}));  // the root leaf
}

// A node left with one entry is replaced by it; a survivor node absorbs the path.
TYPED_TEST(PmartCrash, RemoveWithMerge) {
  EXPECT_CLEAN(run<TypeParam>({ins(u64_str(0x10)), ins(u64_str(0x20))}, {rem(u64_str(0x10))}));
  EXPECT_CLEAN(run<TypeParam>(
      {ins(u64_str(0x110000)), ins(u64_str(0x110001)), ins(u64_str(0x220000))},
      {rem(u64_str(0x220000))}));
  // one level down, with a long merged path (> 4 header bytes)
  EXPECT_CLEAN(run<TypeParam>({ins(u64_str(0xf000000000000000ull)), ins(u64_str(0x1100)),
                               ins(u64_str(0x1101)), ins(u64_str(0x2200))},
                              {rem(u64_str(0x2200)), rem(u64_str(0x1101))}));
}

// A split interrupted between the header store and the parent's pointer swap (and a merge
// interrupted the same way) is repaired on open; the continuation ops after each recovery
// pass through the repaired node.
TYPED_TEST(PmartCrash, RecoveryOfInterruptedSplitAndMerge) {
  crashsim::Options o;
  o.continuation_ops = 12;
  EXPECT_CLEAN(run<TypeParam>(split_and_merge_setup(), split_and_merge_ops(), o));
}

// The commit stores at pool offsets above 2^32 (run_above_4gib: every block above, and
// blocks of the setup below with the operation's new ones above), where a commit word split
// into two 4-byte stores shows torn: the first leaf, a child added to each node type, a
// grow, a leaf and a prefix split, the end-of-key slot, merges.
TYPED_TEST(PmartCrash, CommitStoresAboveFourGiB) {
  const crashsim::Factory f = crashsim::factory_of<TypeParam>();
  crashsim::Options o;
  o.pool_size = 4u << 20;
  expect_clean_above_4gib(f, {}, {ins(u64_str(5), 50)}, o);
  for (unsigned n : {3u, 4u, 16u, 48u, 100u})
    expect_clean_above_4gib(f, node_with(n), {ins(child_key(n), 7)}, o);
  std::vector<KvOp> below_root = node_with(16);
  below_root.push_back(ins(u64_str(0x99000000), 1));
  expect_clean_above_4gib(f, below_root, {ins(child_key(16), 7)}, o);
  expect_clean_above_4gib(f, {ins(u64_str(1))}, {ins(u64_str(1ull << 63), 9)}, o);
  expect_clean_above_4gib(f, {ins("pre")}, {ins("prefix", 2)}, o);
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;
  expect_clean_above_4gib(f, {ins(u64_str(a)), ins(u64_str(b))},
                          {ins(u64_str(a ^ (std::uint64_t{0x10} << 48)), 4)}, o);
  expect_clean_above_4gib(f, {ins(u64_str(a)), ins(u64_str(b)), ins(u64_str(0x1bcdef0123456700ull))},
                          {ins(u64_str(a ^ (1ull << 40)), 4)}, o);
  expect_clean_above_4gib(f, {ins("abc"), ins("abd")}, {ins("ab", 7), rem("ab")}, o);
  expect_clean_above_4gib(f, {ins(u64_str(0x10)), ins(u64_str(0x20))}, {rem(u64_str(0x10))}, o);
  expect_clean_above_4gib(f, {ins(u64_str(0x110000)), ins(u64_str(0x110001)), ins(u64_str(0x220000))},
                          {rem(u64_str(0x220000))}, o);
  expect_clean_above_4gib(f, {ins("ab"), ins("abc")}, {rem("abc")}, o);
}

// Larger trees, sampled: a mixed batch of operations over keys of several generators.
TYPED_TEST(PmartCrash, SampledMixedOperations) {
  for (Gen g : {Gen::random_u64, Gen::shared_prefix, Gen::prefix_chains, Gen::long_keys}) {
    SCOPED_TRACE(std::string(to_string(g)));
    const MixedBatch b = sampled_mix(make_keys(g, 160, 11), 120, 48);
    crashsim::Options o;
    o.seed = 3;
    o.exhaustive_cap = 16;
    o.random_samples = 4;
    EXPECT_CLEAN(run<TypeParam>(b.setup, b.ops, sanitizer_sample(o)));
  }
}

// --- reopen after a real process kill (tests/support/kill_reopen.h) ---------------------

// A random mix of upserts and removes over 5000 keys; killed after 20000 acknowledged
// operations.
TYPED_TEST(PmartCrash, ReopenAfterKill9) {
  kill_and_reopen({crashsim::factory_of<TypeParam>(), make_keys(Gen::random_bytes, 5000, 17),
                   random_upserts_and_removes(5000)});
}

}  // namespace
}  // namespace wort::test
