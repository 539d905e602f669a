// WOART depth-based repair, driven by hand: write into a node the header an in-place split
// or merge writes before its parent-pointer swap, as if the swap were lost in a crash, then
// reopen (recovery on a copy of the pool). The node must be repaired (verify passes, depth
// back to its position) and every key must still be found and further writes must work.
// The crash-simulator test Crash.RecoveryOfInterruptedSplitAndMerge reaches the same states
// through real crash images; this test names them.
#include <gtest/gtest.h>

#include "index/art_engine/header.h"
#include "index/woart/woart.h"
#include "pm/persist.h"
#include "support/diff_harness.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

using Tree = woart::Woart;
using art_engine::Anchor;
using art_engine::NodeBase;

NodeBase* root_node(Pool& pool) {
  const Anchor* a = pool.at<Anchor>(pool.root());
  EXPECT_FALSE(art_engine::is_leaf(a->root));
  return pool.at<NodeBase>(art_engine::ref_offset(a->root));
}

NodeBase* child_node(Pool& pool, NodeBase* n, std::uint8_t b) {
  art_engine::Ref found = art_engine::kNull;
  auto fn = [&](std::uint8_t c, art_engine::Ref ref) {
    if (c == b) found = ref;
    return true;
  };
  switch (n->type) {
    case art_engine::NodeType::woart_node4: woart::Node4Ops::for_each_from(n, 0, fn); break;
    case art_engine::NodeType::woart_node16: woart::Node16Ops::for_each_from(n, 0, fn); break;
    case art_engine::NodeType::node48: art_engine::Node48Ops::for_each_from(n, 0, fn); break;
    default: art_engine::Node256Ops::for_each_from(n, 0, fn); break;
  }
  EXPECT_NE(found, art_engine::kNull);
  EXPECT_FALSE(art_engine::is_leaf(found));
  return pool.at<NodeBase>(art_engine::ref_offset(found));
}

// The root has a 7-byte path; a key leaving it at byte 2 makes WOART store, in the root,
// depth 3 / path 4 before the new parent is linked. Lose the link: recovery must restore
// depth 0 / path 7.
TEST(Recovery, InterruptedPrefixSplitIsRepaired) {
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;
  DiffChecker d(crashsim::factory_of<Tree>(), 8ull << 20);
  d.insert(u64_str(a), 1);
  d.insert(u64_str(b), 2);
  NodeBase* n = root_node(d.pool());
  ASSERT_EQ(n->hdr.depth, 0);
  ASSERT_EQ(n->hdr.prefix_len, 7);
  const auto key = u64_key(a);
  pm::store_persist(&n->hdr, art_engine::make_header(3, 4, Key(key)));
  EXPECT_FALSE(d.index().verify().ok()) << "the stale header must be visible to verify()";
  EXPECT_EQ(d.index().lookup(Key(key)), std::optional<Value>(1)) << "lookups skip the path";
  d.reopen();
  n = root_node(d.pool());
  EXPECT_EQ(n->hdr.depth, 0);
  EXPECT_EQ(n->hdr.prefix_len, 7);
  ASSERT_TRUE(d.check(1));
  d.insert(u64_str(0xab00000000000000ull), 3);  // the split, this time completed
  d.insert(u64_str(a + 5), 4);
  ASSERT_TRUE(d.check(2));
}

// Removing 0x2200 leaves the root NODE4 with one child, the node for 0x11xx: WOART stores
// in that child depth 0 / path 7 before swapping the root pointer to it. Lose the swap:
// recovery must restore the child's depth 7 / path 0 under the old root.
TEST(Recovery, InterruptedMergeIsRepaired) {
  DiffChecker d(crashsim::factory_of<Tree>(), 8ull << 20);
  d.insert(u64_str(0x1100), 1);
  d.insert(u64_str(0x1101), 2);
  d.insert(u64_str(0x2200), 3);
  NodeBase* root = root_node(d.pool());
  ASSERT_EQ(root->hdr.branch_pos(), 6u);
  NodeBase* c = child_node(d.pool(), root, 0x11);
  ASSERT_EQ(c->hdr.depth, 7);
  ASSERT_EQ(c->hdr.prefix_len, 0);
  const auto key = u64_key(0x1100);
  pm::store_persist(&c->hdr, art_engine::make_header(0, 7, Key(key)));
  EXPECT_FALSE(d.index().verify().ok());
  d.reopen();
  root = root_node(d.pool());
  c = child_node(d.pool(), root, 0x11);
  EXPECT_EQ(c->hdr.depth, 7);
  EXPECT_EQ(c->hdr.prefix_len, 0);
  ASSERT_TRUE(d.check(3));
  d.remove(u64_str(0x2200));  // the merge, this time completed
  ASSERT_TRUE(d.check(4));
  EXPECT_EQ(root_node(d.pool())->hdr.prefix_len, 7);
}

// A header whose branch position lies above the depth its place implies cannot come from
// a crash: open() refuses it as corrupt instead of guessing.
TEST(Recovery, ImpossibleHeaderIsCorrupt) {
  DiffChecker d(crashsim::factory_of<Tree>(), 8ull << 20);
  d.insert(u64_str(0x1100), 1);
  d.insert(u64_str(0x1101), 2);
  d.insert(u64_str(0x2200), 3);
  NodeBase* c = child_node(d.pool(), root_node(d.pool()), 0x11);
  const auto key = u64_key(0x1100);
  pm::store_persist(&c->hdr, art_engine::make_header(2, 1, Key(key)));  // branches at 3 < 7
  auto t = Tree::open(d.pool());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status(), Status::corrupt);
}

// Regression: the checked walk returned without failing on a leaf whose key length exceeds
// any key's (kMaxArtKey), so open() accepted the pool and dump()/verify() then read that
// many bytes past the leaf (found by kit_damaged_pool_test once the engine's own
// ref_in_pool re-checks were dropped). The walk must report it as corrupt.
TEST(Recovery, LeafKeyLongerThanAnyKeyIsCorrupt) {
  DiffChecker d(crashsim::factory_of<Tree>(), 8ull << 20);
  d.insert(u64_str(0x1100), 1);
  d.insert(u64_str(0x1101), 2);
  d.insert(u64_str(0x2200), 3);
  art_engine::Ref leaf_ref = art_engine::kNull;
  woart::Node4Ops::for_each_from(root_node(d.pool()), 0, [&](std::uint8_t b, art_engine::Ref r) {
    if (b == 0x22) leaf_ref = r;
    return true;
  });
  ASSERT_TRUE(art_engine::is_leaf(leaf_ref));
  auto* l = d.pool().at<art_engine::Leaf>(art_engine::ref_offset(leaf_ref));
  pm::store_persist(&l->key_len, static_cast<decltype(l->key_len)>(art_engine::kMaxArtKey + 1));
  auto t = Tree::open(d.pool());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status(), Status::corrupt);
  EXPECT_NE(t.error().message.find("longer than any key"), std::string::npos) << t.error().message;
}

}  // namespace
}  // namespace wort::test
