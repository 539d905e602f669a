// tools/lookup_rounds.cc — the "vs art" ratios of docs/RESULTS.md measured so that this VM's
// drifting speed cannot decide them: every index's inserts and lookups in the same process,
// in rounds, the indexes in turn within each round (a rotated order, so none is always
// first), and the ratio to the first index taken per round before the median.
//
// `wort bench` runs one case after another: its "vs art" column divides two phases that
// ran a minute apart, and on a shared VM whose speed moves by tens of percent within a run
// that ratio moved a lot between runs of one build (ART+CoW Clustered lookups: 1.12, 1.84
// and 0.96x `art` in three; docs/experiments/2026-11-28-lookup-rounds.md). Here a round builds a fresh
// tree of every index on the same keys (each in its own pool, pages mapped before it
// starts, as `wort bench` does; the volatile `art` keeps its nodes in a malloc'd arena,
// whose pages fault in during its inserts, as in `wort bench`), times the
// inserts; then three passes of lookups over every key in another shuffled order (the
// concrete class's lookup loop, bench/lookup_loops.h, as `wort bench`'s search-direct), the
// indexes in turn, each index's fastest pass being its figure for the round; every value is
// checked. Thread CPU time per operation.
//
// usage: lookup_rounds [--keys N] [--dist LIST] [--index LIST] [--rounds R] [--seed S]
//                      [--huge] [--json FILE]
//   defaults: 1000000 keys, dense,sparse,clustered, art,wort,woart,artcow, 5 rounds, 42;
//   the first index of --index is the one the ratios are against. --huge puts the pools in
//   anonymous memory on transparent huge pages (run it with GLIBC_TUNABLES=
//   glibc.malloc.hugetlb=1 to give the volatile `art`'s malloc'd arena the same); --json
//   writes every round's figures (tools/results_doc.py renders them). Exit 1 if an index
//   gave a wrong answer, 2 on bad usage.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "bench/keygen.h"
#include "bench/rng.h"
#include "bench/runner.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "bench/lookup_loops.h"
#include "index/registry.h"
#include "wort/index.h"
#include "wort/key.h"
#include "wort/pool.h"

using namespace wort;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct Keys {
  std::vector<std::array<std::byte, 8>> insert;  // insertion order; value = rank + 1
  std::string packed_bytes;                      // search order, as bench::PackedKeys
  std::vector<std::size_t> offsets;
  std::uint64_t expected_sum = 0;
};

Keys make_keys(bench::KeyDist d, std::size_t n, std::uint64_t seed) {
  Keys k;
  const std::vector<std::uint64_t> ints = bench::integer_keys(d, n, seed);
  for (std::uint64_t x : ints) k.insert.push_back(u64_key(x));
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  bench::Rng rng(bench::Rng::derive(seed, 10));  // the purpose `wort bench` uses for search
  bench::shuffle(order, rng);
  k.offsets.push_back(0);
  for (std::uint32_t i : order) {
    k.packed_bytes.append(reinterpret_cast<const char*>(k.insert[i].data()), 8);
    k.offsets.push_back(k.packed_bytes.size());
    k.expected_sum += i + 1u;
  }
  return k;
}

// A fresh tree of `kind` in its own pool holding every key (value = rank + 1).
struct Tree {
  std::unique_ptr<Pool> pool;
  std::unique_ptr<Index> idx;
  double insert_ns = 0;  // CPU ns per insert
};

[[noreturn]] void fail(const std::string& kind, const std::string& what) {
  std::fprintf(stderr, "lookup_rounds: %s: %s\n", kind.c_str(), what.c_str());
  std::exit(1);
}

bool g_huge = false;  // --huge: anonymous pools on transparent huge pages

