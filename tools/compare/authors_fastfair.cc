// tools/compare/authors_fastfair.cc — our `fastfair` index (public API, libwort) against the
// FAST&FAIR paper's authors' own code (DICL/FAST_FAIR, single/src/btree.h) on the same keys in
// the same process. Not built by the project: the authors' code is not ours to ship; see
// tools/compare/README.md ("FAST&FAIR") for the patch (tools/compare/variants/fast_fair*.sed)
// and the build command.
//
// usage: authors_fastfair DIST N MODE [JSON]
//   MODE time       7 rounds, each a fresh tree of each side (ours in a fresh pool file in
//                   /dev/shm, theirs in a fresh /dev/shm arena) filled with N inserts, then a
//                   lookup of every key; ours and theirs interleaved, the first side alternating
//                   by round. Thread CPU ns per op, the median ratio ours/theirs and its range;
//                   every answer checked on both sides (exit 1 on any wrong one). JSON: the
//                   figures written to that file as well.
//   MODE count      one round of each: lines written back and fences per insert (link it
//                   against the count build of their header)
//   MODE cg-ours    callgrind client requests around our inserts and lookups, and around
//   MODE cg-theirs  theirs (run under valgrind --tool=callgrind --collect-atstart=no
//                   --instr-atstart=no; link against the clflush build of their header)
//   DIST            dense | sparse (bench::integer_keys, seed 42): inserted in that shuffled
//                   order, looked up in another (seed 43)
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/callgrind.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>
#include "bench/keygen.h"
#include "wort/index.h"
#include "wort/key.h"
#include "wort/persist.h"
#include "wort/pool.h"

#ifdef AUTHORS_COUNT
unsigned long authors_fence_cnt = 0;
#endif
void* authors_pm_alloc(std::size_t size);
#include "btree.h"  // theirs, patched: -I to the build's copy

namespace {

// Their nodes' arena: a file in /dev/shm, mapped shared, 64-byte aligned bump allocation.
struct Arena {
  char* base = nullptr;
  std::size_t size = 0, used = 0;
  void open(std::size_t bytes) {
    close();
    std::string path = "/dev/shm/aff-" + std::to_string(getpid());
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, off_t(bytes)) != 0) { std::perror("arena"); std::exit(2); }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    unlink(path.c_str());
    if (p == MAP_FAILED) { std::perror("arena mmap"); std::exit(2); }
    base = static_cast<char*>(p), size = bytes, used = 0;
  }
  void close() {
    if (base) munmap(base, size);
    base = nullptr;
  }
};
Arena g_arena;

double thread_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}

struct Keys {
  std::vector<std::uint64_t> ins, look;  // one shuffled order for inserts, another for lookups
  std::vector<std::array<std::byte, 8>> ins_b, look_b;
};

Keys make_keys(wort::bench::KeyDist d, std::size_t n) {
  Keys k;
  k.ins = wort::bench::integer_keys(d, n, 42);
  std::shuffle(k.ins.begin(), k.ins.end(), std::mt19937_64(42));
  k.look = k.ins;
  std::shuffle(k.look.begin(), k.look.end(), std::mt19937_64(43));
  for (auto x : k.ins) k.ins_b.push_back(wort::u64_key(x));
  for (auto x : k.look) k.look_b.push_back(wort::u64_key(x));
  return k;
}

// The value stored under key x on both sides: unique and never 0 (their end mark is a null
// pointer, their dead mark two equal pointers).
std::uint64_t value_of(std::uint64_t x) { return x ^ 0x5555555555555555ull; }

