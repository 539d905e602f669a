// Differential tests: FPTree against std::map (tests/support/diff_harness.h), with every key
// generator of tests/support/keygen.h, the WORT paper's Dense / Sparse / Clustered sets, small
// leaves and inner nodes (many splits and leaf unlinks), forced fingerprint collisions, and
// keys that are prefixes of others or carry embedded / trailing zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "index/fptree/fptree_tree.h"
#include "support/diff_harness.h"
#include "support/diff_scripts.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

//! An FPTree factory with create options: leaf capacity, inner fanout, hash (1 = constant),
//! leaves per leaf group (0 = no groups).
crashsim::Factory fptree_with(std::uint64_t leaf, std::uint64_t fanout, std::uint64_t hash = 0,
                              std::uint64_t group = 0) {
  return crashsim::Factory{
      "fptree",
      [=](Pool& p) {
        IndexOptions o;
        o.words = {leaf, fanout, hash, group};
        return adapt<FPTree>(FPTree::create(p, o));
      },
      [](Pool& p) { return adapt<FPTree>(FPTree::open(p)); }};
}

struct Shape {
  const char* name;
  std::uint64_t leaf, fanout, hash, group;
};
// The paper's sizes, tiny nodes (splits and collapses at every level), and every
// fingerprint equal (the key comparison alone must decide); the first two again with leaf
// groups (App. B: 16 leaves a group; 3 with tiny leaves, so groups are got and released
// all the time).
constexpr Shape kShapes[] = {{"paper", 0, 0, 0, 0},        {"tiny", 4, 3, 0, 0},
                             {"collide", 8, 4, 1, 0},      {"paperGroups", 0, 0, 0, 16},
                             {"tinyGroups", 4, 3, 0, 3}};

class FPTreeDiffGen : public ::testing::TestWithParam<std::tuple<Gen, Shape>> {};

TEST_P(FPTreeDiffGen, MatchesStdMap) {
  const auto [g, shape] = GetParam();
  const std::size_t n = g == Gen::long_keys ? 600 : 3000;
  const std::uint64_t seed = 7;
  SCOPED_TRACE("generator " + std::string(to_string(g)) + " shape " + shape.name + " seed " +
               std::to_string(seed));
  auto keys = make_keys(g, n, seed);
  DiffChecker c(fptree_with(shape.leaf, shape.fanout, shape.hash, shape.group));
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
  for (const auto& k : keys) c.remove(k);  // every leaf unlinked, inner nodes collapse
  ASSERT_TRUE(c.check(seed + 3));
  EXPECT_EQ(c.index().stats().keys, 0u);
  for (std::size_t i = 0; i < keys.size(); i += 2) c.insert(keys[i], i);
  ASSERT_TRUE(c.check(seed + 4));
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, FPTreeDiffGen,
                         ::testing::Combine(::testing::ValuesIn(kAllGens),
                                            ::testing::ValuesIn(kShapes)),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) + "_" +
                                  std::get<1>(info.param).name;
                         });

class FPTreeDiffPaper : public ::testing::TestWithParam<std::tuple<Dist, std::uint64_t>> {};

// The paper's sets (1M keys, 100k under ASan or WORT_TEST_SCALE=small) in random order, the
// shared insert / update / remove-half script, then a reopen.
TEST_P(FPTreeDiffPaper, InsertUpdateRemoveHalf) {
  const auto [d, group] = GetParam();
  const std::size_t n = paper_key_count();
  const std::uint64_t seed = 42;
  SCOPED_TRACE("set " + std::string(to_string(d)) + " n " + std::to_string(n) + " group " +
               std::to_string(group));
  const auto ints = paper_keys(d, n, seed);
  std::vector<std::string> keys;
  keys.reserve(ints.size());
  for (auto x : ints) keys.push_back(u64_str(x));
  DiffChecker c(fptree_with(0, 0, 0, group), 512ull << 20);
  for (std::size_t i = 0; i < keys.size(); ++i) c.insert(keys[i], i);
  for (std::size_t i = 0; i < keys.size(); i += 2) c.remove(keys[i]);
  for (std::size_t i = 1; i < keys.size(); i += 4) c.upsert(keys[i], i * 3);
  ASSERT_TRUE(c.check(seed, 4));
  const IndexStats s = c.index().stats();
  std::cout << "[fptree] " << to_string(d) << ": " << s.keys << " keys, " << s.nodes.at("leaf")
            << " leaves, inner height " << s.max_leaf_depth << ", DRAM " << s.dram_bytes
            << " B, PM " << s.pm_bytes << " B\n";
  c.reopen();
  ASSERT_TRUE(c.check(seed + 1, 2));
}

