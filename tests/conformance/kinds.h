// tests/conformance/kinds.h — what the conformance suite (tests/conformance/) needs to know
// about each registered kind beyond the registry: the node shapes its create options make
// (each row says which of the suite's tests run on it), the create options it must refuse,
// what is left in its pool once it is empty, what its nodes look like after the concurrent
// inserts, and how much work its concurrency tests do. A kind with no row here runs every
// test on its default shape: registering is enough to get the suite.
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "index/registry.h"
#include "wort/index.h"

namespace wort::test {

//! Which tests run on a shape (a bit set).
enum Use : unsigned {
  kGens = 1,         //!< the differential tests with every key generator
  kHardGens = 2,     //!< the same with prefix_chains and random_bytes only
  kPaper = 4,        //!< the paper's Dense / Sparse / Clustered sets
  kPaperSparse = 8,  //!< the paper's Sparse set only
  kConc = 16,        //!< linearizability, readers during writers (concurrent kinds)
  kKill = 32,        //!< kill -9 of several writer threads (concurrent kinds)
  kEvery = kGens | kPaper | kConc | kKill,
};

struct Shape {
  const char* name;
  std::array<std::uint64_t, 4> words;  //!< IndexOptions::words
  unsigned uses;
};

struct KindTraits {
  std::vector<Shape> shapes{{"default", {}, kEvery}};
  //! Create options the kind must refuse with invalid_argument.
  std::vector<std::array<std::uint64_t, 4>> bad_options;
  //! Pool blocks at most allocated once every key is removed (0: not checked).
  std::uint64_t blocks_when_empty = 0;
  //! The concurrency tests' work multiplier (times kConcScale; not under ThreadSanitizer).
  unsigned conc_work = 1;
};

//! The traits of `kind` (the defaults for a kind without a row).
inline KindTraits traits_of(const std::string& kind) {
  // fptree words: leaf capacity, inner fanout, hash (1: every fingerprint equal), leaves
  // per leaf group. Tiny nodes split and collapse at every level; groups of 3 tiny leaves
  // are got and released all the time (App. B: 16 leaves a group).
  if (kind == "fptree")
    return {{{"paper", {}, kGens | kPaper | kKill},
             {"tiny", {4, 3, 0, 0}, kGens | kConc | kKill},
             {"collide", {8, 4, 1, 0}, kGens},
             {"small", {6, 4, 0, 0}, kHardGens},
             {"paperGroups", {0, 0, 0, 16}, kGens | kPaper},
             {"tinyGroups", {4, 3, 0, 3}, kGens | kConc | kKill},
             {"paperConc", {64, 128, 0, 0}, kConc}},
            {{65, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 0, 1025}},
            0,
            2};
  // fastfair words[0]: node bytes; 256 B (14 records) reaches several levels in small runs.
  if (kind == "fastfair")
    return {{{"node512", {}, kGens | kPaper | kKill}, {"node256", {256, 0, 0, 0}, kGens | kConc}},
            {{100, 0, 0, 0}, {192, 0, 0, 0}, {520, 0, 0, 0}, {8192, 0, 0, 0}}};
  // nvtree words: leaf entries, PLN leaves, IN fanout; 4: splits, compactions and whole
  // rebuilds on almost every operation.
  if (kind == "nvtree")
    return {{{"default", {}, kGens | kPaper}, {"cap4", {4, 4, 4, 0}, kGens}}, {{5000, 0, 0, 0}}};
  // wbtree words: leaf and inner entries; 4: splits and chain unlinks on almost every write.
  if (kind == "wbtree")
    return {{{"default", {}, kGens | kPaper}, {"cap4", {4, 4, 0, 0}, kGens}}, {{64, 0, 0, 0}}};
  // roart words[0]: mechanisms turned off (1 LC, 2 EC, 4 SMP, 8 MO). EC, SMP and MO change
  // only what is written back, not the shape: the two hardest generators suffice.
  if (kind == "roart")
    return {{{"all", {}, kEvery},
             {"noLC", {1, 0, 0, 0}, kGens | kPaperSparse},
             {"noEC", {2, 0, 0, 0}, kHardGens},
             {"noSMP", {4, 0, 0, 0}, kHardGens},
             {"noMO", {8, 0, 0, 0}, kHardGens},
             {"none", {15, 0, 0, 0}, kHardGens}},
            {{1u << 7, 0, 0, 0}},
            1};  // only the anchor: every node, array and leaf went back
  // The ART engine's trees keep remove's reserve (a spare per node type) beside the anchor.
  if (kind == "woart" || kind == "artcow") return {{{"default", {}, kEvery}}, {}, 1 + 4};
  return {};
}

//! One (kind, shape) pair: the parameter of the suite's value-parameterised tests.
struct KindShape {
  std::string kind;
  Shape shape;
  bool persistent = true;
  std::string name() const {
    return std::string(shape.name) == "default" ? kind : kind + "_" + shape.name;
  }
  IndexOptions options() const {
    IndexOptions o;
    o.words = shape.words;
    return o;
  }
  friend void PrintTo(const KindShape& ks, std::ostream* os) { *os << ks.name(); }
};

//! What the concurrency tests expect of the index's nodes once their inserts are done
//! (`work`: the work multiplier they ran with).
inline void expect_grown(const KindShape& ks, const IndexStats& st, unsigned work) {
  if (ks.kind == "woart" || ks.kind == "artcow" || ks.kind == "roart") {
    EXPECT_GE(st.nodes.count("node48") + st.nodes.count("node256"), 1u);  // nodes grew
    EXPECT_GE(st.nodes.count("node4"), 1u);
  } else if (ks.kind == "wort") {  // WORT's one 16-way node
    ASSERT_EQ(st.nodes.count("node16"), 1u);
    EXPECT_GE(st.nodes.at("node16"), 100u);
  } else if (ks.kind == "fptree" && (ks.shape.words[0] == 4 || work >= 8)) {
    EXPECT_GE(st.max_leaf_depth, 2u);  // inner nodes split too (5000 keys fit under one of 128)
  }
}

//! Every registered kind's shapes that have a bit of `mask`; only concurrent kinds when
//! `concurrent`.
inline std::vector<KindShape> kind_shapes(unsigned mask, bool concurrent = false) {
  std::vector<KindShape> out;
  for (const registry::Entry* e : registry::all()) {
    if (concurrent && !e->concurrent) continue;
    for (const Shape& s : traits_of(e->name).shapes)
      if (s.uses & mask) out.push_back({e->name, s, e->persistent});
  }
  return out;
}

}  // namespace wort::test
