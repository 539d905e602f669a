// Damaged pools never crash or hang an index: for every registered persistent index, a pool
// holding a few thousand mixed keys is damaged (bytes flipped, pages zeroed, garbage runs,
// pointer-like words copied from elsewhere in the pool, the header or chunk table touched,
// the file truncated) and then opened, verified, read, scanned, audited and written (also
// when verify() failed: open accepted it; not with the debug checks on, see exercise()),
// each trial in a child process with a time limit. A trial passes when
// the child exits: a clean Status, a verify() finding or a working index are all fine; a
// signal or a timeout is a failure that prints the seed and trial that replay it.
//
// The kinds with an instant restart (roart) are fuzzed again opened with
// OpenOptions::instant_restart: reads first, with ROART's checked walk held (so each read
// checks what it follows itself), then reads and writes while the background trace may
// still run.
// DamagedPoolReplay holds the images the long run once hung on, each built from its seed and
// trial.
//
// WORT_FUZZ_TRIALS sets the trials per damage kind and index (default 40, so 240 per index;
// the instant-restart fuzz: WORT_FUZZ_INSTANT_TRIALS, else WORT_FUZZ_TRIALS, else 10);
// WORT_FUZZ_SEED the seed (default 1); WORT_FUZZ_REPLAY=<damage index>:<trial> runs that
// one trial in the test process. `WORT_FUZZ_TRIALS=1000 build/kit_damaged_pool_test` is the
// long run made before an index change is called done.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "index/roart/roart_tree.h"
#include "index/kit/kit_support.h"
#include "pm/allocator.h"
#include "pm/pool_layout.h"

namespace wort {
namespace {

using kittest::key_of;

enum class Damage { flip_bytes, zero_page, garbage_run, copied_words, header_or_table, truncate };
constexpr Damage kDamages[] = {Damage::flip_bytes,   Damage::zero_page,       Damage::garbage_run,
                               Damage::copied_words, Damage::header_or_table, Damage::truncate};

const char* name_of(Damage d) {
  switch (d) {
    case Damage::flip_bytes: return "flip_bytes";
    case Damage::zero_page: return "zero_page";
    case Damage::garbage_run: return "garbage_run";
    case Damage::copied_words: return "copied_words";
    case Damage::header_or_table: return "header_or_table";
    case Damage::truncate: return "truncate";
  }
  return "?";
}

std::uint64_t env_or(const char* name, std::uint64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : dflt;
}

std::vector<char> read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_file(const std::string& p, const std::vector<char>& bytes, std::size_t n) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(n));
}

//! Damages `img` in place; returns the length to write (shorter for truncate).
std::size_t damage(std::vector<char>& img, Damage d, std::mt19937_64& rng) {
  const auto& h = *reinterpret_cast<const pm::PoolHeader*>(img.data());
  const std::uint64_t first = h.first_chunk_offset;
  const std::uint64_t used = std::min<std::uint64_t>(img.size(), first + h.chunk_hwm * h.chunk_size);
  auto in_used = [&](std::uint64_t len) {
    return first + rng() % std::max<std::uint64_t>(used - first - std::min(len, used - first), 1);
  };
  switch (d) {
    case Damage::flip_bytes:
      for (int i = 1 + static_cast<int>(rng() % 8); i-- > 0;)
        img[in_used(1)] ^= static_cast<char>(1 + rng() % 255);
      break;
    case Damage::zero_page: {
      const std::uint64_t at = in_used(4096) & ~std::uint64_t{4095};
      std::memset(&img[at], 0, std::min<std::uint64_t>(4096, img.size() - at));
      break;
    }
    case Damage::garbage_run: {
      const std::uint64_t len = 16 + rng() % 497;
      const std::uint64_t at = in_used(len);
      for (std::uint64_t i = 0; i < len && at + i < img.size(); ++i)
        img[at + i] = static_cast<char>(rng());
      break;
    }
    case Damage::copied_words:
      // An 8-byte word copied over another: in-range offsets pointing elsewhere in the pool,
      // the damage most likely to make a cycle or a shared block.
      for (int i = 1 + static_cast<int>(rng() % 4); i-- > 0;) {
        const std::uint64_t from = in_used(8) & ~std::uint64_t{7};
        const std::uint64_t to = in_used(8) & ~std::uint64_t{7};
        std::memcpy(&img[to], &img[from], 8);
      }
      break;
    case Damage::header_or_table: {
      const std::uint64_t at = rng() % first;
      img[at] ^= static_cast<char>(1 + rng() % 255);
      break;
    }
    case Damage::truncate: return rng() % img.size();
  }
  return img.size();
}

