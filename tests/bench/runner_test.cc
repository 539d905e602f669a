// End-to-end runs of the benchmark, in-process on a small persistent test index (so the
// runner, counters, recovery and reports are checked whatever indexes are ready), and of
// the built `wort` binary on a registered index. Nothing here asserts wall-clock time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "bench/bench.h"
#include "bench/json.h"
#include "bench/lookup_loops.h"
#include "bench/report.h"
#include "index/registry.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::bench {
namespace {

// A persistent log index for these tests: every write appends a record (next, value, key)
// and commits it with one 8-byte store of the head; open replays the log (newest first
// wins) into a DRAM map. Two flushes and two fences per write, by construction.
class BenchLogIndex {
 public:
  static constexpr std::string_view kKind = "benchlog";
  static constexpr std::size_t kMaxKeySize = kMaxKeyLength;
  struct Root {
    std::uint64_t head;
  };
  struct Record {
    std::uint64_t next;
    std::uint64_t value;
    std::uint32_t len;      // key length; kTombstone bit set for a removal
    std::uint32_t pad;
  };
  static constexpr std::uint32_t kTombstone = 1u << 31;

  static Result<std::unique_ptr<BenchLogIndex>> create(Pool& pool, const IndexOptions&) {
    std::uint64_t off = 0;
    if (pool.allocator().allocate(sizeof(Root), &off) != Status::ok)
      return Error{Status::out_of_space, "no room for the root"};
    Root r{0};
    pm::copy(pool.at<Root>(off), &r, sizeof r);
    pm::persist(pool.at<Root>(off), sizeof r);
    pool.set_root(off);
    return std::unique_ptr<BenchLogIndex>(new BenchLogIndex(pool));
  }
  static Result<std::unique_ptr<BenchLogIndex>> open(Pool& pool) {
    std::unique_ptr<BenchLogIndex> ix(new BenchLogIndex(pool));
    std::map<std::string, bool> seen;
    for (std::uint64_t off = ix->root()->head; off != 0; off = ix->rec(off)->next) {
      const Record* r = ix->rec(off);
      std::string k(reinterpret_cast<const char*>(r + 1), r->len & ~kTombstone);
      if (seen.emplace(k, true).second && !(r->len & kTombstone)) ix->map_[k] = {r->value, off};
      ix->pm_bytes_ += pool.allocator().block_size(off);
    }
    if (pool.allocator().trace_pending()) {
      auto rc = pool.allocator().recover([&](pm::BlockVisitor v) { return ix->visit_blocks(v); });
      if (!rc) return rc.error();
    }
    return ix;
  }

  Status insert(Key k, Value v) {
    if (map_.count(std::string(as_string(k)))) return Status::exists;
    return append(k, v, 0);
  }
  Status upsert(Key k, Value v) { return append(k, v, 0); }
  // In place: the key's newest record takes the value with one non-temporal 8-byte commit
  // (no flush), as WORT's and ROART's updates do; the reports count it as a line written back.
  Status update(Key k, Value v) {
    auto it = map_.find(std::string(as_string(k)));
    if (it == map_.end()) return Status::not_found;
    pm::commit_nt(&rec(it->second.off)->value, v);
    it->second.value = v;
    return Status::ok;
  }
  std::optional<Value> lookup(Key k) const {
    auto it = map_.find(std::string(as_string(k)));
    if (it == map_.end()) return std::nullopt;
    return it->second.value;
  }
  Status remove(Key k) {
    if (!map_.count(std::string(as_string(k)))) return Status::not_found;
    return append(k, 0, kTombstone);
  }
  std::size_t scan(Key from, std::size_t max, Visitor v) const {
    std::size_t n = 0;
    for (auto it = map_.lower_bound(std::string(as_string(from))); it != map_.end() && n < max; ++it) {
      ++n;
      if (!v(as_key(it->first), it->second.value)) break;
    }
    return n;
  }
  std::size_t range(Key lo, Key hi, Visitor v) const {
    std::size_t n = 0;
    const std::string h(as_string(hi));
    for (auto it = map_.lower_bound(std::string(as_string(lo))); it != map_.end() && it->first < h; ++it) {
      ++n;
      if (!v(as_key(it->first), it->second.value)) break;
    }
    return n;
  }
  IndexStats stats() const {
    IndexStats s;
    s.keys = map_.size();
    s.avg_leaf_depth = 1;
    s.max_leaf_depth = 1;
    s.pm_bytes = pm_bytes_;
    s.dram_bytes = map_.size() * 64;
    s.nodes["record"] = map_.size();
    return s;
  }
  Result<void> verify() const { return {}; }
  void dump(std::ostream& os) const { os << map_.size() << " keys\n"; }
  Result<void> visit_blocks(BlockVisitorFn v) const {
    v(pool_.root());
    for (std::uint64_t off = root()->head; off != 0; off = rec(off)->next) v(off);
    return {};
  }

