// FPTree size thresholds, up and down: a leaf splits exactly when a key arrives at a full
// leaf (2, 4, 56 and 64 slots, the bitmap's full word), a DRAM inner node splits at
// fanout + 1 children and the root grows a level; removing a leaf's last key unlinks it
// (head or not), an inner node that loses its last child goes, the root collapses, and the
// emptied tree is a null head. After a reopen the bulk-built inner nodes have the height
// ceil(log_fanout(leaves)). Also the DRAM InnerTree on its own (routing, previous_leaf).
#include <gtest/gtest.h>
#include <algorithm>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "index/fptree/fptree_inner.h"
#include "index/fptree/fptree_tree.h"
#include "pm/allocator.h"
#include "support/keygen.h"
#include "support/tree_fixture.h"

namespace wort::test {
namespace {

using namespace fptree_index;

struct Fixture {
  explicit Fixture(std::uint64_t cap, std::uint64_t fanout) {
    PoolOptions o;
    o.size = 32u << 20;
    o.kind = "fptree";
    pool = std::move(Pool::create_in_memory(o)).value();
    IndexOptions io;
    io.words = {cap, fanout, 0, 0};
    tree = std::move(FPTree::create(*pool, io)).value();
  }
  std::uint64_t leaves() const { return tree->stats().nodes.at("leaf"); }
  std::uint64_t height() const { return tree->stats().max_leaf_depth; }
  void ok() const {
    auto r = tree->verify();
    EXPECT_TRUE(r) << r.error().message;
  }
  std::unique_ptr<Pool> pool;
  std::unique_ptr<FPTree> tree;
};

TEST(FPTreeNodes, LeafSplitsWhenFull) {
  for (std::uint64_t cap : {2u, 4u, 56u, 64u}) {
    SCOPED_TRACE("capacity " + std::to_string(cap));
    Fixture f(cap, 8);
    for (std::uint64_t i = 0; i < cap; ++i) ASSERT_EQ(f.tree->insert(Key(u64_key(i)), i), Status::ok);
    EXPECT_EQ(f.leaves(), 1u);
    // an update into a full leaf needs a free slot too (Alg. 8): it splits
    ASSERT_EQ(f.tree->update(Key(u64_key(0)), 100), Status::ok);
    EXPECT_EQ(f.leaves(), 2u);
    EXPECT_EQ(f.tree->lookup(Key(u64_key(0))), std::optional<Value>(100));
    f.ok();
  }
}

TEST(FPTreeNodes, InnerSplitGrowsAndCollapses) {
  Fixture f(2, 3);  // leaves of 2; inner nodes of 3 children
  std::uint64_t n = 0;
  auto add = [&] { ASSERT_EQ(f.tree->insert(Key(u64_key(n)), n), Status::ok); ++n; };
  add();
  EXPECT_EQ(f.height(), 1u);
  while (f.leaves() <= 3) add();  // 4 leaves: the root (3 children max) splits
  EXPECT_EQ(f.height(), 2u);
  while (f.leaves() <= 9) add();
  EXPECT_EQ(f.height(), 3u);
  f.ok();
  // down: remove from the front (head unlinks) and the back
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t k = i % 2 == 0 ? i / 2 : n - 1 - i / 2;
    ASSERT_EQ(f.tree->remove(Key(u64_key(k))), Status::ok);
    if (i % 3 == 0) f.ok();
  }
  EXPECT_EQ(f.leaves(), 0u);
  EXPECT_EQ(f.height(), 0u);
  EXPECT_EQ(f.tree->scan(Key{}, 10, [](Key, Value) { return true; }), 0u);
  f.ok();
  add();
  EXPECT_EQ(f.leaves(), 1u);
  f.ok();
}

TEST(FPTreeNodes, RemovingLastKeyUnlinksLeaf) {
  Fixture f(4, 4);
  for (std::uint64_t i = 0; i < 12; ++i) ASSERT_EQ(f.tree->insert(Key(u64_key(i)), i), Status::ok);
  const std::uint64_t before = f.leaves();
  ASSERT_GE(before, 3u);
  // remove keys from the middle until a leaf empties and leaves the list
  std::uint64_t k = 5;
  while (f.leaves() == before) ASSERT_EQ(f.tree->remove(Key(u64_key(k++))), Status::ok);
  EXPECT_EQ(f.leaves(), before - 1);
  f.ok();
}

TEST(FPTreeNodes, RebuiltHeightAfterReopen) {
  for (std::uint64_t fanout : {3u, 16u, 4096u}) {
    SCOPED_TRACE("fanout " + std::to_string(fanout));
    PoolOptions o;
    o.size = 64u << 20;
    o.kind = "fptree";
    auto pool = std::move(Pool::create_in_memory(o)).value();
    IndexOptions io;
    io.words = {4, fanout, 0, 0};
    auto tree = std::move(FPTree::create(*pool, io)).value();
    for (std::uint64_t i = 0; i < 3000; ++i) ASSERT_EQ(tree->insert(Key(u64_key(i * 7)), i), Status::ok);
    tree.reset();
    tree = std::move(FPTree::open(*pool)).value();
    const IndexStats s = tree->stats();
    std::uint64_t h = 1, span = fanout;
    while (span < s.nodes.at("leaf")) span *= fanout, ++h;
    EXPECT_EQ(s.max_leaf_depth, h);
    EXPECT_GT(s.dram_bytes, 0u);
    auto r = tree->verify();
    EXPECT_TRUE(r) << r.error().message;
  }
}

// Fill a small pool until an insert fails: out_of_space (for a key block or a split's new
// leaf) must leave every acknowledged key in place and verify() clean; removes then make
// room again.
TEST(FPTreeNodes, OutOfSpaceLeavesTreeIntact) {
  std::unique_ptr<Pool> pool;
  std::unique_ptr<FPTree> tree;
  ASSERT_NO_FATAL_FAILURE(make_memory_tree(&pool, &tree, {}, 1u << 20, 64u << 10));
  std::vector<std::string> keys;
  Status s = Status::ok;
  for (std::uint64_t i = 0; s == Status::ok; ++i) {
    std::string k = i % 2 ? u64_str(i * 0x9e3779b97f4a7c15ull) : "string-key-" + std::to_string(i);
    s = tree->insert(as_key(k), i);
    if (s == Status::ok) keys.push_back(std::move(k));
  }
  EXPECT_EQ(s, Status::out_of_space);
  ASSERT_GT(keys.size(), 1000u);
  auto r = tree->verify();
  EXPECT_TRUE(r) << r.error().message;
  for (const auto& k : keys) ASSERT_TRUE(tree->lookup(as_key(k)).has_value()) << k;
  for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_EQ(tree->remove(as_key(keys[i])), Status::ok);
  EXPECT_EQ(tree->insert(as_key(std::string("after")), 1), Status::ok);
  r = tree->verify();
  EXPECT_TRUE(r) << r.error().message;
}

// Fail the Nth allocation (rax's oom test): for each of the first allocations an operation
// batch makes (key blocks, split leaves, the first leaf), the failing call returns
// out_of_space and leaves the contents exactly as before it, verify clean, no block leaked.
TEST(FPTreeNodes, FailNthAllocationLeavesTreeUnchanged) {
  std::uint64_t nth = 1;
  for (;; ++nth) {
    SCOPED_TRACE("failing allocation " + std::to_string(nth));
    Fixture f(4, 3);
    std::map<std::string, Value> ref;
    f.pool->allocator().fail_nth_allocation(nth);
    bool failed = false;
    for (std::uint64_t i = 0; i < 30; ++i) {
      const std::string k = i % 3 ? "k" + std::to_string(i) : u64_str(i);
      const auto before = f.pool->allocator().stats().blocks_allocated;
      const Status s = i % 5 == 4 ? f.tree->update(as_key(ref.begin()->first), i) : f.tree->insert(as_key(k), i);
      if (s == Status::out_of_space) {
        failed = true;
        EXPECT_EQ(f.pool->allocator().stats().blocks_allocated, before) << "a block leaked";
        continue;
      }
      ASSERT_EQ(s, Status::ok);
      if (i % 5 == 4) ref.begin()->second = i; else ref[k] = i;
    }
    f.pool->allocator().fail_nth_allocation(0);
    f.ok();
    std::map<std::string, Value> got;
    f.tree->scan(Key{}, SIZE_MAX, [&](Key k, Value v) { got.emplace(as_string(k), v); return true; });
    EXPECT_EQ(got, ref);
    if (!failed) break;  // the batch made fewer than nth allocations: every one was failed once
  }
  EXPECT_GT(nth, 20u) << "the batch should allocate key blocks and leaves many times";
}

TEST(FPTreeNodes, DumpDrawsEveryLeaf) {
  Fixture f(4, 3);
  for (std::uint64_t i = 0; i < 9; ++i) ASSERT_EQ(f.tree->insert(Key(u64_key(i)), i), Status::ok);
  ASSERT_EQ(f.tree->insert(as_key(std::string("str")), 7), Status::ok);
  std::ostringstream os;
  f.tree->dump(os);
  const std::string d = os.str();
  EXPECT_NE(d.find("\"str\"=7"), std::string::npos) << d;
  std::size_t leaves = 0;
  for (std::size_t at = d.find("  leaf @"); at != std::string::npos; at = d.find("  leaf @", at + 1)) ++leaves;
  EXPECT_EQ(leaves, f.leaves()) << d;
}

TEST(FPTreeInner, RoutesAndFindsPreviousLeaf) {
  InnerTree t(3);
  std::vector<std::pair<std::uint64_t, std::string>> leaves;
  for (std::uint64_t i = 0; i < 10; ++i) leaves.emplace_back(64 * (i + 1), i == 0 ? "" : std::string(1, static_cast<char>('a' + 2 * i)));
  t.build(leaves);
  EXPECT_EQ(t.height(), 3u);  // 10 leaves -> 4 -> 2 -> 1
  InnerTree::Path p;
  EXPECT_EQ(t.find(as_key(std::string("")), &p), 64u);
  EXPECT_EQ(t.previous_leaf(p), 0u);
  EXPECT_EQ(t.find(as_key(std::string("c")), &p), 128u);  // "c" is leaf 1's first key
  EXPECT_EQ(t.previous_leaf(p), 64u);
  EXPECT_EQ(t.find(as_key(std::string("gz")), &p), 64u * 4);  // between "g" and "i"
  EXPECT_EQ(t.previous_leaf(p), 64u * 3);
  EXPECT_EQ(t.find(as_key(std::string("\xff")), &p), 640u);
  std::vector<std::uint64_t> order;
  ASSERT_TRUE(t.for_each_leaf([&](std::uint64_t l, const std::string*, const std::string*) { order.push_back(l); }));
  ASSERT_EQ(order.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(order[i], 64 * (i + 1));
}


// key_head is the first 8 bytes, big-endian, zero-padded, for every length (0..12 here).
TEST(FPTreeInner, KeyHeadIsTheFirstEightBytesBigEndian) {
  std::string k;
  for (std::size_t len = 0; len <= 12; ++len) {
    std::uint64_t want = 0;
    for (std::size_t i = 0; i < 8; ++i)
      want = (want << 8) | (i < len ? static_cast<std::uint8_t>(0xf0 + i) : 0u);
    EXPECT_EQ(fptree_index::key_head(as_key(k)), want) << len;
    k.push_back(static_cast<char>(0xf0 + len));
  }
}

// One wide leaf-level node (fanout 4096): the branch-free search over the heads, and the
// string comparison among separators that share a head (prefixes, embedded and trailing
// zeros, 8-byte keys equal to a separator), route each key as std::upper_bound over the
// separators does (child i covers [sep[i-1], sep[i])).
TEST(FPTreeInner, WideNodeRoutesAsUpperBound) {
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) {
    std::string b(8, '\0');
    for (int j = 0; j < 8; ++j) b[j] = static_cast<char>((i * 37 + j * 11) % 7 == 0 ? 0 : 'a' + (i * 13 + j) % 5);
    keys.push_back(b.substr(0, static_cast<std::size_t>(i % 12)));
    keys.push_back(b + std::string(static_cast<std::size_t>(i % 3), static_cast<char>(i % 2 ? 0 : 'z')));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{17}, keys.size()}) {
    InnerTree t(4096);
    std::vector<std::pair<std::uint64_t, std::string>> leaves;
    for (std::size_t i = 0; i < count; ++i) leaves.emplace_back(64 * (i + 1), keys[i * keys.size() / count]);
    const std::vector<std::pair<std::uint64_t, std::string>> built = leaves;
    t.build(leaves);
    ASSERT_EQ(t.height(), 1u);
    std::vector<std::string> probes = keys;
    for (const std::string& k : keys) {
      probes.push_back(k + std::string(1, '\0'));
      if (!k.empty()) probes.push_back(k.substr(0, k.size() - 1));
    }
    for (const std::string& k : probes) {
      // leaf 0 also takes keys below its (unused) first key
      std::size_t want = 0;
      for (std::size_t i = 1; i < count; ++i)
        if (built[i].second <= k) want = i;
      InnerTree::Path p;
      EXPECT_EQ(t.find(as_key(k), &p), built[want].first) << count << " " << k.size();
      std::uint64_t leaf = 0, v = 0;
      const InnerTree::Node* n = nullptr;
      ASSERT_TRUE(t.find_optimistic(as_key(k), &leaf, &n, &v));
      EXPECT_EQ(leaf, built[want].first);
      EXPECT_TRUE(InnerTree::validate(n, v));
    }
  }
}

}  // namespace
}  // namespace wort::test