struct Ours {
  std::unique_ptr<wort::Pool> pool;
  std::unique_ptr<wort::Index> idx;
  void fresh(std::size_t n) {
    idx.reset(), pool.reset();
    wort::PoolOptions o;
    o.size = n * 120 + (64 << 20), o.kind = "fastfair";
    std::string path = "/dev/shm/off-" + std::to_string(getpid());
    auto p = wort::Pool::create(path, o);
    unlink(path.c_str());
    if (!p) { std::puts("pool create failed"); std::exit(2); }
    pool = std::move(*p);
    auto i = wort::Index::create(*pool, "fastfair");
    if (!i) { std::puts("index create failed"); std::exit(2); }
    idx = std::move(*i);
  }
  std::size_t insert_all(const Keys& k) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < k.ins.size(); ++i)
      wrong += idx->insert(wort::Key(k.ins_b[i].data(), 8), value_of(k.ins[i])) != wort::Status::ok;
    return wrong;
  }
  std::size_t lookup_all(const Keys& k) const {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < k.look.size(); ++i) {
      auto v = idx->lookup(wort::Key(k.look_b[i].data(), 8));
      wrong += !v || *v != value_of(k.look[i]);
    }
    return wrong;
  }
};

struct Theirs {
  btree* bt = nullptr;
  void fresh(std::size_t n) {
    g_arena.open(n * 80 + (64 << 20));
    bt = new (authors_pm_alloc(sizeof(btree))) btree();
  }
  std::size_t insert_all(const Keys& k) {
    for (auto x : k.ins) bt->btree_insert(entry_key_t(x), reinterpret_cast<char*>(value_of(x)));
    return 0;  // their insert answers nothing; the lookups check every key
  }
  std::size_t lookup_all(const Keys& k) const {
    std::size_t wrong = 0;
    for (auto x : k.look)
      wrong += reinterpret_cast<std::uint64_t>(bt->btree_search(entry_key_t(x))) != value_of(x);
    return wrong;
  }
};