 private:
  struct Entry {
    Value value;
    std::uint64_t off;
  };
  explicit BenchLogIndex(Pool& p) : pool_(p) {}
  Root* root() const { return pool_.at<Root>(pool_.root()); }
  Record* rec(std::uint64_t off) const { return pool_.at<Record>(off); }
  Status append(Key k, Value v, std::uint32_t flags) {
    std::uint64_t off = 0;
    if (pool_.allocator().allocate(sizeof(Record) + k.size(), &off) != Status::ok)
      return Status::out_of_space;
    Record r{root()->head, v, static_cast<std::uint32_t>(k.size()) | flags, 0};
    pm::copy(rec(off), &r, sizeof r);
    pm::copy(rec(off) + 1, k.data(), k.size());
    pm::persist(rec(off), sizeof r + k.size());
    pm::store(&root()->head, off);  // the commit store
    pm::persist(&root()->head, 8);
    pm_bytes_ += pool_.allocator().block_size(off);
    if (flags & kTombstone) map_.erase(std::string(as_string(k)));
    else map_[std::string(as_string(k))] = {v, off};
    return Status::ok;
  }
  Pool& pool_;
  std::map<std::string, Entry> map_;
  std::uint64_t pm_bytes_ = 0;
};
WORT_REGISTER_INDEX(BenchLogIndex);
WORT_BENCH_LOOKUPS(BenchLogIndex);

// Small runs: under the sanitizers everything is slower.
std::size_t scaled(std::size_t n) {
#if defined(__SANITIZE_ADDRESS__)
  return n / 4;
#else
  return n;
#endif
}

BenchOptions small_options() {
  BenchOptions o;
  o.indexes = {"benchlog"};
  o.keys = scaled(4000);
  o.range_queries = 50;
  o.range_fractions = {0.001, 0.01};
  o.pool_dir = ::testing::TempDir();
  while (!o.pool_dir.empty() && o.pool_dir.back() == '/') o.pool_dir.pop_back();
  o.progress = false;
  o.pm.mode = pm::Mode::none;  // counters still count; no flush instructions needed
  return o;
}

TEST(RunnerTest, PaperWorkloadMeasuresEveryPhase) {
  BenchOptions o = small_options();
  o.recovery = true;
  ASSERT_TRUE(validate(o).ok());
  const auto cases = run_all(o, nullptr);
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.dist)));
    EXPECT_EQ(c.error, "");
    EXPECT_EQ(c.keys, o.keys);
    const PhaseResult* ins = c.phase("insert");
    const PhaseResult* search = c.phase("search");
    ASSERT_NE(ins, nullptr);
    ASSERT_NE(search, nullptr);
    EXPECT_EQ(ins->ops, o.keys);
    EXPECT_EQ(ins->misses(), 0u);
    EXPECT_EQ(search->ops, o.keys);
    EXPECT_EQ(search->misses(), 0u) << "every inserted key must be found with its value";
    // The test index persists the record and the head on every insert; the allocator adds
    // a few persists when it carves a new chunk.
    EXPECT_GE(ins->counters.flushes, 2 * o.keys);
    EXPECT_LE(ins->counters.flushes, 2 * o.keys + 16);
    EXPECT_GE(ins->counters.fences, 2 * o.keys);
    EXPECT_LE(ins->counters.fences, 2 * o.keys + 16);
    EXPECT_NEAR(ins->fences_per_op(), 2.0, 0.01);
    EXPECT_GE(ins->lines_per_op(), 2.0);
    EXPECT_EQ(search->counters.flushes, 0u);
    // Latency samples: one op in sample_every on average, at random gaps (sampler.h);
    // 62.5 expected of 4000 at 1 in 64, this band is over 4 sigma wide.
    const auto& lat = ins->per_type[static_cast<int>(OpType::insert)].latency;
    const double expected = static_cast<double>(o.keys) / o.sample_every;
    EXPECT_NEAR(static_cast<double>(lat.count()), expected, 4.5 * std::sqrt(expected) + 1);
    EXPECT_LE(lat.percentile(50), lat.percentile(99));
    // Range phases: exactly the requested number of keys per query.
    for (double f : o.range_fractions) {
      char name[48];
      std::snprintf(name, sizeof name, "range%g%%", f * 100);
      const PhaseResult* r = c.phase(name);
      ASSERT_NE(r, nullptr) << name;
      EXPECT_EQ(r->ops, o.range_queries);
      EXPECT_EQ(r->misses(), 0u);
      EXPECT_EQ(r->items, o.range_queries * static_cast<std::uint64_t>(f * o.keys + 0.5));
    }
    EXPECT_EQ(c.stats.keys, o.keys);
    EXPECT_GT(c.pm_bytes_per_key(), 0);
    // Recovery after kill -9 half-way.
    EXPECT_TRUE(c.recovery.measured) << c.recovery.error;
    EXPECT_EQ(c.recovery.error, "");
    EXPECT_GE(c.recovery.acknowledged, o.keys / 2);
    EXPECT_EQ(c.recovery.lost, 0u);
    EXPECT_GE(c.recovery.reclaim_s, c.recovery.open_s);
  }
}

TEST(RunnerTest, SameSeedSameCountersDifferentThreadsSameWork) {
  BenchOptions o = small_options();
  o.dists = {KeyDist::sparse};
  ASSERT_TRUE(validate(o).ok());
  const auto a = run_all(o, nullptr);
  o.threads = 2;
  const auto b = run_all(o, nullptr);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].phase("insert")->counters.lines_flushed, b[0].phase("insert")->counters.lines_flushed);
  EXPECT_EQ(b[0].phase("insert")->ops, o.keys);
  EXPECT_EQ(b[0].phase("search")->misses(), 0u);
}

// --threads N: each phase keeps every worker's operations and wall time; they add up to
// the phase's operations, and each worker's throughput is its own ops over its own time.
TEST(RunnerTest, PerThreadOperationsAddUpToThePhase) {
  BenchOptions o = small_options();
  o.dists = {KeyDist::sparse};
  o.threads = 2;
  ASSERT_TRUE(validate(o).ok());
  const auto r = run_all(o, nullptr);
  ASSERT_EQ(r.size(), 1u);
  for (const char* name : {"insert", "search"}) {
    const PhaseResult* p = r[0].phase(name);
    ASSERT_NE(p, nullptr) << name;
    ASSERT_EQ(p->thread_ops.size(), 2u) << name;
    ASSERT_EQ(p->thread_seconds.size(), 2u) << name;
    EXPECT_EQ(p->thread_ops[0] + p->thread_ops[1], p->ops) << name;
    for (std::size_t t = 0; t < 2; ++t) {
      EXPECT_GT(p->thread_ops[t], 0u) << name << " thread " << t;
      EXPECT_GT(p->thread_seconds[t], 0.0) << name << " thread " << t;
      EXPECT_LE(p->thread_seconds[t], p->seconds * 1.01 + 1e-3) << name << " thread " << t;
      EXPECT_DOUBLE_EQ(p->thread_throughput(t),
                       static_cast<double>(p->thread_ops[t]) / p->thread_seconds[t]);
    }
  }
}

