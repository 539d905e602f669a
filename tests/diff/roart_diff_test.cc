// ROART against std::map (tests/support/diff_harness.h): every key generator (8-byte and
// variable-size keys, prefixes of other keys, long keys), random operation mixes with
// reopen (recovery on a copy of the pool: every node's metadata is then stale and rebuilt
// on first touch), the WORT paper's Dense/Sparse/Clustered sets at 1M keys with removes
// (100k under ASan or WORT_TEST_SCALE=small), 4..128-byte random keys — with all mechanisms
// on, and with each of LC, EC, SMP, MO turned off by its create option.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/roart/roart_tree.h"
#include "pm/allocator.h"
#include "support/diff_harness.h"
#include "support/diff_scripts.h"
#include "support/keygen.h"

namespace wort {
namespace {

using roart::Roart;
using test::DiffChecker;
using test::Gen;

struct Variant {
  const char* name;
  std::uint64_t flags;
};
constexpr Variant kVariants[] = {{"all", 0},
                                 {"noLC", roart::kNoLeafCompaction},
                                 {"noEC", roart::kNoEntryCompression},
                                 {"noSMP", roart::kNoSelectivePersist},
                                 {"noMO", roart::kNoMinimalOrder},
                                 {"none", roart::kAllFlags}};

crashsim::Factory factory(std::uint64_t flags) {
  return {"roart",
          [flags](Pool& p) {
            IndexOptions o;
            o.words[0] = flags;
            return adapt<Roart>(Roart::create(p, o));
          },
          [](Pool& p) { return adapt<Roart>(Roart::open(p)); }};
}

template <class Source>
struct Case {
  Variant variant;
  Source source;
  friend void PrintTo(const Case& c, std::ostream* os) {
    *os << c.variant.name << "/" << test::to_string(c.source);
  }
};
template <class Source>
std::string case_name(const ::testing::TestParamInfo<Case<Source>>& info) {
  return std::string(info.param.variant.name) + "_" + std::string(test::to_string(info.param.source));
}

//! Every generator with all mechanisms on and with LC off; the other variants (which
//! change only what is written back, not the shape) on the two hardest generators.
std::vector<Case<Gen>> gen_cases() {
  std::vector<Case<Gen>> out;
  for (const Variant& v : kVariants) {
    const bool full = v.flags == 0 || v.flags == roart::kNoLeafCompaction;
    for (Gen g : test::kAllGens)
      if (full || g == Gen::prefix_chains || g == Gen::random_bytes) out.push_back({v, g});
  }
  return out;
}

class RoartDiffGen : public ::testing::TestWithParam<Case<Gen>> {};

TEST_P(RoartDiffGen, InsertUpsertUpdateRemoveEverything) {
  const std::uint64_t seed = 42;
  const auto keys = test::make_keys(GetParam().source, 3000, seed);
  DiffChecker d(factory(GetParam().variant.flags), 64ull << 20);
  ASSERT_NO_FATAL_FAILURE(test::insert_update_remove_half(d, keys, seed));
  d.reopen();
  ASSERT_TRUE(d.check(seed + 5));
  ASSERT_NO_FATAL_FAILURE(test::bring_back_then_remove_all(d, keys, seed));
  EXPECT_EQ(d.index().stats().keys, 0u);
  // Only the anchor is left: every node, array and leaf went back to the allocator.
  EXPECT_EQ(d.pool().allocator().stats().blocks_allocated, 1u);
}

TEST_P(RoartDiffGen, RandomOperationMixWithReopen) {
  const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(GetParam().source);
  const auto keys = test::make_keys(GetParam().source, 400, seed);
  DiffChecker d(factory(GetParam().variant.flags), 64ull << 20);
  ASSERT_NO_FATAL_FAILURE(test::random_mix(d, keys, seed, 20'000, 5000, /*reopen=*/true));
}

INSTANTIATE_TEST_SUITE_P(Generators, RoartDiffGen, ::testing::ValuesIn(gen_cases()),
                         case_name<Gen>);

class RoartPaperKeys : public ::testing::TestWithParam<Case<test::Dist>> {};

// The paper's set in random order with a remove after every 8th insert, full comparison,
// then half removed and compared again.
TEST_P(RoartPaperKeys, BuildWithRemovesThenRemoveHalf) {
  const std::size_t n = test::paper_key_count();
  const auto ints = test::paper_keys(GetParam().source, n, 7);
  std::mt19937_64 rng(7);
  DiffChecker d(factory(GetParam().variant.flags));
  for (std::size_t i = 0; i < ints.size(); ++i) {
    d.insert(test::u64_str(ints[i]), ints[i] ^ i);
    if (i % 8 == 7) d.remove(test::u64_str(ints[rng() % (i + 1)]));
  }
  ASSERT_TRUE(d.check(7, 16));
  const IndexStats s = d.index().stats();
  EXPECT_EQ(s.keys, d.reference().size());
  std::printf("[roart/%s %s n=%zu] avg leaf depth %.3f, max %llu, %.1f PM bytes/key\n",
              GetParam().variant.name, std::string(test::to_string(GetParam().source)).c_str(),
              n, s.avg_leaf_depth, static_cast<unsigned long long>(s.max_leaf_depth),
              static_cast<double>(s.pm_bytes) / static_cast<double>(s.keys));
  for (std::size_t i = 0; i < ints.size(); i += 2) d.remove(test::u64_str(ints[i]));
  ASSERT_TRUE(d.check(8, 16));
}

INSTANTIATE_TEST_SUITE_P(
    Dists, RoartPaperKeys,
    ::testing::Values(Case<test::Dist>{kVariants[0], test::Dist::dense},
                      Case<test::Dist>{kVariants[0], test::Dist::sparse},
                      Case<test::Dist>{kVariants[0], test::Dist::clustered},
                      Case<test::Dist>{kVariants[1], test::Dist::sparse}),
    case_name<test::Dist>);

// The paper's key shape: random bytes, 4..128 long; insert, remove a third, reopen.
TEST(RoartDiff, RandomKeys4To128Bytes) {
  const std::size_t n = test::paper_key_count() / 5;
  std::mt19937_64 rng(128);
  DiffChecker d(factory(0), 512ull << 20);
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < n; ++i) {
    std::string k(4 + rng() % 125, '\0');
    for (char& c : k) c = static_cast<char>(rng());
    keys.push_back(std::move(k));
  }
  for (std::size_t i = 0; i < n; ++i) d.upsert(keys[i], i);
  ASSERT_TRUE(d.check(1, 32));
  for (std::size_t i = 0; i < n; i += 3) d.remove(keys[i]);
  d.reopen();
  ASSERT_TRUE(d.check(2, 32));
}

TEST(RoartDiff, RegisteredRefusesAnotherKindAndBadOptions) {
  const auto kinds = Index::kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "roart"), kinds.end());
  PoolOptions o;
  o.size = 8ull << 20;
  o.kind = "wort";
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  EXPECT_EQ(Roart::create(**pool, IndexOptions{}).status(), Status::wrong_kind);
  o.kind = "roart";
  auto pool2 = Pool::create_in_memory(o);
  IndexOptions bad;
  bad.words[0] = 1u << 7;
  EXPECT_EQ(Roart::create(**pool2, bad).status(), Status::invalid_argument);
}

TEST(RoartDiff, KeyLongerThanTheLimitIsRejected) {
  DiffChecker d(factory(0), 8ull << 20);
  const std::string huge(70'000, 'x');
  EXPECT_EQ(d.index().insert(as_key(huge), 1), Status::invalid_argument);
  EXPECT_FALSE(d.index().lookup(as_key(huge)).has_value());
}

// Keys far longer than 4 KiB sharing long prefixes: compressed paths of thousands of bytes,
// eok leaves, array splits deep inside a path.
TEST(RoartDiff, VeryLongKeysWithLongSharedPaths) {
  for (std::uint64_t flags : {std::uint64_t{0}, std::uint64_t{roart::kNoLeafCompaction}}) {
    DiffChecker d(factory(flags), 64ull << 20);
    std::mt19937_64 rng(99);
    const std::string base(9000, 'p');
    std::vector<std::string> keys;
    for (int i = 0; i < 300; ++i) {
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
}

// Running out of pool space is a Status; the tree stays consistent and keeps every
// acknowledged key, and works again once space is freed.
TEST(RoartDiff, OutOfSpaceLeavesTheTreeConsistent) {
  DiffChecker d(factory(0), 2ull << 20, 64u << 10);
  std::map<std::string, Value> acked;
  std::mt19937_64 rng(5);
  std::size_t failures = 0;
  for (int i = 0; i < 200'000 && failures < 50; ++i) {
    std::string k = test::u64_str(rng());
    if (i % 3 == 0) k += std::string(rng() % 300, 'v');
    const Status s = d.index().insert(as_key(k), i);
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
  for (const auto& [k, val] : acked)
    ASSERT_EQ(d.index().lookup(as_key(k)), std::optional<Value>(val));
  const auto audit =
      d.pool().allocator().audit([&](pm::BlockVisitor bv) { return d.index().visit_blocks(bv); });
  EXPECT_TRUE(audit.ok()) << audit.describe();
  // Leaf arrays (576 bytes) are freed only when empty: remove all but ten keys so that
  // whole arrays and nodes come back, not just leaves of other size classes.
  std::size_t removed = 0;
  const std::size_t most = acked.size() - 10;
  for (auto it = acked.begin(); it != acked.end() && removed < most; ++removed) {
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
