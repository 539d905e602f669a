// The differential tests every registered kind gets by registering: each kind, on each node
// shape of its row in tests/conformance/kinds.h, run side by side with std::map through a
// DiffChecker (tests/support/diff_harness.h: every key looked up, full scan, scans and
// ranges from random points, verify(), the allocator audit), reopened from a copy of the
// pool's bytes as a crash leaves them (persistent kinds: recovery), with
// - every key generator of tests/support/keygen.h: insert, re-insert, upsert, update,
//   remove half, bring back, remove all; insert again, a random mix, drain, refill half;
//   and a long random mix over a small key universe with a reopen at every check;
// - the WORT paper's Dense / Sparse / Clustered sets (PaperSets/..., what `make soak` runs
//   at 1M keys) in random order with removes mixed in, then half removed;
// - keys that are prefixes of each other, with embedded and trailing zero bytes, the empty
//   key, 8-byte keys beginning 0xffff (inline forms must keep byte order and lengths);
// - the registry, the pool kind, bad create options, the key-size limit, very long keys
//   and a full pool.
// What is unique to one index stays in its own tests (tests/index/<kind>/).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "conformance/kinds.h"
#include "pm/allocator.h"
#include "support/diff_harness.h"
#include "support/diff_scripts.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

crashsim::Factory factory_for(const KindShape& ks) {
  const registry::Entry* e = registry::find(ks.kind);
  const IndexOptions o = ks.options();
  return crashsim::Factory{ks.kind, [e, o](Pool& p) { return e->create(p, o); },
                           [e](Pool& p) { return e->open(p); }};
}

KindShape default_shape(const std::string& kind) {
  return {kind, traits_of(kind).shapes.front(), registry::find(kind)->persistent};
}

std::vector<std::string> all_kinds() {
  std::vector<std::string> out;
  for (const registry::Entry* e : registry::all()) out.push_back(e->name);
  return out;
}

// --- every key generator --------------------------------------------------------------------

using GenCase = std::tuple<KindShape, Gen>;

std::vector<GenCase> gen_cases() {
  std::vector<GenCase> out;
  for (const KindShape& ks : kind_shapes(kGens))
    for (Gen g : kAllGens) out.emplace_back(ks, g);
  for (const KindShape& ks : kind_shapes(kHardGens))
    for (Gen g : {Gen::prefix_chains, Gen::random_bytes}) out.emplace_back(ks, g);
  return out;
}

std::string gen_case_name(const ::testing::TestParamInfo<GenCase>& info) {
  return std::get<0>(info.param).name() + "_" + std::string(to_string(std::get<1>(info.param)));
}

class ConformanceGen : public ::testing::TestWithParam<GenCase> {};

//! The pool of the generator tests: a few thousand keys need a few MiB; every reopen copies
//! the whole pool, so a larger one only costs time.
constexpr std::uint64_t kGenPool = 16ull << 20;

TEST_P(ConformanceGen, MatchesStdMapThroughEveryOperationReopenAndEmptying) {
  const auto& [ks, g] = GetParam();
  const std::size_t n = g == Gen::long_keys ? 600 : 3000;
  const std::uint64_t seed = 7;
  const auto keys = make_keys(g, n, seed);
  DiffChecker d(factory_for(ks), kGenPool);
  ASSERT_NO_FATAL_FAILURE(insert_update_remove_half(d, keys, seed));
  if (ks.persistent) {
    d.reopen();
    ASSERT_TRUE(d.check(seed + 5));
  }
  ASSERT_NO_FATAL_FAILURE(bring_back_then_remove_all(d, keys, seed));
  EXPECT_EQ(d.index().stats().keys, 0u);
  if (const std::uint64_t most = traits_of(ks.kind).blocks_when_empty; most != 0) {
    EXPECT_LE(d.pool().allocator().stats().blocks_allocated, most);
  }
  // Filled again, then a mix (lookups of absent keys one byte longer and of prefixes), a
  // reopen, drained completely (merges all the way up to an empty index) and refilled.
  for (std::size_t i = 0; i < keys.size(); ++i) d.insert(keys[i], i);
  ASSERT_TRUE(d.check(seed + 6));
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < 2 * keys.size(); ++i) {
    const std::string& k = keys[rng() % keys.size()];
    switch (rng() % 7) {
      case 0:
      case 1: d.remove(k); break;
      case 2: d.upsert(k, rng()); break;
      case 3: d.update(k, rng()); break;
      case 4: d.insert(k, i); break;
      case 5: d.lookup(k + std::string(1, '\0')); break;
      default: d.lookup(k.substr(0, k.size() / 2)); break;
    }
  }
  ASSERT_TRUE(d.check(seed + 7));
  if (ks.persistent) {
    d.reopen();
    ASSERT_TRUE(d.check(seed + 8));
  }
  for (const auto& k : keys) d.remove(k);
  ASSERT_TRUE(d.check(seed + 9));
  EXPECT_EQ(d.index().stats().keys, 0u);
  for (std::size_t i = 0; i < keys.size(); i += 2) d.insert(keys[i], i);
  ASSERT_TRUE(d.check(seed + 10));
}

