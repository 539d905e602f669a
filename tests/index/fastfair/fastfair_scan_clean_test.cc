// FAST&FAIR's leaf-path read without dead-slot tracking (NodeRef::scan_clean): where no slot
// is dead it must give what the full read (NodeRef::scan) gives, for every search position,
// inline key words and key blocks alike; and a dead slot a crash left under an even switch
// counter must still be found and squeezed out by the next leaf-path writer after a reopen
// (the open's checked walk sees it and turns the shortcut off).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "index/fastfair/fastfair_fixture.h"

namespace wort::test {
namespace {

using fastfair::KeyReader;
using fastfair::Node;
using fastfair::NodeRef;
using fastfair::SearchKey;

NodeRef view(const FastFairTree& t, std::uint64_t off) {
  return NodeRef{const_cast<Node*>(t.node_at(off)), t.slots()};
}

// 8-byte keys (inline words) or 12-byte keys (key blocks) with the order of i.
std::string key_of(std::uint64_t i, bool blocks) {
  std::string k = u64_str(i);
  if (blocks) k += "tail";
  return k;
}

void expect_same_reads(const FastFairFixture& f, std::uint64_t n, bool blocks) {
  const NodeRef leaf = view(*f.tree, f.tree->root());
  ASSERT_TRUE(leaf.leaf());
  ASSERT_EQ(leaf.find_dead(leaf.end()), -1);
  const KeyReader kr(f.pool->base());
  for (std::uint64_t q = 0; q <= 10 * n + 10; q += 5) {  // below, at and between every key
    const std::string k = key_of(q, blocks);
    const SearchKey s = SearchKey::of(as_key(k));
    const NodeRef::Scan a = leaf.scan(s, kr), b = leaf.scan_clean(s, kr);
    SCOPED_TRACE("keys " + std::to_string(n) + ", search " + std::to_string(q));
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.dead, b.dead);
    EXPECT_EQ(a.at, b.at);
    EXPECT_EQ(a.pos, b.pos);
  }
}

TEST(FastFairScanClean, AgreesWithTheFullReadWhereNoSlotIsDead) {
  for (std::uint64_t node : {256u, 512u}) {
    for (bool blocks : {false, true}) {
      const std::uint64_t slots = fastfair::slots_for(node);
      for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, slots / 2, slots - 1, slots}) {
        FastFairFixture f(node);
        for (std::uint64_t i = 1; i <= n; ++i) {
          const std::string k = key_of(10 * i, blocks);
          ASSERT_EQ(f.tree->insert(as_key(k), i), Status::ok);
        }
        ASSERT_EQ(f.tree->height(), 0u);  // one leaf: the root
        expect_same_reads(f, n, blocks);
      }
    }
  }
}

// The state of an insert at slot `pos` cut short after its shift: slot pos a dead copy of
// slot pos+1, the switch counter even (inserts only).
void crash_mid_insert(FastFairTree& t, std::uint64_t leaf, unsigned pos) {
  NodeRef nr = view(t, leaf);
  fastfair::Record* r = nr.rec();
  for (unsigned i = nr.end(); i-- > pos;) {
    pm::store(&r[i + 1].ptr, r[i].ptr);
    pm::store(&r[i + 1].key, r[i].key);
  }
  pm::persist(nr.n, t.node_size());
}

TEST(FastFairScanClean, ACrashedInsertsDeadSlotUnderAnEvenCounterIsRepairedAfterReopen) {
  for (std::uint64_t extra : {5u, 25u, 55u}) {  // inserted before, just after, past the dead slot
    SCOPED_TRACE("insert " + std::to_string(extra));
    FastFairFixture f(256);
    for (std::uint64_t k : {10, 20, 30, 40, 50}) ASSERT_EQ(f.put(k, k + 1), Status::ok);
    crash_mid_insert(*f.tree, f.tree->root(), 2);  // [10 20 (30) 30 40 50]
    f.reopen();
    const NodeRef leaf = view(*f.tree, f.tree->root());
    ASSERT_EQ(leaf.n->h.switch_counter & 1u, 0u);
    ASSERT_EQ(leaf.find_dead(leaf.end()), 2);
    ASSERT_EQ(f.put(extra, 1), Status::ok);
    EXPECT_EQ(f.tree->repairs().dead_slots, 1u);
    const NodeRef after = view(*f.tree, f.tree->root());
    EXPECT_EQ(after.find_dead(after.end()), -1);
    std::vector<std::uint64_t> want{10, 20, 30, 40, 50, extra};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(f.keys(), want);
    EXPECT_EQ(f.get(30), std::optional<Value>(31));
    f.expect_verified();
  }
}

}  // namespace
}  // namespace wort::test
