// bench/metrics.h — what a phase measured, and the arithmetic on it.
//
// Latencies go into a log-linear histogram (exact below 64 ns, then 32 sub-buckets per
// power of two: at most 1/32 relative error) that costs one increment per sample and
// merges across threads. Per-operation figures divide a total by an operation count; a
// phase with no operations has no per-op figure (NaN, written as null).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "wort/persist.h"

namespace wort::bench {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 5;  // 32 sub-buckets per power of two
  static constexpr std::size_t kLinear = std::size_t{2} << kSubBits;  // exact below 64
  static constexpr std::size_t kBuckets = kLinear + (64 - kSubBits - 1) * (std::size_t{1} << kSubBits);

  void record(std::uint64_t ns) noexcept {
    ++buckets_[bucket_of(ns)];
    ++count_;
    sum_ += ns;
    if (ns < min_) min_ = ns;
    if (ns > max_) max_ = ns;
  }
  void merge(const LatencyHistogram& o) noexcept;
  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
  std::uint64_t max() const noexcept { return max_; }
  double mean() const noexcept;
  //! The value at percentile p (0 < p <= 100): the smallest recorded bucket whose cumulative
  //! count reaches ceil(p/100 * count), reported as that bucket's midpoint clamped to
  //! [min, max]. NaN if empty.
  double percentile(double p) const noexcept;

  static std::size_t bucket_of(std::uint64_t v) noexcept;
  //! Lowest value that falls in bucket b, and the bucket's width.
  static std::uint64_t bucket_low(std::size_t b) noexcept;
  static std::uint64_t bucket_width(std::size_t b) noexcept;

 private:
  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
};

//! total / ops, or NaN if there were no operations.
inline double per_op(double total, std::uint64_t ops) noexcept {
  return ops == 0 ? std::nan("") : total / static_cast<double>(ops);
}

//! Operation kinds measured separately.
enum class OpType : std::uint8_t { insert, lookup, update, remove, scan, range };
inline constexpr std::size_t kOpTypes = 6;
std::string_view to_string(OpType t) noexcept;

//! Sum of two counter snapshots.
pm::Counters operator+(const pm::Counters& a, const pm::Counters& b) noexcept;
//! Difference of two counter snapshots (after - before).
pm::Counters operator-(const pm::Counters& a, const pm::Counters& b) noexcept;

//! Cache lines written back to memory: lines flushed plus non-temporal 8-byte stores (a
//! movnti sends its line to memory as a flush does). Every report calls this "lines
//! written back" (Table 1 (b)) and shows its two parts beside it.
inline std::uint64_t lines_written_back(const pm::Counters& c) noexcept {
  return c.lines_flushed + c.nt_stores;
}

//! The persistence figures per operation of anything with `counters` and `ops` (OpStats,
//! PhaseResult): written back (flushed + non-temporal) and its two parts, flushes, fences.
template <class Self>
struct PersistPerOp {
  //! Lines written back per operation (lines_written_back: flushed + non-temporal stores).
  double written_back_per_op() const noexcept { return per(lines_written_back(self().counters)); }
  //! Lines flushed per operation (one part of written_back_per_op).
  double lines_per_op() const noexcept { return per(self().counters.lines_flushed); }
  //! Non-temporal stores per operation (the other part).
  double nt_stores_per_op() const noexcept { return per(self().counters.nt_stores); }
  double flushes_per_op() const noexcept { return per(self().counters.flushes); }
  double fences_per_op() const noexcept { return per(self().counters.fences); }

 private:
  const Self& self() const noexcept { return static_cast<const Self&>(*this); }
  double per(std::uint64_t n) const noexcept { return per_op(static_cast<double>(n), self().ops); }
};

//! One operation kind within a phase.
struct OpStats : PersistPerOp<OpStats> {
  std::uint64_t ops = 0;
  std::uint64_t misses = 0;  //!< not_found / exists / fewer keys than expected
  LatencyHistogram latency;  //!< sampled (every Nth operation)
  //! Persistence counters of this kind's operations: in a phase of one kind, the phase's;
  //! in a mix, summed around each operation.
  pm::Counters counters;
  void merge(const OpStats& o) noexcept {
    ops += o.ops;
    misses += o.misses;
    latency.merge(o.latency);
    counters = counters + o.counters;
  }
};

//! Cache figures of a phase (hardware counters or callgrind's simulation).
struct CacheStats {
  std::string source;                 //!< "perf", "callgrind", or why there are none
  double llc_misses = std::nan("");   //!< last-level cache misses (data + instruction)
  double d1_misses = std::nan("");    //!< L1 data misses (callgrind only)
  double instructions = std::nan(""); //!< instructions retired / executed
  std::uint64_t at_keys = 0;          //!< key count of the run that measured them
  std::uint64_t ops = 0;              //!< operations of that run's phase (the divisor)
};

//! One measured phase (insert, search, range, load, run).
struct PhaseResult : PersistPerOp<PhaseResult> {
  std::string name;
  std::uint64_t ops = 0;
  double seconds = 0;
  double cpu_seconds = 0;  //!< CPU time of the worker threads (summed): on a shared machine
                           //!< wall time includes time the threads were not running
  pm::Counters counters;  //!< summed over the threads
  std::array<OpStats, kOpTypes> per_type{};
  std::uint64_t items = 0;  //!< keys visited by scans and ranges
  CacheStats cache;
  //! (seconds since phase start, operations completed) every ~100 ms
  std::vector<std::pair<double, std::uint64_t>> timeline;
  //! Per worker thread (index = thread number): its operations and its own wall seconds.
  std::vector<std::uint64_t> thread_ops;
  std::vector<double> thread_seconds;

  double throughput() const noexcept { return seconds > 0 ? static_cast<double>(ops) / seconds : std::nan(""); }
  double ns_per_op() const noexcept { return per_op(seconds * 1e9, ops); }
  double cpu_ns_per_op() const noexcept { return per_op(cpu_seconds * 1e9, ops); }
  std::uint64_t misses() const noexcept;
  //! Thread t's operations over its own wall time (NaN if it did not run).
  double thread_throughput(std::size_t t) const noexcept {
    return t < thread_ops.size() && thread_seconds[t] > 0
               ? static_cast<double>(thread_ops[t]) / thread_seconds[t] : std::nan("");
  }
};

}  // namespace wort::bench