// A small key universe, so inserts, updates and removes keep hitting present keys; a check
// (and a reopen) every 5000 steps.
TEST_P(ConformanceGen, RandomOperationMixWithReopen) {
  const auto& [ks, g] = GetParam();
  const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(g);
  const auto keys = make_keys(g, g == Gen::long_keys ? 200 : 400, seed);
  DiffChecker d(factory_for(ks), kGenPool);
  ASSERT_NO_FATAL_FAILURE(random_mix(d, keys, seed, 20'000, 5000, ks.persistent));
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, ConformanceGen, ::testing::ValuesIn(gen_cases()),
                         gen_case_name);

// --- the paper's key sets ------------------------------------------------------------------

using PaperCase = std::tuple<KindShape, Dist>;

std::vector<PaperCase> paper_cases() {
  std::vector<PaperCase> out;
  for (const KindShape& ks : kind_shapes(kPaper))
    for (Dist d : {Dist::dense, Dist::sparse, Dist::clustered}) out.emplace_back(ks, d);
  for (const KindShape& ks : kind_shapes(kPaperSparse)) out.emplace_back(ks, Dist::sparse);
  return out;
}

class ConformancePaper : public ::testing::TestWithParam<PaperCase> {};

// The paper's set (paper_key_count(): 1M keys, 100k under ASan or WORT_TEST_SCALE=small) in
// random order: after every 4th insert one earlier key is removed, every 16th a removed
// one returns. Compared, reopened, compared, half removed, compared. Prints the shape the
// index reached (never asserted).
TEST_P(ConformancePaper, RandomOrderWithRemovesReopenRemoveHalf) {
  const auto& [ks, dist] = GetParam();
  const std::size_t n = paper_key_count();
  const std::uint64_t seed = 42;
  const auto ints = paper_keys(dist, n, seed);
  DiffChecker d(factory_for(ks), std::max<std::uint64_t>(64ull << 20, n * 512));
  std::mt19937_64 rng(seed);
  std::vector<std::string> removed;
  for (std::size_t i = 0; i < ints.size(); ++i) {
    d.insert(u64_str(ints[i]), ints[i] ^ 0x5555);
    if (i % 4 == 3) {
      const std::string victim = u64_str(ints[rng() % (i + 1)]);
      d.remove(victim);
      removed.push_back(victim);
    }
    if (i % 16 == 15 && !removed.empty()) d.insert(removed[rng() % removed.size()], i);
  }
  ASSERT_TRUE(d.check(seed, 4));
  const IndexStats s = d.index().stats();
  std::printf("[%s %s n=%zu] %llu keys, avg leaf depth %.3f, max %llu, PM %.1f B/key, "
              "DRAM %.1f B/key,", ks.name().c_str(), std::string(to_string(dist)).c_str(), n,
              static_cast<unsigned long long>(s.keys), s.avg_leaf_depth,
              static_cast<unsigned long long>(s.max_leaf_depth),
              static_cast<double>(s.pm_bytes) / static_cast<double>(s.keys),
              static_cast<double>(s.dram_bytes) / static_cast<double>(s.keys));
  for (const auto& [what, count] : s.nodes)
    std::printf(" %s %llu", what.c_str(), static_cast<unsigned long long>(count));
  std::printf("\n");
  if (ks.persistent) {
    d.reopen();
    ASSERT_TRUE(d.check(seed + 1, 2));
  }
  for (std::size_t i = 0; i < ints.size(); i += 2) d.remove(u64_str(ints[i]));
  ASSERT_TRUE(d.check(seed + 2, 4));
}

INSTANTIATE_TEST_SUITE_P(PaperSets, ConformancePaper, ::testing::ValuesIn(paper_cases()),
                         [](const auto& info) {
                           return std::get<0>(info.param).name() + "_" +
                                  std::string(to_string(std::get<1>(info.param)));
                         });

// --- inline key forms ----------------------------------------------------------------------

//! Keys of 0..17 bytes that are prefixes of each other, with embedded and trailing zeros
//! ("ab\0" is not "ab", nor the 8-byte "\0...\0" the empty key), 8-byte keys beginning
//! 0xffff (which must not pass for key-block words), among 300 8-byte keys around them.
std::vector<std::string> edge_keys() {
  std::vector<std::string> keys = {std::string("a\0\0\0\0\0\0\0", 8),
                                   std::string("a\0\0\0\0\0\0\0\0", 9),
                                   std::string("abcdefg\0", 8), std::string("abcdefgh\0", 9),
                                   std::string("\xff\xff\0\0\0\0\0\0", 8),
                                   std::string("\xff\xfe\xff\xff\xff\xff\xff\xff", 8),
                                   std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8)};
  for (std::size_t len = 0; len <= 17; ++len) {
    keys.push_back(std::string(len, '\0'));
    keys.push_back(std::string("abcdefghijklmnopq").substr(0, len));
    keys.push_back(std::string("ab") + std::string(len, '\0'));
    keys.push_back(std::string("a") + std::string(len, '\0'));
    keys.push_back(std::string(len, '\xff'));
  }
  for (std::uint64_t i = 0; i < 300; ++i) keys.push_back(u64_str(i * 0x0101010101010101ull));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(3));
  return keys;
}

