// FPTree leaf groups (paper §4.3, App. B; IndexOptions word 3): groups are allocated as
// splits need leaves, leaves of emptied leaves go back to their group, an emptied group is
// released by the next GetLeaf or by open(), the free leaves are rebuilt on open, and a
// damaged group list opens as corrupt. Each state is checked with verify() (which checks
// the groups against the tree) and the allocator audit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "index/fptree/fptree_tree.h"
#include "pm/allocator.h"
#include "support/keygen.h"
#include "support/tree_fixture.h"
#include "index/fptree/fptree_reopen.h"

namespace wort::test {
namespace {

using namespace fptree_index;

class FPTreeGroups : public ::testing::Test {
 protected:
  void make(std::uint64_t cap, std::uint64_t group) {
    IndexOptions io;
    io.words = {cap, 3, 0, group};
    make_memory_tree(&pool_, &tree_, io, 8u << 20, 64u << 10);
  }
  Anchor* anchor() { return pool_->at<Anchor>(pool_->root()); }
  void put(std::uint64_t k) {
    ASSERT_EQ(tree_->insert(Key(u64_key(k)), k), Status::ok);
    ref_[k] = k;
  }
  void del(std::uint64_t k) {
    ASSERT_EQ(tree_->remove(Key(u64_key(k))), Status::ok);
    ref_.erase(k);
  }
  void check() {
    auto r = tree_->verify();
    EXPECT_TRUE(r) << r.error().message;
    const auto audit = pool_->allocator().audit([&](pm::BlockVisitor v) { return tree_->visit_blocks(v); });
    EXPECT_TRUE(audit.ok()) << audit.describe();
    for (const auto& [k, v] : ref_) EXPECT_EQ(tree_->lookup(Key(u64_key(k))), std::optional<Value>(v));
    EXPECT_EQ(tree_->stats().keys, ref_.size());
  }
  //! Drops the tree, copies the pool bytes (no clean shutdown), reopens: recovery runs.
  Result<std::unique_ptr<FPTree>> reopen() {
    tree_.reset();
    return reopen_from_copy(pool_, image_);
  }
  void reopen_ok() {
    auto t = reopen();
    ASSERT_TRUE(t) << t.error().message;
    tree_ = std::move(t).value();
  }
  std::uint64_t leaves() { return tree_->stats().nodes.at("leaf"); }

  std::unique_ptr<std::byte, FreeAligned> image_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<FPTree> tree_;
  std::map<std::uint64_t, Value> ref_;
};

// Leaves come n at a time: groups = ceil(leaves / n) while nothing was removed, and every
// leaf of a group is in the tree or free.
TEST_F(FPTreeGroups, GroupsFollowTheLeaves) {
  make(4, 3);
  for (std::uint64_t k = 1; k <= 200; ++k) put(k * 7 % 1009);
  check();
  const std::uint64_t l = leaves();
  EXPECT_EQ(tree_->leaf_groups(), (l + 2) / 3);
  EXPECT_EQ(tree_->leaf_groups() * 3, l + tree_->free_group_leaves());
  EXPECT_EQ(tree_->stats().nodes.at("leafgroup"), tree_->leaf_groups());
  reopen_ok();
  check();
  EXPECT_EQ(tree_->leaf_groups() * 3, l + tree_->free_group_leaves());
}

// Removes give leaves back (free grows); a group whose leaves are all free stays listed
// until the next GetLeaf (a split, or the first leaf of an empty tree) or open() releases it.
TEST_F(FPTreeGroups, EmptiedGroupsAreReleasedByTheNextGetLeafOrOpen) {
  make(4, 2);
  for (std::uint64_t k = 1; k <= 64; ++k) put(k);
  const std::uint64_t groups = tree_->leaf_groups();
  ASSERT_GT(groups, 4u);
  for (std::uint64_t k = 1; k <= 64; ++k) del(k);
  check();
  EXPECT_EQ(tree_->leaf_groups(), groups);  // all emptied, none released yet
  EXPECT_EQ(tree_->free_group_leaves(), 2 * groups);
  put(5);  // the first leaf: GetLeaf releases every emptied group, then allocates one
  check();
  EXPECT_EQ(tree_->leaf_groups(), 1u);
  EXPECT_EQ(tree_->free_group_leaves(), 1u);
  del(5);
  reopen_ok();  // open() releases the emptied group
  check();
  EXPECT_EQ(tree_->leaf_groups(), 0u);
  EXPECT_EQ(anchor()->groups, 0u);
  EXPECT_EQ(pool_->allocator().stats().blocks_allocated, 1u);  // the anchor alone
  put(9);
  check();
}

// A group allocation that fails leaves the tree as it was (the split had not begun). With
// 8-byte keys the only allocations are groups: the first insert that needs one fails.
TEST_F(FPTreeGroups, FailedGroupAllocationChangesNothing) {
  make(4, 2);
  for (std::uint64_t k = 10; k <= 60; k += 10) put(k);
  pool_->allocator().fail_nth_allocation(1);
  const std::uint64_t groups = tree_->leaf_groups();
  std::uint64_t k = 70;
  Status s;
  for (; (s = tree_->insert(Key(u64_key(k)), k)) == Status::ok; ++k) ref_[k] = k;
  EXPECT_EQ(s, Status::out_of_space);
  EXPECT_EQ(tree_->leaf_groups(), groups + 0);
  EXPECT_EQ(tree_->free_group_leaves(), 0u);
  check();
  put(k);
  EXPECT_EQ(tree_->leaf_groups(), groups + 1);
  check();
}

// Damaged group lists: every bad word a corrupt with a message, never a crash.
TEST_F(FPTreeGroups, DamagedGroupListIsCorrupt) {
  make(4, 2);
  for (std::uint64_t k = 1; k <= 30; ++k) put(k);
  const std::uint64_t head = anchor()->groups;
  ASSERT_NE(head, 0u);
  anchor()->groups = 0;  // the tree's leaves in no listed group
  auto t = reopen();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status(), Status::corrupt);
  EXPECT_NE(t.error().message.find("leaf group"), std::string::npos) << t.error().message;
  anchor()->groups = head + 64;  // not a group block
  t = reopen();
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("leaf group"), std::string::npos) << t.error().message;
  anchor()->groups = head;
  pool_->at<LeafGroupHeader>(head)->next = head;  // a cycle
  t = reopen();
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("reached twice"), std::string::npos) << t.error().message;
}

TEST_F(FPTreeGroups, DumpNamesTheGroups) {
  make(4, 2);
  for (std::uint64_t k = 1; k <= 10; ++k) put(k);
  std::ostringstream os;
  tree_->dump(os);
  EXPECT_NE(os.str().find("leaf groups of 2"), std::string::npos) << os.str();
}

}  // namespace
}  // namespace wort::test
