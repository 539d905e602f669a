// tests/store/store_damaged_pool_test.cc — damaged wort::Store pools, for every persistent
// index kind. The clean pool holds 240 keys with values of 0 to 3000 bytes (some replaced,
// some removed) and a committed, not yet applied batch log (its replay runs at the open).
// Each trial damages a copy of it and opens it in a child process with a time limit:
//   flip_bytes    1-8 bytes anywhere in the used chunks;
//   torn_words    1-4 aligned 8-byte words with one 4-byte half replaced by the same half of
//                 another word (an offset half old, half new);
//   blob_header   a byte of a value blob's 16-byte header (magic, crc, lengths);
//   blob_body     a byte of a value blob's key or value;
//   log           1-3 bytes of the committed batch log (header or records);
//   truncate      the file cut anywhere.
// The child opens the store (any refusal is fine), reads every key with get() and read(),
// walks a cursor over everything, runs verify(), then writes (put, remove, a batch). It
// exits with a code the parent checks (and counts: refused at open, verify() failed, clean):
//   - a signal or the time limit: a crash or a hang, always a failure;
//   - WRONG_BYTES: a read (get, read, or the cursor) answered bytes that are no value the key
//     ever held;
//   - UNNOTICED: a read answered corrupt, or an older value of the key instead of its value
//     (the state after the batch when the open replayed it, else the one before), or an
//     unknown key appeared, and verify() answered ok.
// An older value with verify() failing is counted, not a failure: a damaged index node
// (keys out of order) can keep a key's old entry where lookups find it while the replay's
// upsert put the new one elsewhere; each value carries a checksum, not a version.
// A key the damaged index no longer finds and verify() also misses is not a failure (the
// store cannot tell a lost key from one never written: the index keeps no count it checks);
// the test prints how often it happened.
//
// WORT_FUZZ_TRIALS sets the trials per damage kind and index kind (default 3: 18 per kind in
// `make test`; `WORT_FUZZ_TRIALS=300 build/store_store_damaged_pool_test` is the long run);
// WORT_FUZZ_SEED the seed (default 1); WORT_FUZZ_REPLAY=<damage index>:<trial> runs that one
// trial in the test process and says what it found.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "pm/pool_layout.h"
#include "store/crc32c.h"
#include "store/layout.h"
#include "store/store_impl.h"
#include "wort/index.h"
#include "wort/store.h"

