// Key-set generators: the WORT paper's Dense/Sparse/Clustered shapes, distinctness, string
// sets, and reproducibility from the seed.
#include "bench/keygen.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace wort::bench {
namespace {

TEST(KeygenTest, DenseIsOneToNInRandomOrder) {
  const auto v = integer_keys(KeyDist::dense, 10000, 7);
  ASSERT_EQ(v.size(), 10000u);
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i + 1);
  EXPECT_NE(v, sorted) << "dense keys must be inserted in random order";
  // Not merely rotated: count ascending neighbours (random order: about half).
  std::size_t asc = 0;
  for (std::size_t i = 1; i < v.size(); ++i) asc += v[i] > v[i - 1];
  EXPECT_GT(asc, 4500u);
  EXPECT_LT(asc, 5500u);
}

TEST(KeygenTest, SparseIsDistinctAndSpreadOverTheWholeRange) {
  const auto v = integer_keys(KeyDist::sparse, 20000, 7);
  std::set<std::uint64_t> s(v.begin(), v.end());
  EXPECT_EQ(s.size(), v.size());
  // Uniform 64-bit: each top-byte quarter holds about a quarter of the keys.
  std::size_t quarter[4] = {};
  for (auto k : v) ++quarter[k >> 62];
  for (auto q : quarter) {
    EXPECT_GT(q, 4500u);
    EXPECT_LT(q, 5500u);
  }
}

TEST(KeygenTest, ClusteredIsRunsOf64SequentialKeys) {
  const std::size_t n = 64 * 300;
  const auto v = integer_keys(KeyDist::clustered, n, 9);
  std::set<std::uint64_t> s(v.begin(), v.end());
  ASSERT_EQ(s.size(), n);
  // Every key's run base (key & ~63) holds exactly 64 keys: base..base+63.
  std::map<std::uint64_t, int> per_base;
  for (auto k : v) ++per_base[k & ~std::uint64_t{63}];
  EXPECT_EQ(per_base.size(), 300u);
  for (auto [base, count] : per_base) EXPECT_EQ(count, 64) << base;
  // The bases are scattered, not adjacent.
  std::size_t adjacent = 0;
  std::uint64_t prev = 0;
  for (auto [base, count] : per_base) {
    adjacent += base == prev + 64;
    prev = base;
  }
  EXPECT_LT(adjacent, 5u);
  // Inserted in random order: consecutive insertions are rarely in the same run.
  std::size_t same_run = 0;
  for (std::size_t i = 1; i < v.size(); ++i) same_run += (v[i] >> 6) == (v[i - 1] >> 6);
  EXPECT_LT(same_run, n / 20);
}

TEST(KeygenTest, ClusteredTailGroupIsPartialWhenNIsNotAMultipleOf64) {
  const auto v = integer_keys(KeyDist::clustered, 100, 3);
  std::set<std::uint64_t> s(v.begin(), v.end());
  EXPECT_EQ(s.size(), 100u);
}

TEST(KeygenTest, SameSeedSameKeysDifferentSeedDifferentKeys) {
  for (auto d : {KeyDist::dense, KeyDist::sparse, KeyDist::clustered}) {
    EXPECT_EQ(integer_keys(d, 5000, 11), integer_keys(d, 5000, 11)) << to_string(d);
    EXPECT_NE(integer_keys(d, 5000, 11), integer_keys(d, 5000, 12)) << to_string(d);
  }
  for (auto d : {KeyDist::varbytes, KeyDist::email, KeyDist::fixed20}) {
    KeySpec a{d, 2000, 5};
    auto x = make_key_set(a);
    auto y = make_key_set(a);
    ASSERT_TRUE(x.ok() && y.ok());
    ASSERT_EQ(x.value().size(), 2000u);
    for (std::size_t i = 0; i < 2000; ++i)
      ASSERT_EQ(as_string(x.value()[i]), as_string(y.value()[i])) << to_string(d) << " " << i;
  }
}

TEST(KeygenTest, IntegerKeySetsAreBigEndianEightByteKeys) {
  auto ks = make_key_set({KeyDist::dense, 1000, 3});
  ASSERT_TRUE(ks.ok());
  const auto ints = integer_keys(KeyDist::dense, 1000, 3);
  ASSERT_EQ(ks.value().size(), 1000u);
  for (std::size_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(ks.value()[i].size(), 8u);
    ASSERT_EQ(key_u64(ks.value()[i]), ints[i]);
  }
}

TEST(KeygenTest, VarbytesSizesStayInRangeAndKeysAreDistinct) {
  KeySpec spec{KeyDist::varbytes, 5000, 1, 4, 128};
  auto ks = make_key_set(spec);
  ASSERT_TRUE(ks.ok());
  std::set<std::string> s;
  std::size_t min = 1000, max = 0;
  for (std::size_t i = 0; i < ks.value().size(); ++i) {
    const auto k = ks.value()[i];
    min = std::min(min, k.size());
    max = std::max(max, k.size());
    s.insert(std::string(as_string(k)));
  }
  EXPECT_EQ(s.size(), 5000u);
  EXPECT_EQ(min, 4u);
  EXPECT_EQ(max, 128u);
  EXPECT_FALSE(make_key_set({KeyDist::varbytes, 10, 1, 0, 8}).ok());
  EXPECT_FALSE(make_key_set({KeyDist::varbytes, 10, 1, 9, 8}).ok());
}

TEST(KeygenTest, Fixed20KeysAreTwentyBytes) {
  auto ks = make_key_set({KeyDist::fixed20, 1000, 1});
  ASSERT_TRUE(ks.ok());
  for (std::size_t i = 0; i < 1000; ++i) ASSERT_EQ(ks.value()[i].size(), 20u);
}

TEST(KeygenTest, WordsComeFromTheFileOrFallBackToEmails) {
  KeySpec spec{KeyDist::words, 500, 1};
  spec.words_file = "/nonexistent/words";
  auto fb = make_key_set(spec);
  ASSERT_TRUE(fb.ok());
  EXPECT_EQ(fb.value().size(), 500u);
  EXPECT_NE(fb.value().source.find("email"), std::string::npos);
  for (std::size_t i = 0; i < 500; ++i)
    EXPECT_NE(as_string(fb.value()[i]).find('@'), std::string_view::npos);

  const std::string path = ::testing::TempDir() + "/wort-bench-words-" + std::to_string(::getpid()) + ".txt";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("apple\nbanana\ncherry\napple\n\ndate\n", f);
    std::fclose(f);
  }
  spec.words_file = path;
  auto w = make_key_set(spec);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w.value().size(), 4u) << "duplicates and empty lines are dropped";
  std::set<std::string> got;
  for (std::size_t i = 0; i < 4; ++i) got.insert(std::string(as_string(w.value()[i])));
  EXPECT_EQ(got, (std::set<std::string>{"apple", "banana", "cherry", "date"}));
}

TEST(KeygenTest, DistNamesRoundTrip) {
  for (auto d : {KeyDist::dense, KeyDist::sparse, KeyDist::clustered, KeyDist::varbytes,
                 KeyDist::words, KeyDist::email, KeyDist::fixed20}) {
    KeyDist back{};
    ASSERT_TRUE(parse(to_string(d), back));
    EXPECT_EQ(back, d);
  }
  KeyDist x;
  EXPECT_FALSE(parse("zipf", x));
}

}  // namespace
}  // namespace wort::bench
