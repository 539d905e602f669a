// tests/conformance/kinds.h — what the conformance suite (tests/conformance/) needs to know
// about each registered kind beyond the registry: the node shapes its create options make
// (each row says which of the suite's tests run on it), the create options it must refuse,
// and what is left in its pool once it is empty. A kind with no row here runs every test on
// its default shape: registering is enough to get the suite.
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "index/registry.h"
#include "wort/index.h"

namespace wort::test {

//! Which tests run on a shape (a bit set).
enum Use : unsigned {
  kGens = 1,         //!< the differential tests with every key generator
  kHardGens = 2,     //!< the same with prefix_chains and random_bytes only
  kPaper = 4,        //!< the paper's Dense / Sparse / Clustered sets
  kPaperSparse = 8,  //!< the paper's Sparse set only
  kLinear = 16,      //!< single-key linearizability (concurrent kinds)
  kKill = 32,        //!< kill -9 of several writer threads (concurrent kinds)
  kEvery = kGens | kPaper | kLinear | kKill,
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
};

//! The traits of `kind` (the defaults for a kind without a row).
inline KindTraits traits_of(const std::string& kind) {
  // fptree words: leaf capacity, inner fanout, hash (1: every fingerprint equal), leaves
  // per leaf group. Tiny nodes split and collapse at every level; groups of 3 tiny leaves
  // are got and released all the time (App. B: 16 leaves a group).
  if (kind == "fptree")
    return {{{"paper", {}, kGens | kPaper | kKill},
             {"tiny", {4, 3, 0, 0}, kGens | kLinear | kKill},
             {"collide", {8, 4, 1, 0}, kGens},
             {"small", {6, 4, 0, 0}, kHardGens},
             {"paperGroups", {0, 0, 0, 16}, kGens | kPaper},
             {"tinyGroups", {4, 3, 0, 3}, kGens | kLinear | kKill},
             {"paperConc", {64, 128, 0, 0}, kLinear}},
            {{65, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 0, 1025}}};
  // fastfair words[0]: node bytes; 256 B (14 records) reaches several levels in small runs.
  if (kind == "fastfair")
    return {{{"node512", {}, kGens | kPaper | kKill}, {"node256", {256, 0, 0, 0}, kGens | kLinear}},
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
