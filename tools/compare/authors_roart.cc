// tools/compare/authors_roart.cc — our `roart` index (public API, libwort) against ROART's
// authors' own code (github.com/madsys-dev/ROART, ART/ and nvm_mgr/: their P-ART with leaf
// arrays, as their CMakeLists.txt configures it) on the same keys in the same process. Not
// built by the project: the authors' code is not ours to ship; tools/compare/README.md
// ("ROART") has the patches and the build command, run.sh builds and runs it.
//
// usage: authors_roart DIST N MODE [JSON]
//   MODE time       7 interleaved rounds (rounds.h): ours in a fresh pool file in /dev/shm,
//                   theirs in a fresh NVM file of their manager in /dev/shm; every answer
//                   checked on both sides
//   MODE count      lines written back and fences per insert of each side (the count build,
//                   -DAUTHORS_COUNT, their util.h patched by variants/roart_count.sed)
//   MODE cg-ours    one side under callgrind (two dumps, insert and lookup)
//   MODE cg-theirs
//   DIST            dense | sparse (bench::integer_keys, seed 42)
//
// Their key is the integer's 8 bytes in memory order (their Key::Init for integers), their
// value an 8-byte copy of the driver's value (their Leaf copies val_len bytes from the
// address in Key::value). Their NVM manager maps one file at a fixed address: one tree at a
// time, its file removed before each round.
#include <cstring>
#include "rounds.h"
#include "Tree.h"        // theirs: -I to the patched copy's ART/, nvm_mgr/, benchmark/
#include "nvm_mgr.h"

#ifdef AUTHORS_COUNT
unsigned long authors_line_cnt = 0, authors_fence_cnt = 0;  // counted by roart_count.sed
#endif

namespace {

using rounds::Keys;

struct Theirs {
  PART_ns::Tree* tree = nullptr;
  void fresh(std::size_t) {
    unlink(NVMMgr_ns::NVMMgr::get_filename());
    tree = new PART_ns::Tree();
  }
  std::size_t insert_all(const Keys& k) {
    std::size_t wrong = 0;
    PART_ns::Key key;
    for (auto x : k.ins) {
      std::uint64_t v = rounds::value_of(x);
      key.Init(x, 8, reinterpret_cast<std::uint64_t>(&v));
      wrong += tree->insert(&key) != PART_ns::Tree::OperationResults::Success;
    }
    return wrong;
  }
  std::size_t lookup_all(const Keys& k) const {
    std::size_t wrong = 0;
    PART_ns::Key key;
    for (auto x : k.look) {
      key.Init(x, 8, 0);
      PART_ns::Leaf* l = tree->lookup(&key);
      std::uint64_t v = 0;
      if (l) std::memcpy(&v, l->GetValue(), 8);
      wrong += v != rounds::value_of(x);
    }
    return wrong;
  }
  void close() {
    delete tree;  // unregisters the thread, unmaps their file
    tree = nullptr;
    unlink(NVMMgr_ns::NVMMgr::get_filename());
  }
};

#ifdef AUTHORS_COUNT
int count_mode(const Keys& k) {
  const double n = double(k.ins.size());
  std::size_t wrong = 0;
  auto c = rounds::count_ours("roart", k, wrong);
  Theirs t;
  t.fresh(k.ins.size());
  authors_line_cnt = 0, authors_fence_cnt = 0;
  wrong += t.insert_all(k);
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
  if (argc < 4 || !wort::bench::parse(argv[1], d) || !wort::bench::is_integer(d)) {
    std::puts("usage: authors_roart dense|sparse N time|count|cg-ours|cg-theirs [JSON]");
    return 2;
  }
  const Keys k = rounds::make_keys(d, std::strtoull(argv[2], nullptr, 10));
  const std::string mode = argv[3];
  if (mode == "time") return rounds::time_mode<Theirs>("roart", k, argv[1], argc > 4 ? argv[4] : nullptr);
#ifdef AUTHORS_COUNT
  if (mode == "count") return count_mode(k);
#endif
  if (mode == "cg-ours" || mode == "cg-theirs") return rounds::cg_mode<Theirs>("roart", k, mode == "cg-ours");
  std::puts("unknown mode (count needs the count build)");
  return 2;
}
