// tools/compare/authors_wort.cc — our `wort` index (public API, libwort) against the WORT
// paper's authors' own code (SeKwonLee/WORT, src/wort/wort.c: malloc + flush) on the same keys
// in the same process. Not built by the project: the authors' code is not ours to ship; see
// tools/compare/README.md for where to put it and the build command.
//
// usage: authors_wort DIST N MODE [KIND]
//   MODE time       insert and lookup rounds, ours and theirs interleaved; medians and ratios
//   MODE time-nopm  the same with our write-backs and fences off (pm mode none); link it
//                   against their code built with theirs off too (README: "Without the
//                   write-backs"), so the ratio is that of the work besides them
//   MODE cg-ours    callgrind client requests around our inserts and lookups (run under
//   MODE cg-theirs  valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no)
//   DIST            dense | sparse | clustered (bench::integer_keys, seed 42); KIND: wort, or
//                   woart when linked against their woart.c (README: "WOART")
#include <valgrind/callgrind.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <string>
#include <vector>
#include "bench/keygen.h"
#include "wort/index.h"
#include "wort/persist.h"
#include "wort/pool.h"
extern "C" {
#include "wort/wort.h"
}
using namespace wort;
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  bench::KeyDist d; bench::parse(argv[1], d);
  const std::size_t n = std::strtoull(argv[2], nullptr, 10);
  const std::string mode = argv[3];
  if (mode == "time-nopm") {
    pm::Config none;
    none.mode = pm::Mode::none;
    if (!pm::configure(none)) { std::puts("pm configure failed"); return 1; }
  }
  const char* kind = argc > 4 ? argv[4] : "wort";
  auto keys = bench::integer_keys(d, n, 42);
  std::vector<std::array<std::byte, 8>> bk(n);
  for (std::size_t i = 0; i < n; ++i) bk[i] = u64_key(keys[i]);
  bool ours = mode != "cg-theirs", theirs = mode != "cg-ours";
  std::unique_ptr<Pool> pool; std::unique_ptr<Index> idx;
  art_tree t; art_tree_init(&t);
  double ti_o = 0, ti_t = 0;
  if (ours) {
    PoolOptions o; o.size = (n * 120 + (64 << 20)); o.kind = kind;
    std::string path = "/dev/shm/drv-" + std::to_string(getpid());
    { auto r = Pool::create(path, o); if (!r) { std::puts("pool create failed"); return 1; } pool = std::move(*r); } unlink(path.c_str());
    { auto r = Index::create(*pool, kind); if (!r) { std::puts("index create failed"); return 1; } idx = std::move(*r); }
  }
  const bool cg = mode.rfind("cg", 0) == 0;
  if (cg) CALLGRIND_START_INSTRUMENTATION;
  if (ours) { double s = now(); if (cg) CALLGRIND_TOGGLE_COLLECT;
    for (std::size_t i = 0; i < n; ++i) (void)idx->insert(Key(bk[i].data(), 8), keys[i] + 1);
    if (cg) CALLGRIND_TOGGLE_COLLECT; ti_o = now() - s; }
  if (theirs) { double s = now(); if (cg) CALLGRIND_TOGGLE_COLLECT;
    for (std::size_t i = 0; i < n; ++i) art_insert(&t, keys[i], 8, (void*)(keys[i] + 1));
    if (cg) CALLGRIND_TOGGLE_COLLECT; ti_t = now() - s; }
  if (cg) {
    CALLGRIND_DUMP_STATS_AT("insert");
    std::uint64_t sum = 0;
    CALLGRIND_TOGGLE_COLLECT;
    if (ours) for (std::size_t i = 0; i < n; ++i) sum += *idx->lookup(Key(bk[i].data(), 8));
    else for (std::size_t i = 0; i < n; ++i) sum += (std::uint64_t)art_search(&t, keys[i], 8);
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT("lookup");
    std::printf("sum %llu\n", (unsigned long long)sum);
    return 0;
  }
  // inserts: interleaved rounds, each a fresh tree of each (ours in a fresh pool)
  std::vector<double> io{ti_o * 1e9 / n}, it{ti_t * 1e9 / n}, iratio{ti_o / ti_t};
  for (int r = 0; r < 4; ++r) {
    idx.reset(); pool.reset();
    PoolOptions o; o.size = (n * 120 + (64 << 20)); o.kind = kind;
    std::string path = "/dev/shm/drv-" + std::to_string(getpid());
    { auto rr = Pool::create(path, o); pool = std::move(*rr); } unlink(path.c_str());
    { auto rr = Index::create(*pool, kind); idx = std::move(*rr); }
    double a = now();
    for (std::size_t i = 0; i < n; ++i) (void)idx->insert(Key(bk[i].data(), 8), keys[i] + 1);
    double b = now();
    art_tree_init(&t);
    for (std::size_t i = 0; i < n; ++i) art_insert(&t, keys[i], 8, (void*)(keys[i] + 1));
    double c = now();
    io.push_back((b - a) * 1e9 / n); it.push_back((c - b) * 1e9 / n); iratio.push_back((b - a) / (c - b));
  }
  // lookups: interleaved rounds, each a pass over every key in the insertion order
  std::vector<double> ro, rt, ratio;
  for (int r = 0; r < 7; ++r) {
    std::uint64_t s1 = 0, s2 = 0;
    double a = now(); for (std::size_t i = 0; i < n; ++i) s1 += *idx->lookup(Key(bk[i].data(), 8)); double b = now();
    for (std::size_t i = 0; i < n; ++i) s2 += (std::uint64_t)art_search(&t, keys[i], 8); double c = now();
    if (s1 != s2) { std::printf("MISMATCH %llu %llu\n", (unsigned long long)s1, (unsigned long long)s2); return 1; }
    ro.push_back((b - a) * 1e9 / n); rt.push_back((c - b) * 1e9 / n); ratio.push_back((b - a) / (c - b));
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  std::printf("insert ns/op (median of 5 interleaved rounds): ours %.1f theirs %.1f ratio ours/theirs %.2f (min %.2f max %.2f)\n",
              med(io), med(it), med(iratio), *std::min_element(iratio.begin(), iratio.end()), *std::max_element(iratio.begin(), iratio.end()));
  std::printf("lookup ns/op (median of 7 interleaved rounds): ours %.1f theirs %.1f ratio ours/theirs %.2f (min %.2f max %.2f)\n",
              med(ro), med(rt), med(ratio), *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()));
}
