// WOART and ART+CoW (one test file over both trees, tests/support/pmart_trees.h) against
// std::map (tests/support/diff_harness.h): every key generator, random operation mixes with
// reopen (recovery on a copy of the pool), and the WORT paper's Dense, Sparse and Clustered
// sets at 1M keys with removes mixed in (100k under ASan or with WORT_TEST_SCALE=small).
// Test names carry the tree: AllGenerators/DiffGen.*/woart_random_u64, PmartIndex/artcow.*.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <ostream>
#include <map>
#include <vector>
#include <cstdlib>
#include <random>
#include <string>

#include "crashsim/harness.h"
#include "pm/allocator.h"
#include "support/diff_harness.h"
#include "support/diff_scripts.h"
#include "support/keygen.h"
#include "support/pmart_trees.h"

namespace wort {
namespace {

using test::DiffChecker;
using test::Gen;

//! One tree and one key source: the parameter of the value-parameterised tests below.
template <class Source>
struct TreeCase {
  crashsim::Factory tree;
  Source source;
  friend void PrintTo(const TreeCase& c, std::ostream* os) {
    *os << c.tree.kind << "/" << test::to_string(c.source);
  }
};

//! Every pmart tree crossed with every source, trees outermost.
template <class Source>
std::vector<TreeCase<Source>> cases(const std::vector<Source>& sources) {
  std::vector<TreeCase<Source>> out;
  for (const auto& f : test::pmart_factories())
    for (Source s : sources) out.push_back({f, s});
  return out;
}

template <class Source>
std::string case_name(const ::testing::TestParamInfo<TreeCase<Source>>& info) {
  return info.param.tree.kind + "_" + std::string(test::to_string(info.param.source));
}

DiffChecker make_checker(const crashsim::Factory& tree, std::uint64_t pool = 256ull << 20) {
  return DiffChecker(tree, pool);
}

class DiffGen : public ::testing::TestWithParam<TreeCase<Gen>> {};

TEST_P(DiffGen, InsertUpsertUpdateRemoveEverything) {
  const std::uint64_t seed = 42;
  SCOPED_TRACE("generator " + std::string(test::to_string(GetParam().source)) + " seed 42");
  const auto keys = test::make_keys(GetParam().source, 3000, seed);
  DiffChecker d = make_checker(GetParam().tree, 64ull << 20);
  ASSERT_NO_FATAL_FAILURE(test::insert_update_remove_half(d, keys, seed));
  d.reopen();
  ASSERT_TRUE(d.check(seed + 5));
  ASSERT_NO_FATAL_FAILURE(test::bring_back_then_remove_all(d, keys, seed));
  EXPECT_EQ(d.index().stats().keys, 0u);
  // Only the anchor and remove's reserve (at most one spare per node type) are left: the
  // tree is empty and the audit finds nothing allocated that the index does not reach, so
  // every node and leaf went back to the allocator.
  const auto audit = d.pool().allocator().audit(
      [&](pm::BlockVisitor bv) { return d.index().visit_blocks(bv); });
  EXPECT_TRUE(audit.ok()) << audit.describe();
  EXPECT_LE(d.pool().allocator().stats().blocks_allocated, 1u + 4u);
}

TEST_P(DiffGen, RandomOperationMixWithReopen) {
  const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(GetParam().source);
  SCOPED_TRACE("generator " + std::string(test::to_string(GetParam().source)) + " seed " +
               std::to_string(seed));
  // A small key universe, so inserts, updates and removes keep hitting present keys.
  const auto keys = test::make_keys(GetParam().source, 400, seed);
  DiffChecker d = make_checker(GetParam().tree, 64ull << 20);
  ASSERT_NO_FATAL_FAILURE(test::random_mix(d, keys, seed, 20'000, 5000, /*reopen=*/true));
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, DiffGen,
                         ::testing::ValuesIn(cases(std::vector<Gen>(std::begin(test::kAllGens),
                                                                    std::end(test::kAllGens)))),
                         case_name<Gen>);

class PaperKeys : public ::testing::TestWithParam<TreeCase<test::Dist>> {};

// The paper's set in random order with a remove after every 8th insert, full comparison,
// then half removed and compared again.
TEST_P(PaperKeys, BuildWithRemovesThenRemoveHalf) {
  const std::size_t n = test::paper_key_count();
  const auto ints = test::paper_keys(GetParam().source, n, 7);
  std::mt19937_64 rng(7);
  DiffChecker d = make_checker(GetParam().tree);
  for (std::size_t i = 0; i < ints.size(); ++i) {
    d.insert(test::u64_str(ints[i]), ints[i] ^ i);
    if (i % 8 == 7) d.remove(test::u64_str(ints[rng() % (i + 1)]));
  }
  ASSERT_TRUE(d.check(7, 16));
  const IndexStats s = d.index().stats();
  EXPECT_EQ(s.keys, d.reference().size());
  std::printf("[%s %s n=%zu] avg leaf depth %.3f, max %llu, %.1f PM bytes/key\n",
              GetParam().tree.kind.c_str(),
              std::string(test::to_string(GetParam().source)).c_str(), n, s.avg_leaf_depth,
              static_cast<unsigned long long>(s.max_leaf_depth),
              static_cast<double>(s.pm_bytes) / static_cast<double>(s.keys));
  for (std::size_t i = 0; i < ints.size(); i += 2) d.remove(test::u64_str(ints[i]));
  ASSERT_TRUE(d.check(8, 16));
}

INSTANTIATE_TEST_SUITE_P(Dists, PaperKeys,
                         ::testing::ValuesIn(cases<test::Dist>(
                             {test::Dist::dense, test::Dist::sparse, test::Dist::clustered})),
                         case_name<test::Dist>);

template <class Tree>
class PmartIndex : public ::testing::Test {};
TYPED_TEST_SUITE(PmartIndex, test::PmartTrees, test::KindName);

TYPED_TEST(PmartIndex, RegisteredAndRefusesAnotherKind) {
  using Tree = TypeParam;
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

TYPED_TEST(PmartIndex, KeyLongerThanTheLimitIsRejected) {
  DiffChecker d = make_checker(crashsim::factory_of<TypeParam>(), 8ull << 20);
  const std::string huge(70'000, 'x');
  EXPECT_EQ(d.index().insert(as_key(huge), 1), Status::invalid_argument);
  EXPECT_FALSE(d.index().lookup(as_key(huge)).has_value());
}

// Keys far longer than 4 KiB sharing long prefixes: compressed paths of thousands of bytes
// (16-bit depth and path length), end-of-key slots, splits deep inside a path.
TYPED_TEST(PmartIndex, VeryLongKeysWithLongSharedPaths) {
  DiffChecker d = make_checker(crashsim::factory_of<TypeParam>(), 64ull << 20);
  std::mt19937_64 rng(99);
  const std::string base(9000, 'p');
  std::vector<std::string> keys;
  for (int i = 0; i < 200; ++i) {
    std::string k = base.substr(0, 1000 + rng() % 8000);
    const std::size_t tail = rng() % 3000;
    for (std::size_t j = 0; j < tail; ++j) k.push_back(static_cast<char>(rng() % 3));
    keys.push_back(std::move(k));
  }
  for (std::size_t i = 0; i < keys.size(); ++i) d.upsert(keys[i], i);
  ASSERT_TRUE(d.check(1, 32));
  for (std::size_t i = 0; i < keys.size(); i += 3) d.remove(keys[i]);
  ASSERT_TRUE(d.check(2, 32));
  d.reopen();
  ASSERT_TRUE(d.check(3, 32));
}

// Running out of pool space is a Status; the tree stays consistent and keeps every
// acknowledged key, and works again once space is freed.
TYPED_TEST(PmartIndex, OutOfSpaceLeavesTheTreeConsistent) {
  DiffChecker d(crashsim::factory_of<TypeParam>(), 2ull << 20, 64u << 10);
  std::map<std::string, Value> acked;
  std::mt19937_64 rng(5);
  Status s = Status::ok;
  std::size_t failures = 0;
  for (int i = 0; i < 200'000 && failures < 50; ++i) {
    std::string k = test::u64_str(rng());
    if (i % 3 == 0) k += std::string(rng() % 300, 'v');
    s = d.index().insert(as_key(k), i);
    if (s == Status::ok) {
      acked[k] = i;
    } else {
      ASSERT_EQ(s, Status::out_of_space) << "insert " << i;
      ++failures;
    }
  }
  ASSERT_GT(failures, 0u) << "the pool never filled up";
  auto v = d.index().verify();
  ASSERT_TRUE(v.ok()) << v.error().message;
  for (const auto& [k, val] : acked) ASSERT_EQ(d.index().lookup(as_key(k)), std::optional<Value>(val));
  const auto audit =
      d.pool().allocator().audit([&](pm::BlockVisitor bv) { return d.index().visit_blocks(bv); });
  EXPECT_TRUE(audit.ok()) << audit.describe();
  std::size_t removed = 0;
  const std::size_t half = acked.size() / 2;
  for (auto it = acked.begin(); it != acked.end() && removed < half; ++removed) {
    ASSERT_EQ(d.index().remove(as_key(it->first)), Status::ok);
    it = acked.erase(it);
  }
  EXPECT_EQ(d.index().insert(as_key(std::string("fits-again")), 1), Status::ok);
  v = d.index().verify();
  EXPECT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(d.index().stats().keys, acked.size() + 1);
}

}  // namespace
}  // namespace wort
