#include "support/table1.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "pm/persist.h"
#include "wort/pool.h"

namespace wort::test {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kDefaultKeys = 100'000;
#else
constexpr std::size_t kDefaultKeys = 1'000'000;
#endif

std::uint64_t node_count(const IndexStats& s, const std::string& name) {
  const auto it = s.nodes.find(name);
  return it == s.nodes.end() ? 0 : it->second;
}

double per(std::uint64_t count, std::size_t n) {
  return static_cast<double>(count) / static_cast<double>(n);
}

}  // namespace

std::size_t table1_key_count() {
  if (const char* s = std::getenv("WORT_TABLE1_KEYS")) return std::strtoull(s, nullptr, 10);
  return kDefaultKeys;
}

void measure_table1(const Table1Tree& t, Dist d, std::size_t n, Table1Row& row) {
  const auto keys = paper_keys(d, n, 2017);
  PoolOptions o;
  o.size = t.pool_size(n);
  o.kind = t.tree.kind;
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool) << pool.error().message;
  auto tree = t.tree.create(**pool);
  ASSERT_TRUE(tree) << tree.error().message;

  pm::reset_counters();
  for (std::uint64_t k : keys) {
    const auto b = u64_key(k);
    ASSERT_EQ((*tree)->insert(Key(b), k), Status::ok);
  }
  const pm::Counters c = pm::counters();
  row = Table1Row{t.tree.kind, d, n, per(c.lines_flushed, n), per(c.flushes, n),
                  per(c.fences, n), (*tree)->stats()};
  ASSERT_EQ(row.stats.keys, n);
  const auto v = (*tree)->verify();
  ASSERT_TRUE(v.ok()) << v.error().message;
  for (std::size_t i = 0; i < n; i += 97) {
    const auto b = u64_key(keys[i]);
    ASSERT_EQ((*tree)->lookup(Key(b)), std::optional<Value>(keys[i]));
  }
}

std::string format_table1_row(const Table1Row& row, const std::vector<std::string>& node_types) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "[%s table1] %-9s n=%zu  lines flushed/insert %.3f  flush calls/insert %.3f  "
                "fences/insert %.3f  avg leaf depth %.3f  max %llu ",
                row.kind.c_str(), std::string(to_string(row.dist)).c_str(), row.n,
                row.lines_flushed, row.flush_calls, row.fences, row.stats.avg_leaf_depth,
                static_cast<unsigned long long>(row.stats.max_leaf_depth));
  std::string out = buf;
  for (const auto& name : node_types)
    out += " " + name + " " + std::to_string(node_count(row.stats, name));
  std::snprintf(buf, sizeof buf, "  PM bytes/key %.1f",
                per(row.stats.pm_bytes, row.n));
  return out + buf;
}

Table1Row measure_print_record_table1(const Table1Tree& t, Dist d) {
  Table1Row row;
  measure_table1(t, d, table1_key_count(), row);
  if (::testing::Test::HasFatalFailure()) return row;
  std::printf("%s\n", format_table1_row(row, t.node_types).c_str());
  std::fflush(stdout);
  ::testing::Test::RecordProperty("lines_flushed_per_insert", std::to_string(row.lines_flushed));
  ::testing::Test::RecordProperty("fences_per_insert", std::to_string(row.fences));
  return row;
}

}  // namespace wort::test