// Validates `o` and runs it: its one case (an empty one, with the failure recorded, if the
// options are refused or the run gives another number of cases).
CaseResult run_one(BenchOptions& o) {
  if (auto v = validate(o); !v) {
    ADD_FAILURE() << "validate: " << v.error().message;
    return {};
  }
  auto cases = run_all(o, nullptr);
  if (cases.size() != 1) {
    ADD_FAILURE() << cases.size() << " cases, not 1";
    return {};
  }
  EXPECT_EQ(cases[0].error, "");
  return std::move(cases[0]);
}

TEST(RunnerTest, MixRunsTheRatios) {
  BenchOptions o = small_options();
  o.dists = {KeyDist::varbytes};
  o.workload = "mix";
  ASSERT_TRUE(parse_ratios("lookup=40,insert=20,update=20,remove=10,scan=10", o.mix).ok());
  o.mix.ops = scaled(8000);
  o.mix.scan_len = 10;
  o.mix.choice = Choice::zipfian;
  o.threads = 2;
  const CaseResult c = run_one(o);
  const PhaseResult* load = c.phase("load");
  const PhaseResult* run = c.phase("run");
  ASSERT_NE(load, nullptr);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(load->ops, o.keys);
  EXPECT_EQ(load->misses(), 0u);
  EXPECT_EQ(run->ops, o.mix.ops);
  std::uint64_t sum = 0;
  for (const auto& t : run->per_type) sum += t.ops;
  EXPECT_EQ(sum, run->ops);
  auto share = [&](OpType t) { return double(run->per_type[static_cast<int>(t)].ops) / run->ops; };
  EXPECT_NEAR(share(OpType::lookup), 0.4, 0.05);
  EXPECT_NEAR(share(OpType::insert), 0.2, 0.05);
  EXPECT_NEAR(share(OpType::scan), 0.1, 0.05);
  EXPECT_EQ(run->per_type[static_cast<int>(OpType::insert)].misses, 0u) << "fresh keys are new";
  EXPECT_GT(run->items, 0u);
}

// Lines written back = lines flushed + non-temporal stores, in the result, the table, the
// JSON and the CSV. The log index's updates write their value with one movnti and no flush
// (as WORT's do): a YCSB-A-like mix must show one line written back per update, not 0.
TEST(RunnerTest, LinesWrittenBackCountNonTemporalStores) {
  BenchReport r;
  r.options = small_options();
  r.options.dists = {KeyDist::sparse};
  r.options.workload = "mix";
  ASSERT_TRUE(parse_ratios("lookup=50,update=50", r.options.mix).ok());
  r.options.mix.ops = scaled(4000);
  ASSERT_TRUE(validate(r.options).ok());
  r.cases = run_all(r.options, nullptr);
  ASSERT_EQ(r.cases.size(), 1u);
  const PhaseResult* run = r.cases[0].phase("run");
  ASSERT_NE(run, nullptr);
  const OpStats& up = run->per_type[static_cast<int>(OpType::update)];
  const OpStats& look = run->per_type[static_cast<int>(OpType::lookup)];
  ASSERT_GT(up.ops, 0u);
  EXPECT_EQ(up.misses, 0u);
  EXPECT_EQ(up.counters.nt_stores, up.ops) << "one movnti per update";
  EXPECT_EQ(up.counters.lines_flushed, 0u);
  EXPECT_DOUBLE_EQ(up.written_back_per_op(), 1.0);
  EXPECT_DOUBLE_EQ(up.written_back_per_op(), up.lines_per_op() + up.nt_stores_per_op());
  EXPECT_EQ(lines_written_back(look.counters), 0u) << "lookups write nothing back";
  // The phase: the same counters as the sum of its types.
  EXPECT_EQ(run->counters.nt_stores, up.counters.nt_stores + look.counters.nt_stores);
  EXPECT_DOUBLE_EQ(run->written_back_per_op(), static_cast<double>(up.ops) / static_cast<double>(run->ops));
  EXPECT_GT(run->written_back_per_op(), 0.0);

  std::ostringstream t;
  write_table(r, t);
  const std::string table = t.str();
  std::istringstream lines(table);
  bool update_row = false, all_row = false;
  char all_cell[64];
  std::snprintf(all_cell, sizeof all_cell, "%.2f (0.00+%.2f)", run->written_back_per_op(), run->nt_stores_per_op());
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" run ") == std::string::npos) continue;
    if (line.find(" update ") != std::string::npos) update_row = line.find("1.00 (0.00+1.00)") != std::string::npos;
    if (line.find(" all ") != std::string::npos) all_row = line.find(all_cell) != std::string::npos;
  }
  EXPECT_TRUE(update_row) << "the update row shows 1.00 written back (0.00 flushed + 1.00 nt)\n" << table;
  EXPECT_TRUE(all_row) << "the phase row shows " << all_cell << "\n" << table;

  auto parsed = parse_json(to_json(r));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const JsonValue& ph = parsed.value().get("cases")->arr()[0].get("phases")->arr()[1];
  ASSERT_EQ(ph.get("name")->str(), "run");
  const JsonValue* k = ph.get("counters");
  EXPECT_EQ(k->get("lines_written_back")->num(), k->get("lines_flushed")->num() + k->get("nt_stores")->num());
  EXPECT_DOUBLE_EQ(k->get("lines_written_back_per_op")->num(),
                   k->get("lines_per_op")->num() + k->get("nt_stores_per_op")->num());
  EXPECT_GT(k->get("lines_written_back_per_op")->num(), 0);
  const JsonValue* ju = ph.get("per_type")->get("update");
  ASSERT_NE(ju, nullptr);
  EXPECT_EQ(ju->get("lines_written_back_per_op")->num(), 1);
  EXPECT_EQ(ju->get("nt_stores_per_op")->num(), 1);
  EXPECT_EQ(ju->get("lines_per_op")->num(), 0);

  // CSV: lines_written_back_per_op = lines_per_op + nt_stores_per_op on every row.
  std::istringstream csv(to_csv(r));
  std::string header;
  std::getline(csv, header);
  auto split = [](const std::string& line) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (!line.empty() && line.back() == ',') f.emplace_back();
    return f;
  };
  const auto cols = split(header);
  auto col = [&](const char* name) {
    return static_cast<std::size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  const std::size_t wb = col("lines_written_back_per_op"), fl = col("lines_per_op"),
                    nt = col("nt_stores_per_op"), op = col("op"), phase = col("phase");
  ASSERT_LT(wb, cols.size());
  ASSERT_LT(nt, cols.size());
  bool saw_update = false;
  for (std::string line; std::getline(csv, line);) {
    const auto f = split(line);
    ASSERT_EQ(f.size(), cols.size()) << line;
    EXPECT_NEAR(std::stod(f[wb]), std::stod(f[fl]) + std::stod(f[nt]), 1e-5) << line;
    if (f[phase] == "run" && f[op] == "update") {
      saw_update = true;
      EXPECT_EQ(f[wb], "1") << line;
    }
  }
  EXPECT_TRUE(saw_update);
}