INSTANTIATE_TEST_SUITE_P(PaperSets, FPTreeDiffPaper,
                         ::testing::Combine(::testing::Values(Dist::dense, Dist::sparse,
                                                              Dist::clustered),
                                            ::testing::Values(std::uint64_t{0}, std::uint64_t{16})),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) != 0 ? "_groups" : "");
                         });

// The shared scripts (tests/support/diff_scripts.h) on small leaves.
TEST(FPTreeDiff, SharedScriptsSmallLeaves) {
  DiffChecker c(fptree_with(6, 4));
  const auto keys = make_keys(Gen::random_bytes, 5000, 3);
  ASSERT_NO_FATAL_FAILURE(insert_update_remove_half(c, keys, 3));
  ASSERT_NO_FATAL_FAILURE(bring_back_then_remove_all(c, keys, 3));
  ASSERT_NO_FATAL_FAILURE(random_mix(c, make_keys(Gen::prefix_chains, 300, 4), 5, 20000, 2000, true));
}

// Keys of 0..16 bytes that are prefixes of each other, with embedded and trailing zeros: the
// 8-byte ones are inline, the rest in key blocks, and "ab\0" must not equal "ab", nor the
// 8-byte "\0...\0" the empty key. With every fingerprint equal, only the comparison decides.
TEST(FPTreeDiff, PrefixesAndZerosInlineAndBlocks) {
  for (std::uint64_t hash : {0, 1}) {
    SCOPED_TRACE("hash " + std::to_string(hash));
    DiffChecker c(fptree_with(4, 3, hash));
    std::vector<std::string> keys;
    for (std::size_t len = 0; len <= 16; ++len) {
      keys.push_back(std::string(len, '\0'));
      keys.push_back(std::string("abcdefghijklmnop").substr(0, len));
      std::string z = std::string("ab") + std::string(len, '\0');
      keys.push_back(z);
      keys.push_back(std::string(len, '\xff'));
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (std::size_t i = 0; i < keys.size(); ++i) c.insert(keys[i], i);
    ASSERT_TRUE(c.check(1));
    for (std::size_t i = 0; i < keys.size(); i += 3) c.remove(keys[i]);
    for (std::size_t i = 1; i < keys.size(); i += 3) c.update(keys[i], i + 100);
    ASSERT_TRUE(c.check(2));
    c.reopen();
    ASSERT_TRUE(c.check(3));
  }
}

TEST(FPTreeDiff, RegisteredUnderKindFptree) {
  const auto kinds = Index::kinds();
  ASSERT_NE(std::find(kinds.begin(), kinds.end(), "fptree"), kinds.end());
  PoolOptions o;
  o.size = 8u << 20;
  o.kind = "fptree";
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool) << pool.error().message;
  auto ix = Index::create(**pool, "fptree");
  ASSERT_TRUE(ix) << ix.error().message;
  EXPECT_EQ((*ix)->insert(as_key(std::string("k")), 1), Status::ok);
  ix->reset();
  auto again = Index::open(**pool);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ((*again)->lookup(as_key(std::string("k"))), std::optional<Value>(1));
}

TEST(FPTreeDiff, RejectsOverlongKeysAndBadOptions) {
  DiffChecker c(fptree_with(0, 0));
  const std::string big(kMaxKeyLength + 1, 'x');
  EXPECT_EQ(c.index().insert(as_key(big), 1), Status::invalid_argument);
  c.insert(std::string(kMaxKeyLength, 'x'), 2);
  EXPECT_TRUE(c.check(9));
  PoolOptions o;
  o.size = 8u << 20;
  o.kind = "fptree";
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool);
  IndexOptions bad;
  bad.words = {65, 0, 0, 0};
  EXPECT_EQ(FPTree::create(**pool, bad).status(), Status::invalid_argument);
  bad.words = {0, 2, 0, 0};
  EXPECT_EQ(FPTree::create(**pool, bad).status(), Status::invalid_argument);
  bad.words = {0, 0, 0, 1025};  // leaves per group
  EXPECT_EQ(FPTree::create(**pool, bad).status(), Status::invalid_argument);
}

}  // namespace
}  // namespace wort::test
