// ART+CoW never rewrites a published node's header: path-compression splits and merges
// copy the node. So a node whose stored depth disagrees with its place in the tree cannot
// come from a crash, and open() must refuse it as corrupt rather than "repair" it.
#include <gtest/gtest.h>

#include "index/art_engine/header.h"
#include "index/artcow/artcow.h"
#include "pm/persist.h"
#include "support/diff_harness.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

using Tree = artcow::ArtCow;

TEST(Recovery, StaleDepthIsCorruptNotRepaired) {
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;
  DiffChecker d(crashsim::factory_of<Tree>(), 8ull << 20);
  d.insert(u64_str(a), 1);
  d.insert(u64_str(b), 2);
  auto* anchor = d.pool().at<art_engine::Anchor>(d.pool().root());
  auto* n = d.pool().at<art_engine::NodeBase>(art_engine::ref_offset(anchor->root));
  ASSERT_EQ(n->hdr.prefix_len, 7);
  ASSERT_TRUE(Tree::open(d.pool()).ok());
  const auto key = u64_key(a);
  pm::store_persist(&n->hdr, art_engine::make_header(3, 4, Key(key)));  // a WOART-style split
  auto t = Tree::open(d.pool());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status(), Status::corrupt);
  EXPECT_FALSE(d.index().verify().ok());
}

// Splits and merges leave the old node untouched: after a prefix split the old node's
// block is freed and a copy with the new header is in the tree (checked by verify/audit).
TEST(Recovery, SplitAndMergeByCopyKeepTheTreeConsistent) {
  DiffChecker d(crashsim::factory_of<Tree>(), 8ull << 20);
  d.insert(u64_str(0xabcdef0123456700ull), 1);
  d.insert(u64_str(0xabcdef0123456711ull), 2);
  d.insert(u64_str(0xab00000000000000ull), 3);  // prefix split
  ASSERT_TRUE(d.check(1));
  d.remove(u64_str(0xab00000000000000ull));     // merge back
  ASSERT_TRUE(d.check(2));
  d.reopen();
  ASSERT_TRUE(d.check(3));
}

}  // namespace
}  // namespace wort::test
