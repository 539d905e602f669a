// FAST&FAIR node thresholds: a node holds `slots` records (14 at 256 B, 30 at 512 B); the
// next insert splits it (root: by copy into two halves under a new root; below: FAIR),
// inner nodes split the same way with the median moved right as the sibling's low fence;
// a node below slots/2 records merges with its neighbour or borrows from it, and a root
// with one child collapses.
#include <gtest/gtest.h>

#include "index/fastfair/fastfair_fixture.h"

namespace wort::test {
namespace {

using fastfair::kEmpty;
using fastfair::Node;
using fastfair::NodeRef;

NodeRef view(const FastFairTree& t, std::uint64_t off) {
  return NodeRef{const_cast<Node*>(t.node_at(off)), t.slots()};
}

class FastFairNodes : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(FastFairNodes, LeafRootSplitsAtSlotsPlusOne) {
  FastFairFixture f(GetParam());
  const unsigned s = f.tree->slots();
  EXPECT_EQ(s, fastfair::slots_for(GetParam()));
  for (unsigned i = 0; i < s; ++i) ASSERT_EQ(f.put(i * 10, i), Status::ok);
  EXPECT_EQ(f.tree->height(), 0u);
  EXPECT_EQ(view(*f.tree, f.tree->root()).live_count(), s);
  const std::uint64_t old_root = f.tree->root();
  ASSERT_EQ(f.put(5, 99), Status::ok);  // the 15th / 31st key
  EXPECT_EQ(f.tree->height(), 1u);
  EXPECT_NE(f.tree->root(), old_root);  // replaced, not split in place
  const Node* root = f.tree->node_at(f.tree->root());
  EXPECT_EQ(root->h.sibling, 0u);
  EXPECT_EQ(view(*f.tree, f.tree->root()).live_count(), 1u);
  const NodeRef left = view(*f.tree, root->h.leftmost);
  const NodeRef right = view(*f.tree, root->rec[0].ptr);
  EXPECT_EQ(left.n->h.sibling, root->rec[0].ptr);
  EXPECT_EQ(left.live_count() + right.live_count(), s + 1);
  EXPECT_EQ(right.first_key(), root->rec[0].key);  // separator = the right half's first key
  f.expect_verified();
  for (unsigned i = 0; i < s; ++i) EXPECT_EQ(f.get(i * 10), std::optional<Value>(i));
  EXPECT_EQ(f.get(5), std::optional<Value>(99));
}

TEST_P(FastFairNodes, LeafSplitBelowTheRootAddsOneLeafAndOneSeparator) {
  FastFairFixture f(GetParam());
  const unsigned s = f.tree->slots();
  std::uint64_t k = 0;
  while (f.tree->height() == 0) { ASSERT_EQ(f.put(k, k + 1), Status::ok); ++k; }
  // sequential keys fill the right leaf; the insert after it is full splits it
  const Node* root = f.tree->node_at(f.tree->root());
  auto rightmost = [&] {
    NodeRef r = view(*f.tree, f.tree->root());
    return r.rec()[r.end() - 1].ptr;
  };
  while (view(*f.tree, rightmost()).live_count() < s) { ASSERT_EQ(f.put(k, k + 1), Status::ok); ++k; }
  const unsigned seps = view(*f.tree, f.tree->root()).live_count();
  { ASSERT_EQ(f.put(k, k + 1), Status::ok); ++k; }
  EXPECT_EQ(view(*f.tree, f.tree->root()).live_count(), seps + 1);
  EXPECT_EQ(f.tree->node_at(f.tree->root()), root);  // the root did not move
  f.expect_verified();
  EXPECT_EQ(f.tree->stats().keys, k);
}

// FAST_FAIR issue #5: an inner split must move the median into the right node (as its
// low fence, rec[0], with no leftmost child), so the sibling's first key equals the
// separator the parent gets; a writer that compares with the sibling's first key then
// picks the same node the parent does.
TEST_P(FastFairNodes, InnerSplitMovesTheMedianRight) {
  FastFairFixture f(GetParam());
  std::uint64_t k = 0;
  while (f.tree->height() < 2) { ASSERT_EQ(f.put(k, k + 1), Status::ok); ++k; }
  // grow until the root has two inner children split below it
  while (view(*f.tree, f.tree->root()).live_count() < 2) { ASSERT_EQ(f.put(k, k + 1), Status::ok); ++k; }
  const Node* root = f.tree->node_at(f.tree->root());
  for (unsigned i = 0; i < 2; ++i) {
    const Node* child = f.tree->node_at(root->rec[i].ptr);
    EXPECT_EQ(child->h.leftmost, 0u) << "a split inner node keeps no leftmost child";
    EXPECT_EQ(child->rec[0].key, root->rec[i].key) << "the median moved right";
  }
  f.expect_verified();
  // keys between the separator and the sibling's second record go to the fence's child
  for (std::uint64_t i = 0; i < k; i += 7) EXPECT_EQ(f.get(i), std::optional<Value>(i + 1));
}

// Below slots/2 records a node pairs with its neighbour: the pair merges if it fits in one
// node (and a root left with one child collapses into it), otherwise the neighbour lends
// records so both end with at least slots/2.
TEST_P(FastFairNodes, MergeBelowHalfWhenThePairFitsThenRootCollapse) {
  FastFairFixture f(GetParam());
  const unsigned s = f.tree->slots();
  for (unsigned i = 0; i <= s; ++i) ASSERT_EQ(f.put(i, i), Status::ok);  // root split
  ASSERT_EQ(f.tree->height(), 1u);
  const Node* root = f.tree->node_at(f.tree->root());
  NodeRef right = view(*f.tree, root->rec[0].ptr);
  const unsigned nr = right.live_count();
  // down to slots/2 records: no rebalance yet
  unsigned k = s;
  while (right.live_count() > s / 2) ASSERT_EQ(f.del(k--), Status::ok);
  EXPECT_EQ(f.tree->rebalances().merges, 0u);
  EXPECT_EQ(f.tree->height(), 1u);
  ASSERT_EQ(f.del(k--), Status::ok);  // one below: the pair fits in one node
  EXPECT_EQ(f.tree->rebalances().merges, 1u);
  EXPECT_EQ(f.tree->rebalances().root_collapses, 1u);
  EXPECT_EQ(f.tree->height(), 0u);
  EXPECT_EQ(f.tree->stats().keys, s + 1 - (nr - s / 2 + 1));
  f.expect_verified();
}

TEST_P(FastFairNodes, BorrowBelowHalfWhenThePairDoesNotFit) {
  FastFairFixture f(GetParam());
  const unsigned s = f.tree->slots();
  for (unsigned i = 0; i <= s; ++i) ASSERT_EQ(f.put(i * 10, i), Status::ok);
  const Node* root = f.tree->node_at(f.tree->root());
  NodeRef left = view(*f.tree, root->h.leftmost);
  NodeRef right = view(*f.tree, root->rec[0].ptr);
  // fill the right node up, then empty the left one below half
  for (unsigned i = 0; right.live_count() < s; ++i) ASSERT_EQ(f.put((s + 1 + i) * 10, i), Status::ok);
  ASSERT_EQ(left.live_count(), s / 2);
  ASSERT_EQ(right.live_count(), s);
  ASSERT_EQ(f.del(0), Status::ok);  // left: slots/2 - 1, the pair: too many for one node
  EXPECT_EQ(f.tree->rebalances().merges, 0u);
  EXPECT_EQ(f.tree->rebalances().borrows, 1u);
  root = f.tree->node_at(f.tree->root());
  left = view(*f.tree, root->h.leftmost);
  right = view(*f.tree, root->rec[0].ptr);
  EXPECT_GE(left.live_count(), s / 2);
  EXPECT_GE(right.live_count(), s / 2);
  EXPECT_EQ(right.first_key(), root->rec[0].key);
  f.expect_verified();
}

TEST_P(FastFairNodes, RemovingEveryKeyCollapsesToOneLeaf) {
  FastFairFixture f(GetParam());
  const IndexStats empty = f.tree->stats();
  const unsigned n = f.tree->slots() * 40;
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(f.put(i * 7919 % n, i), Status::ok);
  EXPECT_GE(f.tree->height(), 2u);
  for (unsigned i = 0; i < n; i += 2) ASSERT_EQ(f.del(i), Status::ok);
  f.expect_verified();
  EXPECT_EQ(f.tree->stats().keys, n / 2);
  for (unsigned i = 1; i < n; i += 2) ASSERT_EQ(f.del(i), Status::ok);
  f.expect_verified();
  const IndexStats after = f.tree->stats();
  EXPECT_EQ(after.keys, 0u);
  EXPECT_EQ(f.tree->height(), 0u);
  EXPECT_EQ(after.nodes.at("leaf"), 1u);
  EXPECT_EQ(after.pm_bytes, empty.pm_bytes);
  EXPECT_GT(f.tree->rebalances().merges, 0u);
  EXPECT_GT(f.tree->rebalances().borrows, 0u);
  for (unsigned i = 0; i < n; i += 3) ASSERT_EQ(f.put(i, i + 1), Status::ok);
  f.expect_verified();
  EXPECT_EQ(f.tree->stats().keys, (n + 2) / 3);
}

INSTANTIATE_TEST_SUITE_P(NodeSizes, FastFairNodes, ::testing::Values(256u, 512u, 1024u),
                         [](const auto& info) { return std::to_string(info.param); });

// Key words: 8-byte keys inline unless they begin 0xffff; everything else in key blocks;
// byte order preserved with prefixes and zero bytes.
TEST(FastFairKeys, InlineWordsAndKeyBlocksCompareAsByteStrings) {
  using fastfair::SearchKey;
  EXPECT_TRUE(SearchKey::of(as_key(u64_str(0))).inl);
  EXPECT_TRUE(SearchKey::of(as_key(u64_str(0xfffeffffffffffffull))).inl);
  EXPECT_FALSE(SearchKey::of(as_key(u64_str(0xffff000000000000ull))).inl);
  EXPECT_FALSE(SearchKey::of(as_key(std::string(7, '\0'))).inl);
  EXPECT_FALSE(SearchKey::of(as_key(std::string(9, 'a'))).inl);
  FastFairFixture f(256);
  const std::vector<std::string> keys = {
      "", std::string(1, '\0'), std::string(7, '\0'), std::string(8, '\0'), std::string(9, '\0'),
      "ab", std::string("ab\0", 3), std::string("ab\0\0\0\0\0\0", 8), "abcdefgh", "abcdefghi",
      std::string("\xff\xfe\xff\xff\xff\xff\xff\xff", 8), std::string("\xff\xff", 2),
      std::string("\xff\xff\0\0\0\0\0\0", 8), std::string(8, '\xff'), std::string(9, '\xff')};
  for (std::size_t i = keys.size(); i-- > 0;) ASSERT_EQ(f.tree->insert(as_key(keys[i]), i), Status::ok);
  std::vector<std::string> seen;
  f.tree->scan(Key{}, SIZE_MAX, [&](Key k, Value v) {
    seen.emplace_back(as_string(k));
    EXPECT_EQ(keys[v], seen.back());
    return true;
  });
  EXPECT_EQ(seen, keys);  // the list above is in byte order
  f.expect_verified();
}

}  // namespace
}  // namespace wort::test
