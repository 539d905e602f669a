// tools/compare/public_art.cc — our volatile `art` (the concrete class wort::art::VolatileArt,
// called directly, as `wort bench`'s search-direct does) against the two public ARTs people
// compare with: armon/libart (C, src/art.c) and the single-threaded ART of Leis et al.'s
// ARTSynchronized (ART/, namespace ART_unsynchronized). Same keys, same process, rounds
// interleaved. Not built by the project: the public code is not ours to ship; see
// tools/compare/README.md ("The public ARTs") for where to put it and the build command.
//
// usage: public_art DIST N MODE [tid=key|tid=tuple|tid=ptr] [mask63]
//   DIST   dense | sparse | clustered (bench::integer_keys(DIST, N, 42), 8-byte big-endian)
//   MODE   time        5 insert rounds (a fresh tree of each index per round) and 7 lookup
//                      rounds (every key once, insertion order), each round running ours,
//                      libart, ARTSynchronized in turn; per-index median ns/op and the
//                      ratios ours/theirs per round (min/median/max)
//          cg          one insert pass and one lookup pass of each index, each inside
//                      callgrind client requests (dumps "ours-insert", "libart-insert",
//                      "artsync-insert", then the three "...-lookup"); run under
//                      valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no
//          cg-ours | cg-libart | cg-artsync   the same for one index only
//   tid=   what ARTSynchronized stores as the TID (it keeps no leaves: a child slot holds
//          TID | 1<<63 and lookups rebuild the key through a loadKey callback):
//          key    the 8-byte integer key itself, as their example.cpp does (needs every
//                 key < 2^63 and != 0: Dense; Sparse/Clustered only with mask63). The
//                 index then holds no value and no key bytes: a set, not a map
//          tuple  the address of a 16-byte record {key (big-endian), value} that the
//                 insert loop writes (records in insertion order, in an array allocated
//                 untouched per round); loadKey reads the record's key and a lookup
//                 returns the record's value: the same information ours and libart keep
//                 in their leaves, so the like-for-like key-value comparison
//          ptr    the address of the key's bytes in the driver's own key array (the
//                 query key itself, so already in cache at a lookup; no value)
//          default: key when every key allows it, else tuple
//   mask63 clears bit 63 of every key (for all three indexes) so that tid=key works on
//          Sparse and Clustered; refuses if that makes two keys equal
//
// Every index's lookups are checked: each key once, exact value, after the first insert
// round (and the lookup rounds compare sums and hit counts); a mismatch exits 1.
#include <valgrind/callgrind.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "bench/keygen.h"
#include "baseline/art/art_tree.h"
#include "wort/key.h"
extern "C" {
#include "art.h"  // armon/libart
}
#include "ART/Tree.h"  // ARTSynchronized, single-threaded ART/ (defines ::Key, ::TID)