// The same on a real index whose inserts commit with non-temporal stores (FAST&FAIR: its
// slot commits): Table 1 (b) is lines flushed + nt stores, both parts shown.
TEST(RunnerTest, TableOneWrittenBackAddsNonTemporalStores) {
  const auto kinds = Index::kinds();
  if (std::find(kinds.begin(), kinds.end(), "fastfair") == kinds.end()) GTEST_SKIP() << "no fastfair";
  BenchReport r;
  r.options = small_options();
  r.options.indexes = {"fastfair"};
  r.options.dists = {KeyDist::sparse};
  r.options.keys = scaled(2000);
  r.options.range_fractions.clear();
  r.options.search_direct = false;
  ASSERT_TRUE(validate(r.options).ok());
  r.cases = run_all(r.options, nullptr);
  ASSERT_EQ(r.cases.size(), 1u);
  ASSERT_EQ(r.cases[0].error, "");
  const PhaseResult* ins = r.cases[0].phase("insert");
  ASSERT_NE(ins, nullptr);
  ASSERT_GT(ins->counters.nt_stores, 0u) << "FAST&FAIR commits with movnti";
  ASSERT_GT(ins->counters.lines_flushed, 0u);
  EXPECT_EQ(lines_written_back(ins->counters), ins->counters.lines_flushed + ins->counters.nt_stores);
  char cell[64];
  std::snprintf(cell, sizeof cell, "%.2f (%.2f+%.2f)", ins->written_back_per_op(), ins->lines_per_op(),
                ins->nt_stores_per_op());
  EXPECT_GT(ins->written_back_per_op(), ins->lines_per_op());
  std::ostringstream t;
  write_table(r, t);
  const std::string table = t.str();
  const std::size_t t1 = table.find("Table 1");
  ASSERT_NE(t1, std::string::npos);
  const std::size_t row = table.find("\nfastfair ", t1);
  ASSERT_NE(row, std::string::npos) << table;
  const std::string line = table.substr(row + 1, table.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find(cell), std::string::npos) << "Table 1 (b) is " << cell << ":\n" << table;
}

// The progress reported over a whole run never goes back: each case's phases share the
// case's span instead of each running from 0 to 100% of it again.
TEST(RunnerTest, ProgressNeverGoesBack) {
  BenchOptions o = small_options();
  o.dists = {KeyDist::dense, KeyDist::sparse};
  ASSERT_TRUE(validate(o).ok());
  std::vector<double> seen;
  const auto cases = run_all(o, [&](const std::string&, double f) { seen.push_back(f); });
  ASSERT_EQ(cases.size(), 2u);
  ASSERT_GT(seen.size(), 10u);
  for (std::size_t i = 1; i < seen.size(); ++i)
    ASSERT_GE(seen[i], seen[i - 1]) << "step " << i << " of " << seen.size();
  EXPECT_GE(seen.front(), 0.0);
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  // A mix too (load, then run).
  o.workload = "mix";
  ASSERT_TRUE(parse_ratios("lookup=50,update=50", o.mix).ok());
  o.mix.ops = o.keys;
  seen.clear();
  run_all(o, [&](const std::string&, double f) { seen.push_back(f); });
  for (std::size_t i = 1; i < seen.size(); ++i) ASSERT_GE(seen[i], seen[i - 1]) << "mix step " << i;
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
}

TEST(RunnerTest, CaseProgressWeighsPhasesAndNeverGoesBack) {
  std::vector<double> seen;
  const ProgressFn out = [&](const std::string&, double f) { seen.push_back(f); };
  CaseProgress cp(out, {3, 1});
  const ProgressFn a = cp.next_phase();
  const ProgressFn b = cp.next_phase();
  a("x", 0.5);
  EXPECT_DOUBLE_EQ(seen.back(), 0.375);
  a("x", 1.0);
  EXPECT_DOUBLE_EQ(seen.back(), 0.75);
  b("x", 0.0);
  EXPECT_DOUBLE_EQ(seen.back(), 0.75);
  b("x", 0.5);
  EXPECT_DOUBLE_EQ(seen.back(), 0.875);
  a("x", 0.1);  // a late report of an earlier phase does not move it back
  EXPECT_DOUBLE_EQ(seen.back(), 0.875);
  cp.report(7, "x", 2.0);  // beyond the plan: the last phase, clamped
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  const ProgressFn none;
  CaseProgress quiet(none, {});
  quiet.report(0, "x", 0.5);  // no callback: nothing to call
  EXPECT_DOUBLE_EQ(quiet.last(), 0.0);
}

// Every failed case gives its reason (what `wort bench` prints on stderr).
TEST(RunnerTest, CaseFailuresNameTheCaseAndTheReason) {
  BenchOptions o = small_options();
  o.dists = {KeyDist::dense};
  o.pool_dir = "/nonexistent-wort-bench-dir";
  ASSERT_TRUE(validate(o).ok());
  const auto cases = run_all(o, nullptr);
  ASSERT_EQ(cases.size(), 1u);
  ASSERT_NE(cases[0].error, "");
  const auto f = case_failures(cases);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0], "benchlog/dense: " + cases[0].error);
  EXPECT_TRUE(case_failures(run_all(small_options(), nullptr)).empty());
}

