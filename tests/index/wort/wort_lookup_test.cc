// WORT's optimistic lookup (wort_tree.cc): the stored prefix partial keys are skipped, not
// compared, and the leaf compare decides. These keys leave the tree's path inside a
// skipped prefix (in the nine stored partial keys, past them, by ending inside the
// prefix), so a lookup that trusted the skipped partial keys would return another key's
// value; and an interrupted split (a header whose depth disagrees) must not matter.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "index/wort/wort_tree.h"
#include "index/wort/wort_fixture.h"
#include "wort/key.h"

namespace wort {
namespace {

class WortLookup : public test::WortTreeTest {
 protected:
  std::optional<Value> get(const std::string& k) const { return tree_->lookup(as_key(k)); }

};

TEST_F(WortLookup, KeysDivergingInsideASkippedPrefixAreNotFound) {
  // Two keys sharing 20 bytes: one node with a 40-partial-key prefix (9 stored).
  const std::string p(20, 'p');
  ASSERT_EQ(tree_->insert(as_key(p + "A"), 1), Status::ok);
  ASSERT_EQ(tree_->insert(as_key(p + "B"), 2), Status::ok);
  ASSERT_TRUE(tree_->verify().ok());
  EXPECT_EQ(get(p + "A"), 1u);
  EXPECT_EQ(get(p + "B"), 2u);
  std::string in_stored = p, past_stored = p;
  in_stored[2] = 'x';     // differs within the stored partial keys
  past_stored[15] = 'x';  // differs past them
  EXPECT_EQ(get(in_stored + "A"), std::nullopt);
  EXPECT_EQ(get(past_stored + "B"), std::nullopt);
  EXPECT_EQ(get(p), std::nullopt) << "ends where the node branches, no end_child";
  EXPECT_EQ(get(p.substr(0, 10)), std::nullopt) << "ends inside the prefix";
  EXPECT_EQ(get(""), std::nullopt);
  EXPECT_EQ(get(p + "C"), std::nullopt) << "no child for the branch partial key";
  EXPECT_EQ(get(p + "AA"), std::nullopt) << "longer than the leaf's key";
  ASSERT_EQ(tree_->insert(as_key(p), 3), Status::ok);  // now the node has an end_child
  EXPECT_EQ(get(p), 3u);
  EXPECT_EQ(get(past_stored), std::nullopt);
}

TEST_F(WortLookup, IntegerKeysDifferingOnlyInSkippedPartialKeys) {
  std::vector<std::uint64_t> in;
  for (std::uint64_t i = 0; i < 300; ++i) in.push_back(0x0102030400000000ull + i * 7);
  for (std::uint64_t k : in) ASSERT_EQ(tree_->insert(u64_key(k), k), Status::ok);
  for (std::uint64_t k : in) {
    ASSERT_EQ(tree_->lookup(u64_key(k)), k);
    for (int nibble = 0; nibble < 8; ++nibble) {
      const std::uint64_t other = k ^ (0x1ull << (60 - 4 * nibble));
      EXPECT_EQ(tree_->lookup(u64_key(other)), std::nullopt) << std::hex << other;
    }
  }
}

// The 8-byte lookup (WortTree::lookup_8) unrolls its 16 levels and re-enters them after a
// node with a prefix at the position after its branch; a node at the key's end position
// (16) is left through end_child. Keys from a few stems with random tails make nodes
// branching at every position with and without prefixes; shorter keys (proper prefixes,
// end_child at positions below 16), longer keys (nodes branching at 16 and deeper) and
// removes (merged headers) are mixed in. Every 8-byte key, each one with one partial key
// changed at every position, and the first 8 bytes of every longer key are looked up
// against a std::map.
TEST_F(WortLookup, EightByteKeysAgreeWithAReferenceAtEveryBranchPosition) {
  std::mt19937_64 rng(9);
  std::map<std::string, Value> ref;
  auto key8 = [](std::uint64_t x) {
    const auto b = u64_key(x);
    return std::string(reinterpret_cast<const char*>(b.data()), 8);
  };
  const std::uint64_t stems[] = {0, 0x0123456789abcdefull, 0xfedcba9876543210ull,
                                 0x5555555555555555ull};
  Value next_value = 1;
  auto put = [&](const std::string& k) {
    const Status s = tree_->insert(as_key(k), next_value);
    if (ref.emplace(k, next_value).second) {
      ASSERT_EQ(s, Status::ok);
    } else {
      ASSERT_EQ(s, Status::exists);
    }
    ++next_value;
  };
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t stem = stems[rng() % 4];
    const unsigned from = static_cast<unsigned>(rng() % 17);  // first random partial key
    std::uint64_t k = stem;
    for (unsigned pos = from; pos < 16; ++pos) {
      const std::uint64_t shift = 60 - 4 * pos;
      const std::uint64_t nib = rng() % 3 == 0 ? rng() % 16 : (stem >> shift) & 15;
      k = (k & ~(0xfull << shift)) | (nib << shift);
    }
    const std::string s = key8(k);
    switch (rng() % 8) {
      case 0: put(s.substr(0, 1 + rng() % 7)); break;              // a proper prefix
      case 1: put(s + std::string(1 + rng() % 2, 'a' + rng() % 3)); break;  // longer
      case 2: put(s + "x"); [[fallthrough]];  // longer, and the 8 bytes themselves
      default: put(s); break;
    }
    ASSERT_FALSE(HasFailure());
  }
  // Removes: merges leave nodes whose prefix grew (and headers rewritten under readers).
  std::vector<std::string> all;
  for (const auto& [k, v] : ref) all.push_back(k);
  for (std::size_t i = 0; i < all.size(); i += 3) {
    ASSERT_EQ(tree_->remove(as_key(all[i])), Status::ok);
    ref.erase(all[i]);
  }
  ASSERT_TRUE(tree_->verify().ok());
  auto expect = [&](const std::string& k) -> std::optional<Value> {
    const auto it = ref.find(k);
    return it == ref.end() ? std::nullopt : std::optional<Value>(it->second);
  };
  std::size_t found = 0, probes = 0;
  for (const auto& [k, v] : ref) {
    if (k.size() > 8) {
      ++probes;
      ASSERT_EQ(get(k.substr(0, 8)), expect(k.substr(0, 8))) << "8 bytes of a longer key";
    }
    if (k.size() != 8) continue;
    ASSERT_EQ(get(k), v);
    ASSERT_EQ(tree_->lookup_reference(as_key(k)), v);
    ++found;
    const std::uint64_t x = key_u64(as_key(k));
    for (unsigned pos = 0; pos < 16; ++pos) {
      for (std::uint64_t d : {1ull, 8ull}) {
        const std::string other = key8(x ^ (d << (60 - 4 * pos)));
        ++probes;
        ASSERT_EQ(get(other), expect(other)) << "partial key " << pos << " changed";
        ASSERT_EQ(tree_->lookup_reference(as_key(other)), expect(other));
      }
    }
  }
  EXPECT_GT(found, 500u);
  EXPECT_GT(probes, 20000u);
}

// The unrolled lookups (lookup_8 for 8-byte keys, lookup_short for shorter ones) against
// the plain descent, lookup_reference(), on many keys: dense, sparse and clustered 8-byte
// keys, short keys and families sharing a stem to a random position (nodes with a prefix,
// branching at every position) in one tree, a third of them removed (merged headers), probed with
// every key inserted, its neighbours, keys differing in one partial key, and random keys.
TEST_F(WortLookup, UnrolledLookupsAgreeWithThePlainReferenceOnManyKeys) {
  std::mt19937_64 rng(35);
  std::vector<std::string> keys;
  auto key8 = [](std::uint64_t x) {
    const auto b = u64_key(x);
    return std::string(reinterpret_cast<const char*>(b.data()), 8);
  };
  for (std::uint64_t i = 1; i <= 8000; ++i) keys.push_back(key8(i));          // dense
  for (int i = 0; i < 8000; ++i) keys.push_back(key8(rng()));                // sparse
  for (int g = 0; g < 100; ++g)                                             // clustered
    for (std::uint64_t base = rng(), i = 0; i < 64; ++i) keys.push_back(key8(base + i));
  for (int i = 0; i < 2000; ++i) keys.push_back(key8(rng()).substr(0, 1 + rng() % 7));  // short
  for (int f = 0; f < 400; ++f) {  // families: one stem up to position d, nodes with prefixes
    const std::uint64_t stem = rng();
    const unsigned d = 1 + static_cast<unsigned>(rng() % 15);
    const std::uint64_t keep = ~std::uint64_t{0} << (64 - 4 * d);
    for (int i = 0; i < 6; ++i) {
      const std::uint64_t tail = rng() >> (rng() % (64 - 4 * d));  // some share more of it
      keys.push_back(key8((stem & keep) | (tail & ~keep)));
    }
  }
  Value v = 1;
  for (const std::string& k : keys) {
    const Status s = tree_->insert(as_key(k), v++);
    ASSERT_TRUE(s == Status::ok || s == Status::exists);
  }
  for (std::size_t i = 0; i < keys.size(); i += 3) (void)tree_->remove(as_key(keys[i]));
  ASSERT_TRUE(tree_->verify().ok());
  std::size_t hits = 0, probes = 0;
  auto probe = [&](const std::string& k) {
    const std::optional<Value> want = tree_->lookup_reference(as_key(k));
    ASSERT_EQ(get(k), want) << "key of " << k.size() << " bytes";
    hits += want.has_value();
    ++probes;
  };
  for (const std::string& k : keys) {
    probe(k);
    if (k.size() != 8) continue;
    const std::uint64_t x = key_u64(as_key(k));
    probe(key8(x + 1));
    probe(key8(x - 1));
    probe(key8(x ^ (std::uint64_t{1} << (4 * (rng() % 16)))));
    ASSERT_FALSE(HasFailure());
  }
  for (int i = 0; i < 20000; ++i) probe(key8(rng()));
  EXPECT_GT(hits, 10000u);
  EXPECT_EQ(probes, 121200u);
}

}  // namespace
}  // namespace wort
