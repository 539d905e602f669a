// tools/compare/authors_part.cc — our `woart` or `roart` index (public API, libwort) against
// P-ART of RECIPE (github.com/utsaslab/RECIPE, P-ART/: the ROWEX ART of Leis et al. made
// persistent) on the same keys in the same process. Not built by the project: the authors'
// code is not ours to ship; tools/compare/README.md ("P-ART") has the patch and the build
// command, run.sh builds and runs it.
//
// usage: authors_part DIST N MODE KIND [JSON]     KIND: woart | roart (our side)
//   MODE time       7 interleaved rounds (rounds.h): ours in a fresh pool file in /dev/shm,
//                   theirs a fresh tree; every answer checked on both sides
//   MODE count      lines written back and fences per insert of each side (the count build,
//                   -DAUTHORS_COUNT, their N.cpp patched by variants/part_count.sed)
//   MODE cg-ours    one side under callgrind (two dumps, insert and lookup)
//   MODE cg-theirs
//   DIST            dense | sparse (bench::integer_keys, seed 42)
//
// Their tree keeps DRAM nodes (`new`) and takes the caller's key record as its leaf: an insert
// here is their Key::make_leaf (posix_memalign, the 8 key bytes big-endian, the value) and
// Tree::insert, as their example.cpp does; a lookup returns the leaf, whose first word is the
// value. Their code is compiled into this unit (-I to the patched copy: Tree.cpp includes
// N.cpp, N*.cpp, Epoche.cpp).
#include <cstring>
#include "rounds.h"
#include "Tree.cpp"  // theirs

#ifdef AUTHORS_COUNT
unsigned long authors_line_cnt = 0, authors_fence_cnt = 0;  // counted by part_count.sed
#endif

namespace {

using rounds::Keys;

void load_key(TID, Key&) {}  // unused by their insert and lookup (as in their example.cpp)

struct Theirs {
  ART_ROWEX::Tree* tree = nullptr;
  std::vector<Key*> leaves;
  void fresh(std::size_t n) {
    tree = new ART_ROWEX::Tree(load_key);
    leaves.reserve(n);
  }
  std::size_t insert_all(const Keys& k) {
    auto ti = tree->getThreadInfo();
    for (auto x : k.ins) {
      Key* leaf = Key().make_leaf(x, sizeof(std::uint64_t), rounds::value_of(x));
      tree->insert(leaf, ti);
      leaves.push_back(leaf);
    }
    return 0;  // their insert answers nothing; the lookups check every key
  }
  std::size_t lookup_all(const Keys& k) const {
    auto ti = tree->getThreadInfo();
    alignas(64) unsigned char buf[sizeof(Key) + 8];
    Key* q = reinterpret_cast<Key*>(buf);
    q->key_len = 8;
    std::size_t wrong = 0;
    for (auto x : k.look) {
      std::uint64_t be = __builtin_bswap64(x);
      std::memcpy(q->fkey, &be, 8);
      auto* v = static_cast<std::uint64_t*>(tree->lookup(q, ti));
      wrong += !v || *v != rounds::value_of(x);
    }
    return wrong;
  }
  void close() {
    delete tree;  // their destructor frees their nodes; the leaves are the caller's
    tree = nullptr;
    for (Key* l : leaves) std::free(l);
    leaves.clear();
  }
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

int main(int argc, char** argv) {
  wort::bench::KeyDist d;
  if (argc < 5 || !wort::bench::parse(argv[1], d) || !wort::bench::is_integer(d) ||
      (std::strcmp(argv[4], "woart") != 0 && std::strcmp(argv[4], "roart") != 0)) {
    std::puts("usage: authors_part dense|sparse N time|count|cg-ours|cg-theirs woart|roart [JSON]");
    return 2;
  }
  const Keys k = rounds::make_keys(d, std::strtoull(argv[2], nullptr, 10));
  const std::string mode = argv[3];
  const char* kind = argv[4];
  if (mode == "time") return rounds::time_mode<Theirs>(kind, k, argv[1], argc > 5 ? argv[5] : nullptr);
#ifdef AUTHORS_COUNT
  if (mode == "count") return count_mode(kind, k);
#endif
  if (mode == "cg-ours" || mode == "cg-theirs") return rounds::cg_mode<Theirs>(kind, k, mode == "cg-ours");
  std::puts("unknown mode (count needs the count build)");
  return 2;
}