// A callgrind pass whose tree fits in the simulated LL is flagged, case by case.
TEST(RunnerTest, LlcFitWarningsFlagTreesSmallerThanTheCache) {
  BenchReport r;
  r.options = small_options();
  r.options.dists = {KeyDist::dense, KeyDist::sparse};
  r.options.range_fractions.clear();
  ASSERT_TRUE(validate(r.options).ok());
  r.cases = run_all(r.options, nullptr);
  const std::string json = to_json(r);
  std::uint64_t largest = 0;
  for (const auto& c : r.cases) largest = std::max(largest, c.stats.pm_bytes + c.stats.dram_bytes);
  ASSERT_GT(largest, 0u);
  auto big = llc_fit_warnings(json, 1ull << 30);
  ASSERT_TRUE(big.ok());
  ASSERT_EQ(big.value().size(), 2u) << "both trees fit in 1 GiB";
  EXPECT_NE(big.value()[0].find("benchlog/dense"), std::string::npos) << big.value()[0];
  EXPECT_NE(big.value()[1].find("benchlog/sparse"), std::string::npos) << big.value()[1];
  EXPECT_NE(big.value()[0].find("--llc-keys"), std::string::npos) << big.value()[0];
  auto small = llc_fit_warnings(json, 1024);
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(small.value().empty()) << "neither tree fits in 1 KiB";
  auto none = llc_fit_warnings(json, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value().empty()) << "unknown LL size: no claim";
  EXPECT_FALSE(llc_fit_warnings("not json", 1024).ok());
}

// The machine's load, recorded at the start and end of a run.
TEST(ReportTest, LoadAverageIsRecorded) {
  const std::string path = ::testing::TempDir() + "/wort-loadavg-" + std::to_string(::getpid());
  {
    std::ofstream f(path);
    f << "0.52 1.25 2.00 3/456 7890\n";
  }
  const auto l = read_loadavg(path);
  EXPECT_DOUBLE_EQ(l[0], 0.52);
  EXPECT_DOUBLE_EQ(l[1], 1.25);
  EXPECT_DOUBLE_EQ(l[2], 2.00);
  std::remove(path.c_str());
  EXPECT_TRUE(std::isnan(read_loadavg(path)[0])) << "unreadable: NaN";
  BenchReport r;
  r.options = small_options();
  r.env.load_start = l;
  r.env.cpus = 2;
  auto parsed = parse_json(to_json(r));
  ASSERT_TRUE(parsed.ok());
  const JsonValue* env = parsed.value().get("env");
  ASSERT_EQ(env->get("load_start")->arr().size(), 3u);
  EXPECT_DOUBLE_EQ(env->get("load_start")->arr()[1].num(), 1.25);
  EXPECT_TRUE(env->get("load_end")->arr()[0].is_null());
  std::ostringstream t;
  write_table(r, t);
  EXPECT_NE(t.str().find("load average (1 min): 0.52 at the start, - at the end, on 2 CPUs"), std::string::npos)
      << t.str();
}

// The FPTree paper's back-to-back deletes: shuffled touches each loaded key once, so every
// remove finds its key (uniform would draw some twice: misses), and draws past the last
// loaded key are counted as misses, not run on a key from elsewhere.
TEST(RunnerTest, ShuffledRemovesEveryLoadedKeyOnce) {
  BenchOptions o = small_options();
  o.dists = {KeyDist::sparse};
  o.workload = "mix";
  ASSERT_TRUE(parse_ratios("remove=100", o.mix).ok());
  o.mix.choice = Choice::shuffled;
  o.mix.ops = o.keys + 10;
  o.threads = 2;
  const CaseResult c = run_one(o);
  const PhaseResult* run = c.phase("run");
  ASSERT_NE(run, nullptr);
  const auto& rm = run->per_type[static_cast<int>(OpType::remove)];
  EXPECT_EQ(rm.ops, o.keys + 10);
  EXPECT_EQ(rm.misses, 10u) << "each loaded key removed once; the 10 draws past them miss";
  o.mix.choice = Choice::uniform;  // the broken variant: uniform draws repeat keys
  const CaseResult uni = run_one(o);
  const PhaseResult* uni_run = uni.phase("run");
  ASSERT_NE(uni_run, nullptr);
  EXPECT_GT(uni_run->per_type[static_cast<int>(OpType::remove)].misses, 10u);
}

TEST(RunnerTest, DurationRunDrawsStepsAsItGoes) {
  BenchOptions o = small_options();
  o.dists = {KeyDist::fixed20};
  o.workload = "read-intensive";
  o.mix = find_preset("read-intensive")->mix;
  o.mix.duration_s = 0.05;
  ASSERT_TRUE(validate(o).ok());
  EXPECT_EQ(o.mix.ops, 0u) << "a duration run has no operation count";
  const auto cases = run_all(o, nullptr);
  ASSERT_EQ(cases.size(), 1u);
  const PhaseResult* run = cases[0].phase("run");
  ASSERT_NE(run, nullptr);
  EXPECT_GT(run->ops, 0u);
  std::uint64_t sum = 0;
  for (const auto& t : run->per_type) sum += t.ops;
  EXPECT_EQ(sum, run->ops);
  EXPECT_EQ(run->per_type[static_cast<int>(OpType::lookup)].misses, 0u) << "nothing is removed";
}