//! Writes the clean image with trial `t`'s damage of kind `d` under `seed` to `path`. The
//! damage depends on nothing else, so any one trial is built without the ones before it.
void write_damaged(const std::string& path, const std::vector<char>& clean, Damage d,
                   std::uint64_t seed, std::uint64_t t) {
  std::mt19937_64 rng(seed * 1000003 + t * 31 + static_cast<std::uint64_t>(d));
  std::vector<char> img = clean;
  write_file(path, img, damage(img, d, rng));
}

//! Lookups of every key, a full scan, a range, upserts and removes.
void requests(Index& index, const std::vector<std::string>& keys, bool write,
              std::ostream& sink) {
  std::uint64_t sum = 0;
  for (const std::string& k : keys)
    if (auto v = index.lookup(key_of(k))) sum += *v;
  index.scan(Key{}, SIZE_MAX, [&](Key, Value v) {
    sum += v;
    return true;
  });
  index.range(key_of("user:"), key_of("user;"), [&](Key, Value v) {
    sum += v;
    return true;
  });
  for (std::size_t i = 0; write && i < keys.size(); i += 7) {
    (void)index.upsert(key_of(keys[i]), i);
    if (i % 2) (void)index.remove(key_of(keys[i]));
  }
  sink << sum;
}

//! What the child does with a damaged pool; returns normally whatever it finds. `instant`:
//! opened with OpenOptions::instant_restart, the requests come first (reads with ROART's
//! checked walk held, then reads and writes while it and the trace may run), and the checks
//! after wait_recovery(). `tell`: says on stderr what
//! open and verify() answered (a replay).
void exercise(const std::string& path, const std::vector<std::string>& keys, bool instant,
              bool tell = false) {
  auto pool = Pool::open(path);
  if (tell) std::fprintf(stderr, "Pool::open: %s\n", pool ? "ok" : pool.error().message.c_str());
  if (!pool) return;
  OpenOptions oo;
  oo.instant_restart = instant;
  // Instant: ROART's checked walk waits (test hook) until the reads are done, so that every
  // read meets the pool before the walk has checked any word of it.
  struct HoldWalk {
    bool on;
    explicit HoldWalk(bool o) : on(o) { if (on) roart::g_hold_instant_check.store(true); }
    void release() { if (on) roart::g_hold_instant_check.store(false); }
    ~HoldWalk() { release(); }
  } hold(instant);
  auto ix = Index::open(**pool, oo);
  if (tell) std::fprintf(stderr, "Index::open: %s\n", ix ? "ok" : ix.error().message.c_str());
  if (!ix) return;
  Index& index = **ix;
  std::ostringstream sink;
  // Debug checks on (the sanitizer builds) assert the tree's invariants inside writes, and
  // a pool that fails verify() breaks them by definition (FAST&FAIR's merge_pair aborts on
  // flip_bytes trial 20), so there only verified pools are written (below).
#if defined(WORT_DEBUG_CHECKS)
  constexpr bool kWriteUnverified = false;
#else
  constexpr bool kWriteUnverified = true;
#endif
  if (instant) {
    requests(index, keys, false, sink);  // reads only, the walk held
    hold.release();
    requests(index, keys, kWriteUnverified, sink);  // writers wait for the walk
    const auto traced = index.wait_recovery();
    if (tell)
      std::fprintf(stderr, "wait_recovery: %s\n", traced ? "ok" : traced.error().message.c_str());
  }
  index.dump(sink);
  (void)index.stats();
  (void)(*pool)->allocator().audit([&](pm::BlockVisitor v) { return index.visit_blocks(v); });
  // A pool that verifies is one readers and writers may trust; one that opened but fails
  // verify() may give wrong answers, but neither its readers nor its writers may crash or
  // hang (a ROART node level with one bit flipped opened, failed
  // verify, and the first upsert crashed; open refuses it now).
  const auto verified = index.verify();
  if (tell) std::fprintf(stderr, "verify: %s\n", verified ? "ok" : verified.error().message.c_str());
  if (!instant) requests(index, keys, verified.ok() || kWriteUnverified, sink);
}