class ConformanceShape : public ::testing::TestWithParam<KindShape> {};

TEST_P(ConformanceShape, ShortKeysWithZerosAndPrefixes) {
  const KindShape& ks = GetParam();
  DiffChecker d(factory_for(ks), 16ull << 20);
  const auto keys = edge_keys();
  for (std::size_t i = 0; i < keys.size(); ++i) d.insert(keys[i], i);
  ASSERT_TRUE(d.check(1));
  for (std::size_t i = 0; i < keys.size(); i += 3) d.remove(keys[i]);
  for (std::size_t i = 1; i < keys.size(); i += 3) d.update(keys[i], i + 100);
  ASSERT_TRUE(d.check(2));
  if (ks.persistent) {
    d.reopen();
    ASSERT_TRUE(d.check(3));
  }
  for (std::size_t i = 0; i < keys.size(); i += 3) d.insert(keys[i], i + 1000);
  ASSERT_TRUE(d.check(4));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConformanceShape,
                         ::testing::ValuesIn(kind_shapes(kGens | kHardGens)),
                         [](const auto& info) { return info.param.name(); });

// --- per kind ------------------------------------------------------------------------------

class ConformanceKind : public ::testing::TestWithParam<std::string> {};

std::unique_ptr<Pool> memory_pool(const std::string& kind, std::uint64_t size = 8ull << 20) {
  PoolOptions o;
  o.size = size;
  o.kind = kind;
  auto p = Pool::create_in_memory(o);
  EXPECT_TRUE(p) << p.error().message;
  return p ? std::move(p).value() : nullptr;
}

// Through the registry and the type-erased handle, as the bench and the server use it:
// the pool records the kind, and Index::open finds it again.
TEST_P(ConformanceKind, CreatedAndOpenedThroughTheRegistry) {
  const std::string& kind = GetParam();
  const auto kinds = Index::kinds();
  ASSERT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end());
  if (!registry::find(kind)->persistent) GTEST_SKIP() << "keeps nothing in the pool";
  auto pool = memory_pool(kind);
  ASSERT_TRUE(pool);
  auto ix = Index::create(*pool, kind);
  ASSERT_TRUE(ix) << ix.error().message;
  EXPECT_EQ((*ix)->kind(), kind);
  EXPECT_EQ((*ix)->insert(as_key(std::string("k")), 1), Status::ok);
  ix->reset();
  auto again = Index::open(*pool);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ((*again)->kind(), kind);
  EXPECT_EQ((*again)->lookup(as_key(std::string("k"))), std::optional<Value>(1));
}