// search-virtual, search-direct and search-chained: the search phase's keys, in the same
// order, in one loop through wort::Index, through the registry's direct loop on the concrete
// class and through its chained loop (each key chosen through the previous lookup's value);
// every key found with its value, no persistence work.
TEST(RunnerTest, SearchVirtualAndDirectLookUpEveryKeyOnce) {
  BenchOptions o = small_options();
  o.range_fractions.clear();
  const auto cases = run_all(o, nullptr);
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.dist)));
    EXPECT_EQ(c.error, "");
    ASSERT_EQ(c.phases.size(), 5u);
    EXPECT_EQ(c.phases[1].name, "search");
    EXPECT_EQ(c.phases[2].name, "search-virtual");
    EXPECT_EQ(c.phases[3].name, "search-direct");
    EXPECT_EQ(c.phases[4].name, "search-chained");
    for (std::size_t i : {2u, 3u, 4u}) {
      SCOPED_TRACE(c.phases[i].name);
      const PhaseResult& d = c.phases[i];
      EXPECT_EQ(d.ops, o.keys);
      EXPECT_EQ(d.per_type[static_cast<int>(OpType::lookup)].ops, o.keys);
      EXPECT_EQ(d.misses(), 0u) << "every inserted key must be found with its value";
      EXPECT_EQ(d.counters.flushes, 0u);
      EXPECT_GT(d.seconds, 0);
    }
    EXPECT_TRUE(std::isfinite(c.adapter_overhead()));
    EXPECT_TRUE(std::isfinite(c.search_over_direct()));
  }
}

TEST(RunnerTest, SearchDirectIsOptionalAndSingleThreaded) {
  BenchOptions o = small_options();
  o.dists = {KeyDist::sparse};
  o.range_fractions.clear();
  o.search_direct = false;
  auto off = run_all(o, nullptr);
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].phase("search-direct"), nullptr);
  EXPECT_EQ(off[0].phase("search-virtual"), nullptr);
  EXPECT_EQ(off[0].phase("search-chained"), nullptr);
  EXPECT_FALSE(std::isfinite(off[0].adapter_overhead()));
  o.search_direct = true;
  o.threads = 2;  // search takes a lock per call then: no like-for-like direct loop
  auto threaded = run_all(o, nullptr);
  ASSERT_EQ(threaded.size(), 1u);
  EXPECT_NE(threaded[0].phase("search"), nullptr);
  EXPECT_EQ(threaded[0].phase("search-direct"), nullptr);
  EXPECT_EQ(threaded[0].phase("search-chained"), nullptr);
}

// The lookup loops count only present keys and sum their values, the same through the
// concrete class (the kind's concrete loops: direct, chained) and through wort::Index (lookup_each).
TEST(RegistryTest, LookupDirectCountsHitsAndSumsValues) {
  auto pool = Pool::create_in_memory(PoolOptions{.size = 8 << 20, .kind = "benchlog"});
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  auto idx = Index::create(*pool.value(), "benchlog");
  ASSERT_TRUE(idx.ok()) << idx.error().message;
  const ConcreteLookups* e = concrete_lookups("benchlog");
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->direct);
  ASSERT_TRUE(e->chained);
  KeySet keys;
  for (int i = 0; i < 100; ++i) {
    const std::string k = "key" + std::to_string(i);
    keys.push(k);
    if (i % 3 == 0) {
      ASSERT_EQ(idx.value()->insert(as_key(k), 1000 + i), Status::ok);
    }
  }
  std::uint64_t want_sum = 0, want_found = 0;
  for (int i = 0; i < 100; i += 3) want_sum += 1000 + i, ++want_found;
  const LookupTally t = e->direct(*idx.value(), keys.packed());
  EXPECT_EQ(t.found, want_found);
  EXPECT_EQ(t.value_sum, want_sum);
  const LookupTally v = lookup_each(*idx.value(), keys.packed());
  EXPECT_EQ(v.found, want_found);
  EXPECT_EQ(v.value_sum, want_sum);
  // The chained loop looks up the same keys in the same order (misses included: a miss
  // chains through 0 as a hit does through its value).
  const LookupTally ch = e->chained(*idx.value(), keys.packed());
  EXPECT_EQ(ch.found, want_found);
  EXPECT_EQ(ch.value_sum, want_sum);
  EXPECT_EQ(zero_depending_on(0x1234), 0u);
  // A sub-range of the packed keys (as the bench's chunks use): keys 3..5, one present.
  const PackedKeys all = keys.packed();
  const LookupTally part = e->direct(*idx.value(), {all.bytes, all.offsets + 3, 3});
  EXPECT_EQ(part.found, 1u);
  EXPECT_EQ(part.value_sum, 1003u);
}

TEST(RunnerTest, IndexSpecCarriesCreateOptions) {
  auto plain = parse_index_spec("roart");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain.value().kind, "roart");
  EXPECT_EQ(plain.value().options.words, (std::array<std::uint64_t, 4>{0, 0, 0, 0}));
  auto with = parse_index_spec("fptree:64:0x80");
  ASSERT_TRUE(with.ok());
  EXPECT_EQ(with.value().kind, "fptree");
  EXPECT_EQ(with.value().options.words, (std::array<std::uint64_t, 4>{64, 128, 0, 0}));
  for (const char* bad : {"roart:", "roart:x", "roart:-1", ":1", "roart:1:2:3:4:5", "roart:1x"})
    EXPECT_FALSE(parse_index_spec(bad).ok()) << bad;

  // The options reach the index: ROART without leaf compaction (word 0 bit 1) has no leaf
  // arrays; the same kind without options has them. Both labelled by their entry.
  BenchOptions o = small_options();
  o.indexes = {"roart", "roart:1"};
  o.dists = {KeyDist::sparse};
  o.range_fractions = {};
  ASSERT_TRUE(validate(o).ok());
  const auto cases = run_all(o, nullptr);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].index, "roart");
  EXPECT_EQ(cases[1].index, "roart:1");
  EXPECT_EQ(cases[0].error, "");
  EXPECT_EQ(cases[1].error, "");
  EXPECT_GT(cases[0].stats.nodes.count("leaf_array"), 0u);
  EXPECT_EQ(cases[1].stats.nodes.count("leaf_array"), 0u);
  o.indexes = {"roart:zz"};
  EXPECT_FALSE(validate(o).ok());
}

TEST(RunnerTest, UnknownIndexIsRejected) {
  BenchOptions o = small_options();
  o.indexes = {"no-such-index"};
  auto v = validate(o);
  EXPECT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("no-such-index"), std::string::npos);
}

BenchReport small_report() {
  BenchReport r;
  r.options = small_options();
  r.options.dists = {KeyDist::dense, KeyDist::clustered};
  r.options.keys = scaled(2000);
  EXPECT_TRUE(validate(r.options).ok());
  r.env = gather_env(WORT_SOURCE_DIR, {"runner_test"});
  r.cases = run_all(r.options, nullptr);
  return r;
}

