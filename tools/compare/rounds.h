// tools/compare/rounds.h — the harness shared by the authors'-code drivers (authors_fptree.cc,
// authors_roart.cc, authors_part.cc): the keys, our side through the public API, the
// interleaved timed rounds with every answer checked, and the callgrind mode. A driver defines
// a `Theirs` type with
//   void fresh(std::size_t n);                    a new, empty tree for n keys
//   std::size_t insert_all(const Keys&);          inserts k.ins in order, wrong answers
//   std::size_t lookup_all(const Keys&) const;    looks k.look up, wrong answers
//   void close();                                 releases the tree (after the round)
// and calls time_mode<Theirs> / cg_mode<Theirs> with our index kind. Not built by the
// project (tools/compare/README.md).
#pragma once
#include <time.h>
#include <unistd.h>
#include <valgrind/callgrind.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>
#include "bench/keygen.h"
#include "wort/index.h"
#include "wort/key.h"
#include "wort/persist.h"
#include "wort/pool.h"

namespace rounds {

inline double thread_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}

//! One shuffled order for inserts (seed 42), another for lookups (seed 43); `_b` are the
//! same keys as our 8-byte big-endian keys.
struct Keys {
  std::vector<std::uint64_t> ins, look;
  std::vector<std::array<std::byte, 8>> ins_b, look_b;
};

inline Keys make_keys(wort::bench::KeyDist d, std::size_t n) {
  Keys k;
  k.ins = wort::bench::integer_keys(d, n, 42);
  std::shuffle(k.ins.begin(), k.ins.end(), std::mt19937_64(42));
  k.look = k.ins;
  std::shuffle(k.look.begin(), k.look.end(), std::mt19937_64(43));
  for (auto x : k.ins) k.ins_b.push_back(wort::u64_key(x));
  for (auto x : k.look) k.look_b.push_back(wort::u64_key(x));
  return k;
}

//! The value stored under key x on both sides: unique and never 0 (their trees answer a
//! missing key with 0 or a null pointer).
inline std::uint64_t value_of(std::uint64_t x) { return x ^ 0x5555555555555555ull; }

//! Our index `kind` in a fresh pool file in /dev/shm (unlinked at once).
struct Ours {
  const char* kind;
  std::unique_ptr<wort::Pool> pool;
  std::unique_ptr<wort::Index> idx;
  void fresh(std::size_t n) {
    idx.reset(), pool.reset();
    wort::PoolOptions o;
    o.size = n * 160 + (64 << 20), o.kind = kind;
    std::string path = "/dev/shm/cmp-ours-" + std::to_string(getpid());
    auto p = wort::Pool::create(path, o);
    unlink(path.c_str());
    if (!p) std::puts("pool create failed"), std::exit(2);
    pool = std::move(*p);
    auto i = wort::Index::create(*pool, kind);
    if (!i) std::puts("index create failed"), std::exit(2);
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
  void close() { idx.reset(), pool.reset(); }
};

struct Series {
  std::vector<double> ours, theirs, ratio;
  void add(double o, double t) { ours.push_back(o), theirs.push_back(t), ratio.push_back(o / t); }
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline void print(const char* what, const Series& s, FILE* json, bool last) {
  auto [lo, hi] = std::minmax_element(s.ratio.begin(), s.ratio.end());
  std::printf("%s thread-CPU ns/op (median of %zu interleaved rounds): ours %.1f theirs %.1f "
              "ratio ours/theirs %.3f (min %.3f max %.3f)\n",
              what, s.ratio.size(), median(s.ours), median(s.theirs), median(s.ratio), *lo, *hi);
  if (json)
    std::fprintf(json, "  \"%s\": {\"ours_ns\": %.1f, \"theirs_ns\": %.1f, \"ratio\": %.3f, "
                 "\"ratio_min\": %.3f, \"ratio_max\": %.3f}%s\n",
                 what, median(s.ours), median(s.theirs), median(s.ratio), *lo, *hi, last ? "" : ",");
}

//! One round: a fresh tree of each side filled, then every key looked up; `ours_first` picks
//! the order. Adds each side's wrong answers to `wrong`.
template <class Theirs>
void one_round(const char* kind, const Keys& k, bool ours_first, Series& ins, Series& look,
               std::size_t wrong[2]) {
  Ours o{kind};
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
  o.close(), t.close();
}

//! 7 interleaved rounds (the first side alternating); prints and writes `json_path` (if
//! given) in the shape run.sh reads. Exit status 1 on any wrong answer.
template <class Theirs>
int time_mode(const char* kind, const Keys& k, const char* dist, const char* json_path) {
  Series ins, look;
  std::size_t wrong[2] = {0, 0};
  for (int r = 0; r < 7; ++r) one_round<Theirs>(kind, k, r % 2 == 0, ins, look, wrong);
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

//! One side under callgrind: two dumps, `insert` and `lookup` (run under valgrind
//! --tool=callgrind --collect-atstart=no --instr-atstart=no). Our flushes are clflush here:
//! valgrind 3.19 has no clwb, and the instruction count is the same.
template <class Theirs>
int cg_mode(const char* kind, const Keys& k, bool ours) {
  wort::pm::Config c;
  c.insn = wort::pm::FlushInsn::clflush;
  if (!wort::pm::configure(c)) return std::puts("pm configure failed"), 2;
  Ours o{kind};
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
  if (ours) o.close(); else t.close();
  return wrong ? 1 : 0;
}

//! Our side's write-backs and fences per insert, one fresh tree of N inserts.
inline wort::pm::Counters count_ours(const char* kind, const Keys& k, std::size_t& wrong) {
  Ours o{kind};
  o.fresh(k.ins.size());
  wort::pm::reset_counters();
  wrong += o.insert_all(k);
  auto c = wort::pm::counters();
  wrong += o.lookup_all(k);
  return c;
}

}  // namespace rounds