//! The pool every trial damages: 3000 mixed keys inserted, every sixth removed. Built the
//! same way every time (one thread, one sequence of writes), so a seed and trial name one
//! damaged image in any run.
std::vector<char> clean_image(const std::string& kind, const std::vector<std::string>& keys) {
  kittest::TempPath base(kind + "-base");
  {
    PoolOptions o;
    o.size = 4u << 20;
    o.kind = kind;
    auto pool = Pool::create(base.str(), o);
    EXPECT_TRUE(pool.ok()) << pool.error().message;
    if (!pool) return {};
    auto ix = Index::create(**pool, kind);
    EXPECT_TRUE(ix.ok()) << ix.error().message;
    if (!ix) return {};
    for (std::size_t i = 0; i < keys.size(); ++i)
      EXPECT_EQ((*ix)->insert(key_of(keys[i]), i + 1), Status::ok) << i;
    for (std::size_t i = 0; i < keys.size(); i += 6)
      EXPECT_EQ((*ix)->remove(key_of(keys[i])), Status::ok);
  }
  return read_file(base.str());
}

enum class Outcome { returned, died, hung };

//! Runs exercise() on the pool at `path` in a child process stopped by SIGALRM after
//! `limit_s` seconds; what became of the child.
Outcome exercise_in_child(const std::string& path, const std::vector<std::string>& keys,
                          bool instant, unsigned limit_s, int* status) {
  const pid_t child = ::fork();
  if (child < 0) return Outcome::died;
  if (child == 0) {
    ::alarm(limit_s);
    exercise(path, keys, instant);
    ::_exit(0);
  }
  int st = 0;
  if (::waitpid(child, &st, 0) != child) return Outcome::died;
  *status = st;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return Outcome::returned;
  return WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? Outcome::hung : Outcome::died;
}

//! The fuzz: every damage kind, `trials` trials each, each trial in a child process.
void fuzz(const std::string& kind, bool instant, std::uint64_t trials) {
  const std::uint64_t seed = env_or("WORT_FUZZ_SEED", 1);
  const auto keys = kittest::mixed_keys(3000);
  const std::vector<char> clean = clean_image(kind, keys);
  ASSERT_FALSE(clean.empty());
  kittest::TempPath work(kind + "-work");
  // WORT_FUZZ_REPLAY=<damage index>:<trial> runs that one trial (whatever WORT_FUZZ_TRIALS
  // says) in this process, saying what open and verify() answered (a debugger then stops
  // at the fault).
  if (const char* replay = std::getenv("WORT_FUZZ_REPLAY"); replay && *replay) {
    unsigned d = 0;
    unsigned long long t = 0;
    ASSERT_EQ(std::sscanf(replay, "%u:%llu", &d, &t), 2) << "WORT_FUZZ_REPLAY=" << replay;
    ASSERT_LT(d, std::size(kDamages));
    write_damaged(work.str(), clean, kDamages[d], seed, t);
    exercise(work.str(), keys, instant, true);
    return;
  }
  std::uint64_t signalled = 0, hung = 0;
  for (Damage d : kDamages) {
    for (std::uint64_t t = 0; t < trials; ++t) {
      write_damaged(work.str(), clean, d, seed, t);
      int st = 0;
      const Outcome o = exercise_in_child(work.str(), keys, instant, 30, &st);
      if (o == Outcome::returned) continue;
      (o == Outcome::hung ? hung : signalled)++;
      ADD_FAILURE() << kind << ": damage " << name_of(d) << " trial " << t << " seed " << seed
                    << (o == Outcome::hung ? " hung (30 s)" : " died")
                    << (WIFSIGNALED(st) ? " with signal " + std::to_string(WTERMSIG(st))
                                        : " with exit " + std::to_string(WEXITSTATUS(st)))
                    << "; replay: WORT_FUZZ_SEED=" << seed << " WORT_FUZZ_REPLAY="
                    << static_cast<int>(d) << ":" << t << " --gtest_filter="
                    << ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()
                    << "." << ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }
  }
  std::printf("%s%s: %llu damaged pools, %llu crashed, %llu hung\n", kind.c_str(),
              instant ? " (instant restart)" : "",
              static_cast<unsigned long long>(trials * std::size(kDamages)),
              static_cast<unsigned long long>(signalled), static_cast<unsigned long long>(hung));
}

