// The WORT paper's Table 1(b) and 1(d) for our WORT: cache lines flushed and fences per
// insertion, and average leaf depth, for Dense / Sparse / Clustered 8-byte keys inserted in
// random order. Prints the numbers (stdout and gtest properties); asserts only correctness.
//
//   ./build-wort/unit_wort_table1_test            (1M keys; WORT_TABLE1_KEYS=n to change)
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstdio>
#include <string>

#include "index/wort/wort_tree.h"
#include "pm/persist.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kDefaultKeys = 100'000;
#else
constexpr std::size_t kDefaultKeys = 1'000'000;
#endif

std::size_t key_count() {
  if (const char* s = std::getenv("WORT_TABLE1_KEYS")) return std::strtoull(s, nullptr, 10);
  return kDefaultKeys;
}

class WortTable1 : public ::testing::TestWithParam<Dist> {};

TEST_P(WortTable1, FlushesFencesAndLeafDepthPerInsert) {
  const Dist d = GetParam();
  const std::size_t n = key_count();
  const auto keys = paper_keys(d, n, 2017);
  PoolOptions o;
  o.size = (64ull << 20) + 256ull * n;  // leaves 32 B, nodes 160 B (sparse: ~0.35 per key)
  o.kind = "wort";
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool) << pool.error().message;
  auto tree = WortTree::create(**pool, {});
  ASSERT_TRUE(tree) << tree.error().message;

  pm::reset_counters();
  for (std::uint64_t k : keys) {
    const auto b = u64_key(k);
    ASSERT_EQ((*tree)->insert(Key(b), k), Status::ok);
  }
  const pm::Counters c = pm::counters();
  const IndexStats s = (*tree)->stats();
  ASSERT_EQ(s.keys, n);
  ASSERT_TRUE((*tree)->verify());
  for (std::size_t i = 0; i < n; i += 97) {
    const auto b = u64_key(keys[i]);
    ASSERT_EQ((*tree)->lookup(Key(b)), std::optional<Value>(keys[i]));
  }

  const double lines = static_cast<double>(c.lines_flushed) / static_cast<double>(n);
  const double flushes = static_cast<double>(c.flushes) / static_cast<double>(n);
  const double fences = static_cast<double>(c.fences) / static_cast<double>(n);
  std::printf("[wort table1] %-9s n=%zu  lines flushed/insert %.3f  flush calls/insert %.3f  "
              "fences/insert %.3f  avg leaf depth %.3f  max %llu  nodes %llu\n",
              std::string(to_string(d)).c_str(), n, lines, flushes, fences, s.avg_leaf_depth,
              static_cast<unsigned long long>(s.max_leaf_depth),
              static_cast<unsigned long long>(s.nodes.at("node" + std::to_string(wort_index::kFanout))));
  RecordProperty("lines_flushed_per_insert", std::to_string(lines));
  RecordProperty("fences_per_insert", std::to_string(fences));
  RecordProperty("avg_leaf_depth", std::to_string(s.avg_leaf_depth));
}

INSTANTIATE_TEST_SUITE_P(PaperSets, WortTable1,
                         ::testing::Values(Dist::dense, Dist::sparse, Dist::clustered),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace wort::test
