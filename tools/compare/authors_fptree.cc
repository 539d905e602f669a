// tools/compare/authors_fptree.cc — our `fptree` index (public API, libwort) against the
// open-source FPTree of sfu-dis (github.com/sfu-dis/fptree, fptree.cpp / fptree.h, built with
// -DPMEM: leaves in a PMDK pool, inner nodes in DRAM) on the same keys in the same process.
// Not built by the project: the authors' code is not ours to ship; tools/compare/README.md
// ("FPTree") has the build command, run.sh builds and runs it.
//
// usage: authors_fptree DIST N MODE [JSON]     (PMEM_IS_PMEM_FORCE=1 in the environment)
//   MODE time       7 interleaved rounds (rounds.h): ours in a fresh pool file in /dev/shm,
//                   theirs in a fresh PMDK pool file in /dev/shm; every answer checked
//   MODE count      lines written back and fences per insert of each side (the count build,
//                   -DAUTHORS_COUNT: PMDK's own write-backs counted too, see below)
//   MODE cg-ours    one side under callgrind (two dumps, insert and lookup)
//   MODE cg-theirs
//   DIST            dense | sparse (bench::integer_keys, seed 42)
//
// Their code is compiled into this translation unit (-I to their checkout, fptree.cpp
// included below): fptree.h defines the split and delete log queues `static`, so only a
// driver in the same unit can empty them between rounds (each pmemInit pushes the new pool's
// 126 log slots; slots of a closed pool left in the queue would be popped by the next split).
#include <dlfcn.h>
#include <libpmem.h>
#include <cstring>
#include "rounds.h"
#include "fptree.cpp"  // theirs: -DPMEM, TEST_MODE undefined (64-slot leaves), BUILD_INSPECTOR=1

namespace {

using rounds::Keys;

struct Theirs {
  FPtree* tree = nullptr;
  void fresh(std::size_t n) {
    Log* l;
    while (splitLogQueue.pop(l)) {}
    while (deleteLogQueue.pop(l)) {}
    std::string path = "/dev/shm/cmp-fpt-" + std::to_string(getpid());
    tree = new FPtree();
    tree->pmemInit(path.c_str(), (long long)(n * 96 + (64 << 20)));
    unlink(path.c_str());
    if (!pop) std::puts("their pool create failed"), std::exit(2);
  }
  std::size_t insert_all(const Keys& k) {
    std::size_t wrong = 0;
    for (auto x : k.ins) wrong += !tree->insert(KV(x, rounds::value_of(x)));
    return wrong;
  }
  std::size_t lookup_all(const Keys& k) const {
    std::size_t wrong = 0;
    for (auto x : k.look) wrong += tree->find(x) != rounds::value_of(x);
    return wrong;
  }
  void close() {
    delete tree;  // pmemobj_close; their DRAM inner nodes are not freed by their destructor
    tree = nullptr, pop = nullptr;
  }
};

}  // namespace

#ifdef AUTHORS_COUNT
// PMDK's write-backs and fences, counted where libpmemobj calls libpmem: this executable's
// definitions interpose on libpmem's (libpmemobj imports them dynamically), count, and call
// libpmem's. Lines: the cache lines of each range flushed, persisted or copied with a flush;
// fences: each pmem_drain, pmem_persist, and copy without PMEM_F_MEM_NODRAIN. libpmem's
// pmem_persist calls its own exported pmem_flush and pmem_drain, which land here again:
// only the outermost call counts (g_depth).
namespace {
bool g_counting = false;
int g_depth = 0;
unsigned long g_lines = 0, g_fences = 0;
struct Depth {
  bool outer = g_depth++ == 0 && g_counting;
  ~Depth() { --g_depth; }
};
void count_range(const void* a, std::size_t len) {
  if (len == 0) return;
  auto p = reinterpret_cast<std::uintptr_t>(a);
  g_lines += (p + len - 1) / 64 - p / 64 + 1;
}
template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}
void count_copy(void* dest, std::size_t len, unsigned flags) {
  if (!(flags & PMEM_F_MEM_NOFLUSH)) count_range(dest, len);
  if (!(flags & (PMEM_F_MEM_NODRAIN | PMEM_F_MEM_NOFLUSH))) ++g_fences;
}
}  // namespace

