// The WORT paper's Table 1(b)/(d) row for NV-Tree (paper: 3.3 CLFLUSH per insert, leaf depth
// 3.0 at 128M keys): cache lines flushed, flush calls and fences per insert, leaf depth and
// PM bytes per key for Dense / Sparse / Clustered 8-byte keys in random order
// (tests/support/table1.h). Asserts only correctness; prints the rows.
//   ./build/unit_nvtree_table1_test          (1M keys; WORT_TABLE1_KEYS=n to change)
#include <gtest/gtest.h>

#include <iostream>

#include "index/nvtree/nvtree_tree.h"
#include "support/table1.h"

namespace wort::test {
namespace {

std::uint64_t pool_for(std::size_t n) { return (64ull << 20) + 128ull * n; }

class NvTreeTable1 : public ::testing::TestWithParam<Dist> {};

TEST_P(NvTreeTable1, FlushesFencesAndLeafDepthPerInsert) {
  const Table1Tree t{crashsim::factory_of<NvTree>(), pool_for, {"leaf", "pln", "in", "rebuilds"}};
  Table1Row row;
  ASSERT_NO_FATAL_FAILURE(measure_table1(t, GetParam(), table1_key_count(), row));
  std::cout << format_table1_row(row, t.node_types) << std::endl;
  RecordProperty("lines_flushed_per_insert", std::to_string(row.lines_flushed));
  RecordProperty("fences_per_insert", std::to_string(row.fences));
}

INSTANTIATE_TEST_SUITE_P(PaperSets, NvTreeTable1,
                         ::testing::Values(Dist::dense, Dist::sparse, Dist::clustered),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace wort::test
