// verify() must fail on a corrupt tree: each test breaks one invariant by hand, expects
// Status::corrupt with a message naming the problem, then repairs the damage (so the tree
// can be destroyed cleanly) and expects verify() to pass again.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "baseline/art/art_tree.h"
#include "baseline/art/leaf.h"
#include "baseline/art/node16.h"
#include "baseline/art/node256.h"
#include "baseline/art/node4.h"
#include "baseline/art/node48.h"

namespace wort::art {

class ArtTreeTestPeer {
 public:
  static Ref root(const VolatileArt& t) { return t.root_; }
  static std::size_t& count(VolatileArt& t) { return t.count_; }
};

namespace {

// A tree whose root node has `children` leaf children "r" + byte (and terminal "r").
VolatileArt* tree_with_root_children(VolatileArt& t, unsigned children) {
  EXPECT_EQ(t.insert(as_key("r"), 0), Status::ok);
  for (unsigned i = 0; i < children; ++i) {
    std::string k = "r";
    k.push_back(static_cast<char>('A' + i));
    EXPECT_EQ(t.insert(as_key(k), i), Status::ok);
  }
  EXPECT_TRUE(t.verify().ok());
  return &t;
}

void expect_corrupt(const VolatileArt& t, const std::string& words) {
  auto v = t.verify();
  ASSERT_FALSE(v.ok()) << "verify() missed: " << words;
  EXPECT_EQ(v.status(), Status::corrupt);
  EXPECT_NE(v.error().message.find(words), std::string::npos) << v.error().message;
}

TEST(ArtVerify, CatchesWrongKeyCount) {
  VolatileArt t;
  tree_with_root_children(t, 3);
  ++ArtTreeTestPeer::count(t);
  expect_corrupt(t, "count says");
  --ArtTreeTestPeer::count(t);
  EXPECT_TRUE(t.verify().ok());
}

TEST(ArtVerify, CatchesUnsortedNode4Keys) {
  VolatileArt t;
  tree_with_root_children(t, 3);
  auto* n = static_cast<Node4*>(ArtTreeTestPeer::root(t).node());
  ASSERT_EQ(n->type, NodeType::node4);
  std::swap(n->keys[0], n->keys[1]);
  std::swap(n->children[0], n->children[1]);  // each child still under its own byte
  expect_corrupt(t, "not strictly ascending");
  std::swap(n->keys[0], n->keys[1]);
  std::swap(n->children[0], n->children[1]);
  EXPECT_TRUE(t.verify().ok());
}

TEST(ArtVerify, CatchesLeafUnderTheWrongByte) {
  VolatileArt t;
  tree_with_root_children(t, 3);
  auto* n = static_cast<Node4*>(ArtTreeTestPeer::root(t).node());
  std::swap(n->children[0], n->children[1]);  // keys sorted, leaves crossed
  expect_corrupt(t, "does not match its path");
  std::swap(n->children[0], n->children[1]);
  EXPECT_TRUE(t.verify().ok());
}

TEST(ArtVerify, CatchesWrongInlinePrefix) {
  VolatileArt t;
  ASSERT_EQ(t.insert(as_key("prefix-1"), 1), Status::ok);
  ASSERT_EQ(t.insert(as_key("prefix-2"), 2), Status::ok);
  Node* n = ArtTreeTestPeer::root(t).node();
  ASSERT_EQ(n->prefix_len, 7u);
  n->prefix[3] = std::byte{'X'};
  expect_corrupt(t, "inline prefix");
  n->prefix[3] = std::byte{'f'};
  EXPECT_TRUE(t.verify().ok());
}

TEST(ArtVerify, CatchesNodeThatShouldHaveCollapsed) {
  VolatileArt t;
  tree_with_root_children(t, 1);  // terminal "r" + child "rA"
  Node* n = ArtTreeTestPeer::root(t).node();
  Leaf* term = std::exchange(n->terminal, nullptr);  // leaves one entry: a bare child
  expect_corrupt(t, "should have been collapsed");
  n->terminal = term;
  EXPECT_TRUE(t.verify().ok());
}

TEST(ArtVerify, CatchesNode48IndexingOneSlotTwice) {
  VolatileArt t;
  tree_with_root_children(t, 20);
  auto* n = static_cast<Node48*>(ArtTreeTestPeer::root(t).node());
  ASSERT_EQ(n->type, NodeType::node48);
  const std::uint8_t saved = n->child_index['B'];
  n->child_index['B'] = n->child_index['A'];
  expect_corrupt(t, "indexed twice");
  n->child_index['B'] = saved;
  EXPECT_TRUE(t.verify().ok());
}

TEST(ArtVerify, CatchesNode256CountMismatchAndUnderfullTypes) {
  VolatileArt t;
  tree_with_root_children(t, 60);
  auto* n = static_cast<Node256*>(ArtTreeTestPeer::root(t).node());
  ASSERT_EQ(n->type, NodeType::node256);
  ++n->count;
  expect_corrupt(t, "node256 holds 60 children, count 61");
  --n->count;
  EXPECT_TRUE(t.verify().ok());
}

TEST(ArtVerify, CatchesUnderfullNode16) {
  VolatileArt t;
  tree_with_root_children(t, 5);
  auto* n = static_cast<Node16*>(ArtTreeTestPeer::root(t).node());
  ASSERT_EQ(n->type, NodeType::node16);
  // Pretend the last child is gone without shrinking: 4 is fine, 3 is not.
  const Ref last = n->children[4];
  n->children[4] = Ref{};
  n->count = 4;
  expect_corrupt(t, "walk found");  // node16 with 4 is legal; the walk misses a key
  const Ref fourth = n->children[3];
  n->children[3] = Ref{};
  n->count = 3;
  expect_corrupt(t, "node16 count 3 outside [4, 16]");
  n->children[3] = fourth;
  n->children[4] = last;
  n->count = 5;
  EXPECT_TRUE(t.verify().ok());
}

}  // namespace
}  // namespace wort::art
