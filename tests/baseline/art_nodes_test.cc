// Unit tests of the volatile ART's node types: every type pushed across its grow and
// shrink thresholds, up and down, with a full comparison against std::map after each step
// (STYLE.md; DuckDB's test_art_node_48 does the same), plus the key shapes that break
// radix trees: empty key, keys that are prefixes of others, long shared prefixes.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>
#include <string>

#include "baseline/art/art_tree.h"
#include "wort/key.h"

namespace wort::art {
namespace {

// The tree next to a std::map that always tells the truth.
class Checked {
 public:
  void insert(const std::string& k, Value v) {
    const Status want = ref_.emplace(k, v).second ? Status::ok : Status::exists;
    EXPECT_EQ(tree_.insert(as_key(k), v), want) << "insert " << k;
  }
  void upsert(const std::string& k, Value v) {
    ref_[k] = v;
    EXPECT_EQ(tree_.upsert(as_key(k), v), Status::ok);
  }
  void update(const std::string& k, Value v) {
    auto it = ref_.find(k);
    const Status want = it == ref_.end() ? Status::not_found : Status::ok;
    if (it != ref_.end()) it->second = v;
    EXPECT_EQ(tree_.update(as_key(k), v), want);
  }
  void remove(const std::string& k) {
    const Status want = ref_.erase(k) != 0 ? Status::ok : Status::not_found;
    EXPECT_EQ(tree_.remove(as_key(k)), want) << "remove " << k;
  }
  void lookup(const std::string& k) const {
    auto it = ref_.find(k);
    auto got = tree_.lookup(as_key(k));
    if (it == ref_.end()) {
      EXPECT_FALSE(got.has_value());
    } else {
      EXPECT_EQ(got, std::optional<Value>(it->second));
    }
  }

  // Everything: verify(), every key, a full scan, and scans/ranges from each key's
  // neighbourhood (at most `probes` of them).
  void check(std::size_t probes = 16) const {
    auto v = tree_.verify();
    ASSERT_TRUE(v.ok()) << v.error().message;
    ASSERT_EQ(tree_.size(), ref_.size());
    ASSERT_EQ(tree_.stats().keys, ref_.size());
    for (const auto& [k, val] : ref_) ASSERT_EQ(tree_.lookup(as_key(k)), std::optional(val)) << k;
    ASSERT_EQ(scan_all(""), ref_);
    std::size_t i = 0;
    for (auto it = ref_.begin(); it != ref_.end() && i < probes; ++it, ++i) {
      check_scan_from(it->first);
      check_scan_from(it->first + '\0');
      std::string hi = it->first;
      hi.back() = static_cast<char>(hi.back() + 1);
      if (!hi.empty()) check_range(it->first.substr(0, it->first.size() / 2), hi);
    }
  }

  VolatileArt& tree() { return tree_; }
  const std::map<std::string, Value>& ref() const { return ref_; }

 private:
  std::map<std::string, Value> scan_all(const std::string& from) const {
    std::map<std::string, Value> got;
    std::string prev;
    tree_.scan(as_key(from), ref_.size() + 5, [&](Key k, Value v) {
      std::string s(as_string(k));
      EXPECT_TRUE(got.empty() || prev < s) << "scan out of order";
      got.emplace(s, v);
      prev = s;
      return true;
    });
    return got;
  }
  void check_scan_from(const std::string& from) const {
    std::vector<std::string> got, want;
    const std::size_t n = 7;
    EXPECT_LE(tree_.scan(as_key(from), n, [&](Key k, Value) {
      got.emplace_back(as_string(k));
      return true;
    }), n);
    for (auto it = ref_.lower_bound(from); it != ref_.end() && want.size() < n; ++it)
      want.push_back(it->first);
    EXPECT_EQ(got, want) << "scan from " << from;
  }
  void check_range(const std::string& lo, const std::string& hi) const {
    std::vector<std::string> got, want;
    tree_.range(as_key(lo), as_key(hi), [&](Key k, Value) {
      got.emplace_back(as_string(k));
      return true;
    });
    for (auto it = ref_.lower_bound(lo); it != ref_.end() && it->first < hi; ++it)
      want.push_back(it->first);
    EXPECT_EQ(got, want) << "range";
  }