extern "C" {
void pmem_flush(const void* a, size_t len) {
  if (Depth g; g.outer) count_range(a, len);
  real<void (*)(const void*, size_t)>("pmem_flush")(a, len);
}
void pmem_drain(void) {
  if (Depth g; g.outer) ++g_fences;
  real<void (*)()>("pmem_drain")();
}
void pmem_persist(const void* a, size_t len) {
  Depth g;
  if (g.outer) count_range(a, len), ++g_fences;
  real<void (*)(const void*, size_t)>("pmem_persist")(a, len);
}
void* pmem_memcpy(void* d, const void* s, size_t len, unsigned flags) {
  Depth g;
  if (g.outer) count_copy(d, len, flags);
  return real<void* (*)(void*, const void*, size_t, unsigned)>("pmem_memcpy")(d, s, len, flags);
}
void* pmem_memmove(void* d, const void* s, size_t len, unsigned flags) {
  Depth g;
  if (g.outer) count_copy(d, len, flags);
  return real<void* (*)(void*, const void*, size_t, unsigned)>("pmem_memmove")(d, s, len, flags);
}
void* pmem_memset(void* d, int c, size_t len, unsigned flags) {
  Depth g;
  if (g.outer) count_copy(d, len, flags);
  return real<void* (*)(void*, int, size_t, unsigned)>("pmem_memset")(d, c, len, flags);
}
}

namespace {
int count_mode(const Keys& k) {
  const double n = double(k.ins.size());
  std::size_t wrong = 0;
  auto c = rounds::count_ours("fptree", k, wrong);
  Theirs t;
  t.fresh(k.ins.size());
  g_counting = true;
  wrong += t.insert_all(k);
  g_counting = false;
  wrong += t.lookup_all(k);
  t.close();
  std::printf("per insert: ours %.2f lines written back + %.2f non-temporal stores, %.2f fences; "
              "theirs %.2f lines written back, %.2f fences\n",
              double(c.lines_flushed) / n, double(c.nt_stores) / n, double(c.fences) / n,
              double(g_lines) / n, double(g_fences) / n);
  std::printf("wrong answers: %zu\n", wrong);
  return wrong ? 1 : 0;
}
}  // namespace
#endif

int main(int argc, char** argv) {
  wort::bench::KeyDist d;
  if (argc < 4 || !wort::bench::parse(argv[1], d) || !wort::bench::is_integer(d)) {
    std::puts("usage: authors_fptree dense|sparse N time|count|cg-ours|cg-theirs [JSON]");
    return 2;
  }
  // Without it PMDK takes /dev/shm for a non-pmem file and persists with msync.
  const char* force = std::getenv("PMEM_IS_PMEM_FORCE");
  if (!force || std::strcmp(force, "1") != 0) {
    std::puts("set PMEM_IS_PMEM_FORCE=1 (PMDK would msync a /dev/shm pool)");
    return 2;
  }
  const Keys k = rounds::make_keys(d, std::strtoull(argv[2], nullptr, 10));
  const std::string mode = argv[3];
  if (mode == "time") return rounds::time_mode<Theirs>("fptree", k, argv[1], argc > 4 ? argv[4] : nullptr);
#ifdef AUTHORS_COUNT
  if (mode == "count") return count_mode(k);
#endif
  if (mode == "cg-ours" || mode == "cg-theirs") return rounds::cg_mode<Theirs>("fptree", k, mode == "cg-ours");
  std::puts("unknown mode (count needs the count build)");
  return 2;
}
