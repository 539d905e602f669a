// Crash-simulator tests of ROART (crashsim::run_kv): every commit path — first insert, a
// bare leaf turned into a leaf array, add to an array, array split (one pointer swap), add a
// child to each node type (the Zentry / N256 reference), grow 4→16→48→256, shrink back,
// eok, upsert/update (value word), remove from an array / of an array's last leaf / with
// merge (node survivor: its prefix word, then the parent), the minimally ordered prefix
// split (in the prefix word, past it, key ending inside it, one level down) and its
// recovery, with all mechanisms on and with each turned off; a sampled mixed batch; and
// reopen after a real kill -9. Each asserts report.correct() and no lint (report.clean()).
// One direct damage test (RoartDamage): a torn commit word those runs met, built by hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/kit/anchor.h"
#include "index/roart/roart_node.h"
#include "index/roart/roart_tree.h"
#include "support/crash_ops.h"
#include "support/keygen.h"
#include "support/kill_reopen.h"

namespace wort::test {
namespace {

using crashsim::KvOp;
using roart::Roart;

//! ROART with the option bits `flags`.
crashsim::Factory factory(std::uint64_t flags) { return factory_with_word0<Roart>(flags); }

crashsim::Report run(const std::vector<KvOp>& setup, const std::vector<KvOp>& ops,
                     std::uint64_t flags = 0, crashsim::Options o = {}) {
  if (o.pool_size < (4u << 20)) o.pool_size = 4u << 20;
  return run_and_print(factory(flags), setup, ops, o);
}

constexpr std::uint64_t kNoLC = roart::kNoLeafCompaction;

//! n keys under one node (LC off: n bare leaves branching on the last byte).
std::vector<KvOp> node_with(unsigned n, unsigned step = 1) {
  std::vector<KvOp> v;
  for (unsigned i = 0; i < n; ++i) v.push_back(ins(u64_str(0x1000 + i * step), i));
  return v;
}
std::string child_key(unsigned i, unsigned step = 1) { return u64_str(0x1000 + i * step); }

//! LC on: `groups` leaf arrays under one node branching on byte 0 (65 keys, then split).
std::vector<KvOp> arrays_under_node(unsigned groups) {
  std::vector<KvOp> v;
  for (unsigned i = 0; i < 65; ++i)
    v.push_back(ins(u64_str((std::uint64_t{i % groups} << 56) | (0x100 + i)), i));
  return v;
}
std::string group_key(unsigned g, unsigned i) {
  return u64_str((std::uint64_t{g} << 56) | (0x900 + i));
}

// Index::create traced too (crash points, lints, the commit table's create row). Pool
// creation's known REDUNDANT_FLUSH (write_new_header persists the whole 4 KiB header: 60 of
// 64 lines hold nothing new; the lead's, see tests/pm/pool_crash_test.cc) is the one
// finding allowed.
TEST(RoartCrash, CreateAndFirstInsert) {
  crashsim::Options o;
  o.trace_create = true;
  const auto r = run({}, {ins(u64_str(5), 50), ins(u64_str(6), 60)}, 0, o);
  expect_clean_creation(r);
  EXPECT_GT(r.crash_points, 6u) << "creation was not traced";
}

TEST(RoartCrash, FirstInsertAndBareLeafToArray) {
  EXPECT_CLEAN(run({}, {ins(u64_str(5), 50)}));
  EXPECT_CLEAN(run({ins(u64_str(5))}, {ins(u64_str(6), 60), ins("x", 7)}));
  EXPECT_CLEAN(run({ins(u64_str(5))}, {ins(u64_str(6), 60)}, kNoLC));  // leaf split → N4
}

TEST(RoartCrash, AddToArrayAndSplitIt) {
  std::vector<KvOp> setup;
  for (unsigned i = 0; i < 63; ++i) setup.push_back(ins(u64_str(0xab00 + i * 3), i));
  // the 64th key fills the array; the 65th splits it (at the last byte: bare leaves, N256)
  EXPECT_CLEAN(run(setup, {ins(u64_str(0xab00 + 500), 1), ins(u64_str(0xab00 + 501), 2)}));
  // a split into three arrays under an N4, and one with an eok (a key that is a prefix)
  std::vector<KvOp> three = arrays_under_node(3);
  const KvOp last = three.back();
  three.pop_back();
  EXPECT_CLEAN(run(three, {last}));
  std::vector<KvOp> pre;
  for (unsigned i = 0; i < 64; ++i) pre.push_back(ins("pp" + std::string(1, char('a' + i % 3)) + std::to_string(i), i));
  EXPECT_CLEAN(run(pre, {ins("pp", 9)}));
}

// Adaptive leaf arrays: a full array of 4 / 12 / 28 is copied into the next size and the
// copy published in the parent's slot (the root, and a Zentry under a node); removes
// shrink 64→28 at 14 leaves, 28→12 at 6, 12→4 at 2 (a smaller copy, same commit).
TEST(RoartCrash, GrowAndShrinkLeafArrays) {
  for (unsigned n : {4u, 12u, 28u}) {
    SCOPED_TRACE("grow a root array of " + std::to_string(n));
    std::vector<KvOp> setup;
    for (unsigned i = 0; i < n; ++i) setup.push_back(ins(u64_str(0xab00 + i * 3), i));
    EXPECT_CLEAN(run(setup, {ins(u64_str(0xab00 + 500), 1), ins(u64_str(0xab00 + 501), 2)}));
  }
  {
    SCOPED_TRACE("grow an array under a node (28 -> 64)");
    std::vector<KvOp> setup = arrays_under_node(3);  // three arrays of ~22 leaves
    for (unsigned i = 0; i < 6; ++i) setup.push_back(ins(group_key(1, i), i));
    EXPECT_CLEAN(run(setup, {ins(group_key(1, 50), 7), ins(group_key(1, 51), 8)}));
  }
  for (auto [grow, shrink_at] : {std::pair{40u, 14u}, std::pair{20u, 6u}, std::pair{8u, 2u}}) {
    SCOPED_TRACE("shrink at " + std::to_string(shrink_at));
    std::vector<KvOp> setup;
    for (unsigned i = 0; i < grow; ++i) setup.push_back(ins(u64_str(0xab00 + i), i));
    for (unsigned i = grow; i-- > shrink_at + 1;) setup.push_back(rem(u64_str(0xab00 + i)));
    EXPECT_CLEAN(run(setup, {rem(u64_str(0xab00)), rem(u64_str(0xab00 + 1))}));
  }
}

// A new child in a node with room: the Zentry of N4/N16/N48, N256's reference.
TEST(RoartCrash, AddChildToEachNodeType) {
  for (unsigned n : {2u, 3u, 5u, 10u, 17u, 30u, 49u, 100u}) {
    SCOPED_TRACE("LC off, node with " + std::to_string(n) + " children");
    EXPECT_CLEAN(run(node_with(n, 2), {ins(child_key(n, 2), 7)}, kNoLC));
  }
  for (unsigned g : {3u, 12u, 40u}) {
    SCOPED_TRACE("LC on, node with " + std::to_string(g) + " arrays");
    EXPECT_CLEAN(run(arrays_under_node(g), {ins(group_key(g, 1), 7), ins(group_key(1, 2), 8)}));
  }
}

// EC off alone (the key byte written back apart, before the entry) and SMP off alone (the
// metadata lines written back with the entry; a remove writes its count back before the
// commit): adds to and in-place removes from N4/N16/N48, and from leaf arrays.
TEST(RoartCrash, InPlaceAddAndRemoveWithMechanismsOff) {
  for (std::uint64_t off : {std::uint64_t{roart::kNoEntryCompression},
                            std::uint64_t{roart::kNoSelectivePersist}}) {
    for (unsigned n : {3u, 10u, 30u}) {
      SCOPED_TRACE("flags " + std::to_string(off) + ", node with " + std::to_string(n));
      EXPECT_CLEAN(run(node_with(n, 2), {ins(child_key(n, 2), 7), rem(child_key(1, 2))},
                       off | kNoLC));
    }
    SCOPED_TRACE("flags " + std::to_string(off) + ", leaf array");
    EXPECT_CLEAN(run({ins(u64_str(7)), ins(u64_str(8))}, {ins(u64_str(9), 9), rem(u64_str(7))},
                     off));
  }
}

TEST(RoartCrash, GrowEachNodeType) {
  for (unsigned n : {4u, 16u, 48u}) {
    SCOPED_TRACE("grow a node of " + std::to_string(n));
    EXPECT_CLEAN(run(node_with(n), {ins(child_key(n), 7)}, kNoLC));
  }
  std::vector<KvOp> setup = arrays_under_node(4);
  EXPECT_CLEAN(run(setup, {ins(group_key(4, 0), 7)}));  // N4 of arrays → N16
}

TEST(RoartCrash, ShrinkEachNodeType) {
  for (auto [grow, n] : {std::pair{5u, 4u}, std::pair{17u, 13u}, std::pair{49u, 38u}}) {
    SCOPED_TRACE("shrink a node of " + std::to_string(n) + " grown to " + std::to_string(grow));
    std::vector<KvOp> setup = node_with(grow);
    for (unsigned i = grow; i-- > n;) setup.push_back(rem(child_key(i)));
    EXPECT_CLEAN(run(setup, {rem(child_key(0)), rem(child_key(2))}, kNoLC));
  }
}

// The minimally ordered split: mismatch inside the 6 stored prefix bytes, past them, the
// key ending inside the path, one level down; with MO off (4 fences) too.
TEST(RoartCrash, PrefixSplit) {
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;  // 7-byte path
  for (std::uint64_t flags : {std::uint64_t{0}, std::uint64_t{kNoLC},
                              std::uint64_t{kNoLC | roart::kNoMinimalOrder}}) {
    for (unsigned m : {0u, 1u, 5u, 6u}) {
      SCOPED_TRACE("flags " + std::to_string(flags) + " mismatch at byte " + std::to_string(m));
      const std::uint64_t k = a ^ (std::uint64_t{0x10} << (56 - 8 * m));
      // LC on: two leaves are an array; a 65-key array splits into a node first.
      std::vector<KvOp> setup = {ins(u64_str(a)), ins(u64_str(b))};
      if ((flags & kNoLC) == 0)
        for (unsigned i = 0; i < 63; ++i) setup.push_back(ins(u64_str(a + 0x20 + i), i));
      EXPECT_CLEAN(run(setup, {ins(u64_str(k), 4)}, flags));
    }
  }
  EXPECT_CLEAN(run({ins("common-prefix-one"), ins("common-prefix-two")},
                   {ins("common", 5), ins("commonality", 6), ins("c", 7)}, kNoLC));
  const std::uint64_t c = 0x1bcdef0123456700ull;
  EXPECT_CLEAN(run({ins(u64_str(a)), ins(u64_str(b)), ins(u64_str(c))},
                   {ins(u64_str(a ^ (1ull << 40)), 4)}, kNoLC));
}

TEST(RoartCrash, EndOfKeySlotUpsertUpdate) {
  for (std::uint64_t flags : {std::uint64_t{0}, std::uint64_t{kNoLC}}) {
    EXPECT_CLEAN(run({ins("abc"), ins("abd")}, {ins("ab", 7), ups("ab", 8), rem("ab")}, flags));
    EXPECT_CLEAN(run({ins(u64_str(1)), ins(u64_str(2)), ins("xyz")},
                     {ups(u64_str(1), 11), upd(u64_str(2), 22), ups("xyz", 33),
                      ups(u64_str(3), 44), upd(u64_str(4), 55), ins(u64_str(1), 9)},
                     flags));
  }
}

TEST(RoartCrash, RemoveFromArrayNodeAndMerge) {
  EXPECT_CLEAN(run({ins(u64_str(7))}, {rem(u64_str(7))}));                     // root leaf
  EXPECT_CLEAN(run({ins(u64_str(7)), ins(u64_str(8))}, {rem(u64_str(7)), rem(u64_str(8))}));
  EXPECT_CLEAN(run(arrays_under_node(3), {rem(group_key(0, 0)), rem(u64_str(0x100))}));
  EXPECT_CLEAN(run(node_with(3), {rem(child_key(1)), rem(u64_str(0x99))}, kNoLC));
  // merge with a node survivor (its prefix word grows, then the parent's slot)
  EXPECT_CLEAN(run({ins(u64_str(0xf000000000000000ull)), ins(u64_str(0x1100)),
                    ins(u64_str(0x1101)), ins(u64_str(0x2200))},
                   {rem(u64_str(0x2200)), rem(u64_str(0x1101))}, kNoLC));
  EXPECT_CLEAN(run({ins("ab"), ins("abc"), ins("abd")}, {rem("ab"), rem("abc")}, kNoLC));
}

// A split interrupted between its fence and the commit, and a merge between its prefix
// store and the commit, leave prefix words the level check exposes; the continuation ops
// after each recovery pass through those nodes (writers repair, readers skip).
TEST(RoartCrash, RecoveryOfInterruptedSplitAndMerge) {
  crashsim::Options o;
  o.continuation_ops = 12;
  EXPECT_CLEAN(run(split_and_merge_setup(), split_and_merge_ops(), kNoLC, o));
}

// The commit stores at pool offsets above 2^32 (run_above_4gib: every block above, and
// the two blocks of each commit that swaps one for another on either side of 2^32), where
// a commit word split into two 4-byte stores shows torn: the first leaf, a bare leaf
// to an array or N4, array growth, split and shrink, a child added in place and by growth,
// the end-of-key slot, prefix splits, removes from the root, arrays and nodes, merges.
TEST(RoartCrash, CommitStoresAboveFourGiB) {
  crashsim::Options o;
  o.pool_size = 4u << 20;
  auto check = [&](const std::vector<KvOp>& setup, const std::vector<KvOp>& ops,
                   std::uint64_t flags) { expect_clean_above_4gib(factory(flags), setup, ops, o); };
  check({}, {ins(u64_str(5), 50)}, 0);
  check({ins(u64_str(5))}, {ins(u64_str(6), 60), ins("x", 7)}, 0);
  check({ins(u64_str(5))}, {ins(u64_str(6), 60)}, kNoLC);
  std::vector<KvOp> four;
  for (unsigned i = 0; i < 4; ++i) four.push_back(ins(u64_str(0xab00 + i * 3), i));
  check(four, {ins(u64_str(0xab00 + 500), 1)}, 0);
  std::vector<KvOp> three = arrays_under_node(3);
  const KvOp last = three.back();
  three.pop_back();
  check(three, {last}, 0);
  for (unsigned n : {3u, 4u, 48u, 100u}) check(node_with(n, 2), {ins(child_key(n, 2), 7)}, kNoLC);
  check(arrays_under_node(3), {ins(group_key(3, 1), 7), ins(group_key(1, 2), 8)}, 0);
  check(arrays_under_node(4), {ins(group_key(4, 0), 7)}, 0);
  std::vector<KvOp> shrink;
  for (unsigned i = 0; i < 8; ++i) shrink.push_back(ins(u64_str(0xab00 + i), i));
  for (unsigned i = 8; i-- > 3;) shrink.push_back(rem(u64_str(0xab00 + i)));
  check(shrink, {rem(u64_str(0xab00)), rem(u64_str(0xab00 + 1))}, 0);
  std::vector<KvOp> grown = node_with(5);
  grown.push_back(rem(child_key(4)));
  check(grown, {rem(child_key(0)), rem(child_key(2))}, kNoLC);
  for (std::uint64_t flags : {std::uint64_t{0}, std::uint64_t{kNoLC}})
    check({ins("abc"), ins("abd")}, {ins("ab", 7), ups("ab", 8), rem("ab")}, flags);
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;
  check({ins(u64_str(a)), ins(u64_str(b)), ins(u64_str(0x1bcdef0123456700ull))},
        {ins(u64_str(a ^ (1ull << 40)), 4)}, kNoLC);
  check({ins(u64_str(a)), ins(u64_str(b))}, {ins(u64_str(a ^ (0x10ull << 48)), 4)},
        kNoLC | roart::kNoMinimalOrder);
  check({ins(u64_str(7))}, {rem(u64_str(7))}, 0);
  check({ins(u64_str(7)), ins(u64_str(8))}, {rem(u64_str(7)), rem(u64_str(8))}, 0);
  check(arrays_under_node(3), {rem(group_key(0, 0)), rem(u64_str(0x100))}, 0);
  check(node_with(3), {rem(child_key(1))}, kNoLC);
  check({ins(u64_str(0xf000000000000000ull)), ins(u64_str(0x1100)), ins(u64_str(0x1101)),
         ins(u64_str(0x2200))},
        {rem(u64_str(0x2200)), rem(u64_str(0x1101))}, kNoLC);
  check({ins("ab"), ins("abc"), ins("abd")}, {rem("ab"), rem("abc")}, kNoLC);
}

// Larger trees, sampled: a mixed batch over keys of several generators, each variant.
TEST(RoartCrash, SampledMixedOperations) {
  for (std::uint64_t flags : {std::uint64_t{0}, std::uint64_t{kNoLC},
                              std::uint64_t{roart::kNoEntryCompression | roart::kNoSelectivePersist}}) {
#if defined(__SANITIZE_ADDRESS__)  // ASan: two of the three key sets (105 s of make test)
    for (Gen g : {Gen::random_u64, Gen::prefix_chains}) {
#else
    for (Gen g : {Gen::random_u64, Gen::shared_prefix, Gen::prefix_chains}) {
#endif
      SCOPED_TRACE(std::string(to_string(g)) + " flags " + std::to_string(flags));
      const MixedBatch b = sampled_mix(make_keys(g, 200, 11), 150, 32);
      crashsim::Options o;
      o.seed = 3;
      o.exhaustive_cap = 16;
      o.random_samples = 4;
      EXPECT_CLEAN(run(b.setup, b.ops, flags, sanitizer_sample(o)));
    }
  }
}

// A random mix of upserts and removes over 5000 keys; killed after 20000 acknowledged
// operations; reopened, checked, verified and audited.
TEST(RoartCrash, ReopenAfterKill9) {
  kill_and_reopen({factory(0), make_keys(Gen::random_bytes, 5000, 17),
                   random_upserts_and_removes(5000)});
}

// Regression: a used Zentry whose reference is null. The above-4-GiB crash test's
// split-commit mutant of the prefix split (the parent's Zentry written as two 4-byte
// stores) left one: the new word's high half (used byte, key byte, the new N4's offset
// below 2^32: 0) over the old word's low half (the old node sat at exactly 2^32: 0). A
// damaged pool can hold the same word. open()'s checked walk skipped the null child and
// passed; the first scan then followed it to pool offset 0 and died (RECOVERY_CRASHED).
// Built here directly: open() must refuse it, and open_instant's checked readers (the walk
// held) must not follow it either.
TEST(RoartDamage, UsedZentryWithNullReferenceIsRefused) {
  PoolOptions po;
  po.size = 4u << 20;
  po.kind = std::string(Roart::kKind);
  auto pool = Pool::create_in_memory(po);
  ASSERT_TRUE(pool);
  IndexOptions io;
  io.words[0] = kNoLC;  // bare leaves: the root is an N4 branching on byte 0
  auto t = Roart::create(**pool, io);
  ASSERT_TRUE(t);
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;
  for (std::uint64_t k : {a, b, std::uint64_t{0x1bcdef0123456700ull}})
    ASSERT_EQ((*t)->insert(as_key(u64_str(k)), k & 0xff), Status::ok);
  t->reset();
  // A copy of the image (64-aligned, as Pool::attach wants), the root's 0xab Zentry torn.
  const std::size_t size = (*pool)->size();
  std::unique_ptr<std::byte, decltype(&std::free)> img(
      static_cast<std::byte*>(std::aligned_alloc(64, size)), &std::free);
  ASSERT_NE(img, nullptr);
  std::memcpy(img.get(), (*pool)->base(), size);
  auto anchor = kit::open_anchor<roart::Anchor>(**pool, Roart::kKind, roart::kAnchorMagic);
  ASSERT_TRUE(anchor);
  const roart::Ref root = (*anchor)->root;
  ASSERT_TRUE(roart::is_node(root));
  const std::uint64_t node_off = roart::ref_offset(root);
  const auto* n = reinterpret_cast<const roart::NodeBase*>(img.get() + node_off);
  ASSERT_EQ(n->type, roart::NodeType::n4);
  auto* e = reinterpret_cast<std::uint64_t*>(img.get() + node_off +
                                             roart::node_bytes(n->type) -
                                             8 * roart::node_capacity(n->type));
  unsigned torn = 0;
  for (unsigned i = 0; i < roart::node_capacity(n->type); ++i)
    if (e[i] != 0 && roart::zentry_byte(e[i]) == 0xab) {
      e[i] = roart::make_zentry(0xab, roart::kNull);
      ++torn;
    }
  ASSERT_EQ(torn, 1u);
  {
    auto p = Pool::attach({img.get(), size}, Roart::kKind);
    ASSERT_TRUE(p);
    auto r = Roart::open(**p);
    ASSERT_FALSE(r) << "open passed a used Zentry with a null reference";
    EXPECT_EQ(r.error().code, Status::corrupt);
    EXPECT_NE(r.error().message.find("bad Zentry"), std::string::npos) << r.error().message;
  }
  {
    // The instant restart, its walk held: readers take the checked paths meanwhile.
    auto p = Pool::attach({img.get(), size}, Roart::kKind);
    ASSERT_TRUE(p);
    roart::g_hold_instant_check.store(true);
    auto r = Roart::open_instant(**p);
    ASSERT_TRUE(r);
    std::size_t seen = 0;
    (*r)->scan({}, 10, [&](Key, Value) { ++seen; return true; });
    EXPECT_EQ(seen, 0u);  // checked_node refuses the root, as the walk does
    EXPECT_FALSE((*r)->lookup(as_key(u64_str(a))));
    roart::g_hold_instant_check.store(false);
    auto w = (*r)->wait_trace();
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().code, Status::corrupt);
  }
}

}  // namespace
}  // namespace wort::test
