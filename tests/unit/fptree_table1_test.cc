// The WORT paper's Table 1 measurement (tests/support/table1.h) for the FPTree: cache lines
// flushed, flush calls and fences per insert of Dense / Sparse / Clustered 8-byte keys in
// random order, with PM and DRAM bytes per key. The WORT paper reports 4.8 clflush per
// insert for the FPTree (FAST&FAIR's paper also 4.8). Prints one row per set; asserts only
// correctness.
//
//   ./build/unit_fptree_table1_test                 (1M keys; WORT_TABLE1_KEYS=n to change)
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "index/fptree/fptree_tree.h"
#include "support/keygen.h"
#include "support/table1.h"

namespace wort::test {
namespace {

std::uint64_t fptree_pool(std::size_t n) { return (64ull << 20) + 48ull * n; }

class FPTreeTable1 : public ::testing::TestWithParam<Dist> {};

TEST_P(FPTreeTable1, FlushesFencesPerInsertAndBytesPerKey) {
  const Table1Tree t{crashsim::factory_of<FPTree>(), fptree_pool, {"leaf", "inner"}};
  Table1Row row;
  ASSERT_NO_FATAL_FAILURE(measure_table1(t, GetParam(), table1_key_count(), row));
  std::cout << format_table1_row(row, t.node_types) << "\n";
  const double n = static_cast<double>(row.n);
  std::cout << "[fptree] " << to_string(GetParam()) << ": PM "
            << static_cast<double>(row.stats.pm_bytes) / n << " B/key, DRAM "
            << static_cast<double>(row.stats.dram_bytes) / n << " B/key" << std::endl;
  RecordProperty("lines_flushed_per_insert", std::to_string(row.lines_flushed));
  RecordProperty("fences_per_insert", std::to_string(row.fences));
}

INSTANTIATE_TEST_SUITE_P(PaperSets, FPTreeTable1,
                         ::testing::Values(Dist::dense, Dist::sparse, Dist::clustered),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace wort::test