TEST(ReportTest, JsonHasTheSchema) {
  const BenchReport r = small_report();
  auto parsed = parse_json(to_json(r));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const JsonValue& j = parsed.value();
  ASSERT_NE(j.get("schema"), nullptr);
  EXPECT_EQ(j.get("schema")->str(), "wort-bench");
  EXPECT_EQ(j.get("schema_version")->num(), kJsonSchemaVersion);
  const JsonValue* opts = j.get("options");
  ASSERT_NE(opts, nullptr);
  EXPECT_EQ(opts->get("keys")->num(), r.options.keys);
  EXPECT_EQ(opts->get("seed")->num(), 42);
  for (const char* k : {"indexes", "dists", "workload", "mix", "range_fractions", "pm_mode",
                        "flush_insn", "flush_latencies_ns", "threads", "llc", "pool_dir"})
    EXPECT_NE(opts->get(k), nullptr) << k;
  const JsonValue* env = j.get("env");
  ASSERT_NE(env, nullptr);
  for (const char* k : {"git_revision", "compiler", "build_flags", "build_type", "cpu_model",
                        "flush_insn", "pm_mode", "hw_counters", "time_utc", "kernel"}) {
    ASSERT_NE(env->get(k), nullptr) << k;
    EXPECT_TRUE(env->get(k)->is_string()) << k;
  }
  EXPECT_FALSE(env->get("cpu_model")->str().empty());
  ASSERT_NE(env->get("clock_read_ns"), nullptr);
  EXPECT_GT(env->get("clock_read_ns")->num(), 0) << "two clock reads take some time";
  const JsonValue* cases = j.get("cases");
  ASSERT_NE(cases, nullptr);
  ASSERT_EQ(cases->arr().size(), 2u);
  for (const auto& c : cases->arr()) {
    EXPECT_EQ(c.get("index")->str(), "benchlog");
    EXPECT_EQ(c.get("keys")->num(), r.options.keys);
    EXPECT_EQ(c.get("stats")->get("avg_leaf_depth")->num(), 1);
    EXPECT_GT(c.get("stats")->get("pm_bytes_per_key")->num(), 0);
    const auto& phases = c.get("phases")->arr();
    ASSERT_EQ(phases.size(), 7u);  // insert, search, search-virtual/-direct/-chained, two ranges
    EXPECT_EQ(phases[2].get("name")->str(), "search-virtual");
    EXPECT_EQ(phases[3].get("name")->str(), "search-direct");
    EXPECT_EQ(phases[4].get("name")->str(), "search-chained");
    EXPECT_TRUE(c.get("adapter_overhead")->is_number());
    EXPECT_TRUE(c.get("search_over_direct")->is_number());
    const JsonValue& ins = phases[0];
    EXPECT_EQ(ins.get("name")->str(), "insert");
    EXPECT_EQ(ins.get("ops")->num(), r.options.keys);
    EXPECT_TRUE(ins.get("ns_per_op")->is_number());
    EXPECT_NEAR(ins.get("counters")->get("fences_per_op")->num(), 2, 0.01);
    EXPECT_TRUE(ins.get("latency_ns")->get("insert")->get("p99")->is_number());
    EXPECT_TRUE(ins.get("latency_ns")->get("insert")->get("p99_9")->is_number());
    EXPECT_TRUE(ins.get("cache")->get("llc_misses_per_op")->is_null()) << "not measured: null";
    EXPECT_TRUE(ins.get("timeline")->is_array());
  }
}

TEST(ReportTest, CsvAndTable) {
  const BenchReport r = small_report();
  const std::string csv = to_csv(r);
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.substr(0, 20), "index,dist,flush_lat");
  std::size_t rows = 0, commas_header = std::count(header.begin(), header.end(), ',');
  for (std::string line; std::getline(in, line); ++rows)
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), static_cast<long>(commas_header)) << line;
  EXPECT_EQ(rows, 2u * 7u * 2u);  // 2 cases x 7 phases x (all + its op type)

  std::ostringstream t;
  write_table(r, t);
  const std::string s = t.str();
  EXPECT_NE(s.find("Table 1"), std::string::npos);
  EXPECT_NE(s.find("benchlog"), std::string::npos);
  EXPECT_NE(s.find("(b) lines written back/insert"), std::string::npos);
  EXPECT_NE(s.find("2.00 (2.00+0.00)"), std::string::npos)
      << "the log index flushes 2 lines per 8-byte insert, no non-temporal store";
  EXPECT_NE(s.find("Adapter overhead"), std::string::npos);
  EXPECT_NE(s.find("virtual/direct"), std::string::npos);
}

// The built binary: help texts, errors, and a tiny real run with the JSON written.
std::string run(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = p ? ::pclose(p) : -1;
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

const std::string kWort = std::string(WORT_BINARY_DIR) + "/wort";

// The JSON a `wort bench --json <path>` run wrote.
Result<JsonValue> parse_json_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_json(ss.str());
}

TEST(CliTest, HelpAndErrors) {
  if (::access(kWort.c_str(), X_OK) != 0) GTEST_SKIP() << kWort << " not built";
  int rc = 0;
  std::string out = run(kWort + " --help", &rc);
  EXPECT_EQ(rc, 0);
  for (const char* cmd : {"bench", "demo", "plot", "list"}) EXPECT_NE(out.find(cmd), std::string::npos) << cmd;
  out = run(kWort + " bench --help", &rc);
  EXPECT_EQ(rc, 0);
  for (const char* opt : {"--index", "--dist", "--keys", "--seed", "--workload", "--mix", "--threads",
                          "--pm-mode", "--write-latency", "--llc", "--json", "--csv", "--recovery"})
    EXPECT_NE(out.find(opt), std::string::npos) << opt;
  out = run(kWort + " bench --no-such-option", &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("no-such-option"), std::string::npos);
  out = run(kWort + " frobnicate", &rc);
  EXPECT_EQ(rc, 2);
}

