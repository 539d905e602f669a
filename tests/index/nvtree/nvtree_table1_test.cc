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

using NvTreeTable1 = PaperSetTest;

TEST_P(NvTreeTable1, FlushesFencesAndLeafDepthPerInsert) {
  const Table1Tree t{crashsim::factory_of<NvTree>(), pool_of<128>, {"leaf", "pln", "in", "rebuilds"}};
  ASSERT_NO_FATAL_FAILURE(measure_print_record_table1(t, GetParam()));
}

WORT_TABLE1_PAPER_SETS(NvTreeTable1);

}  // namespace
}  // namespace wort::test
