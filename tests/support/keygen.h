// tests/support/keygen.h — key generators shared by every index's tests (STYLE.md: one
// typed harness, sequential / reverse / random / shared-prefix / long / prefix-of-other
// keys; plus the WORT paper's Dense, Sparse and Clustered 8-byte sets). Deterministic
// for a given seed.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "wort/key.h"

namespace wort::test {

//! 8-byte big-endian key as a std::string.
std::string u64_str(std::uint64_t k);

enum class Dist { dense, sparse, clustered };
std::string_view to_string(Dist d);

//! The WORT paper's integer sets, shuffled (random insertion order):
//! dense = 1..n; sparse = n distinct uniform 64-bit values; clustered = groups of 64
//! sequential keys starting at random bases.
std::vector<std::uint64_t> paper_keys(Dist d, std::size_t n, std::uint64_t seed);

enum class Gen {
  sequential,      //!< u64 0, 1, 2, ...
  reverse,         //!< u64 n-1 ... 0
  random_u64,      //!< uniform u64
  shared_prefix,   //!< strings sharing long common prefixes, diverging at varied depths
  long_keys,       //!< 200..1100-byte keys
  prefix_chains,   //!< keys that are prefixes of other keys, embedded zero bytes
  random_bytes,    //!< random 1..40-byte strings over a small alphabet incl. 0x00 and 0xff
};
std::string_view to_string(Gen g);
inline constexpr Gen kAllGens[] = {Gen::sequential,   Gen::reverse,       Gen::random_u64,
                                   Gen::shared_prefix, Gen::long_keys,     Gen::prefix_chains,
                                   Gen::random_bytes};

//! Key j of the concurrency tests: pairs (2i, 2i+1) are base(i) (8 bytes) and base(i) + "+"
//! (a key that extends another: a key block, an end-of-key slot); base(i) alternates a
//! scattered 8-byte key (wide nodes near the root) and a clustered one (long compressed
//! paths, prefix splits, small nodes below).
std::string paired_key(unsigned j);

//! n distinct keys from generator g (order as the generator produces them).
std::vector<std::string> make_keys(Gen g, std::size_t n, std::uint64_t seed);

}  // namespace wort::test