  VolatileArt tree_;
  std::map<std::string, Value> ref_;
};

// Which single inner-node type a tree of exactly one inner node has.
std::string only_node_type(const VolatileArt& t) {
  std::string type;
  std::uint64_t total = 0;
  for (const auto& [name, n] : t.stats().nodes) {
    total += n;
    if (n == 1) type = name;
  }
  if (total == 1) return type;
  std::string many = std::to_string(total);  // built stepwise: GCC 12 -Wrestrict false alarm
  many += " inner nodes";
  return many;
}

// The type a node with `children` children has on the way up (grow at 5, 17, 49).
std::string type_growing(std::size_t children) {
  if (children <= 4) return "node4";
  if (children <= 16) return "node16";
  if (children <= 48) return "node48";
  return "node256";
}

// ... and on the way down (shrink at 40, 12, 3: hysteresis).
std::string type_shrinking(std::size_t children) {
  if (children > 40) return "node256";
  if (children > 12) return "node48";
  if (children > 3) return "node16";
  return "node4";
}

// Keys stem + one byte: a single node under `stem` with one child per byte. The bytes go
// in a scrambled order so the sorted node types see inserts at every position.
std::string child_key(const std::string& stem, unsigned i) {
  return stem + static_cast<char>((i * 167u + 13u) & 0xffu);
}

void push_one_node_up_and_down(const std::string& stem, bool with_terminal) {
  Checked c;
  if (with_terminal) c.insert(stem, 999);
  for (unsigned i = 0; i < 256; ++i) {
    c.insert(child_key(stem, i), i);
    const std::size_t children = i + 1;
    if (children + (with_terminal ? 1 : 0) >= 2) {
      ASSERT_EQ(only_node_type(c.tree()), type_growing(children)) << "after " << children;
    }
    ASSERT_NO_FATAL_FAILURE(c.check(4)) << "after insert #" << children;
  }
  for (unsigned i = 0; i < 256; ++i) {
    c.remove(child_key(stem, 255 - i));  // reverse order: removals at every position too
    const std::size_t children = 255 - i;
    if (children + (with_terminal ? 1 : 0) >= 2) {
      ASSERT_EQ(only_node_type(c.tree()), type_shrinking(children)) << "down to " << children;
    } else {
      ASSERT_EQ(only_node_type(c.tree()), "0 inner nodes") << "collapsed to a leaf";
    }
    ASSERT_NO_FATAL_FAILURE(c.check(4)) << "after remove down to " << children;
  }
}

TEST(ArtNodes, RootNodeGrowsAndShrinksThroughEveryType) {
  push_one_node_up_and_down("", false);
}

TEST(ArtNodes, NodeWithShortPrefixAndTerminal) { push_one_node_up_and_down("key:", true); }

TEST(ArtNodes, NodeWithLongPrefixKeepsItAcrossGrowAndShrink) {
  // 40-byte prefix: longer than the 8 inline bytes, so the rest comes from a leaf.
  push_one_node_up_and_down(std::string(20, 'p') + std::string("\0\x01\xff", 3) +
                                std::string(17, 'q'),
                            true);
}

TEST(ArtNodes, ShrinkHysteresisAtEachBoundary) {
  // Going back and forth across a boundary must not flip the type each time.
  for (unsigned boundary : {4u, 16u, 48u}) {
    Checked c;
    for (unsigned i = 0; i < boundary; ++i) c.insert(child_key("h", i), i);
    ASSERT_EQ(only_node_type(c.tree()), type_growing(boundary));
    c.insert(child_key("h", boundary), 0);  // grows
    ASSERT_EQ(only_node_type(c.tree()), type_growing(boundary + 1));
    c.remove(child_key("h", boundary));  // stays big
    ASSERT_EQ(only_node_type(c.tree()), type_growing(boundary + 1));
    ASSERT_NO_FATAL_FAILURE(c.check());
  }
}

TEST(ArtNodes, EmptyKeyAndPrefixChains) {
  Checked c;
  const std::string chain[] = {"", "a", "ab", "abc", std::string("ab\0", 3), "abd", "b"};
  for (unsigned i = 0; i < std::size(chain); ++i) {
    c.insert(chain[i], i);
    ASSERT_NO_FATAL_FAILURE(c.check());
  }
  for (const auto& k : chain) c.insert(k, 1);  // all exist
  c.remove("ab");                               // a terminal in the middle of the chain
  ASSERT_NO_FATAL_FAILURE(c.check());
  c.remove("abc");
  c.remove("abd");  // node under "ab" is left with one child: collapses
  ASSERT_NO_FATAL_FAILURE(c.check());
  c.remove("");
  c.remove("a");
  ASSERT_NO_FATAL_FAILURE(c.check());
  c.remove("b");
  c.remove(std::string("ab\0", 3));
  ASSERT_NO_FATAL_FAILURE(c.check());
  EXPECT_EQ(c.tree().size(), 0u);
  EXPECT_FALSE(c.tree().lookup(as_key("")).has_value());
}

TEST(ArtNodes, CollapseMergesLongPrefixes) {
  // Three keys: a node with prefix "x"*30 over a node with prefix "y"*30. Removing the
  // sibling at the upper level collapses it; the merged prefix is 30 + 1 + 30 bytes.
  Checked c;
  const std::string a = std::string(30, 'x') + "A" + std::string(30, 'y') + "1";
  const std::string b = std::string(30, 'x') + "A" + std::string(30, 'y') + "2";
  const std::string sib = std::string(30, 'x') + "B";
  c.insert(a, 1);
  c.insert(b, 2);
  c.insert(sib, 3);
  ASSERT_NO_FATAL_FAILURE(c.check());
  c.remove(sib);
  ASSERT_NO_FATAL_FAILURE(c.check());
  EXPECT_EQ(only_node_type(c.tree()), "node4");
  // A key that diverges inside the merged prefix splits it again correctly.
  c.insert(std::string(30, 'x') + "A" + std::string(10, 'y') + "z", 4);
  c.insert(std::string(5, 'x'), 5);
  ASSERT_NO_FATAL_FAILURE(c.check());
  c.lookup(std::string(30, 'x') + "A" + std::string(30, 'y'));  // absent, path exists
}

TEST(ArtNodes, LongKeysWithEmbeddedZeros) {
  Checked c;
  std::mt19937_64 rng(7);
  std::string base(1500, '\0');
  for (auto& ch : base) ch = static_cast<char>(rng() % 3);  // mostly zeros and ones
  for (unsigned i = 0; i < 200; ++i) {
    std::string k = base.substr(0, 1024 + rng() % 400);
    k[rng() % k.size()] = static_cast<char>(rng());
    c.upsert(k, i);
  }
  ASSERT_NO_FATAL_FAILURE(c.check(64));
  for (unsigned i = 0; i < 150; ++i) {
    const std::string victim = std::next(c.ref().begin(), rng() % c.ref().size())->first;
    c.remove(victim);  // a copy: remove() erases the map's own key
  }
  ASSERT_NO_FATAL_FAILURE(c.check(64));
}

TEST(ArtNodes, RandomOpsOverSmallAlphabetMatchMap) {
  // Small alphabet and short keys: constant prefix splits, collapses and terminals.
  const std::uint64_t seed = 20261121;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Checked c;
  auto key = [&] {
    std::string k(rng() % 7, '\0');
    for (auto& ch : k) ch = "\0\1ab\xff"[rng() % 5];
    return k;
  };
  for (int step = 0; step < 20000; ++step) {
    const std::string k = key();
    switch (rng() % 5) {
      case 0: c.insert(k, step); break;
      case 1: c.upsert(k, step); break;
      case 2: c.update(k, step); break;
      case 3: c.remove(k); break;
      default: c.lookup(k); break;
    }
    if (step % 500 == 0) {
      ASSERT_NO_FATAL_FAILURE(c.check()) << "step " << step;
    }
  }
  ASSERT_NO_FATAL_FAILURE(c.check(1000));
}

TEST(ArtNodes, StatsCountInnerNodesOnThePath) {
  VolatileArt t;
  EXPECT_EQ(t.stats().keys, 0u);
  ASSERT_EQ(t.insert(as_key("solo"), 1), Status::ok);
  EXPECT_EQ(t.stats().max_leaf_depth, 0u);  // a lone leaf hangs from the root slot
  for (std::uint64_t k = 1; k <= 3; ++k) {
    auto b = u64_key(k);
    ASSERT_EQ(t.insert({b.data(), b.size()}, k), Status::ok);
  }
  // root node4 {'s': leaf, 0x00: node4 with prefix 6 zero bytes and children 1,2,3}
  const IndexStats s = t.stats();
  EXPECT_EQ(s.keys, 4u);
  EXPECT_EQ(s.max_leaf_depth, 2u);
  EXPECT_DOUBLE_EQ(s.avg_leaf_depth, (1.0 + 2 + 2 + 2) / 4);
  EXPECT_EQ(s.nodes.at("node4"), 2u);
  EXPECT_EQ(s.nodes.at("node16"), 0u);
  EXPECT_EQ(s.pm_bytes, 0u);
  EXPECT_GT(s.dram_bytes, 2 * 64u + 4 * 16u);
  std::ostringstream os;
  t.dump(os);
  EXPECT_NE(os.str().find("node4"), std::string::npos);
  EXPECT_NE(os.str().find("solo"), std::string::npos);
}

TEST(ArtNodes, VisitorCanStopScanEarly) {
  VolatileArt t;
  for (unsigned i = 0; i < 100; ++i) {
    std::string k = "k";
    k += std::to_string(i);
    ASSERT_EQ(t.insert(as_key(k), i), Status::ok);
  }
  std::size_t seen = 0;
  const std::size_t n = t.scan(as_key(""), 100, [&](Key, Value) { return ++seen < 3; });
  EXPECT_EQ(seen, 3u);
  EXPECT_EQ(n, 3u);
}

}  // namespace
}  // namespace wort::art
