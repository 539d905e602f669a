// ART+CoW against std::map (tests/support/diff_harness.h): every key generator, random
// operation mixes with reopen (recovery on a copy of the pool), and the WORT paper's Dense,
// Sparse and Clustered sets at 1M keys with removes mixed in (100k under ASan or with
// WORT_TEST_SCALE=small).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>

#include "crashsim/harness.h"
#include "index/artcow/artcow.h"
#include "pm/allocator.h"
#include "support/diff_harness.h"
#include "support/keygen.h"

namespace wort {
namespace {

using Tree = artcow::ArtCow;
using test::DiffChecker;
using test::Gen;

DiffChecker make_checker(std::uint64_t pool = 256ull << 20) {
  return DiffChecker(crashsim::factory_of<Tree>(), pool);
}

std::size_t paper_key_count() {
#if defined(__SANITIZE_ADDRESS__)
  return 100'000;
#else
  const char* scale = std::getenv("WORT_TEST_SCALE");
  return scale != nullptr && std::string(scale) == "small" ? 100'000 : 1'000'000;
#endif
}

class DiffGen : public ::testing::TestWithParam<Gen> {};

TEST_P(DiffGen, InsertUpsertUpdateRemoveEverything) {
  const std::uint64_t seed = 42;
  SCOPED_TRACE("generator " + std::string(test::to_string(GetParam())) + " seed 42");
  const auto keys = test::make_keys(GetParam(), 3000, seed);
  DiffChecker d = make_checker(64ull << 20);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    d.insert(keys[i], i);
    if (i % 1000 == 999) {
      ASSERT_TRUE(d.check(seed + i));
    }
  }
  for (std::size_t i = 0; i < keys.size(); i += 7) d.insert(keys[i], 0);  // all exist
  for (std::size_t i = 0; i < keys.size(); i += 2) d.upsert(keys[i], i * 3);
  for (std::size_t i = 1; i < keys.size(); i += 3) d.update(keys[i], i * 5);
  ASSERT_TRUE(d.check(seed + 1));
  for (std::size_t i = 0; i < keys.size(); i += 2) d.remove(keys[i]);
  for (std::size_t i = 0; i < keys.size(); i += 4) d.update(keys[i], 1);  // removed: not_found
  ASSERT_TRUE(d.check(seed + 2));
  d.reopen();
  ASSERT_TRUE(d.check(seed + 5));
  for (std::size_t i = 0; i < keys.size(); i += 4) d.upsert(keys[i], 7);  // some come back
  ASSERT_TRUE(d.check(seed + 3));
  for (const auto& k : keys) d.remove(k);
  for (std::size_t i = 0; i < keys.size(); i += 5) d.lookup(keys[i]);
  ASSERT_TRUE(d.check(seed + 4));
  EXPECT_EQ(d.index().stats().keys, 0u);
  // Only the anchor is left: every node and leaf went back to the allocator.
  EXPECT_EQ(d.pool().allocator().stats().blocks_allocated, 1u);
}

TEST_P(DiffGen, RandomOperationMixWithReopen) {
  const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(GetParam());
  SCOPED_TRACE("generator " + std::string(test::to_string(GetParam())) + " seed " +
               std::to_string(seed));
  // A small key universe, so inserts, updates and removes keep hitting present keys.
  const auto keys = test::make_keys(GetParam(), 400, seed);
  std::mt19937_64 rng(seed);
  DiffChecker d = make_checker(64ull << 20);
  for (int step = 0; step < 20'000; ++step) {
    const std::string& k = keys[rng() % keys.size()];
    switch (rng() % 8) {
      case 0: case 1: d.insert(k, step); break;
      case 2: d.upsert(k, step); break;
      case 3: d.update(k, step); break;
      case 4: case 5: d.remove(k); break;
      default: d.lookup(k); break;
    }
    if (step % 5000 == 4999) {
      ASSERT_TRUE(d.check(seed + step)) << "step " << step;
      d.reopen();
    }
  }
  ASSERT_TRUE(d.check(seed, 200));
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, DiffGen, ::testing::ValuesIn(test::kAllGens),
                         [](const auto& info) { return std::string(test::to_string(info.param)); });

class PaperKeys : public ::testing::TestWithParam<test::Dist> {};

// The paper's set in random order with a remove after every 8th insert, full comparison,
// then half removed and compared again.
TEST_P(PaperKeys, BuildWithRemovesThenRemoveHalf) {
  const std::size_t n = paper_key_count();
  const auto ints = test::paper_keys(GetParam(), n, 7);
  std::mt19937_64 rng(7);
  DiffChecker d = make_checker();
  for (std::size_t i = 0; i < ints.size(); ++i) {
    d.insert(test::u64_str(ints[i]), ints[i] ^ i);
    if (i % 8 == 7) d.remove(test::u64_str(ints[rng() % (i + 1)]));
  }
  ASSERT_TRUE(d.check(7, 16));
  const IndexStats s = d.index().stats();
  EXPECT_EQ(s.keys, d.reference().size());
  std::printf("[%s %s n=%zu] avg leaf depth %.3f, max %llu, %.1f PM bytes/key\n",
              std::string(Tree::kKind).c_str(), std::string(test::to_string(GetParam())).c_str(),
              n, s.avg_leaf_depth, static_cast<unsigned long long>(s.max_leaf_depth),
              static_cast<double>(s.pm_bytes) / static_cast<double>(s.keys));
  for (std::size_t i = 0; i < ints.size(); i += 2) d.remove(test::u64_str(ints[i]));
  ASSERT_TRUE(d.check(8, 16));
}

INSTANTIATE_TEST_SUITE_P(Dists, PaperKeys,
                         ::testing::Values(test::Dist::dense, test::Dist::sparse,
                                           test::Dist::clustered),
                         [](const auto& info) { return std::string(test::to_string(info.param)); });

TEST(Index, RegisteredAndRefusesAnotherKind) {
  const auto kinds = Index::kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), std::string(Tree::kKind)), kinds.end());
  PoolOptions o;
  o.size = 8ull << 20;
  o.kind = "wort";
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  auto t = Tree::create(**pool, IndexOptions{});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status(), Status::wrong_kind);
}

TEST(Index, KeyLongerThanTheLimitIsRejected) {
  DiffChecker d = make_checker(8ull << 20);
  const std::string huge(70'000, 'x');
  EXPECT_EQ(d.index().insert(as_key(huge), 1), Status::invalid_argument);
  EXPECT_FALSE(d.index().lookup(as_key(huge)).has_value());
}

}  // namespace
}  // namespace wort