struct Series {
  std::vector<double> ours, theirs, ratio;
  void add(double o, double t) { ours.push_back(o), theirs.push_back(t), ratio.push_back(o / t); }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void print(const char* what, const Series& s, FILE* json, bool last) {
  auto [lo, hi] = std::minmax_element(s.ratio.begin(), s.ratio.end());
  std::printf("%s thread-CPU ns/op (median of %zu interleaved rounds): ours %.1f theirs %.1f "
              "ratio ours/theirs %.3f (min %.3f max %.3f)\n",
              what, s.ratio.size(), median(s.ours), median(s.theirs), median(s.ratio), *lo, *hi);
  if (json)
    std::fprintf(json, "  \"%s\": {\"ours_ns\": %.1f, \"theirs_ns\": %.1f, \"ratio\": %.3f, "
                 "\"ratio_min\": %.3f, \"ratio_max\": %.3f}%s\n",
                 what, median(s.ours), median(s.theirs), median(s.ratio), *lo, *hi, last ? "" : ",");
}

// One round: a fresh tree of each side filled, then every key looked up; `ours_first` picks
// the order. Adds the wrong answers of each side to `wrong`.
void one_round(const Keys& k, bool ours_first, Series& ins, Series& look, std::size_t wrong[2]) {
  Ours o;
  Theirs t;
  const std::size_t n = k.ins.size();
  double ti[2], tl[2];
  for (int side : ours_first ? std::array{0, 1} : std::array{1, 0}) {
    if (side == 0) o.fresh(n); else t.fresh(n);
    double a = thread_ns();
    wrong[side] += side == 0 ? o.insert_all(k) : t.insert_all(k);
    double b = thread_ns();
    wrong[side] += side == 0 ? o.lookup_all(k) : t.lookup_all(k);
    double c = thread_ns();
    ti[side] = (b - a) / double(n), tl[side] = (c - b) / double(n);
  }
  ins.add(ti[0], ti[1]), look.add(tl[0], tl[1]);
  g_arena.close();
}

int time_mode(const Keys& k, const char* dist, const char* json_path) {
  Series ins, look;
  std::size_t wrong[2] = {0, 0};
  for (int r = 0; r < 7; ++r) one_round(k, r % 2 == 0, ins, look, wrong);
  FILE* json = json_path ? std::fopen(json_path, "w") : nullptr;
  if (json)
    std::fprintf(json, "{\n  \"dist\": \"%s\", \"keys\": %zu, \"rounds\": 7, "
                 "\"wrong_ours\": %zu, \"wrong_theirs\": %zu,\n", dist, k.ins.size(), wrong[0], wrong[1]);
  print("insert", ins, json, false);
  print("lookup", look, json, true);
  if (json) std::fputs("}\n", json), std::fclose(json);
  std::printf("wrong answers: ours %zu theirs %zu\n", wrong[0], wrong[1]);
  return wrong[0] || wrong[1] ? 1 : 0;
}

#ifdef AUTHORS_COUNT
int count_mode(const Keys& k) {
  const double n = double(k.ins.size());
  Ours o;
  o.fresh(k.ins.size());
  wort::pm::reset_counters();
  std::size_t wrong = o.insert_all(k);
  auto c = wort::pm::counters();
  Theirs t;
  t.fresh(k.ins.size());
  clflush_cnt = 0, authors_fence_cnt = 0;
  t.insert_all(k);
  double lines = double(clflush_cnt), fences = double(authors_fence_cnt);
  wrong += o.lookup_all(k) + t.lookup_all(k);
  std::printf("per insert: ours %.2f lines written back + %.2f non-temporal stores, %.2f fences; "
              "theirs %.2f lines written back, %.2f fences\n",
              double(c.lines_flushed) / n, double(c.nt_stores) / n, double(c.fences) / n,
              lines / n, fences / n);
  std::printf("wrong answers: %zu\n", wrong);
  return wrong ? 1 : 0;
}
#endif

int cg_mode(const Keys& k, bool ours) {
  wort::pm::Config c;  // valgrind 3.19 has no clwb: the same instruction count with clflush
  c.insn = wort::pm::FlushInsn::clflush;
  if (!wort::pm::configure(c)) return std::puts("pm configure failed"), 2;
  Ours o;
  Theirs t;
  if (ours) o.fresh(k.ins.size()); else t.fresh(k.ins.size());
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_TOGGLE_COLLECT;
  std::size_t wrong = ours ? o.insert_all(k) : t.insert_all(k);
  CALLGRIND_TOGGLE_COLLECT;
  CALLGRIND_DUMP_STATS_AT("insert");
  CALLGRIND_TOGGLE_COLLECT;
  wrong += ours ? o.lookup_all(k) : t.lookup_all(k);
  CALLGRIND_TOGGLE_COLLECT;
  CALLGRIND_DUMP_STATS_AT("lookup");
  std::printf("wrong answers: %zu\n", wrong);
  return wrong ? 1 : 0;
}

}  // namespace

void* authors_pm_alloc(std::size_t size) {
  std::size_t at = (g_arena.used + 63) & ~std::size_t(63);
  if (!g_arena.base || at + size > g_arena.size) { std::puts("arena full"); std::exit(2); }
  g_arena.used = at + size;
  return g_arena.base + at;
}

int main(int argc, char** argv) {
  wort::bench::KeyDist d;
  if (argc < 4 || !wort::bench::parse(argv[1], d) || !wort::bench::is_integer(d)) {
    std::puts("usage: authors_fastfair dense|sparse N time|count|cg-ours|cg-theirs [JSON]");
    return 2;
  }
  const Keys k = make_keys(d, std::strtoull(argv[2], nullptr, 10));
  const std::string mode = argv[3];
  if (mode == "time") return time_mode(k, argv[1], argc > 4 ? argv[4] : nullptr);
#ifdef AUTHORS_COUNT
  if (mode == "count") return count_mode(k);
#endif
  if (mode == "cg-ours" || mode == "cg-theirs") return cg_mode(k, mode == "cg-ours");
  std::puts("unknown mode (count needs the count build)");
  return 2;
}
