// match_stored_prefix (wort_node.h) compares a key with a header's stored prefix in one word
// compare (4-bit partial keys); this checks it against the partial-key-by-partial-key
// definition on random headers and keys of every length from 0 to 20 bytes, with the key
// agreeing with the prefix for a random number of partial keys, at every depth.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "index/wort/wort_node.h"

namespace wort::wort_index {
namespace {

std::uint32_t reference(const HeaderFields& h, Key k) {
  const std::size_t n = Partial::count(k);
  for (std::uint32_t i = 0; i < h.stored(); ++i)
    if (h.depth + i >= n || Partial::at(k, h.depth + i) != h.prefix_at(i)) return i;
  return h.stored();
}

TEST(WortPrefix, WordCompareAgreesWithPartialByPartial) {
  if (kSpanBits != 4) GTEST_SKIP() << "the word compare is for 4-bit partial keys";
  std::mt19937_64 rng(5);
  std::size_t cases = 0, full = 0;
  for (int round = 0; round < 200000; ++round) {
    std::string key(rng() % 21, '\0');
    for (char& c : key) c = static_cast<char>(rng() % 4 == 0 ? 0 : rng());
    const std::size_t n = Partial::count(as_key(key));
    const std::uint32_t depth = static_cast<std::uint32_t>(rng() % (n + 3));
    const std::uint32_t prefix_len = static_cast<std::uint32_t>(rng() % 14);
    // The prefix agrees with the key for `agree` partial keys (where the key has them).
    const unsigned agree = static_cast<unsigned>(rng() % (kPrefixSlots + 2));
    std::uint64_t prefix = 0;
    for (unsigned i = 0; i < kPrefixSlots; ++i) {
      unsigned p = static_cast<unsigned>(rng() % 16);
      if (i < agree && depth + i < n) p = Partial::at(as_key(key), depth + i);
      if (i == agree && depth + i < n && rng() % 2) p = Partial::at(as_key(key), depth + i) ^ 1;
      prefix |= std::uint64_t{p} << (4 * i);
    }
    HeaderFields h;
    h.depth = depth;
    h.prefix_len = prefix_len;
    h.prefix = prefix;
    const std::uint32_t want = reference(h, as_key(key));
    ASSERT_EQ(match_stored_prefix(h, as_key(key)), want)
        << "key length " << key.size() << " depth " << depth << " prefix_len " << prefix_len;
    ++cases;
    full += want == h.stored() && want > 0;
  }
  EXPECT_GT(full, 10000u);  // whole matches are exercised, not only early mismatches
  EXPECT_EQ(cases, 200000u);
}

}  // namespace
}  // namespace wort::wort_index