namespace wort::test {
namespace {

using Model = std::map<std::string, std::string>;

enum class Damage { flip_bytes, torn_words, blob_header, blob_body, log, truncate };
constexpr Damage kDamages[] = {Damage::flip_bytes, Damage::torn_words, Damage::blob_header,
                               Damage::blob_body,  Damage::log,        Damage::truncate};
const char* name_of(Damage d) {
  switch (d) {
    case Damage::flip_bytes: return "flip_bytes";
    case Damage::torn_words: return "torn_words";
    case Damage::blob_header: return "blob_header";
    case Damage::blob_body: return "blob_body";
    case Damage::log: return "log";
    case Damage::truncate: return "truncate";
  }
  return "?";
}

// Child exit codes: every check passed (the open refused the pool; verify() found the
// damage; neither), or one failed.
constexpr int kRefused = 10;
constexpr int kVerifyFailed = 11;
constexpr int kStaleNoticed = 12;  // an older value of the key read, verify() failing
constexpr int kClean = 0;
constexpr int kWrongBytes = 3;
constexpr int kUnnoticed = 4;
constexpr int kLostUnnoticed = 5;  // counted, not a failure (see the top)

std::uint64_t env_or(const char* name, std::uint64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : dflt;
}

std::vector<std::string> persistent_kinds() {
  std::vector<std::string> out;
  for (const std::string& k : Index::kinds())
    if (k != "art") out.push_back(k);
  return out;
}

std::string temp_path(const std::string& tag) {
  return (std::filesystem::temp_directory_path() /
          ("wort-store-damaged-" + std::to_string(getpid()) + "-" + tag + ".pool"))
      .string();
}

std::string key_of(std::size_t i) { return "user:" + std::to_string(i * 7919 % 100003); }
std::string value_of(std::size_t i, std::size_t len) {
  std::string v(len, '\0');
  for (std::size_t j = 0; j < len; ++j) v[j] = static_cast<char>((i * 131 + j * 7 + 3) & 0xff);
  return v;
}

//! The clean pool, and where its blobs and its committed log lie.
struct Clean {
  std::vector<char> bytes;
  Model before, after;  //!< the contents without and with the committed batch
  std::multimap<std::string, std::string> history;  //!< every value each key ever held
  std::vector<std::pair<std::uint64_t, std::uint64_t>> blobs;  //!< offset, bytes
  std::uint64_t log = 0, log_bytes = 0;
  std::uint64_t used_from = 0, used_to = 0;
};

//! Leaves a committed batch log in the pool, unapplied: its blocks, its records, its commit
//! (what a crash right after Store::write's commit leaves).
void commit_unapplied(Store& s, const WriteBatch& b, Clean* c) {
  Store::Impl& m = s.impl();
  const std::string img = store::log_image(b);
  std::vector<std::uint64_t> blobs;
  ASSERT_EQ(m.allocate_batch(b, img.size(), &c->log, &blobs), Status::ok);
  ASSERT_EQ(m.commit_batch(c->log, img), Status::ok);
  c->log_bytes = img.size();
}

Clean make_clean(const std::string& kind) {
  Clean c;
  const std::string path = temp_path(kind + "-clean");
  std::remove(path.c_str());
  {
    StoreOptions o;
    o.kind = kind;
    o.size = 2u << 20;
    auto s = Store::open(path, o);
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s) return c;
    Store& st = **s;
    for (std::size_t i = 0; i < 240; ++i) {
      const std::string v = value_of(i, (i * 37) % 3001 * (i % 3 == 0) + i % 17);
      EXPECT_EQ(st.put(key_of(i), v), Status::ok);
      c.before[key_of(i)] = v;
      c.history.emplace(key_of(i), v);
    }
    for (std::size_t i = 0; i < 240; i += 5) {  // replaced: the old blob freed, its bytes kept
      const std::string v = value_of(i + 1000, 40 + i);
      EXPECT_EQ(st.put(key_of(i), v), Status::ok);
      c.before[key_of(i)] = v;
      c.history.emplace(key_of(i), v);
    }
    for (std::size_t i = 3; i < 240; i += 11) {
      auto r = st.remove(key_of(i));
      EXPECT_TRUE(r && *r);
      c.before.erase(key_of(i));
    }
    WriteBatch b;
    c.after = c.before;
    for (std::size_t i = 0; i < 6; ++i) {
      b.put(key_of(i * 13 + 1), value_of(i + 2000, 100 + i * 50));
      c.after[key_of(i * 13 + 1)] = value_of(i + 2000, 100 + i * 50);
      c.history.emplace(key_of(i * 13 + 1), value_of(i + 2000, 100 + i * 50));
    }
    b.remove(key_of(2));
    c.after.erase(key_of(2));
    commit_unapplied(st, b, &c);
    Store::Impl& m = st.impl();
    m.index->scan(Key{}, SIZE_MAX, [&](Key k, Value off) {
      const std::string_view ik = as_string(k);
      if (!ik.empty() && ik[0] == store::kDataTag) {
        const auto* h = m.pool->at<store::BlobHeader>(off);
        c.blobs.emplace_back(off, store::blob_bytes(h->key_len, h->value_len));
      }
      return true;
    });
  }
  std::ifstream f(path, std::ios::binary);
  c.bytes.assign(std::istreambuf_iterator<char>(f), {});
  std::remove(path.c_str());
  const auto& h = *reinterpret_cast<const pm::PoolHeader*>(c.bytes.data());
  c.used_from = h.first_chunk_offset;
  c.used_to = std::min<std::uint64_t>(c.bytes.size(), h.first_chunk_offset + h.chunk_hwm * h.chunk_size);
  return c;
}

//! Trial t's damage of kind d to a copy of the clean pool; the length to write.
std::size_t damage(const Clean& c, std::vector<char>& img, Damage d, std::mt19937_64& rng) {
  auto in_used = [&](std::uint64_t len) {
    return c.used_from + rng() % std::max<std::uint64_t>(c.used_to - c.used_from - len, 1);
  };
  auto flip = [&](std::uint64_t at) { img[at] ^= static_cast<char>(1 + rng() % 255); };
  switch (d) {
    case Damage::flip_bytes:
      for (int i = 1 + static_cast<int>(rng() % 8); i-- > 0;) flip(in_used(1));
      break;
    case Damage::torn_words:
      for (int i = 1 + static_cast<int>(rng() % 4); i-- > 0;) {
        const std::uint64_t from = in_used(8) & ~std::uint64_t{7};
        const std::uint64_t to = in_used(8) & ~std::uint64_t{7};
        const std::uint64_t half = (rng() & 1) * 4;
        std::memcpy(&img[to + half], &img[from + half], 4);
      }
      break;
    case Damage::blob_header: {
      const auto& [off, n] = c.blobs[rng() % c.blobs.size()];
      flip(off + rng() % sizeof(store::BlobHeader));
      break;
    }
    case Damage::blob_body: {
      const auto& [off, n] = c.blobs[rng() % c.blobs.size()];
      if (n > sizeof(store::BlobHeader)) flip(off + sizeof(store::BlobHeader) + rng() % (n - 16));
      break;
    }
    case Damage::log:
      for (int i = 1 + static_cast<int>(rng() % 3); i-- > 0;) flip(c.log + rng() % c.log_bytes);
      break;
    case Damage::truncate: return rng() % img.size();
  }
  return img.size();
}

void write_damaged(const std::string& path, const Clean& c, Damage d, std::uint64_t seed,
                   std::uint64_t t) {
  std::mt19937_64 rng(seed * 1000003 + t * 31 + static_cast<std::uint64_t>(d));
  std::vector<char> img = c.bytes;
  const std::size_t n = damage(c, img, d, rng);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(img.data(), static_cast<std::streamsize>(n));
}

//! What the reads found.
struct Reads {
  bool wrong = false, stale = false, corrupt = false, lost = false, unknown = false;
  std::string first;  //!< what went wrong first, for a replay
  void note(bool* flag, const std::string& what) {
    if (first.empty() && flag != &lost) first = what;
    *flag = true;
  }
};

//! A value read for key k (want: its value): right, or an older value of k (stale), or wrong.
void judge(const Clean& c, const std::string& k, std::string_view got, const std::string& want,
           const std::string& how, Reads* r) {
  if (got == want) return;
  const auto [from, to] = c.history.equal_range(k);
  for (auto it = from; it != to; ++it)
    if (it->second == got) return r->note(&r->stale, how + " " + k + ": an older value");
  r->note(&r->wrong, how + " " + k + ": wrong bytes");
}

void read_all(const Store& s, const Clean& c, const Model& want, Reads* r) {
  for (const auto& [k, v] : want) {
    auto g = s.get(k);
    if (!g) {
      r->note(&r->corrupt, "get " + k + ": " + g.error().message);
    } else if (!g->has_value()) {
      r->note(&r->lost, "get " + k + ": absent");
    } else {
      judge(c, k, **g, v, "get", r);
    }
    std::string seen;
    const Status st = s.read(k, [&](std::string_view x) { seen = x; });
    if (st == Status::ok) judge(c, k, seen, v, "read", r);
    if (st == Status::corrupt) r->note(&r->corrupt, "read " + k + ": corrupt");
  }
  auto cur = s.cursor();
  for (; cur.valid(); cur.next()) {
    const auto it = want.find(std::string(cur.key()));
    if (it == want.end()) {
      r->note(&r->unknown, "cursor: an unknown key");
      continue;
    }
    judge(c, it->first, cur.value(), it->second, "cursor", r);
  }
  if (cur.status() != Status::ok) r->note(&r->corrupt, "cursor: corrupt");
}

//! Writes after the checks: they must not crash or hang whatever the pool holds.
void write_some(Store& s) {
  for (std::size_t i = 0; i < 20; ++i) {
    (void)s.put(key_of(i * 3), value_of(i, 70 + i * 90));
    if (i % 3 == 0) (void)s.remove(key_of(i * 5 + 1));
  }
  WriteBatch b;
  b.put(key_of(4), value_of(4, 300));
  b.remove(key_of(6));
  (void)s.write(b);
}

//! What the child does; returns its exit code (0 or one of the codes above).
int exercise(const std::string& path, const Clean& c, bool tell) {
  auto s = Store::open(path);
  if (tell) std::fprintf(stderr, "open: %s\n", s ? "ok" : s.error().message.c_str());
  if (!s) return kRefused;
  const Model& want = (*s)->impl().replayed ? c.after : c.before;
  Reads r;
  read_all(**s, c, want, &r);
  const auto verified = (*s)->verify();
  if (tell)
    std::fprintf(stderr, "reads: %s%s%s%s%s %s; verify: %s\n", r.wrong ? "wrong " : "",
                 r.stale ? "stale " : "", r.corrupt ? "corrupt " : "", r.lost ? "lost " : "",
                 r.unknown ? "unknown " : "",
                 r.first.c_str(), verified ? "ok" : verified.error().message.c_str());
  write_some(**s);
  if (r.wrong) return kWrongBytes;
  if ((r.stale || r.corrupt || r.unknown) && verified.ok()) return kUnnoticed;
  if (r.lost && verified.ok()) return kLostUnnoticed;
  if (r.stale) return kStaleNoticed;
  return verified.ok() ? kClean : kVerifyFailed;
}

void fuzz(const std::string& kind, std::uint64_t trials) {
  const std::uint64_t seed = env_or("WORT_FUZZ_SEED", 1);
  const Clean clean = make_clean(kind);
  ASSERT_FALSE(clean.bytes.empty());
  ASSERT_FALSE(clean.blobs.empty());
  ASSERT_NE(clean.log, 0u);
  const std::string work = temp_path(kind + "-work");
  if (const char* replay = std::getenv("WORT_FUZZ_REPLAY"); replay && *replay) {
    unsigned d = 0;
    unsigned long long t = 0;
    ASSERT_EQ(std::sscanf(replay, "%u:%llu", &d, &t), 2) << "WORT_FUZZ_REPLAY=" << replay;
    ASSERT_LT(d, std::size(kDamages));
    write_damaged(work, clean, kDamages[d], seed, t);
    std::fprintf(stderr, "exit code %d\n", exercise(work, clean, true));
    std::remove(work.c_str());
    return;
  }
  std::uint64_t failed = 0, lost = 0, refused = 0, noticed = 0, stale = 0;
  for (Damage d : kDamages) {
    for (std::uint64_t t = 0; t < trials; ++t) {
      write_damaged(work, clean, d, seed, t);
      const pid_t child = ::fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        ::alarm(30);
        ::_exit(exercise(work, clean, false));
      }
      int st = 0;
      ASSERT_EQ(::waitpid(child, &st, 0), child);
      const int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      refused += code == kRefused;
      noticed += code == kVerifyFailed || code == kStaleNoticed;
      stale += code == kStaleNoticed;
      if (code == kClean || code == kRefused || code == kVerifyFailed || code == kStaleNoticed)
        continue;
      if (code == kLostUnnoticed) {
        ++lost;
        continue;
      }
      ++failed;
      const std::string what =
          code == kWrongBytes   ? "a read answered wrong bytes"
          : code == kUnnoticed  ? "a read answered corrupt, an older value or an unknown key, "
                                  "and verify() ok"
          : WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? "hung (30 s)"
          : WIFSIGNALED(st) ? "died with signal " + std::to_string(WTERMSIG(st))
                            : "exit " + std::to_string(code);
      ADD_FAILURE() << kind << ": damage " << name_of(d) << " trial " << t << ": " << what
                    << "; replay: WORT_FUZZ_SEED=" << seed << " WORT_FUZZ_REPLAY="
                    << static_cast<int>(d) << ":" << t << " --gtest_filter=*" << kind;
    }
  }
  std::remove(work.c_str());
  using ull = unsigned long long;
  std::printf("[store damaged %s] %llu damaged pools: %llu refused at open, %llu opened with "
              "verify() failing (%llu of them reading an older value of a key), %llu failed; %llu "
              "with a lost key that verify() missed\n",
              kind.c_str(), static_cast<ull>(trials * std::size(kDamages)),
              static_cast<ull>(refused), static_cast<ull>(noticed), static_cast<ull>(stale),
              static_cast<ull>(failed),
              static_cast<ull>(lost));
}

