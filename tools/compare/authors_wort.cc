// tools/compare/authors_wort.cc — our `wort` index (public API, libwort) against the WORT
// paper's authors' own code (SeKwonLee/WORT, src/wort/wort.c) on the same keys in the same
// process. Not built by the project: the authors' code is not ours to ship; see
// tools/compare/README.md ("WORT") for the patches and the build command; run.sh builds and
// runs it.
//
// usage: authors_wort DIST N MODE [KIND [JSON]]
//   MODE time       7 interleaved rounds (rounds.h): ours in a fresh pool file in /dev/shm,
//                   theirs a fresh tree (nodes from their posix_memalign, or from the
//                   driver's /dev/shm arena in the bump build, variants/wort_bump.sed);
//                   every answer checked on both sides
//   MODE time-nopm  the same with our write-backs and fences off (pm mode none); link it
//                   against their code built with theirs off too (README: "Without the
//                   write-backs"), so the ratio is that of the work besides them
//   MODE count      lines written back and fences per insert of each side (link against the
//                   count build of their code, variants/wort_count.sed)
//   MODE cg-ours    one side under callgrind (two dumps, insert and lookup)
//   MODE cg-theirs
//   DIST            dense | sparse (bench::integer_keys, seed 42); KIND: wort (default), or
//                   woart when linked against their woart.c (README: "WOART")
#include <fcntl.h>
#include <sys/mman.h>
#include <cstring>
#include "rounds.h"
extern "C" {
#include "wort/wort.h"  // theirs (wort.h or woart.h): -I to a directory holding wort/wort.h
}

#ifdef AUTHORS_COUNT
extern "C" {
unsigned long authors_line_cnt = 0, authors_fence_cnt = 0;  // counted by wort_count.sed
}
#endif

namespace {

using rounds::Keys;

// The bump build's arena: a file in /dev/shm, mapped shared, 64-byte aligned bump allocation
// (what our pool's allocator is compared with in the second WORT row).
struct Arena {
  char* base = nullptr;
  std::size_t size = 0, used = 0;
  void open(std::size_t bytes) {
    close();
    std::string path = "/dev/shm/cmp-wort-" + std::to_string(getpid());
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, off_t(bytes)) != 0) std::perror("arena"), std::exit(2);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    unlink(path.c_str());
    if (p == MAP_FAILED) std::perror("arena mmap"), std::exit(2);
    base = static_cast<char*>(p), size = bytes, used = 0;
  }
  void close() {
    if (base) munmap(base, size);
    base = nullptr;
  }
};
Arena g_arena;

// Their tree. With their posix_memalign the nodes of a closed round are not freed (their
// code has no destroy); the bump build's arena goes with the round.
struct Theirs {
  art_tree t;
  void fresh(std::size_t n) {
    g_arena.open(n * 200 + (64 << 20));
    art_tree_init(&t);
  }
  std::size_t insert_all(const Keys& k) {
    for (auto x : k.ins) art_insert(&t, x, 8, reinterpret_cast<void*>(rounds::value_of(x)));
    return 0;  // their insert answers nothing useful; the lookups check every key
  }
  std::size_t lookup_all(const Keys& k) {
    std::size_t wrong = 0;
    for (auto x : k.look)
      wrong += reinterpret_cast<std::uint64_t>(art_search(&t, x, 8)) != rounds::value_of(x);
    return wrong;
  }
  void close() { g_arena.close(); }
};

#ifdef AUTHORS_COUNT
int count_mode(const char* kind, const Keys& k) {
  const double n = double(k.ins.size());
  std::size_t wrong = 0;
  auto c = rounds::count_ours(kind, k, wrong);
  Theirs t;
  t.fresh(k.ins.size());
  authors_line_cnt = 0, authors_fence_cnt = 0;
  t.insert_all(k);
  const double lines = double(authors_line_cnt), fences = double(authors_fence_cnt);
  wrong += t.lookup_all(k);
  t.close();
  std::printf("per insert: ours %.2f lines written back + %.2f non-temporal stores, %.2f fences; "
              "theirs %.2f lines written back, %.2f fences\n",
              double(c.lines_flushed) / n, double(c.nt_stores) / n, double(c.fences) / n,
              lines / n, fences / n);
  std::printf("wrong answers: %zu\n", wrong);
  return wrong ? 1 : 0;
}
#endif

}  // namespace

extern "C" void* authors_pm_alloc(std::size_t size) {
  std::size_t at = (g_arena.used + 63) & ~std::size_t(63);
  if (!g_arena.base || at + size > g_arena.size) std::puts("arena full"), std::exit(2);
  g_arena.used = at + size;
  return g_arena.base + at;
}

int main(int argc, char** argv) {
  wort::bench::KeyDist d;
  if (argc < 4 || !wort::bench::parse(argv[1], d) || !wort::bench::is_integer(d)) {
    std::puts("usage: authors_wort dense|sparse N time|time-nopm|count|cg-ours|cg-theirs [KIND [JSON]]");
    return 2;
  }
  const Keys k = rounds::make_keys(d, std::strtoull(argv[2], nullptr, 10));
  const std::string mode = argv[3];
  const char* kind = argc > 4 ? argv[4] : "wort";
  const char* json = argc > 5 ? argv[5] : nullptr;
  if (mode == "time-nopm") {
    wort::pm::Config none;
    none.mode = wort::pm::Mode::none;
    if (!wort::pm::configure(none)) return std::puts("pm configure failed"), 2;
  }
  if (mode == "time" || mode == "time-nopm") return rounds::time_mode<Theirs>(kind, k, argv[1], json);
#ifdef AUTHORS_COUNT
  if (mode == "count") return count_mode(kind, k);
#endif
  if (mode == "cg-ours" || mode == "cg-theirs") return rounds::cg_mode<Theirs>(kind, k, mode == "cg-ours");
  std::puts("unknown mode (count needs the count build)");
  return 2;
}
