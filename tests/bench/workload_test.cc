// Key choice (uniform, zipfian skew, self-similar), the mix's op choice, presets, ratios.
#include "bench/workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench/zipf.h"

namespace wort::bench {
namespace {

std::vector<std::uint64_t> histogram(KeyChooser& c, std::size_t draws, std::uint64_t seed) {
  std::vector<std::uint64_t> h(c.n());
  Rng rng(seed);
  for (std::size_t i = 0; i < draws; ++i) {
    const auto r = c.next(rng);
    EXPECT_LT(r, c.n());
    ++h[r];
  }
  return h;
}

TEST(ZipfTest, ZetaMatchesTheDefinition) {
  EXPECT_DOUBLE_EQ(KeyChooser::zeta(1, 0.99), 1.0);
  EXPECT_NEAR(KeyChooser::zeta(3, 0.5), 1 + 1 / std::sqrt(2.0) + 1 / std::sqrt(3.0), 1e-12);
}

TEST(ZipfTest, ZipfianFollowsThePowerLaw) {
  const std::uint64_t n = 1000;
  const double theta = 0.99;
  KeyChooser z(Choice::zipfian, n, theta);
  const std::size_t draws = 400000;
  const auto h = histogram(z, draws, 5);
  // P(rank 0) = 1/zeta(n); the top ranks are within a few percent of their expectation.
  const double zn = KeyChooser::zeta(n, theta);
  for (std::uint64_t r : {0u, 1u}) {
    const double expected = draws / std::pow(r + 1.0, theta) / zn;
    EXPECT_NEAR(h[r], expected, expected * 0.05) << "rank " << r;
  }
  // Skew: the top 10% of ranks take far more than 10% of the draws.
  std::uint64_t top = 0;
  for (std::uint64_t r = 0; r < n / 10; ++r) top += h[r];
  EXPECT_GT(top, draws * 6 / 10);
  // Monotone on average: the first decile beats the last by a wide margin.
  std::uint64_t last = 0;
  for (std::uint64_t r = n - n / 10; r < n; ++r) last += h[r];
  EXPECT_GT(top, 10 * last);
}

TEST(ZipfTest, UniformIsFlat) {
  KeyChooser u(Choice::uniform, 100, 0);
  const auto h = histogram(u, 200000, 3);
  for (auto c : h) {
    EXPECT_GT(c, 1600u);
    EXPECT_LT(c, 2400u);
  }
}

TEST(ZipfTest, SelfSimilarPutsEightyPercentOnTwentyPercent) {
  KeyChooser s(Choice::selfsimilar, 1000, 0.2);
  const std::size_t draws = 200000;
  const auto h = histogram(s, draws, 4);
  std::uint64_t first = 0;
  for (std::size_t r = 0; r < 200; ++r) first += h[r];
  EXPECT_NEAR(static_cast<double>(first) / draws, 0.8, 0.02);
}

TEST(ZipfTest, SameSeedSameSequence) {
  KeyChooser z(Choice::zipfian, 5000, 0.9);
  Rng a(77), b(77), c(78);
  std::vector<std::uint64_t> x, y, w;
  for (int i = 0; i < 1000; ++i) {
    x.push_back(z.next(a));
    y.push_back(z.next(b));
    w.push_back(z.next(c));
  }
  EXPECT_EQ(x, y);
  EXPECT_NE(x, w);
}

TEST(ZipfTest, ShuffledDrawsEveryRankOnceAndNotInOrder) {
  for (std::uint64_t n : {1ull, 2ull, 10ull, 1000ull, 1024ull, 999983ull}) {
    KeyChooser z(Choice::shuffled, n, 0);
    std::vector<bool> seen(n, false);
    std::uint64_t in_order = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t r = z.once(i);
      ASSERT_LT(r, n);
      ASSERT_FALSE(seen[r]) << "rank " << r << " drawn twice, n = " << n;
      seen[r] = true;
      if (i > 0 && r == z.once(i - 1) + 1) ++in_order;
    }
    if (n >= 1000) {
      EXPECT_LT(in_order, n / 100) << "consecutive draws must not walk the ranks";
    }
  }
  Choice c{};
  EXPECT_TRUE(parse("shuffled", c));
  EXPECT_EQ(c, Choice::shuffled);
}

TEST(RngTest, BelowStaysInBoundAndRealInUnitInterval) {
  Rng r(1);
  for (int i = 0; i < 10000; ++i) {
    EXPECT_LT(r.below(7), 7u);
    const double d = r.real();
    EXPECT_GE(d, 0.0);
    EXPECT_LT(d, 1.0);
  }
}

TEST(WorkloadTest, PickOpFollowsTheRatios) {
  MixSpec m;
  m.lookup = 50, m.insert = 30, m.scan = 20;
  std::size_t count[5] = {};
  Rng r(2);
  for (int i = 0; i < 100000; ++i) ++count[static_cast<int>(pick_op(m, r.real()))];
  EXPECT_NEAR(count[0] / 1e5, 0.5, 0.01);
  EXPECT_NEAR(count[1] / 1e5, 0.3, 0.01);
  EXPECT_EQ(count[2], 0u);
  EXPECT_EQ(count[3], 0u);
  EXPECT_NEAR(count[4] / 1e5, 0.2, 0.01);
  EXPECT_EQ(pick_op(m, 0.0), MixOp::lookup);
  EXPECT_EQ(pick_op(m, 0.999999999), MixOp::scan);
}

TEST(WorkloadTest, PresetsMatchTheirPapers) {
  const Preset* a = find_preset("ycsb-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->mix.lookup, 50);
  EXPECT_EQ(a->mix.update, 50);
  EXPECT_EQ(a->mix.choice, Choice::zipfian);
  const Preset* e = find_preset("scan-insert");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->mix.scan, 95);
  EXPECT_EQ(e->mix.insert, 5);
  for (const char* name : {"ycsb-b", "ycsb-c", "ycsb-e", "write-intensive", "read-intensive",
                           "read-only", "insert-only"})
    EXPECT_NE(find_preset(name), nullptr) << name;
  EXPECT_EQ(find_preset("ycsb-z"), nullptr);
}

TEST(WorkloadTest, ParseRatios) {
  MixSpec m;
  ASSERT_TRUE(parse_ratios("read=95,update=5", m).ok());
  EXPECT_EQ(m.lookup, 95);
  EXPECT_EQ(m.update, 5);
  EXPECT_EQ(m.insert, 0);
  EXPECT_EQ(m.describe(), "lookup=95%,update=5%");
  EXPECT_FALSE(parse_ratios("read=x", m).ok());
  EXPECT_FALSE(parse_ratios("jump=5", m).ok());
  EXPECT_FALSE(parse_ratios("read=0", m).ok());
  EXPECT_FALSE(parse_ratios("read", m).ok());
}

}  // namespace
}  // namespace wort::bench