Tree build(const std::string& kind, const Keys& k) {
  const std::size_t n = k.insert.size();
  PoolOptions po;
  po.size = bench::auto_pool_size(n, 8);  // what `wort bench` gives a case of 8-byte keys
  po.kind = kind;
  Tree t;
  const registry::Entry* e = registry::find(kind);
  if (g_huge || (e != nullptr && !e->persistent)) {  // a volatile kind: no file pool
    auto pr = Pool::create_in_memory(po);
    if (!pr) fail(kind, "pool: " + pr.error().message);
    t.pool = std::move(pr).value();
    if (g_huge && ::madvise(t.pool->base(), t.pool->size(), MADV_HUGEPAGE) != 0)
      fail(kind, "madvise(MADV_HUGEPAGE) failed");
  } else {
    const std::string path = "/dev/shm/lookup-rounds-" + std::to_string(::getpid());
    ::unlink(path.c_str());
    auto pr = Pool::create(path, po);
    if (!pr) fail(kind, "pool: " + pr.error().message);
    t.pool = std::move(pr).value();
    ::unlink(path.c_str());
  }
  (void)bench::prefault_pool(*t.pool);
  auto ir = Index::create(*t.pool, kind);
  if (!ir) fail(kind, "create: " + ir.error().message);
  t.idx = std::move(ir).value();
  const double t0 = bench::thread_cpu_seconds();
  for (std::size_t i = 0; i < n; ++i)
    if (t.idx->insert(Key(k.insert[i].data(), 8), i + 1) != Status::ok)
      fail(kind, "insert " + std::to_string(i) + " failed");
  t.insert_ns = (bench::thread_cpu_seconds() - t0) * 1e9 / static_cast<double>(n);
  return t;
}

// One pass of lookups over every key (search order); CPU ns per lookup. Exits on a wrong
// answer.
double lookup_pass(const std::string& kind, const Tree& t, const Keys& k) {
  const std::size_t n = k.insert.size();
  const bench::PackedKeys p{reinterpret_cast<const std::byte*>(k.packed_bytes.data()), k.offsets.data(), n};
  const double t0 = bench::thread_cpu_seconds();
  const bench::LookupTally r = bench::concrete_lookups(kind)->direct(*t.idx, p);
  const double ns = (bench::thread_cpu_seconds() - t0) * 1e9 / static_cast<double>(n);
  if (r.found != n || r.value_sum != k.expected_sum)
    fail(kind, std::to_string(r.found) + " of " + std::to_string(n) + " keys found, value sum " +
                   std::to_string(r.value_sum) + " (want " + std::to_string(k.expected_sum) + ")");
  return ns;
}

struct Row {
  std::string dist, index;
  std::vector<double> insert_ns, lookup_ns;        // CPU ns per op, one per round
  std::vector<double> insert_ratio, lookup_ratio;  // to the first index, same round
};

void json_array(std::FILE* f, const std::vector<double>& v) {
  std::fputc('[', f);
  for (std::size_t i = 0; i < v.size(); ++i) std::fprintf(f, "%s%.4f", i ? ", " : "", v[i]);
  std::fputc(']', f);
}

bool write_json(const std::string& path, std::size_t n, std::size_t rounds, std::uint64_t seed,
                const std::vector<Row>& rows) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "{\n  \"schema\": \"wort-lookup-rounds\",\n  \"keys\": %zu,\n  \"rounds\": %zu,\n"
               "  \"seed\": %llu,\n  \"huge_pages\": %s,\n  \"baseline\": \"%s\",\n  \"rows\": [",
               n, rounds, static_cast<unsigned long long>(seed), g_huge ? "true" : "false",
               rows.empty() ? "" : rows[0].index.c_str());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(f, "%s\n    {\"dist\": \"%s\", \"index\": \"%s\", \"insert_ns\": ", i ? "," : "",
                 r.dist.c_str(), r.index.c_str());
    json_array(f, r.insert_ns);
    std::fputs(", \"lookup_ns\": ", f);
    json_array(f, r.lookup_ns);
    std::fputs(", \"insert_ratio\": ", f);
    json_array(f, r.insert_ratio);
    std::fputs(", \"lookup_ratio\": ", f);
    json_array(f, r.lookup_ratio);
    std::fputc('}', f);
  }
  std::fputs("\n  ]\n}\n", f);
  return std::fclose(f) == 0;
}

