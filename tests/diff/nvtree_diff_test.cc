// Differential tests: NV-Tree against std::map (tests/support/diff_harness.h), with every key
// generator of tests/support/keygen.h, at the default node sizes and at the smallest
// (4-entry leaves, 4-leaf PLNs, fanout-4 INs: splits, compactions and whole rebuilds on
// almost every operation), and the WORT paper's
// Dense / Sparse / Clustered sets with removes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "index/nvtree/nvtree_tree.h"
#include "support/diff_harness.h"
#include "support/diff_scripts.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

crashsim::Factory nvtree_with(std::uint64_t leaf, std::uint64_t inner) {
  IndexOptions o;
  o.words[0] = leaf;
  o.words[1] = inner;
  o.words[2] = inner;
  return crashsim::Factory{"nvtree",
                           [o](Pool& p) { return adapt<NvTree>(NvTree::create(p, o)); },
                           [](Pool& p) { return adapt<NvTree>(NvTree::open(p)); }};
}

struct Shape {
  std::uint64_t leaf, inner;
};

class NvTreeDiffGen : public ::testing::TestWithParam<std::tuple<Gen, int>> {};

// Insert in generator order, a mixed phase, reopen, drain completely, refill.
TEST_P(NvTreeDiffGen, MatchesStdMap) {
  const auto [g, shape_i] = GetParam();
  const Shape shape = shape_i == 0 ? Shape{0, 0} : Shape{4, 4};
  const std::size_t n = g == Gen::long_keys ? 600 : 3000;
  const std::uint64_t seed = 7;
  SCOPED_TRACE("generator " + std::string(to_string(g)) + " seed " + std::to_string(seed));
  auto keys = make_keys(g, n, seed);
  DiffChecker c(nvtree_with(shape.leaf, shape.inner), 256ull << 20);
  for (std::size_t i = 0; i < keys.size(); ++i) c.insert(keys[i], i);
  ASSERT_TRUE(c.check(seed));
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string& k = keys[rng() % keys.size()];
    switch (rng() % 6) {
      case 0:
      case 1: c.remove(k); break;
      case 2: c.upsert(k, rng()); break;
      case 3: c.update(k, rng()); break;
      case 4: c.insert(k, i); break;
      case 5: c.lookup(k + std::string(1, '\0')); break;
    }
  }
  ASSERT_TRUE(c.check(seed + 1));
  c.reopen();
  ASSERT_TRUE(c.check(seed + 2));
  for (const auto& k : keys) c.remove(k);
  ASSERT_TRUE(c.check(seed + 3));
  EXPECT_EQ(c.index().stats().keys, 0u);
  for (std::size_t i = 0; i < keys.size(); i += 2) c.insert(keys[i], i);
  ASSERT_TRUE(c.check(seed + 4));
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, NvTreeDiffGen,
                         ::testing::Combine(::testing::ValuesIn(kAllGens), ::testing::Values(0, 1)),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_cap4" : "_default");
                         });

class NvTreeDiffPaper : public ::testing::TestWithParam<Dist> {};

// The paper's sets (1M keys; 100k under ASan or WORT_TEST_SCALE=small) in random order:
// after every 4th insert one earlier key is removed, every 16th a removed one returns.
TEST_P(NvTreeDiffPaper, RandomOrderWithRemoves) {
  const Dist d = GetParam();
  const std::size_t n = paper_key_count();
  const std::uint64_t seed = 42;
  const auto ints = paper_keys(d, n, seed);
  DiffChecker c(nvtree_with(0, 0), 512ull << 20);
  std::mt19937_64 rng(seed);
  std::vector<std::string> removed;
  for (std::size_t i = 0; i < ints.size(); ++i) {
    c.insert(u64_str(ints[i]), ints[i] ^ 0x5555);
    if (i % 4 == 3) {
      const std::string victim = u64_str(ints[rng() % (i + 1)]);
      c.remove(victim);
      removed.push_back(victim);
    }
    if (i % 16 == 15 && !removed.empty()) c.insert(removed[rng() % removed.size()], i);
  }
  ASSERT_TRUE(c.check(seed, 4));
  const IndexStats s = c.index().stats();
  std::cout << "[nvtree] " << to_string(d) << ": " << s.keys << " keys, avg leaf depth "
            << s.avg_leaf_depth << ", max " << s.max_leaf_depth << ", leaves " << s.nodes.at("leaf")
            << ", PLNs " << s.nodes.at("pln") << ", INs " << s.nodes.at("in") << ", rebuilds "
            << s.nodes.at("rebuilds") << ", DRAM bytes " << s.dram_bytes << "\n";
  c.reopen();
  ASSERT_TRUE(c.check(seed + 1, 2));
}

INSTANTIATE_TEST_SUITE_P(PaperSets, NvTreeDiffPaper,
                         ::testing::Values(Dist::dense, Dist::sparse, Dist::clustered),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Keys of at most 8 bytes are stored inline: their form must keep byte order and tell
// lengths apart. Prefixes of each other, embedded and trailing zero bytes, the empty key.
TEST(NvTreeDiff, ShortKeysWithZerosAndPrefixes) {
  DiffChecker c(nvtree_with(4, 4));
  std::vector<std::string> keys = {"", std::string(1, '\0'), std::string(2, '\0'),
                                   std::string(8, '\0'), std::string(9, '\0'), "a",
                                   std::string("a\0", 2), std::string("a\0\0", 3), "ab",
                                   std::string("ab\0", 3), "abcdefgh", std::string("abcdefgh\0", 9),
                                   "abcdefghi", std::string("abcdefg\0", 8), "\xff",
                                   "\xff\xff\xff\xff\xff\xff\xff\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"};
  for (std::size_t i = 0; i < keys.size(); ++i) c.insert(keys[i], i);
  ASSERT_TRUE(c.check(1));
  for (std::size_t i = 0; i < keys.size(); i += 3) c.remove(keys[i]);
  ASSERT_TRUE(c.check(2));
  c.reopen();
  for (std::size_t i = 0; i < keys.size(); i += 3) c.insert(keys[i], i + 100);
  ASSERT_TRUE(c.check(3));
}

TEST(NvTreeDiff, RejectsOverlongKeysAndBadOptions) {
  DiffChecker c(nvtree_with(0, 0));
  const std::string big(kMaxKeyLength + 1, 'x');
  EXPECT_EQ(c.index().insert(as_key(big), 1), Status::invalid_argument);
  c.insert(std::string(kMaxKeyLength, 'x'), 2);
  EXPECT_TRUE(c.check(9));
  PoolOptions po;
  po.size = 8u << 20;
  po.kind = "nvtree";
  auto pool = Pool::create_in_memory(po);
  ASSERT_TRUE(pool);
  IndexOptions o;
  o.words[0] = 5000;
  auto bad = NvTree::create(**pool, o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Status::invalid_argument);
}

TEST(NvTreeDiff, RegisteredUnderKindNvtree) {
  const auto kinds = Index::kinds();
  ASSERT_NE(std::find(kinds.begin(), kinds.end(), "nvtree"), kinds.end());
  PoolOptions o;
  o.size = 8u << 20;
  o.kind = "nvtree";
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool) << pool.error().message;
  auto ix = Index::create(**pool, "nvtree");
  ASSERT_TRUE(ix) << ix.error().message;
  EXPECT_EQ((*ix)->insert(as_key(std::string("k")), 1), Status::ok);
  ix->reset();
  auto again = Index::open(**pool);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ((*again)->lookup(as_key(std::string("k"))), std::optional<Value>(1));
}

}  // namespace
}  // namespace wort::test
