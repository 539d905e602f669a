// bench/rng.h — the benchmark's random number generator.
//
// xoshiro256** seeded through splitmix64, with our own bounded and real draws: the
// standard library's distributions are implementation-defined, and a workload must be the
// same on every machine for a given seed.
#pragma once

#include <cstdint>

namespace wort::bench {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) noexcept {
    for (auto& w : s_) w = splitmix(seed);
  }
  //! Next 64 random bits.
  std::uint64_t next() noexcept {
    const std::uint64_t r = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return r;
  }
  //! Uniform in [0, bound) (bound > 0), Lemire's multiply-shift (bias < 2^-64 * bound).
  std::uint64_t below(std::uint64_t bound) noexcept {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }
  //! Uniform in [0, 1).
  double real() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  //! splitmix64 step: also a good 64-bit mixer for deriving sub-seeds.
  static std::uint64_t splitmix(std::uint64_t& x) noexcept {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  //! A seed derived from `seed` for a named purpose, so streams do not overlap.
  static std::uint64_t derive(std::uint64_t seed, std::uint64_t purpose) noexcept {
    std::uint64_t x = seed ^ (purpose * 0xd1b54a32d192ed03ull);
    return splitmix(x);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

//! Fisher–Yates shuffle with our generator.
template <class Vec>
void shuffle(Vec& v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) {
    const std::size_t j = rng.below(i);
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace wort::bench
