// bench/sampler.h — which operations get their latency timed.
//
// Timing every operation perturbs it (the clock read serialises the pipeline), so the
// bench times a sample. A fixed stride ("every 64th operation") aliases with anything
// in the measured code that recurs with a period dividing the stride: an allocator
// cache refilled every 64 allocations, a node that fills every 16 inserts. The sampled
// operations are then all the slow (or all the fast) ones, and every percentile is wrong.
//
// So the gaps between sampled operations are random: geometric with mean `mean_gap`
// (each operation is sampled with probability 1/mean_gap, independently of its number),
// drawn from the bench's seeded generator. The expected sample count and the
// perturbation are those of the fixed stride, but no periodic behaviour can line up with
// the samples: the sampled mean estimates the phase mean without bias.
//
//   ops:     0 1 2 3 4 5 6 7 8 9 ...
//   stride:  X . . . X . . . X . ...   (period 4: aliases with any period-4 effect)
//   sampler: . X . . . . X X . . ...   (gaps 2, 5, 1, ...: geometric, mean 4)
#pragma once

#include <cmath>
#include <cstdint>

#include "bench/rng.h"

namespace wort::bench {

class Sampler {
 public:
  //! Samples each operation with probability 1/mean_gap (mean_gap <= 1: every operation).
  Sampler(unsigned mean_gap, std::uint64_t seed) noexcept
      : rng_(seed),
        log_q_(mean_gap <= 1 ? 0.0 : std::log1p(-1.0 / static_cast<double>(mean_gap))) {
    left_ = draw();
  }

  //! True if the operation about to run is to be timed. One decrement and one branch on
  //! the common path; a logarithm per sample.
  bool take() noexcept {
    if (--left_ != 0) return false;
    left_ = draw();
    return true;
  }

  //! The next gap: 1 + floor(ln U / ln(1 - p)), U uniform in (0, 1], is geometric on
  //! {1, 2, ...} with mean 1/p.
  std::uint64_t draw() noexcept {
    if (log_q_ == 0.0) return 1;
    const double u = 1.0 - rng_.real();  // (0, 1]
    const double g = std::floor(std::log(u) / log_q_);
    return 1 + (g < 1e18 ? static_cast<std::uint64_t>(g) : std::uint64_t{1} << 60);
  }

 private:
  Rng rng_;
  double log_q_;  // ln(1 - 1/mean_gap), 0 when every operation is sampled
  std::uint64_t left_ = 1;
};

}  // namespace wort::bench
