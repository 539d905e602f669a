// Differential tests: WORT against std::map (tests/support/diff_harness.h), with every key
// generator of tests/support/keygen.h and the WORT paper's Dense / Sparse / Clustered sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "index/wort/wort_tree.h"
#include "support/diff_harness.h"
#include "support/diff_scripts.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

DiffChecker make_checker(std::uint64_t pool = 256ull << 20) {
  return DiffChecker(crashsim::factory_of<WortTree>(), pool);
}

class WortDiffGen : public ::testing::TestWithParam<Gen> {};

// Insert in generator order, then a mixed phase (removes, upserts, updates, re-inserts,
// lookups of absent keys), checking the whole contents after each phase and after reopen.
TEST_P(WortDiffGen, MatchesStdMap) {
  const Gen g = GetParam();
  const std::size_t n = g == Gen::long_keys ? 600 : 4000;
  const std::uint64_t seed = 7;
  SCOPED_TRACE("generator " + std::string(to_string(g)) + " seed " + std::to_string(seed));
  auto keys = make_keys(g, n, seed);
  auto c = make_checker();
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
  // drain completely, then refill: merges all the way up to an empty tree
  for (const auto& k : keys) c.remove(k);
  ASSERT_TRUE(c.check(seed + 3));
  EXPECT_EQ(c.index().stats().keys, 0u);
  for (std::size_t i = 0; i < keys.size(); i += 2) c.insert(keys[i], i);
  ASSERT_TRUE(c.check(seed + 4));
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, WortDiffGen, ::testing::ValuesIn(kAllGens),
                         [](const auto& info) { return std::string(to_string(info.param)); });

class WortDiffPaper : public ::testing::TestWithParam<Dist> {};

// The paper's sets (paper_key_count(): 1M keys, 100k under ASan or WORT_TEST_SCALE=small) in
// random order, with removes mixed in:
// after every 4th insert one earlier key is removed, and every 16th a removed one returns.
TEST_P(WortDiffPaper, RandomOrderWithRemoves) {
  const Dist d = GetParam();
  const std::size_t n = paper_key_count();
  const std::uint64_t seed = 42;
  SCOPED_TRACE("set " + std::string(to_string(d)) + " n " + std::to_string(n));
  const auto ints = paper_keys(d, n, seed);
  auto c = make_checker(256ull << 20);
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
  std::cout << "[wort] " << to_string(d) << ": " << s.keys << " keys, avg leaf depth "
            << s.avg_leaf_depth << ", max " << s.max_leaf_depth << "\n";
  c.reopen();
  ASSERT_TRUE(c.check(seed + 1, 2));
}

INSTANTIATE_TEST_SUITE_P(PaperSets, WortDiffPaper,
                         ::testing::Values(Dist::dense, Dist::sparse, Dist::clustered),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Keys that are prefixes of each other, with embedded zero bytes, up to 1 KiB, removed in an
// order that forces merges of end_child slots at every level.
TEST(WortDiff, PrefixChainsUpToOneKiB) {
  auto c = make_checker();
  std::vector<std::string> keys;
  std::string k;
  for (int i = 0; i < 1024; ++i) {
    k.push_back(static_cast<char>(i % 3 == 0 ? 0 : 'a' + i % 5));
    if (i % 7 == 0 || i > 1000) keys.push_back(k);
  }
  keys.push_back("");  // the empty key ends at the root
  for (std::size_t i = 0; i < keys.size(); ++i) c.insert(keys[i], i);
  ASSERT_TRUE(c.check(3));
  for (std::size_t i = 0; i < keys.size(); i += 3) c.remove(keys[i]);
  ASSERT_TRUE(c.check(4));
  c.reopen();
  for (std::size_t i = 1; i < keys.size(); i += 3) c.remove(keys[i]);
  ASSERT_TRUE(c.check(5));
}

// Through the registry and the type-erased handle, as the bench and the server use it.
TEST(WortDiff, RegisteredUnderKindWort) {
  const auto kinds = Index::kinds();
  ASSERT_NE(std::find(kinds.begin(), kinds.end(), "wort"), kinds.end());
  PoolOptions o;
  o.size = 8u << 20;
  o.kind = "wort";
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool) << pool.error().message;
  auto ix = Index::create(**pool, "wort");
  ASSERT_TRUE(ix) << ix.error().message;
  EXPECT_EQ((*ix)->kind(), "wort");
  EXPECT_EQ((*ix)->insert(as_key(std::string("k")), 1), Status::ok);
  ix->reset();
  auto again = Index::open(**pool);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ((*again)->lookup(as_key(std::string("k"))), std::optional<Value>(1));
}

TEST(WortDiff, RejectsOverlongKeys) {
  auto c = make_checker();
  const std::string big(kMaxKeyLength + 1, 'x');
  EXPECT_EQ(c.index().insert(as_key(big), 1), Status::invalid_argument);
  const std::string max(kMaxKeyLength, 'x');
  c.insert(max, 2);
  c.insert(max.substr(0, 100), 3);
  EXPECT_TRUE(c.check(9));
}

}  // namespace
}  // namespace wort::test