class DamagedPool : public ::testing::TestWithParam<std::string> {};

TEST_P(DamagedPool, OpenVerifyReadScanAndWriteNeverCrashOrHang) {
  fuzz(GetParam(), false, env_or("WORT_FUZZ_TRIALS", 40));
}

// The same with OpenOptions::instant_restart, for the kinds that implement it (the others
// open synchronously, which the test above covers): reads served before the background
// checked walk has run meet the damage themselves; writers wait for the walk. Fewer trials by
// default (WORT_FUZZ_INSTANT_TRIALS, else WORT_FUZZ_TRIALS, else 10 per damage kind).
TEST_P(DamagedPool, InstantRestartNeverCrashesOrHangs) {
  if (!registry::find(GetParam())->open_instant) GTEST_SKIP() << "opens synchronously";
  fuzz(GetParam(), true,
       env_or("WORT_FUZZ_INSTANT_TRIALS", env_or("WORT_FUZZ_TRIALS", 10)));
}

// Damaged images the long fuzz (make soak: WORT_FUZZ_TRIALS=300, seed 1) once hung on, each
// built again from its seed and trial and exercised in a child with a time limit: the child
// must return, and a hang fails the test after 20 s instead of stopping the run.
struct Replayed {
  const char* kind;
  Damage damage;
  std::uint64_t trial;
};

void expect_returns(const Replayed& r, bool instant = false) {
  const auto keys = kittest::mixed_keys(3000);
  const std::vector<char> clean = clean_image(r.kind, keys);
  ASSERT_FALSE(clean.empty());
  kittest::TempPath work(std::string(r.kind) + "-replay");
  write_damaged(work.str(), clean, r.damage, 1, r.trial);
  int st = 0;
  const Outcome o = exercise_in_child(work.str(), keys, instant, 20, &st);
  EXPECT_EQ(o, Outcome::returned) << r.kind << " " << name_of(r.damage) << " trial " << r.trial
                                  << (o == Outcome::hung ? ": hung" : ": died");
}

// A NODE16 key byte flipped: the tree opens and fails verify(); the writes then leave a
// node with no entry, and the next insert's witness of a compressed path re-read it forever.
TEST(DamagedPoolReplay, WoartFlipBytesTrial276Returns) {
  expect_returns({"woart", Damage::flip_bytes, 276});
}
TEST(DamagedPoolReplay, ArtcowFlipBytesTrial276Returns) {
  expect_returns({"artcow", Damage::flip_bytes, 276});
}

// A slot word copied over another: a node left with one child opened, and a remove that
// must merge it away restarted forever (two children expected under its locks). Open
// refuses it now.
TEST(DamagedPoolReplay, WortCopiedWordsTrial177IsRefusedAtOpen) {
  const auto keys = kittest::mixed_keys(3000);
  const std::vector<char> clean = clean_image("wort", keys);
  ASSERT_FALSE(clean.empty());
  kittest::TempPath work("wort-replay");
  write_damaged(work.str(), clean, Damage::copied_words, 1, 177);
  {
    auto pool = Pool::open(work.str());
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    auto ix = Index::open(**pool);
    ASSERT_FALSE(ix.ok());
    EXPECT_EQ(ix.error().code, Status::corrupt) << ix.error().message;
  }
  expect_returns({"wort", Damage::copied_words, 177});
}

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, DamagedPool,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
