// bench/zipf.h — which existing key an operation touches: uniform, zipfian or self-similar
// over ranks 0..n-1 (rank i is the i-th key of the load order, itself random in key space,
// so hot keys are scattered through the tree as YCSB's scrambling would do), or each rank
// once (shuffled: the FPTree paper's back-to-back finds, updates and deletes of the loaded
// keys).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bench/rng.h"

namespace wort::bench {

enum class Choice : std::uint8_t { uniform, zipfian, selfsimilar, shuffled };
std::string_view to_string(Choice c) noexcept;
bool parse(std::string_view s, Choice& out) noexcept;

//! Draws ranks in [0, n). Zipfian: P(i) ∝ 1/(i+1)^theta (Gray et al., SIGMOD'94, as in
//! YCSB), O(n) set-up for the zeta constant. Self-similar: the h-fraction of the ranks gets
//! the (1-h) fraction of the draws (h = 0.2: 80% of the draws on 20% of the keys).
class KeyChooser {
 public:
  //! `param` is theta for zipfian (0 < theta < 1, default 0.99), h for self-similar
  //! (0 < h < 0.5, default 0.2); ignored for uniform.
  KeyChooser(Choice c, std::uint64_t n, double param);
  //! Uniform, zipfian, self-similar (shuffled draws go through once()).
  std::uint64_t next(Rng& rng) noexcept;
  //! Shuffled: the rank of a run's i-th draw (i < n), a permutation of [0, n): i times a
  //! stride coprime to n (the largest one at most 0.618 n), mod n. The ranks are load order,
  //! itself random in key space, so consecutive draws land far apart in the tree.
  std::uint64_t once(std::uint64_t i) const noexcept;
  std::uint64_t n() const noexcept { return n_; }

  //! ζ(n, theta) = Σ_{i=1..n} 1/i^theta.
  static double zeta(std::uint64_t n, double theta) noexcept;

 private:
  std::uint64_t zipf(Rng& rng) noexcept;
  Choice choice_;
  std::uint64_t n_;
  double param_;
  double alpha_ = 0, eta_ = 0, zetan_ = 0, half_pow_theta_ = 0;  // zipfian constants
  std::uint64_t stride_ = 1;                                     // shuffled
};

}  // namespace wort::bench