namespace {

using Bytes8 = std::array<std::byte, 8>;

double wall() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double cpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// ARTSynchronized's loadKey callbacks (their Tree calls one through a function pointer).
void load_key_int(TID tid, ::Key& key) {  // tid = the integer key (their example.cpp)
  key.setKeyLen(sizeof(tid));
  reinterpret_cast<uint64_t*>(&key[0])[0] = __builtin_bswap64(tid);
}
void load_key_ptr(TID tid, ::Key& key) {  // tid = address of the key's 8 big-endian bytes
  key.setKeyLen(8);
  std::memcpy(&key[0], reinterpret_cast<const void*>(tid), 8);
}

// tid=tuple: what ARTSynchronized's TID points to (their "tuple").
struct Tuple {
  Bytes8 key;           // big-endian
  std::uint64_t value;  // the same value ours and libart store
};
void load_key_tuple(TID tid, ::Key& key) {
  key.setKeyLen(8);
  std::memcpy(&key[0], reinterpret_cast<const Tuple*>(tid)->key.data(), 8);
}

enum class TidMode { key, tuple, ptr };

struct Keys {
  std::vector<std::uint64_t> ints;  // insertion order
  std::vector<Bytes8> be;           // the same, 8 bytes big-endian
  std::vector<TID> tids;            // what ARTSynchronized stores for key i (key, ptr)
  TidMode tid = TidMode::key;
  std::size_t n() const { return ints.size(); }
};

// ---- the three indexes behind one face --------------------------------------------------

struct Ours {
  std::unique_ptr<wort::art::VolatileArt> t;
  void fresh() { t.reset(); t = std::make_unique<wort::art::VolatileArt>(); }
  void drop() { t.reset(); }
  void insert_all(const Keys& k) {
    for (std::size_t i = 0; i < k.n(); ++i)
      (void)t->insert(wort::Key(k.be[i].data(), 8), k.ints[i] + 1);
  }
  // sum of values found, hit count
  std::pair<std::uint64_t, std::uint64_t> lookup_all(const Keys& k) const {
    std::uint64_t s = 0, hits = 0;
    for (std::size_t i = 0; i < k.n(); ++i)
      if (auto v = t->lookup(wort::Key(k.be[i].data(), 8))) { s += *v; ++hits; }
    return {s, hits};
  }
  bool check(const Keys& k) const {
    for (std::size_t i = 0; i < k.n(); ++i) {
      auto v = t->lookup(wort::Key(k.be[i].data(), 8));
      if (!v || *v != k.ints[i] + 1) { std::printf("ours: key %zu wrong\n", i); return false; }
    }
    return t->size() == k.n();
  }
};

struct LibArt {
  art_tree t{};
  bool live = false;
  void fresh() { drop(); art_tree_init(&t); live = true; }
  void drop() { if (live) art_tree_destroy(&t); live = false; }
  ~LibArt() { drop(); }
  void insert_all(const Keys& k) {
    for (std::size_t i = 0; i < k.n(); ++i)
      art_insert(&t, reinterpret_cast<const unsigned char*>(k.be[i].data()), 8,
                 reinterpret_cast<void*>(k.ints[i] + 1));
  }
  std::pair<std::uint64_t, std::uint64_t> lookup_all(const Keys& k) const {
    std::uint64_t s = 0, hits = 0;
    for (std::size_t i = 0; i < k.n(); ++i) {
      void* v = art_search(&t, reinterpret_cast<const unsigned char*>(k.be[i].data()), 8);
      if (v != nullptr) { s += reinterpret_cast<std::uint64_t>(v); ++hits; }
    }
    return {s, hits};
  }
  bool check(const Keys& k) const {
    for (std::size_t i = 0; i < k.n(); ++i) {
      void* v = art_search(&t, reinterpret_cast<const unsigned char*>(k.be[i].data()), 8);
      if (reinterpret_cast<std::uint64_t>(v) != k.ints[i] + 1) { std::printf("libart: key %zu wrong\n", i); return false; }
    }
    return t.size == k.n();
  }
};

struct ArtSync {
  std::unique_ptr<ART_unsynchronized::Tree> t;
  std::unique_ptr<Tuple[]> tuples;  // tid=tuple: fresh, untouched memory each round
  std::size_t cap = 0;
  ART_unsynchronized::Tree::LoadKeyFunction load = load_key_int;
  TidMode mode = TidMode::key;
  void fresh() {
    t.reset();
    tuples.reset();
    if (mode == TidMode::tuple) tuples.reset(new Tuple[cap]);  // not initialised: pages untouched
    t = std::make_unique<ART_unsynchronized::Tree>(load);
  }
  void drop() { t.reset(); tuples.reset(); }
  // What a lookup yields: the value (tuple), else the TID.
  std::uint64_t value_of(TID v) const {
    return mode == TidMode::tuple ? reinterpret_cast<const Tuple*>(v)->value : v;
  }
  // The key object their API takes, built per operation as their example does.
  static void make_key(::Key& key, const Bytes8& b) {
    key.setKeyLen(8);
    std::memcpy(&key[0], b.data(), 8);
  }
  void insert_all(const Keys& k) {
    if (mode == TidMode::tuple) {
      for (std::size_t i = 0; i < k.n(); ++i) {
        ::Key key;
        make_key(key, k.be[i]);
        Tuple* tu = &tuples[i];
        tu->key = k.be[i];
        tu->value = k.ints[i] + 1;
        t->insert(key, reinterpret_cast<TID>(tu));
      }
      return;
    }
    for (std::size_t i = 0; i < k.n(); ++i) {
      ::Key key;
      make_key(key, k.be[i]);
      t->insert(key, k.tids[i]);
    }
  }
  std::pair<std::uint64_t, std::uint64_t> lookup_all(const Keys& k) const {
    std::uint64_t s = 0, hits = 0;
    for (std::size_t i = 0; i < k.n(); ++i) {
      ::Key key;
      make_key(key, k.be[i]);
      TID v = t->lookup(key);
      if (v != 0) { s += value_of(v); ++hits; }
    }
    return {s, hits};
  }
  bool check(const Keys& k) const {
    for (std::size_t i = 0; i < k.n(); ++i) {
      ::Key key;
      make_key(key, k.be[i]);
      const TID v = t->lookup(key);
      const bool ok = mode == TidMode::tuple ? v != 0 && value_of(v) == k.ints[i] + 1 : v == k.tids[i];
      if (!ok) { std::printf("artsync: key %zu wrong\n", i); return false; }
    }
    return true;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
void print_row(const char* what, const std::vector<double>& v) {
  std::printf("  %-26s median %7.1f  min %7.1f  max %7.1f   rounds:", what, median(v),
              *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  for (double x : v) std::printf(" %.1f", x);
  std::printf("\n");
}
void print_ratio(const char* what, const std::vector<double>& v) {
  std::printf("  %-26s median %7.2f  min %7.2f  max %7.2f   rounds:", what, median(v),
              *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  for (double x : v) std::printf(" %.2f", x);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s dense|sparse|clustered N time|cg|cg-ours|cg-libart|cg-artsync [tid=key|tid=ptr] [mask63]\n", argv[0]);
    return 2;
  }
  wort::bench::KeyDist dist;
  if (!wort::bench::parse(argv[1], dist) || !wort::bench::is_integer(dist)) {
    std::fprintf(stderr, "DIST: dense, sparse or clustered\n");
    return 2;
  }
  const std::size_t n = std::strtoull(argv[2], nullptr, 10);
  const std::string mode = argv[3];
  std::string tid_mode;  // "" = default
  bool mask63 = false;
  for (int a = 4; a < argc; ++a) {
    const std::string s = argv[a];
    if (s == "tid=key") tid_mode = "key";
    else if (s == "tid=ptr") tid_mode = "ptr";
    else if (s == "tid=tuple") tid_mode = "tuple";
    else if (s == "mask63") mask63 = true;
    else { std::fprintf(stderr, "unknown argument %s\n", argv[a]); return 2; }
  }

  Keys k;
  k.ints = wort::bench::integer_keys(dist, n, 42);
  if (mask63) {
    std::unordered_set<std::uint64_t> seen;
    seen.reserve(n * 2);
    for (auto& x : k.ints) {
      x &= ~(std::uint64_t{1} << 63);
      if (!seen.insert(x).second) { std::fprintf(stderr, "mask63 made two keys equal\n"); return 2; }
    }
  }
  k.be.resize(n);
  for (std::size_t i = 0; i < n; ++i) k.be[i] = wort::u64_key(k.ints[i]);
  const bool key_fits = std::all_of(k.ints.begin(), k.ints.end(),
                                    [](std::uint64_t x) { return x != 0 && (x >> 63) == 0; });
  if (tid_mode.empty()) tid_mode = key_fits ? "key" : "tuple";
  if (tid_mode == "key" && !key_fits) {
    std::fprintf(stderr, "tid=key needs every key in [1, 2^63): use tid=ptr or mask63\n");
    return 2;
  }
  k.tid = tid_mode == "key" ? TidMode::key : tid_mode == "tuple" ? TidMode::tuple : TidMode::ptr;
  k.tids.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    k.tids[i] = k.tid == TidMode::key ? k.ints[i] : reinterpret_cast<TID>(k.be[i].data());

  Ours ours;
  LibArt lib;
  ArtSync as;
  as.mode = k.tid;
  as.cap = n;
  as.load = k.tid == TidMode::key ? load_key_int : k.tid == TidMode::tuple ? load_key_tuple : load_key_ptr;

  std::uint64_t want_sum = 0, want_tid_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    want_sum += k.ints[i] + 1;
    want_tid_sum += k.tid == TidMode::tuple ? k.ints[i] + 1 : k.tids[i];
  }

  std::printf("public_art %s n=%zu tid=%s%s\n", argv[1], n, tid_mode.c_str(), mask63 ? " mask63" : "");

  if (mode.rfind("cg", 0) == 0) {
    const bool all = mode == "cg";
    const bool do_o = all || mode == "cg-ours", do_l = all || mode == "cg-libart",
               do_a = all || mode == "cg-artsync";
    if (!(do_o || do_l || do_a)) { std::fprintf(stderr, "unknown mode %s\n", mode.c_str()); return 2; }
    CALLGRIND_START_INSTRUMENTATION;
    std::uint64_t s_o = 0, s_l = 0, s_a = 0;
    if (do_o) {
      ours.fresh();
      CALLGRIND_TOGGLE_COLLECT; ours.insert_all(k); CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_DUMP_STATS_AT("ours-insert");
    }
    if (do_l) {
      lib.fresh();
      CALLGRIND_TOGGLE_COLLECT; lib.insert_all(k); CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_DUMP_STATS_AT("libart-insert");
    }
    if (do_a) {
      as.fresh();
      CALLGRIND_TOGGLE_COLLECT; as.insert_all(k); CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_DUMP_STATS_AT("artsync-insert");
    }
    if (do_o) {
      CALLGRIND_TOGGLE_COLLECT; s_o = ours.lookup_all(k).first; CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_DUMP_STATS_AT("ours-lookup");
    }
    if (do_l) {
      CALLGRIND_TOGGLE_COLLECT; s_l = lib.lookup_all(k).first; CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_DUMP_STATS_AT("libart-lookup");
    }
    if (do_a) {
      CALLGRIND_TOGGLE_COLLECT; s_a = as.lookup_all(k).first; CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_DUMP_STATS_AT("artsync-lookup");
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    bool ok = (!do_o || (s_o == want_sum && ours.check(k))) && (!do_l || (s_l == want_sum && lib.check(k))) &&
              (!do_a || (s_a == want_tid_sum && as.check(k)));
    std::printf("%s\n", ok ? "values checked: all keys found with their values" : "MISMATCH");
    return ok ? 0 : 1;
  }
  if (mode != "time") { std::fprintf(stderr, "unknown mode %s\n", mode.c_str()); return 2; }

  constexpr int kInsertRounds = 5, kLookupRounds = 7;
  std::vector<double> ins_o, ins_l, ins_a, insw_o, insw_l, insw_a;
  for (int r = 0; r < kInsertRounds; ++r) {
    ours.drop(); lib.drop(); as.drop();  // every round starts from the same empty heap state
    double c0 = cpu(), w0 = wall();
    ours.fresh(); ours.insert_all(k);
    double c1 = cpu(), w1 = wall();
    lib.fresh(); lib.insert_all(k);
    double c2 = cpu(), w2 = wall();
    as.fresh(); as.insert_all(k);
    double c3 = cpu(), w3 = wall();
    ins_o.push_back((c1 - c0) * 1e9 / n); ins_l.push_back((c2 - c1) * 1e9 / n); ins_a.push_back((c3 - c2) * 1e9 / n);
    insw_o.push_back((w1 - w0) * 1e9 / n); insw_l.push_back((w2 - w1) * 1e9 / n); insw_a.push_back((w3 - w2) * 1e9 / n);
    if (r == 0 && !(ours.check(k) && lib.check(k) && as.check(k))) { std::printf("MISMATCH after insert\n"); return 1; }
  }
  std::vector<double> lk_o, lk_l, lk_a, lkw_o, lkw_l, lkw_a;
  for (int r = 0; r < kLookupRounds; ++r) {
    double c0 = cpu(), w0 = wall();
    auto ro = ours.lookup_all(k);
    double c1 = cpu(), w1 = wall();
    auto rl = lib.lookup_all(k);
    double c2 = cpu(), w2 = wall();
    auto ra = as.lookup_all(k);
    double c3 = cpu(), w3 = wall();
    if (ro.first != want_sum || ro.second != n || rl.first != want_sum || rl.second != n ||
        ra.first != want_tid_sum || ra.second != n) {
      std::printf("MISMATCH in lookup round %d\n", r);
      return 1;
    }
    lk_o.push_back((c1 - c0) * 1e9 / n); lk_l.push_back((c2 - c1) * 1e9 / n); lk_a.push_back((c3 - c2) * 1e9 / n);
    lkw_o.push_back((w1 - w0) * 1e9 / n); lkw_l.push_back((w2 - w1) * 1e9 / n); lkw_a.push_back((w3 - w2) * 1e9 / n);
  }
  auto ratios = [](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> r;
    for (std::size_t i = 0; i < a.size(); ++i) r.push_back(a[i] / b[i]);
    return r;
  };
  std::printf("values checked: every key once after the first insert round, sums and hit counts in every lookup round\n");
  std::printf("insert, thread CPU ns/op (%d rounds, a fresh tree each):\n", kInsertRounds);
  print_row("ours (art)", ins_o);
  print_row("libart", ins_l);
  print_row("ARTSynchronized", ins_a);
  print_ratio("ratio ours/libart", ratios(ins_o, ins_l));
  print_ratio("ratio ours/ARTSynchronized", ratios(ins_o, ins_a));
  std::printf("insert, wall ns/op: ours %.1f libart %.1f ARTSynchronized %.1f (medians)\n", median(insw_o), median(insw_l), median(insw_a));
  std::printf("lookup, thread CPU ns/op (%d rounds, every key once, insertion order):\n", kLookupRounds);
  print_row("ours (art)", lk_o);
  print_row("libart", lk_l);
  print_row("ARTSynchronized", lk_a);
  print_ratio("ratio ours/libart", ratios(lk_o, lk_l));
  print_ratio("ratio ours/ARTSynchronized", ratios(lk_o, lk_a));
  std::printf("lookup, wall ns/op: ours %.1f libart %.1f ARTSynchronized %.1f (medians)\n", median(lkw_o), median(lkw_l), median(lkw_a));
  return 0;
}
