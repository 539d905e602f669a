// Metric arithmetic: histogram buckets, percentiles, merging, per-op division, counters.
#include "bench/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace wort::bench {
namespace {

TEST(HistogramTest, BucketsTileTheValueRange) {
  // Every value lands in a bucket whose [low, low+width) contains it, and bucket bounds are
  // contiguous.
  for (std::uint64_t v : {0ull, 1ull, 63ull, 64ull, 65ull, 127ull, 128ull, 1000ull, 123456789ull,
                          (1ull << 40) + 12345, ~0ull}) {
    const auto b = LatencyHistogram::bucket_of(v);
    ASSERT_LT(b, LatencyHistogram::kBuckets);
    EXPECT_LE(LatencyHistogram::bucket_low(b), v);
    EXPECT_LE(v - LatencyHistogram::bucket_low(b), LatencyHistogram::bucket_width(b) - 1);
  }
  for (std::size_t b = 0; b + 1 < LatencyHistogram::kBuckets; ++b)
    ASSERT_EQ(LatencyHistogram::bucket_low(b) + LatencyHistogram::bucket_width(b),
              LatencyHistogram::bucket_low(b + 1))
        << b;
}

TEST(HistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 10; ++v) h.record(v);
  EXPECT_EQ(h.count(), 10u);
  EXPECT_EQ(h.percentile(50), 5);
  EXPECT_EQ(h.percentile(90), 9);
  EXPECT_EQ(h.percentile(100), 10);
  EXPECT_EQ(h.percentile(1), 1);
  EXPECT_DOUBLE_EQ(h.mean(), 5.5);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 10u);
}

TEST(HistogramTest, PercentilesWithinBucketError) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 100000; ++v) h.record(v);
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    const double exact = p / 100 * 100000;
    EXPECT_NEAR(h.percentile(p), exact, exact / 32) << p;
  }
}

TEST(HistogramTest, TailIsSeenAtP999NotP99) {
  LatencyHistogram h;
  for (int i = 0; i < 9990; ++i) h.record(100);
  for (int i = 0; i < 10; ++i) h.record(1'000'000);
  EXPECT_NEAR(h.percentile(99), 100, 2);
  EXPECT_NEAR(h.percentile(99.9), 100, 2);   // rank 9990 is still the fast op
  EXPECT_NEAR(h.percentile(99.95), 1e6, 1e6 / 32);
  EXPECT_EQ(h.max(), 1'000'000u);
}

TEST(HistogramTest, EmptyHasNoPercentile) {
  LatencyHistogram h;
  EXPECT_TRUE(std::isnan(h.percentile(50)));
  EXPECT_TRUE(std::isnan(h.mean()));
  EXPECT_EQ(h.min(), 0u);
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  LatencyHistogram a, b, all;
  for (std::uint64_t v = 0; v < 5000; ++v) {
    const std::uint64_t x = v * 37 % 9001;
    (v % 3 ? a : b).record(x);
    all.record(x);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (double p : {10.0, 50.0, 99.0}) EXPECT_EQ(a.percentile(p), all.percentile(p));
}

TEST(MetricsTest, PerOpDivision) {
  EXPECT_DOUBLE_EQ(per_op(10, 4), 2.5);
  EXPECT_TRUE(std::isnan(per_op(10, 0)));
  PhaseResult p;
  p.ops = 1000;
  p.seconds = 0.5;
  p.counters.flushes = 2000;
  p.counters.lines_flushed = 2500;
  p.counters.fences = 1500;
  EXPECT_DOUBLE_EQ(p.throughput(), 2000);
  EXPECT_DOUBLE_EQ(p.ns_per_op(), 500000);
  EXPECT_DOUBLE_EQ(p.flushes_per_op(), 2);
  EXPECT_DOUBLE_EQ(p.lines_per_op(), 2.5);
  EXPECT_DOUBLE_EQ(p.fences_per_op(), 1.5);
  PhaseResult empty;
  EXPECT_TRUE(std::isnan(empty.lines_per_op()));
  EXPECT_TRUE(std::isnan(empty.throughput()));
}

TEST(MetricsTest, CounterSumsAndDifferences) {
  pm::Counters a{1, 2, 3, 4}, b{10, 20, 30, 40};
  const pm::Counters s = a + b;
  EXPECT_EQ(s.flushes, 11u);
  EXPECT_EQ(s.lines_flushed, 22u);
  EXPECT_EQ(s.fences, 33u);
  EXPECT_EQ(s.nt_stores, 44u);
  const pm::Counters d = b - a;
  EXPECT_EQ(d.flushes, 9u);
  EXPECT_EQ(d.nt_stores, 36u);
}

TEST(MetricsTest, OpStatsMerge) {
  OpStats a, b;
  a.ops = 3, a.misses = 1, a.latency.record(5);
  b.ops = 4, b.misses = 2, b.latency.record(7);
  a.merge(b);
  EXPECT_EQ(a.ops, 7u);
  EXPECT_EQ(a.misses, 3u);
  EXPECT_EQ(a.latency.count(), 2u);
}

}  // namespace
}  // namespace wort::bench