int usage() {
  std::fputs("usage: lookup_rounds [--keys N] [--dist LIST] [--index LIST] [--rounds R] [--seed S]\n"
             "                     [--huge] [--json FILE]\n"
             "  every index's inserts and lookups on the same keys, in rounds, the indexes in\n"
             "  turn within each round; ratios to the first index per round, then the median.\n"
             "  defaults: --keys 1000000 --dist dense,sparse,clustered\n"
             "            --index art,wort,woart,artcow --rounds 5 --seed 42\n"
             "  --huge       pools in anonymous memory on transparent huge pages\n"
             "  --json FILE  every round's figures as JSON\n",
             stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 1000000, rounds = 5;
  std::uint64_t seed = 42;
  std::vector<std::string> dists = {"dense", "sparse", "clustered"};
  std::vector<std::string> kinds = {"art", "wort", "woart", "artcow"};
  std::string json_path;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help" || a == "-h") return usage(), 0;
      if (a == "--huge") {
        g_huge = true;
        continue;
      }
      if (i + 1 >= argc) return usage();
      const std::string v = argv[++i];
      if (a == "--keys") n = cli::parse_count(v, "--keys");
      else if (a == "--rounds") rounds = cli::parse_count(v, "--rounds");
      else if (a == "--seed") seed = cli::parse_count(v, "--seed");
      else if (a == "--dist") dists = cli::split_list(v);
      else if (a == "--index") kinds = cli::split_list(v);
      else if (a == "--json") json_path = v;
      else return usage();
    }
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "lookup_rounds: %s\n", e.what());
    return usage();
  }
  if (n == 0 || rounds == 0 || kinds.empty()) return usage();
  for (const std::string& kind : kinds) {
    const registry::Entry* e = registry::find(kind);
    if (e == nullptr || bench::concrete_lookups(kind) == nullptr) {
      std::fprintf(stderr, "lookup_rounds: unknown index '%s' (see `wort list`)\n", kind.c_str());
      return 2;
    }
  }
  std::printf("lookup_rounds: %zu keys, %zu rounds, seed %llu; thread CPU ns per op, median of\n"
              "the rounds; ratio to %s per round: median (min-max)\n",
              n, rounds, static_cast<unsigned long long>(seed), kinds[0].c_str());
  std::vector<Row> rows;
  for (const std::string& dist : dists) {
    bench::KeyDist d;
    if (!bench::parse(dist, d)) {
      std::fprintf(stderr, "lookup_rounds: unknown --dist '%s'\n", dist.c_str());
      return 2;
    }
    const Keys k = make_keys(d, n, seed);
    const std::size_t m = kinds.size();
    std::vector<std::vector<double>> ins(m), look(m);
    for (std::size_t r = 0; r < rounds; ++r) {
      // A fresh tree of each, built in a rotated order (no index always first)...
      std::vector<Tree> trees(m);
      for (std::size_t j = 0; j < m; ++j) {
        const std::size_t x = (j + r) % m;
        trees[x] = build(kinds[x], k);
        ins[x].push_back(trees[x].insert_ns);
      }
      // ...then kPasses lookup passes of each, the indexes in turn; the round's figure is an
      // index's fastest pass (the one the machine's other jobs disturbed least).
      constexpr int kPasses = 3;
      std::vector<double> best(m, 1e300);
      for (int pass = 0; pass < kPasses; ++pass)
        for (std::size_t j = 0; j < m; ++j) {
          const std::size_t x = (j + r + static_cast<std::size_t>(pass)) % m;
          best[x] = std::min(best[x], lookup_pass(kinds[x], trees[x], k));
        }
      for (std::size_t x = 0; x < m; ++x) look[x].push_back(best[x]);
    }
    for (std::size_t x = 0; x < m; ++x) {
      Row row{dist, kinds[x], ins[x], look[x], {}, {}};
      for (std::size_t r = 0; r < rounds; ++r) {
        row.insert_ratio.push_back(ins[x][r] / ins[0][r]);
        row.lookup_ratio.push_back(look[x][r] / look[0][r]);
      }
      const auto lo = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
      const auto hi = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
      std::printf("%-9s %-8s insert %7.1f ns  x%.2f (%.2f-%.2f)   lookup %6.1f ns  x%.2f (%.2f-%.2f)\n",
                  dist.c_str(), kinds[x].c_str(), median(row.insert_ns), median(row.insert_ratio),
                  lo(row.insert_ratio), hi(row.insert_ratio), median(row.lookup_ns),
                  median(row.lookup_ratio), lo(row.lookup_ratio), hi(row.lookup_ratio));
      rows.push_back(std::move(row));
    }
    std::fflush(stdout);
  }
  if (!json_path.empty() && !write_json(json_path, n, rounds, seed, rows)) {
    std::fprintf(stderr, "lookup_rounds: cannot write %s\n", json_path.c_str());
    return 2;
  }
  return 0;
}
