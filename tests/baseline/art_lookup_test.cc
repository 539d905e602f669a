// The volatile ART's optimistic lookup (art_tree.cc find_leaf): prefix bytes are skipped,
// not compared, and the leaf compare decides. These keys leave the tree's path inside a
// skipped prefix (inline part, past the 8 inline bytes, and by ending inside it), so a
// lookup that trusted the skipped bytes would return another key's value.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baseline/art/art_tree.h"
#include "wort/key.h"

namespace wort::art {
namespace {

std::optional<Value> get(const VolatileArt& t, const std::string& k) { return t.lookup(as_key(k)); }

TEST(ArtLookup, KeysDivergingInsideASkippedPrefixAreNotFound) {
  VolatileArt t;
  // Two keys sharing a 20-byte prefix: one node whose prefix is 20 bytes long (8 inline).
  const std::string p(20, 'p');
  ASSERT_EQ(t.insert(as_key(p + "A"), 1), Status::ok);
  ASSERT_EQ(t.insert(as_key(p + "B"), 2), Status::ok);
  ASSERT_TRUE(t.verify().ok());
  EXPECT_EQ(get(t, p + "A"), 1u);
  EXPECT_EQ(get(t, p + "B"), 2u);
  std::string in_inline = p, past_inline = p;
  in_inline[3] = 'x';     // differs in the inline 8 bytes, same length and branch byte
  past_inline[15] = 'x';  // differs past them
  EXPECT_EQ(get(t, in_inline + "A"), std::nullopt);
  EXPECT_EQ(get(t, past_inline + "B"), std::nullopt);
  EXPECT_EQ(get(t, p), std::nullopt) << "ends where the node branches, no terminal";
  EXPECT_EQ(get(t, p.substr(0, 10)), std::nullopt) << "ends inside the prefix";
  EXPECT_EQ(get(t, ""), std::nullopt);
  EXPECT_EQ(get(t, p + "C"), std::nullopt) << "no child for the branch byte";
  EXPECT_EQ(get(t, p + "AA"), std::nullopt) << "longer than the leaf's key";
  // With a terminal: the key ending at the node is found, a same-length impostor is not.
  ASSERT_EQ(t.insert(as_key(p), 3), Status::ok);
  EXPECT_EQ(get(t, p), 3u);
  EXPECT_EQ(get(t, past_inline), std::nullopt);
}

TEST(ArtLookup, IntegerKeysDifferingOnlyInSkippedBytes) {
  // 8-byte keys: the root's prefix covers the common high bytes; keys that differ there
  // and agree on every branch byte must miss.
  VolatileArt t;
  std::vector<std::uint64_t> in;
  for (std::uint64_t i = 0; i < 300; ++i) in.push_back(0x0102030400000000ull + i * 7);
  for (std::uint64_t k : in) ASSERT_EQ(t.insert(u64_key(k), k), Status::ok);
  for (std::uint64_t k : in) {
    ASSERT_EQ(t.lookup(u64_key(k)), k);
    for (int byte = 0; byte < 4; ++byte) {
      const std::uint64_t other = k ^ (0x10ull << (56 - 8 * byte));
      EXPECT_EQ(t.lookup(u64_key(other)), std::nullopt) << std::hex << other;
    }
  }
}

}  // namespace
}  // namespace wort::art
