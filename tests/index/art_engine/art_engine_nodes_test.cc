// Pushes every node type of WOART and ART+CoW (one typed test over both, named by kind:
// PmartNodes/woart.*, PmartNodes/artcow.*) across its grow and shrink thresholds, one key at
// a time, checking the node type and the whole contents (against std::map) after every step:
// 1 → NODE4 (2) → NODE16 (5) → NODE48 (17) → NODE256 (49) and back: NODE48 at 37,
// NODE16 at 12, NODE4 at 3, merged away at 1. Also with an end-of-key leaf in the node, one
// level below the root, and with the children inserted in descending order.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/diff_harness.h"
#include "support/keygen.h"
#include "support/art_engine_trees.h"

namespace wort::test {
namespace {

template <class Tree>
class PmartNodes : public ::testing::Test {};
TYPED_TEST_SUITE(PmartNodes, PmartTrees, KindName);

//! Type name of the node holding the children, or "" if there is none; `root_node4` says
//! whether a NODE4 root above it (holding a sibling key) is to be discounted.
std::string node_type_of(const Index& ix, bool root_node4) {
  std::map<std::string, std::uint64_t> nodes = ix.stats().nodes;
  if (root_node4) --nodes["node4"];
  std::string found;
  std::uint64_t total = 0;
  for (const auto& [name, count] : nodes) {
    total += count;
    if (count > 0) found = name;
  }
  EXPECT_LE(total, 1u) << "unexpected inner nodes";
  return found;
}

std::string expected_up(unsigned children, bool eok) {
  const unsigned entries = children + (eok ? 1 : 0);
  if (entries < 2) return "";
  if (children <= 4) return "node4";
  if (children <= 16) return "node16";
  if (children <= 48) return "node48";
  return "node256";
}

std::string expected_down(unsigned children, bool eok) {
  const unsigned entries = children + (eok ? 1 : 0);
  if (entries < 2) return "";
  if (children >= 38) return "node256";
  if (children >= 13) return "node48";
  if (children >= 4) return "node16";
  return "node4";
}

struct Scenario {
  bool eok;         //!< the node also holds a key ending at its branch position
  bool below_root;  //!< a sibling key makes the node a child of the root
  bool descending;  //!< children inserted from 255 down
};

void run_scenario(const crashsim::Factory& factory, const Scenario& sc) {
  SCOPED_TRACE(std::string("eok=") + (sc.eok ? "1" : "0") + " below_root=" +
               (sc.below_root ? "1" : "0") + " descending=" + (sc.descending ? "1" : "0"));
  DiffChecker d(factory, 16ull << 20);
  const std::string stem = u64_str(0x4242424242424200ull).substr(0, 7);
  auto child = [&](unsigned i) {
    return stem + std::string(1, static_cast<char>(sc.descending ? 255 - i : i));
  };
  if (sc.below_root) d.insert(u64_str(0x0100000000000000ull), 1);
  if (sc.eok) d.insert(stem, 99);
  for (unsigned i = 0; i < 256; ++i) {
    d.insert(child(i), i);
    ASSERT_EQ(node_type_of(d.index(), sc.below_root), expected_up(i + 1, sc.eok)) << "after insert " << i;
    ASSERT_TRUE(d.check(i, 4)) << "after insert " << i;
  }
  for (unsigned i = 0; i < 256; ++i) {
    d.remove(child(i));
    const unsigned left = 255 - i;
    // with nothing left of the node's subtree the root NODE4 goes too
    const bool root_node4 = sc.below_root && left + (sc.eok ? 1 : 0) >= 1;
    ASSERT_EQ(node_type_of(d.index(), root_node4), expected_down(left, sc.eok))
        << "after remove " << i;
    ASSERT_TRUE(d.check(1000 + i, 4)) << "after remove " << i;
  }
}

TYPED_TEST(PmartNodes, GrowAndShrinkAcrossEveryThreshold) {
  const auto factory = crashsim::factory_of<TypeParam>();
  for (bool eok : {false, true})
    for (bool below : {false, true})
      for (bool desc : {false, true}) run_scenario(factory, {eok, below, desc});
}

// A NODE48 whose 48 pointer slots have all been used, churned by removes and inserts that
// stay between 38 and 48 children (no shrink, no grow): every add must find a slot that no
// index byte names although no pointer word is null (Node48Ops::add's second search), and
// one built from a NODE16 (pointers 17..47 null) must take its first null one. The whole
// contents and verify() after every step; a wrong slot overwrites a live child.
TYPED_TEST(PmartNodes, Node48ReusesFreedSlotsUnderChurn) {
  DiffChecker d(crashsim::factory_of<TypeParam>(), 16ull << 20);
  const std::string stem = u64_str(0x4242424242424200ull).substr(0, 7);
  auto child = [&](unsigned b) { return stem + std::string(1, static_cast<char>(b)); };
  std::vector<unsigned> in, out;
  for (unsigned b = 0; b < 96; ++b) (b < 48 ? in : out).push_back((b * 151u + 7u) & 0xffu);
  for (unsigned b : in) d.insert(child(b), b);
  ASSERT_EQ(node_type_of(d.index(), false), "node48");
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  auto next = [&](std::size_t n) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return static_cast<std::size_t>(x % n);
  };
  for (unsigned step = 0; step < 300; ++step) {
    // remove while above 38, insert while below 48, otherwise either
    const bool remove = in.size() > 38 && (in.size() == 48 || next(2) == 0);
    std::vector<unsigned>& from = remove ? in : out;
    std::vector<unsigned>& to = remove ? out : in;
    const std::size_t i = next(from.size());
    const unsigned b = from[i];
    from.erase(from.begin() + static_cast<std::ptrdiff_t>(i));
    to.push_back(b);
    if (remove) d.remove(child(b));
    else d.insert(child(b), b + 1000ull * step);
    ASSERT_EQ(node_type_of(d.index(), false), "node48") << "step " << step;
    ASSERT_TRUE(d.check(step, 8)) << "step " << step;
  }
}

// dump() draws the tree: node types with depth and path, the end-of-key slot, leaves.
TYPED_TEST(PmartNodes, DumpShowsNodesSlotsAndLeaves) {
  DiffChecker d(crashsim::factory_of<TypeParam>(), 8ull << 20);
  d.insert("abc", 1);
  d.insert("abd", 2);
  d.insert("ab", 3);
  d.insert("xyz", 4);
  std::ostringstream os;
  d.index().dump(os);
  const std::string out = os.str();
  EXPECT_NE(out.find("node4 depth=0 prefix_len=0"), std::string::npos) << out;
  EXPECT_NE(out.find("node4 depth=1 prefix_len=1"), std::string::npos) << out;
  EXPECT_NE(out.find("[eok] leaf \"ab\" = 3"), std::string::npos) << out;
  EXPECT_NE(out.find("[100] leaf \"abd\" = 2"), std::string::npos) << out;
  EXPECT_NE(out.find("[120] leaf \"xyz\" = 4"), std::string::npos) << out;
}

// Made and reopened through the registry's type-erased handle, by kind name.
TYPED_TEST(PmartNodes, CreateAndOpenThroughTheRegistry) {
  using Tree = TypeParam;
  PoolOptions o;
  o.size = 8ull << 20;
  o.kind = std::string(Tree::kKind);
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  {
    auto ix = Index::create(**pool, Tree::kKind);
    ASSERT_TRUE(ix.ok()) << ix.error().message;
    EXPECT_EQ((*ix)->kind(), Tree::kKind);
    for (unsigned i = 0; i < 100; ++i) ASSERT_EQ((*ix)->insert(as_key(u64_str(i * 977)), i), Status::ok);
  }
  auto again = Index::open(**pool);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ((*again)->kind(), Tree::kKind);
  for (unsigned i = 0; i < 100; ++i)
    EXPECT_EQ((*again)->lookup(as_key(u64_str(i * 977))), std::optional<Value>(i));
  EXPECT_TRUE((*again)->verify().ok());
}

}  // namespace
}  // namespace wort::test
