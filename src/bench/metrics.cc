#include "bench/metrics.h"

#include <algorithm>
#include <bit>

namespace wort::bench {

std::size_t LatencyHistogram::bucket_of(std::uint64_t v) noexcept {
  if (v < kLinear) return static_cast<std::size_t>(v);
  const int e = 63 - std::countl_zero(v);  // e >= kSubBits + 1
  const std::uint64_t sub = (v >> (e - kSubBits)) & ((std::uint64_t{1} << kSubBits) - 1);
  return kLinear + static_cast<std::size_t>(e - kSubBits - 1) * (std::size_t{1} << kSubBits) +
         static_cast<std::size_t>(sub);
}

std::uint64_t LatencyHistogram::bucket_low(std::size_t b) noexcept {
  if (b < kLinear) return b;
  const std::size_t rel = b - kLinear;
  const int e = static_cast<int>(rel >> kSubBits) + kSubBits + 1;
  const std::uint64_t sub = rel & ((std::size_t{1} << kSubBits) - 1);
  return ((std::uint64_t{1} << kSubBits) + sub) << (e - kSubBits);
}

std::uint64_t LatencyHistogram::bucket_width(std::size_t b) noexcept {
  if (b < kLinear) return 1;
  const int e = static_cast<int>((b - kLinear) >> kSubBits) + kSubBits + 1;
  return std::uint64_t{1} << (e - kSubBits);
}

void LatencyHistogram::merge(const LatencyHistogram& o) noexcept {
  for (std::size_t i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

double LatencyHistogram::mean() const noexcept {
  return per_op(static_cast<double>(sum_), count_);
}

double LatencyHistogram::percentile(double p) const noexcept {
  if (count_ == 0) return std::nan("");
  p = std::clamp(p, 0.0, 100.0);
  // The epsilon keeps decimal percentiles exact: 99.9% of 10000 is rank 9990, not 9991.
  auto rank = static_cast<std::uint64_t>(
      std::ceil(p / 100.0 * static_cast<double>(count_) * (1 - 1e-12)));
  if (rank == 0) rank = 1;
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      const double mid = static_cast<double>(bucket_low(b)) +
                         static_cast<double>(bucket_width(b) - 1) / 2.0;
      return std::clamp(mid, static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

std::string_view to_string(OpType t) noexcept {
  switch (t) {
    case OpType::insert: return "insert";
    case OpType::lookup: return "lookup";
    case OpType::update: return "update";
    case OpType::remove: return "remove";
    case OpType::scan: return "scan";
    case OpType::range: return "range";
  }
  return "?";
}

pm::Counters operator+(const pm::Counters& a, const pm::Counters& b) noexcept {
  return {a.flushes + b.flushes, a.lines_flushed + b.lines_flushed, a.fences + b.fences,
          a.nt_stores + b.nt_stores, a.commits + b.commits};
}

pm::Counters operator-(const pm::Counters& a, const pm::Counters& b) noexcept {
  return {a.flushes - b.flushes, a.lines_flushed - b.lines_flushed, a.fences - b.fences,
          a.nt_stores - b.nt_stores, a.commits - b.commits};
}

std::uint64_t PhaseResult::misses() const noexcept {
  std::uint64_t m = 0;
  for (const auto& t : per_type) m += t.misses;
  return m;
}

}  // namespace wort::bench
