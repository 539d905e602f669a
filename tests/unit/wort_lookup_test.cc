// WORT's optimistic lookup (wort_tree.cc): the stored prefix partial keys are skipped, not
// compared, and the leaf compare decides. These keys leave the tree's path inside a
// skipped prefix (in the nine stored partial keys, past them, by ending inside the
// prefix), so a lookup that trusted the skipped partial keys would return another key's
// value; and an interrupted split (a header whose depth disagrees) must not matter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "index/wort/wort_tree.h"
#include "wort/key.h"

namespace wort {
namespace {

class WortLookup : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolOptions o;
    o.size = 8u << 20;
    o.chunk_size = 64u << 10;
    o.kind = "wort";
    auto p = Pool::create_in_memory(o);
    ASSERT_TRUE(p) << p.error().message;
    pool_ = std::move(p).value();
    auto t = WortTree::create(*pool_, {});
    ASSERT_TRUE(t) << t.error().message;
    tree_ = std::move(t).value();
  }
  std::optional<Value> get(const std::string& k) const { return tree_->lookup(as_key(k)); }

  std::unique_ptr<Pool> pool_;
  std::unique_ptr<WortTree> tree_;
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

}  // namespace
}  // namespace wort
