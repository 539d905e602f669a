// Differential tests: FAST&FAIR against std::map (tests/support/diff_harness.h), with every
// key generator, the paper's Dense / Sparse / Clustered sets with removes (1M keys, 100k
// under ASan or WORT_TEST_SCALE=small), and the smallest node size (256 B, 14 records) so
// small runs reach several levels.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "index/fastfair/fastfair_tree.h"
#include "support/diff_harness.h"
#include "support/diff_scripts.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int kMixSteps = 4000, kMixCheckEvery = 2000;  // ASan: a third of the work
#else
constexpr int kMixSteps = 12'000, kMixCheckEvery = 3000;
#endif

crashsim::Factory fastfair_with(std::uint64_t node_size) {
  return crashsim::Factory{
      "fastfair",
      [node_size](Pool& p) {
        IndexOptions o;
        o.words[0] = node_size;
        return adapt<FastFairTree>(FastFairTree::create(p, o));
      },
      [](Pool& p) { return adapt<FastFairTree>(FastFairTree::open(p)); }};
}

struct GenAndSize {
  Gen gen;
  std::uint64_t node_size;
};

class FastFairDiffGen : public ::testing::TestWithParam<GenAndSize> {};

TEST_P(FastFairDiffGen, InsertUpsertUpdateRemoveEverything) {
  const auto [g, size] = GetParam();
  const std::size_t n = g == Gen::long_keys ? 600 : 4000;
  const std::uint64_t seed = 7;
  DiffChecker d(fastfair_with(size));
  const auto keys = make_keys(g, n, seed);
  ASSERT_NO_FATAL_FAILURE(insert_update_remove_half(d, keys, seed));
  d.reopen();
  ASSERT_TRUE(d.check(seed + 10));
  ASSERT_NO_FATAL_FAILURE(bring_back_then_remove_all(d, keys, seed));
  EXPECT_EQ(d.index().stats().keys, 0u);
}

TEST_P(FastFairDiffGen, RandomOperationMixWithReopen) {
  const auto [g, size] = GetParam();
  DiffChecker d(fastfair_with(size));
  const auto keys = make_keys(g, g == Gen::long_keys ? 200 : 1500, 9);
  ASSERT_NO_FATAL_FAILURE(random_mix(d, keys, 9, kMixSteps, kMixCheckEvery, /*reopen=*/true));
}

std::vector<GenAndSize> all_gens_two_sizes() {
  std::vector<GenAndSize> v;
  for (Gen g : kAllGens) {
    v.push_back({g, 512});
    v.push_back({g, 256});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, FastFairDiffGen, ::testing::ValuesIn(all_gens_two_sizes()),
                         [](const auto& info) {
                           return std::string(to_string(info.param.gen)) + "_" +
                                  std::to_string(info.param.node_size);
                         });

class FastFairDiffPaper : public ::testing::TestWithParam<Dist> {};

// The paper's sets in random order, with removes mixed in: after every 4th insert one
// earlier key is removed, and every 16th a removed one returns.
TEST_P(FastFairDiffPaper, RandomOrderWithRemoves) {
  const Dist dist = GetParam();
  const std::size_t n = paper_key_count();
  const std::uint64_t seed = 42;
  const auto ints = paper_keys(dist, n, seed);
  DiffChecker c(fastfair_with(512));
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
  std::cout << "[fastfair] " << to_string(dist) << ": " << s.keys << " keys, height "
            << s.max_leaf_depth << ", leaves " << s.nodes.at("leaf") << "\n";
  c.reopen();
  ASSERT_TRUE(c.check(seed + 1, 2));
}

INSTANTIATE_TEST_SUITE_P(PaperSets, FastFairDiffPaper,
                         ::testing::Values(Dist::dense, Dist::sparse, Dist::clustered),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Inline-key edge cases: keys that are prefixes of each other, trailing and embedded zero
// bytes, the empty key, 8-byte keys beginning 0xffff (not inline: they would collide with
// key-block words), all mixed with inline 8-byte keys around them.
TEST(FastFairDiff, InlineKeyEdgeCases) {
  DiffChecker c(fastfair_with(256));
  std::vector<std::string> keys = {"", std::string(1, '\0'), std::string(2, '\0'),
                                   std::string(8, '\0'), std::string(9, '\0'), "a",
                                   std::string("a\0", 2), std::string("a\0\0\0\0\0\0\0", 8),
                                   std::string("a\0\0\0\0\0\0\0\0", 9), "abcdefgh", "abcdefg",
                                   "abcdefghi", std::string(8, '\xff'), std::string(7, '\xff'),
                                   std::string("\xff\xff\0\0\0\0\0\0", 8),
                                   std::string("\xff\xfe\xff\xff\xff\xff\xff\xff", 8),
                                   std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8)};
  for (std::uint64_t i = 0; i < 300; ++i) keys.push_back(u64_str(i * 0x0101010101010101ull));
  for (std::size_t i = 0; i < keys.size(); ++i) c.insert(keys[i], i);
  ASSERT_TRUE(c.check(1));
  for (std::size_t i = 0; i < keys.size(); i += 2) c.remove(keys[i]);
  ASSERT_TRUE(c.check(2));
  c.reopen();
  for (std::size_t i = 0; i < keys.size(); i += 2) c.insert(keys[i], i + 1000);
  ASSERT_TRUE(c.check(3));
}

TEST(FastFairDiff, RegisteredUnderKindFastfair) {
  const auto kinds = Index::kinds();
  ASSERT_NE(std::find(kinds.begin(), kinds.end(), "fastfair"), kinds.end());
  PoolOptions o;
  o.size = 8u << 20;
  o.kind = "fastfair";
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool) << pool.error().message;
  auto ix = Index::create(**pool, "fastfair");
  ASSERT_TRUE(ix) << ix.error().message;
  EXPECT_EQ((*ix)->insert(as_key(std::string("k")), 1), Status::ok);
  ix->reset();
  auto again = Index::open(**pool);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ((*again)->lookup(as_key(std::string("k"))), std::optional<Value>(1));
}

TEST(FastFairDiff, RejectsOverlongKeysAndBadNodeSizes) {
  DiffChecker c(fastfair_with(512));
  const std::string big(kMaxKeyLength + 1, 'x');
  EXPECT_EQ(c.index().insert(as_key(big), 1), Status::invalid_argument);
  const std::string max(kMaxKeyLength, 'x');
  c.insert(max, 2);
  c.insert(max.substr(0, 100), 3);
  EXPECT_TRUE(c.check(9));
  for (std::uint64_t bad : {100ull, 192ull, 520ull, 8192ull}) {
    PoolOptions o;
    o.size = 8u << 20;
    o.kind = "fastfair";
    auto pool = Pool::create_in_memory(o);
    ASSERT_TRUE(pool);
    IndexOptions io;
    io.words[0] = bad;
    auto t = FastFairTree::create(**pool, io);
    ASSERT_FALSE(t) << bad;
    EXPECT_EQ(t.error().code, Status::invalid_argument);
  }
}

}  // namespace
}  // namespace wort::test
