// The WORT paper's Table 1(b)/(d) row for wB+Tree (paper: 6.0 CLFLUSH per insert, leaf depth
// 4.0 at 128M keys): cache lines flushed, flush calls and fences per insert, leaf depth and
// PM bytes per key for Dense / Sparse / Clustered 8-byte keys in random order
// (tests/support/table1.h). Asserts only correctness; prints the rows.
//   ./build/unit_wbtree_table1_test          (1M keys; WORT_TABLE1_KEYS=n to change)
#include <gtest/gtest.h>

#include <iostream>

#include "index/wbtree/wbtree_tree.h"
#include "support/table1.h"

namespace wort::test {
namespace {

using WbTreeTable1 = PaperSetTest;

TEST_P(WbTreeTable1, FlushesFencesAndLeafDepthPerInsert) {
  const Table1Tree t{crashsim::factory_of<WbTree>(), pool_of<128>, {"leaf", "inner"}};
  ASSERT_NO_FATAL_FAILURE(measure_print_record_table1(t, GetParam()));
}

WORT_TABLE1_PAPER_SETS(WbTreeTable1);

}  // namespace
}  // namespace wort::test
