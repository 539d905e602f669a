// tests/support/table1.h — the WORT paper's Table 1(b) and 1(d) measurement, for any index:
// the n paper keys of one distribution (Dense / Sparse / Clustered 8-byte keys, random
// order) inserted into a fresh in-memory pool, counting cache lines flushed, flush calls and
// fences per insert (pm::counters), then the tree's stats (average leaf depth, node counts).
// Correctness is asserted (every insert ok, key count, verify, sampled lookups); the numbers
// are only printed.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "support/keygen.h"
#include "wort/index.h"

namespace wort::test {

//! What the measurement needs to know about one tree.
struct Table1Tree {
  crashsim::Factory tree;
  std::uint64_t (*pool_size)(std::size_t n);  //!< bytes of pool for n keys
  std::vector<std::string> node_types;        //!< stats().nodes entries printed, in order
};

struct Table1Row {
  std::string kind;
  Dist dist;
  std::size_t n = 0;
  double lines_flushed = 0;  //!< per insert
  double flush_calls = 0;    //!< per insert
  double fences = 0;         //!< per insert
  IndexStats stats;
};

//! WORT_TABLE1_KEYS if set, else 1M (100k under ASan).
std::size_t table1_key_count();

//! Runs the measurement, filling `row`; reports correctness failures through gtest (wrap the
//! call in ASSERT_NO_FATAL_FAILURE).
void measure_table1(const Table1Tree& t, Dist d, std::size_t n, Table1Row& row);

//! One line: "[<kind> table1] <dist> n=... lines flushed/insert ... fences/insert ... avg
//! leaf depth ... max ... <node type> <count>... PM bytes/key ...".
std::string format_table1_row(const Table1Row& row, const std::vector<std::string>& node_types);

//! measure_table1 at table1_key_count() keys (wrap the call in ASSERT_NO_FATAL_FAILURE), the
//! row printed and its lines flushed and
//! fences per insert recorded as properties of the running test. Returns the row.
Table1Row measure_print_record_table1(const Table1Tree& t, Dist d);

//! A test over the paper's three key sets (its parameter: the distribution).
class PaperSetTest : public ::testing::TestWithParam<Dist> {};

//! A pool for n keys: 64 MiB and kBytesPerKey more per key.
template <std::uint64_t kBytesPerKey>
std::uint64_t pool_of(std::size_t n) {
  return (64ull << 20) + kBytesPerKey * n;
}

//! The paper's three key sets as a test suite's parameters, each named by its distribution.
#define WORT_TABLE1_PAPER_SETS(Suite)                                                        \
  INSTANTIATE_TEST_SUITE_P(PaperSets, Suite,                                                 \
                           ::testing::Values(Dist::dense, Dist::sparse, Dist::clustered),    \
                           [](const auto& info) { return std::string(to_string(info.param)); })

}  // namespace wort::test
