// Crash-simulator tests of WORT (crashsim::run_kv): every operation path — insert into an
// empty slot, leaf split and prefix split (SplitCmp) at several depths, upsert/update,
// remove with and without a merge, recovery of an interrupted split — exhaustive on small
// trees, sampled on larger ones; each asserts report.correct() and no lint (report.clean()).
// Plus reopen after a real kill -9 of a process inserting into a file pool.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/wort/wort_tree.h"
#include "support/crash_ops.h"
#include "support/keygen.h"
#include "support/kill_reopen.h"

namespace wort::test {
namespace {

using crashsim::KvOp;

crashsim::Report run(const std::vector<KvOp>& setup, const std::vector<KvOp>& ops,
                     crashsim::Options o = {}) {
  return run_and_print(crashsim::factory_of<WortTree>(), setup, ops, o);
}

TEST(WortCrash, InsertIntoEmptyTreeAndEmptySlot) {
  EXPECT_CLEAN(run({}, {ins(u64_str(5), 50)}));
  EXPECT_CLEAN(run({ins(u64_str(0x10)), ins(u64_str(0x20))}, {ins(u64_str(0x30), 3)}));
  // the end_child slot of a node: a key that is a prefix of the others
  EXPECT_CLEAN(run({ins("abc"), ins("abd")}, {ins("ab", 7)}));
}

// Two keys in one slot: a new node whose prefix is what they share; the branch position
// falls at partial key d.
TEST(WortCrash, LeafSplitAtSeveralDepths) {
  for (unsigned d : {0u, 1u, 3u, 8u, 12u, 15u}) {
    SCOPED_TRACE("split at partial key " + std::to_string(d));
    const std::uint64_t base = 0x0123456789abcdefull;
    const std::uint64_t other = base ^ (std::uint64_t{0x8} << (60 - 4 * d));
    EXPECT_CLEAN(run({ins(u64_str(base))}, {ins(u64_str(other), 9)}));
    // one level down: under a root node first
    EXPECT_CLEAN(run({ins(u64_str(base)), ins(u64_str(~base))}, {ins(u64_str(other), 9)}));
  }
  // one key a proper prefix of the other (the new node's end_child)
  EXPECT_CLEAN(run({ins("prefix-and-more")}, {ins("prefix", 2)}));
  EXPECT_CLEAN(run({ins("pre")}, {ins("prefix", 2)}));
}

// SplitCmp: the key leaves a compressed path at position m of a node's prefix, including
// beyond the 9 partial keys the header stores (hybrid compression) and by ending inside it.
TEST(WortCrash, PrefixSplitAtSeveralDepths) {
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;  // prefix 14 nibbles
  for (unsigned m : {0u, 1u, 4u, 8u, 9u, 11u, 13u}) {
    SCOPED_TRACE("mismatch at prefix position " + std::to_string(m));
    const std::uint64_t k = a ^ (std::uint64_t{0x1} << (60 - 4 * m));
    EXPECT_CLEAN(run({ins(u64_str(a)), ins(u64_str(b))}, {ins(u64_str(k), 4)}));
  }
  // the same, one level down (the old parent is a node, not the anchor)
  const std::uint64_t c = 0x1bcdef0123456700ull;
  EXPECT_CLEAN(run({ins(u64_str(a)), ins(u64_str(b)), ins(u64_str(c))},
                   {ins(u64_str(a ^ (1ull << 40)), 4)}));
  // string keys: the new key ends inside the compressed path (goes to end_child)
  EXPECT_CLEAN(run({ins("common-prefix-one"), ins("common-prefix-two")}, {ins("common", 5)}));
  EXPECT_CLEAN(run({ins("common-prefix-one"), ins("common-prefix-two")},
                   {ins("commonality", 5), ins("c", 6)}));
}

TEST(WortCrash, UpsertAndUpdate) {
  const std::vector<KvOp> setup = {ins(u64_str(1)), ins(u64_str(2)), ins("xyz")};
  EXPECT_CLEAN(run(setup, {ups(u64_str(1), 11), upd(u64_str(2), 22), ups("xyz", 33),
                           ups(u64_str(3), 44), upd(u64_str(4), 55)}));
}

TEST(WortCrash, RemoveWithoutMerge) {
  EXPECT_CLEAN(run({ins(u64_str(0x10)), ins(u64_str(0x20)), ins(u64_str(0x30))},
                   {rem(u64_str(0x20)), rem(u64_str(0x99))}));
  EXPECT_CLEAN(run({ins(u64_str(7))}, {rem(u64_str(7))}));  // the root leaf
}

TEST(WortCrash, RemoveWithMerge) {
  crashsim::Options drain;
  drain.drain = true;
  EXPECT_CLEAN(run({ins(u64_str(0x10)), ins(u64_str(0x20)), ins(u64_str(0x21))},
                   {rem(u64_str(0x20)), rem(u64_str(0x10))}, drain));
  // survivor is a leaf: the node disappears
  EXPECT_CLEAN(run({ins(u64_str(0x10)), ins(u64_str(0x20))}, {rem(u64_str(0x10))}));
  // survivor is a node: it absorbs the removed node's prefix (header + parent slot)
  EXPECT_CLEAN(run({ins(u64_str(0x1100)), ins(u64_str(0x1101)), ins(u64_str(0x2200))},
                   {rem(u64_str(0x2200))}));
  // the same one level down, and with a long merged prefix (> 9 partial keys)
  EXPECT_CLEAN(run({ins(u64_str(0xf000000000000000ull)), ins(u64_str(0x1100)),
                    ins(u64_str(0x1101)), ins(u64_str(0x2200))},
                   {rem(u64_str(0x2200)), rem(u64_str(0x1101))}));
  // end_child removed / surviving
  EXPECT_CLEAN(run({ins("ab"), ins("abc"), ins("abd")}, {rem("ab"), rem("abc")}));
  EXPECT_CLEAN(run({ins("ab"), ins("abc")}, {rem("abc")}));
}

// A split interrupted between the header store and the commit must be read correctly and
// repaired by the next writer; the continuation ops after each recovery exercise exactly
// that, and these ops pass through the split node again.
TEST(WortCrash, RecoveryOfInterruptedSplit) {
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;
  std::vector<KvOp> ops = {ins(u64_str(0xab00000000000000ull), 1),  // SplitCmp at position 2
                           ins(u64_str(a + 2), 2), ups(u64_str(a), 3), rem(u64_str(b)),
                           ins(u64_str(0xabcdef0000000000ull), 4)};
  crashsim::Options o;
  o.continuation_ops = 12;
  EXPECT_CLEAN(run({ins(u64_str(a)), ins(u64_str(b))}, ops, o));
}

// Larger trees, sampled: random keys of each generator, a mixed batch of operations.
TEST(WortCrash, SampledMixedOperations) {
  expect_clean_sampled_mixes(crashsim::factory_of<WortTree>(), 160, 120, 24);
}

// Long keys (200..1100 bytes): leaves span many cache lines, prefixes far beyond the header.
TEST(WortCrash, SampledLongKeys) {
  auto keys = make_keys(Gen::long_keys, 48, 13);
  std::vector<KvOp> setup, ops;
  for (std::size_t i = 0; i < 32; ++i) setup.push_back(ins(keys[i], i));
  for (std::size_t i = 28; i < 40; ++i) ops.push_back(i % 3 == 0 ? rem(keys[i]) : ins(keys[i], i));
  crashsim::Options o;
  o.pool_size = 4u << 20;
  o.exhaustive_cap = 16;
  o.random_samples = 4;
  EXPECT_CLEAN(run(setup, ops, sanitizer_sample(o)));
}

// The commit stores at pool offsets above 2^32 (run_above_4gib: every block above, and
// blocks of the setup below with the operation's new ones above), where a commit word split
// into two 4-byte stores shows torn: a slot filled, a leaf and a prefix split, merges.
TEST(WortCrash, CommitStoresAboveFourGiB) {
  const crashsim::Factory f = crashsim::factory_of<WortTree>();
  const std::uint64_t base = 0x0123456789abcdefull;
  expect_clean_above_4gib(f, {}, {ins(u64_str(5), 50)});
  expect_clean_above_4gib(f, {ins(u64_str(0x10)), ins(u64_str(0x20))}, {ins(u64_str(0x30), 3)});
  expect_clean_above_4gib(f, {ins(u64_str(base))}, {ins(u64_str(base ^ (0x8ull << 48)), 9)});
  expect_clean_above_4gib(f, {ins(u64_str(base)), ins(u64_str(~base))},
                          {ins(u64_str(base ^ (0x8ull << 28)), 9)});
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;
  expect_clean_above_4gib(f, {ins(u64_str(a)), ins(u64_str(b))},
                          {ins(u64_str(a ^ (1ull << 44)), 4)});
  expect_clean_above_4gib(f, {ins(u64_str(a)), ins(u64_str(b)), ins(u64_str(0x1bcdef0123456700ull))},
                          {ins(u64_str(a ^ (1ull << 40)), 4)});
  expect_clean_above_4gib(f, {ins(u64_str(0x10)), ins(u64_str(0x20))}, {rem(u64_str(0x10))});
  expect_clean_above_4gib(f, {ins(u64_str(0x1100)), ins(u64_str(0x1101)), ins(u64_str(0x2200))},
                          {rem(u64_str(0x2200))});
  expect_clean_above_4gib(f, {ins(u64_str(0xf000000000000000ull)), ins(u64_str(0x1100)),
                              ins(u64_str(0x1101)), ins(u64_str(0x2200))},
                          {rem(u64_str(0x2200)), rem(u64_str(0x1101))});
  expect_clean_above_4gib(f, {ins("ab"), ins("abc"), ins("abd")}, {rem("ab"), rem("abc")});
}

// --- reopen after a real process kill (tests/support/kill_reopen.h) ---------------------

// The child upserts each of 20000 keys in turn (value: its index); killed after 15000
// acknowledged inserts.
TEST(WortCrash, ReopenAfterKill9) {
  kill_and_reopen_each_key(crashsim::factory_of<WortTree>(), Gen::random_bytes, 17);
}

}  // namespace
}  // namespace wort::test