TEST_P(ConformanceKind, RefusesAPoolOfAnotherKindAndBadOptions) {
  const std::string& kind = GetParam();
  const registry::Entry* e = registry::find(kind);
  auto other = memory_pool(kind == "wort" ? "fptree" : "wort");
  ASSERT_TRUE(other);
  EXPECT_EQ(e->create(*other, IndexOptions{}).status(), Status::wrong_kind);
  for (const auto& words : traits_of(kind).bad_options) {
    auto pool = memory_pool(kind);
    ASSERT_TRUE(pool);
    IndexOptions o;
    o.words = words;
    EXPECT_EQ(e->create(*pool, o).status(), Status::invalid_argument)
        << words[0] << " " << words[1] << " " << words[2] << " " << words[3];
  }
}

// A key one byte over the kind's limit is refused (and not found); a key at the limit and
// one of its prefixes are stored.
TEST_P(ConformanceKind, KeysUpToTheLimitAndNotOneByteMore) {
  const KindShape ks = default_shape(GetParam());
  DiffChecker d(factory_for(ks), 16ull << 20);
  const std::size_t max = registry::find(ks.kind)->max_key_size;
  const std::string big(max + 1, 'x');
  EXPECT_EQ(d.index().insert(as_key(big), 1), Status::invalid_argument);
  EXPECT_FALSE(d.index().lookup(as_key(big)).has_value());
  const std::string at(max, 'x');
  d.insert(at, 2);
  d.insert(at.substr(0, 100), 3);
  EXPECT_TRUE(d.check(9));
}

// Keys that are prefixes of each other, with embedded zero bytes, up to 1 KiB, removed in
// an order that forces merges of end-of-key slots at every level, and the empty key.
TEST_P(ConformanceKind, PrefixChainsUpToOneKiB) {
  const KindShape ks = default_shape(GetParam());
  DiffChecker d(factory_for(ks), 16ull << 20);
  std::vector<std::string> keys;
  std::string k;
  for (int i = 0; i < 1024; ++i) {
    k.push_back(static_cast<char>(i % 3 == 0 ? 0 : 'a' + i % 5));
    if (i % 7 == 0 || i > 1000) keys.push_back(k);
  }
  keys.push_back("");
  for (std::size_t i = 0; i < keys.size(); ++i) d.insert(keys[i], i);
  ASSERT_TRUE(d.check(3));
  for (std::size_t i = 0; i < keys.size(); i += 3) d.remove(keys[i]);
  ASSERT_TRUE(d.check(4));
  if (ks.persistent) d.reopen();
  for (std::size_t i = 1; i < keys.size(); i += 3) d.remove(keys[i]);
  ASSERT_TRUE(d.check(5));
}

// Keys far longer than 4 KiB sharing long prefixes (kinds that take them): compressed paths
// of thousands of bytes, end-of-key slots, splits deep inside a path.
TEST_P(ConformanceKind, VeryLongKeysWithLongSharedPaths) {
  const KindShape ks = default_shape(GetParam());
  if (registry::find(ks.kind)->max_key_size < 12'000) GTEST_SKIP() << "keys up to 12000 B only";
  for (const Shape& s : traits_of(ks.kind).shapes) {
    if (!(s.uses & kGens)) continue;
    SCOPED_TRACE(s.name);
    DiffChecker d(factory_for({ks.kind, s, ks.persistent}), 64ull << 20);
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
    if (ks.persistent) {
      d.reopen();
      ASSERT_TRUE(d.check(3, 32));
    }
  }
}

// Running out of pool space is a Status; the index stays consistent and keeps every
// acknowledged key, and works again once most keys are removed (whole nodes and arrays
// come back, not just leaves of other size classes).
TEST_P(ConformanceKind, OutOfSpaceLeavesTheIndexConsistent) {
  const KindShape ks = default_shape(GetParam());
  if (!ks.persistent) GTEST_SKIP() << "keeps nothing in the pool";
  DiffChecker d(factory_for(ks), 2ull << 20, 64u << 10);
  std::map<std::string, Value> acked;
  std::mt19937_64 rng(5);
  std::size_t failures = 0;
  for (int i = 0; i < 200'000 && failures < 50; ++i) {
    std::string k = u64_str(rng());
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

INSTANTIATE_TEST_SUITE_P(Registry, ConformanceKind, ::testing::ValuesIn(all_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort::test