class StoreDamagedPool : public ::testing::TestWithParam<std::string> {};

TEST_P(StoreDamagedPool, NeverCrashesHangsOrAnswersWrongBytes) {
  fuzz(GetParam(), env_or("WORT_FUZZ_TRIALS", 3));
}

INSTANTIATE_TEST_SUITE_P(Kinds, StoreDamagedPool, ::testing::ValuesIn(persistent_kinds()),
                         [](const auto& i) { return i.param; });

// The checks can fail: the clean pool, undamaged, passes them, and the same pool with one
// value's byte flipped and its checksum fixed up (what a store without checksums would
// hold) answers wrong bytes.
TEST(StoreDamagedPoolChecks, CleanPassesAndAChecksumFixedUpIsWrongBytes) {
  const Clean c = make_clean("wort");
  ASSERT_FALSE(c.bytes.empty());
  const std::string path = temp_path("checks");
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(c.bytes.data(), static_cast<std::streamsize>(c.bytes.size()));
  }
  EXPECT_EQ(exercise(path, c, false), kClean);
  std::vector<char> img = c.bytes;
  std::uint64_t off = 0, n = 0;
  for (const auto& [o, len] : c.blobs) {  // a value the batch leaves alone
    const auto* bh = reinterpret_cast<const store::BlobHeader*>(&img[o]);
    const std::string key(&img[o + sizeof *bh], bh->key_len);
    if (bh->value_len > 20 && c.before.count(key) && c.after.count(key) &&
        c.before.at(key) == c.after.at(key))
      std::tie(off, n) = std::pair{o, len};
  }
  ASSERT_NE(off, 0u);
  auto* h = reinterpret_cast<store::BlobHeader*>(&img[off]);
  img[off + n - 1] ^= 0x5a;
  const char* k = &img[off + sizeof *h];
  std::uint32_t lens[2] = {h->key_len, h->value_len};
  std::uint32_t crc = store::crc32c(0, lens, sizeof lens);
  crc = store::crc32c(crc, k, h->key_len + h->value_len);
  h->crc = crc;
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(img.data(), static_cast<std::streamsize>(img.size()));
  }
  EXPECT_EQ(exercise(path, c, false), kWrongBytes);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace wort::test
