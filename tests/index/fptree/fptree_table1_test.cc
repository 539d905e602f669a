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

using FPTreeTable1 = PaperSetTest;

TEST_P(FPTreeTable1, FlushesFencesPerInsertAndBytesPerKey) {
  const Table1Tree t{crashsim::factory_of<FPTree>(), pool_of<48>, {"leaf", "inner"}};
  Table1Row row;
  ASSERT_NO_FATAL_FAILURE(row = measure_print_record_table1(t, GetParam()));
  const double n = static_cast<double>(row.n);
  std::cout << "[fptree] " << to_string(GetParam()) << ": PM "
            << static_cast<double>(row.stats.pm_bytes) / n << " B/key, DRAM "
            << static_cast<double>(row.stats.dram_bytes) / n << " B/key" << std::endl;
}

WORT_TABLE1_PAPER_SETS(FPTreeTable1);

}  // namespace
}  // namespace wort::test
