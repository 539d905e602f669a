#include "support/keygen.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>

namespace wort::test {

std::string u64_str(std::uint64_t k) {
  auto b = u64_key(k);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::string paired_key(unsigned j) {
  const std::uint64_t i = j / 2;
  std::uint64_t x;
  if (i % 2 == 0) x = (i * 0x9E3779B97F4A7C15ull) & 0xff0f000000ff00ffull;
  else x = (i % 48) << 56 | (i / 48) << 4 | 0x3;
  std::string k = u64_str(x);
  if (j % 2 == 1) k += "+";
  return k;
}

namespace {
//! The name of an enum value by its index in `names` (names in the enum's order).
template <class E, std::size_t N>
std::string_view name_of(E e, const std::string_view (&names)[N]) {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : "?";
}
}  // namespace

std::string_view to_string(Dist d) {
  static constexpr std::string_view kNames[] = {"dense", "sparse", "clustered"};
  return name_of(d, kNames);
}

std::vector<std::uint64_t> paper_keys(Dist d, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> keys;
  keys.reserve(n);
  if (d == Dist::dense) {
    for (std::size_t i = 1; i <= n; ++i) keys.push_back(i);
  } else {
    std::unordered_set<std::uint64_t> seen;
    seen.reserve(n * 2);
    while (keys.size() < n) {
      if (d == Dist::sparse) {
        std::uint64_t k = rng();
        if (seen.insert(k).second) keys.push_back(k);
      } else {
        std::uint64_t base = rng() & ~std::uint64_t{63};
        if (!seen.insert(base).second) continue;
        for (std::uint64_t j = 0; j < 64 && keys.size() < n; ++j) keys.push_back(base + j);
      }
    }
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  return keys;
}

std::string_view to_string(Gen g) {
  static constexpr std::string_view kNames[] = {"sequential",    "reverse",     "random_u64",
                                                "shared_prefix", "long_keys",   "prefix_chains",
                                                "random_bytes"};
  static_assert(std::size(kNames) == std::size(kAllGens), "a name for every generator");
  return name_of(g, kNames);
}

std::vector<std::string> make_keys(Gen g, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  auto push = [&](std::string s) {
    if (seen.insert(s).second) out.push_back(std::move(s));
  };
  auto rand_byte = [&](std::string_view alphabet) {
    return alphabet[rng() % alphabet.size()];
  };
  const std::string small_alpha("\x00\x01" "abcz\x7f\x80\xfe\xff", 10);
  std::size_t guard = 0;
  while (out.size() < n && guard++ < n * 100 + 1000) {
    const std::size_t i = out.size();
    switch (g) {
      case Gen::sequential: push(u64_str(i)); break;
      case Gen::reverse: push(u64_str(n - 1 - i)); break;
      case Gen::random_u64: push(u64_str(rng())); break;
      case Gen::shared_prefix: {
        // a handful of long stems; keys diverge from a stem at a random depth
        static const char* stems[] = {"user:profile:settings:theme:", "user:profile:avatar:",
                                      "order:2026-11-21:region-eu:", "o"};
        std::string s = stems[rng() % 4];
        s.resize(rng() % (s.size() + 1));
        std::size_t tail = 1 + rng() % 12;
        for (std::size_t j = 0; j < tail; ++j) s.push_back(rand_byte("abcdefgh01"));
        push(std::move(s));
        break;
      }
      case Gen::long_keys: {
        std::size_t len = 200 + rng() % 900;
        std::string s(len, 'k');
        // differ mostly near the end, sometimes early
        std::size_t pos = (rng() % 4 == 0) ? rng() % len : len - 1 - rng() % 16;
        for (std::size_t j = pos; j < len; ++j) s[j] = rand_byte("xyz\x00\xff");
        push(std::move(s));
        break;
      }
      case Gen::prefix_chains: {
        // a random base, then every prefix of it (including the empty key once)
        std::size_t len = 1 + rng() % 24;
        std::string base;
        for (std::size_t j = 0; j < len; ++j) base.push_back(rand_byte(small_alpha));
        for (std::size_t j = 0; j <= len && out.size() < n; ++j) push(base.substr(0, j));
        break;
      }
      case Gen::random_bytes: {
        std::size_t len = 1 + rng() % 40;
        std::string s;
        for (std::size_t j = 0; j < len; ++j) s.push_back(rand_byte(small_alpha));
        push(std::move(s));
        break;
      }
    }
  }
  return out;
}

}  // namespace wort::test