// `wort plot` of a file that is missing or not a bench JSON: one line saying so, exit 1.
TEST(CliTest, PlotOfABadFileIsOneLine) {
  if (::access(kWort.c_str(), X_OK) != 0) GTEST_SKIP() << kWort << " not built";
  const std::string missing = ::testing::TempDir() + "/wort-plot-missing-" + std::to_string(::getpid()) + ".json";
  int rc = 0;
  std::string out = run(kWort + " plot " + missing, &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(out, "wort plot: " + missing + ": No such file or directory\n");
  const std::string bad = missing + ".bad";
  {
    std::ofstream f(bad);
    f << "{\"schema\": \"something else\"}";
  }
  out = run(kWort + " plot " + bad, &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(out, "wort plot: " + bad + ": not a wort bench JSON file\n");
  {
    std::ofstream f(bad);
    f << "{ not json";
  }
  out = run(kWort + " plot " + bad, &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find("not JSON"), std::string::npos) << out;
  std::remove(bad.c_str());
}

// A run whose every case fails says why on stderr, also with --quiet, and exits 1.
TEST(CliTest, QuietFailureSaysWhy) {
  if (::access(kWort.c_str(), X_OK) != 0) GTEST_SKIP() << kWort << " not built";
  int rc = 0;
  const std::string out = run(kWort + " bench --index wort --dist dense --keys 1000 --quiet --no-progress"
                                  " --pool-dir /nonexistent-wort-bench-dir", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("wort/dense: pool:"), std::string::npos) << out;
  EXPECT_NE(out.find("every case failed"), std::string::npos) << out;
}

TEST(CliTest, TinyRunWritesJson) {
  if (::access(kWort.c_str(), X_OK) != 0) GTEST_SKIP() << kWort << " not built";
  int rc = 0;
  const std::string list = run(kWort + " list", &rc);
  // The volatile ART baseline is the first index expected to be ready; use it if present.
  std::string index;
  // (`wort list` prints "  NAME  <what it is>" per index: match the name and its padding.)
  for (const char* k : {"art", "wort", "woart", "artcow"})
    if (list.find(std::string("\n  ") + k + " ") != std::string::npos ||
        list.find(std::string("\n  ") + k + "\n") != std::string::npos) {
      index = k;
      break;
    }
  if (index.empty()) GTEST_SKIP() << "no index registered in the wort binary yet";
  // Per-process names: the Release and ASan builds may run this test at the same time.
  const std::string stem = ::testing::TempDir() + "/wort-bench-tiny-" + std::to_string(::getpid());
  const std::string json = stem + ".json";
  const std::string csv = stem + ".csv";
  const std::string out = run(kWort + " bench --index " + index + " --keys 3000 --range-queries 20 --json " +
                                  json + " --csv " + csv + " --seed 7 --no-progress",
                              &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Table 1"), std::string::npos) << out;
  auto parsed = parse_json_file(json);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed.value().get("options")->get("seed")->num(), 7);
  const auto& cases = parsed.value().get("cases")->arr();
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    EXPECT_EQ(c.get("error")->str(), "");
    EXPECT_EQ(c.get("phases")->arr()[1].get("misses")->num(), 0) << "search found every key";
    for (int i : {2, 3, 4}) {
      const JsonValue& loop = c.get("phases")->arr()[i];
      EXPECT_EQ(loop.get("name")->str(), i == 2 ? "search-virtual" : i == 3 ? "search-direct" : "search-chained");
      EXPECT_EQ(loop.get("ops")->num(), 3000);
      EXPECT_EQ(loop.get("misses")->num(), 0) << loop.get("name")->str() << " found every key";
    }
    EXPECT_GT(c.get("adapter_overhead")->num(), 0);
    EXPECT_GT(c.get("search_over_direct")->num(), 0);
  }
  EXPECT_NE(out.find("Adapter overhead"), std::string::npos) << out;

  // --range none: only insert, search, search-virtual, search-direct and search-chained;
  // --no-search-direct drops the last three.
  const std::string json2 = stem + "-norange.json";
  run(kWort + " bench --index " + index + " --dist sparse --keys 1000 --range none --quiet --no-progress --json " + json2, &rc);
  ASSERT_EQ(rc, 0);
  auto p2 = parse_json_file(json2);
  ASSERT_TRUE(p2.ok());
  ASSERT_EQ(p2.value().get("cases")->arr().size(), 1u);
  EXPECT_EQ(p2.value().get("cases")->arr()[0].get("phases")->arr().size(), 5u);
  const std::string json3 = stem + "-nodirect.json";
  run(kWort + " bench --index " + index + " --dist sparse --keys 1000 --range none --no-search-direct --quiet --no-progress --json " + json3, &rc);
  ASSERT_EQ(rc, 0);
  auto p3 = parse_json_file(json3);
  ASSERT_TRUE(p3.ok());
  ASSERT_EQ(p3.value().get("cases")->arr().size(), 1u);
  EXPECT_EQ(p3.value().get("cases")->arr()[0].get("phases")->arr().size(), 2u);
  EXPECT_TRUE(p3.value().get("cases")->arr()[0].get("adapter_overhead")->is_null());

  // The plots drawn from that JSON (needs Debian's matplotlib, which install-deps installs).
  if (std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "matplotlib not installed";
  const std::string dir = stem + "-plots";
  const std::string plot = run(kWort + " plot " + json + " --out " + dir, &rc);
  ASSERT_EQ(rc, 0) << plot;
  // plot.py checks each figure after drawing: no value labels over each other or over
  // another bar, no legend over a bar.
  EXPECT_EQ(plot.find("warning"), std::string::npos) << plot;
  for (const char* png : {"fig7_insert.png", "fig9_search.png", "fig10_range.png", "table1.png"}) {
    std::ifstream f(dir + "/" + png, std::ios::binary);
    ASSERT_TRUE(f.good()) << png << " not written; " << plot;
    char magic[4] = {};
    f.read(magic, 4);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG") << png;
  }
}

}  // namespace
}  // namespace wort::bench
