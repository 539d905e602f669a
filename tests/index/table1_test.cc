// The WORT paper's Table 1(b) and 1(d) for our WORT, WOART and ART+CoW: cache lines flushed
// and fences per insertion, and average leaf depth (each index's README says what it
// counts), for Dense / Sparse / Clustered 8-byte keys inserted in random order
// (tests/support/table1.h). Prints one row per tree × distribution (stdout and gtest
// properties); asserts only correctness.
//
//   ./build/unit_table1_test                      (1M keys; WORT_TABLE1_KEYS=n to change)
//   ./build/unit_table1_test --gtest_filter='*/woart_*'   (one tree)
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "index/artcow/artcow.h"
#include "index/woart/woart.h"
#include "index/wort/wort_tree.h"
#include "support/keygen.h"
#include "support/table1.h"

namespace wort::test {
namespace {

// Pools as the per-tree tests had them: WORT's leaves are 32 B and nodes 160 B (sparse:
// ~0.35 nodes per key); the ART trees get a fixed 1 GiB.
std::uint64_t wort_pool(std::size_t n) { return (64ull << 20) + 256ull * n; }
std::uint64_t art_pool(std::size_t) { return 1ull << 30; }

const std::vector<std::string> kArtNodes = {"node4", "node16", "node48", "node256"};

std::vector<Table1Tree> trees() {
  return {{crashsim::factory_of<WortTree>(), wort_pool,
           {"node" + std::to_string(wort_index::kFanout)}},
          {crashsim::factory_of<woart::Woart>(), art_pool, kArtNodes},
          {crashsim::factory_of<artcow::ArtCow>(), art_pool, kArtNodes}};
}

struct Case {
  Table1Tree tree;
  Dist dist;
  friend void PrintTo(const Case& c, std::ostream* os) {
    *os << c.tree.tree.kind << "/" << to_string(c.dist);
  }
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& t : trees())
    for (Dist d : {Dist::dense, Dist::sparse, Dist::clustered}) out.push_back({t, d});
  return out;
}

class Table1 : public ::testing::TestWithParam<Case> {};

TEST_P(Table1, FlushesFencesAndLeafDepthPerInsert) {
  const Case& c = GetParam();
  Table1Row row;
  ASSERT_NO_FATAL_FAILURE(measure_table1(c.tree, c.dist, table1_key_count(), row));
  std::cout << format_table1_row(row, c.tree.node_types) << std::endl;
  RecordProperty("lines_flushed_per_insert", std::to_string(row.lines_flushed));
  RecordProperty("fences_per_insert", std::to_string(row.fences));
  RecordProperty("avg_leaf_depth", std::to_string(row.stats.avg_leaf_depth));
}

INSTANTIATE_TEST_SUITE_P(PaperSets, Table1, ::testing::ValuesIn(cases()),
                         [](const auto& info) {
                           return info.param.tree.tree.kind + "_" +
                                  std::string(to_string(info.param.dist));
                         });

}  // namespace
}  // namespace wort::test
