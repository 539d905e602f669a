// tests/store/store_test.cc — wort::Store (include/wort/store.h) over every persistent index
// kind: byte-string keys and values of any size, reopen, refusals, no leaked block after a
// reopen, checksums (a damaged value answers corrupt), cursors and batches.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "store/crc32c.h"
#include "store/layout.h"
#include "store/store_impl.h"
#include "wort/index.h"
#include "wort/pool.h"
#include "wort/store.h"

namespace wort::test {
namespace {

std::vector<std::string> persistent_kinds() {
  std::vector<std::string> out;
  for (const std::string& k : Index::kinds())
    if (k != "art") out.push_back(k);
  return out;
}

std::string temp_path(const std::string& tag) {
  static int n = 0;
  return (std::filesystem::temp_directory_path() /
          ("wort-store-test-" + std::to_string(getpid()) + "-" + tag + "-" + std::to_string(n++) +
           ".pool"))
      .string();
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& tag) : path(temp_path(tag)) {}
  ~TempFile() { std::remove(path.c_str()); }
};

std::unique_ptr<Store> open_ok(const std::string& path, const StoreOptions& o = {}) {
  auto s = Store::open(path, o);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s ? std::move(s).value() : nullptr;
}

std::string get_ok(const Store& s, std::string_view k) {
  auto r = s.get(k);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (!r || !r->has_value()) return "<absent>";
  return **r;
}

std::string value_of(std::size_t i, std::size_t len) {
  std::string v(len, '\0');
  for (std::size_t j = 0; j < len; ++j) v[j] = static_cast<char>((i * 131 + j * 7) & 0xff);
  return v;
}

std::string key_of(std::size_t i) {
  char b[32];
  std::snprintf(b, sizeof b, "key%06zu", i);
  return b;
}

TEST(StoreCrc32c, KnownVectorAndBothImplementationsAgree) {
  const std::string s = "123456789";
  EXPECT_EQ(store::crc32c_portable(0, s.data(), s.size()), 0xe3069283u);
  EXPECT_EQ(store::crc32c(0, s.data(), s.size()), 0xe3069283u);
  EXPECT_EQ(store::crc32c(0, nullptr, 0), 0u);
  // Incremental == whole.
  EXPECT_EQ(store::crc32c(store::crc32c(0, s.data(), 4), s.data() + 4, 5), 0xe3069283u);
  if (!store::crc32c_has_sse42()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937_64 rng(3);
  std::string buf(4099, '\0');
  for (char& c : buf) c = static_cast<char>(rng());
  for (std::size_t off = 0; off < 9; ++off)
    for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 1000u, 4090u})
      EXPECT_EQ(store::crc32c_sse42(17, buf.data() + off, n),
                store::crc32c_portable(17, buf.data() + off, n))
          << off << " " << n;
}

class StoreKinds : public ::testing::TestWithParam<std::string> {};

TEST_P(StoreKinds, PutGetRemoveReopen) {
  TempFile f("basic");
  StoreOptions o;
  o.kind = GetParam();
  o.size = 32 << 20;
  std::map<std::string, std::string> model;
  {
    auto s = open_ok(f.path, o);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->kind(), GetParam());
    EXPECT_EQ(s->size(), 0u);
    const std::string zeros("a\0b\0", 4);
    ASSERT_EQ(s->put(zeros, std::string("v\0w", 3)), Status::ok);
    model[zeros] = std::string("v\0w", 3);
    ASSERT_EQ(s->put("", ""), Status::ok);  // empty key, empty value
    model[""] = "";
    ASSERT_EQ(s->put("big", value_of(1, 1u << 20)), Status::ok);  // 1 MiB
    model["big"] = value_of(1, 1u << 20);
    for (std::size_t i = 0; i < 300; ++i) {
      const std::string v = value_of(i, i * 13 % 700);
      ASSERT_EQ(s->put(key_of(i), v), Status::ok);
      model[key_of(i)] = v;
    }
    for (std::size_t i = 0; i < 300; i += 3) {  // replace with another size
      const std::string v = value_of(i + 1000, i % 90);
      ASSERT_EQ(s->put(key_of(i), v), Status::ok);
      model[key_of(i)] = v;
    }
    for (std::size_t i = 1; i < 300; i += 4) {
      auto r = s->remove(key_of(i));
      ASSERT_TRUE(r.ok());
      EXPECT_TRUE(*r);
      model.erase(key_of(i));
    }
    auto r = s->remove("never");
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(*r);
    EXPECT_EQ(s->size(), model.size());
    for (const auto& [k, v] : model) {
      EXPECT_EQ(get_ok(*s, k), v) << k;
      EXPECT_TRUE(s->contains(k));
    }
    std::string viewed;
    EXPECT_EQ(s->read("big", [&](std::string_view v) { viewed = v; }), Status::ok);
    EXPECT_EQ(viewed, model["big"]);
    EXPECT_EQ(s->read("key000001", [&](std::string_view) { ADD_FAILURE(); }), Status::not_found);
    EXPECT_FALSE(s->contains("key000001"));
    EXPECT_EQ(get_ok(*s, "key000001"), "<absent>");
    // Limits.
    EXPECT_EQ(s->put(std::string(s->max_key_size() + 1, 'k'), "v"), Status::invalid_argument);
    EXPECT_EQ(s->put(std::string(s->max_key_size(), 'k'), "v"), Status::ok);
    model[std::string(s->max_key_size(), 'k')] = "v";
    EXPECT_EQ(s->put("huge", std::string_view(nullptr, 0)), Status::ok);
    model["huge"] = "";
    EXPECT_EQ(s->put("x", std::string_view("y", Store::kMaxValueSize + 1)),
              Status::invalid_argument);  // refused on its length, before any byte is read
    EXPECT_TRUE(s->verify().ok());
    const auto a = s->impl().audit();
    EXPECT_TRUE(a.ok()) << a.describe();
  }
  auto s = open_ok(f.path);  // any kind
  ASSERT_TRUE(s);
  EXPECT_EQ(s->size(), model.size());
  for (const auto& [k, v] : model) EXPECT_EQ(get_ok(*s, k), v) << k;
  EXPECT_TRUE(s->verify().ok());
  const auto a = s->impl().audit();
  EXPECT_TRUE(a.ok()) << a.describe();
}

// A blob allocated and written but never committed (a put in flight at a crash), and blobs
// replaced and removed: after the reopen the trace has freed every block nothing names.
TEST_P(StoreKinds, NoBlockLeakedAfterACrashImage) {
  TempFile f("leak");
  StoreOptions o;
  o.kind = GetParam();
  o.size = 16 << 20;
  auto s = open_ok(f.path, o);
  ASSERT_TRUE(s);
  for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(s->put(key_of(i), value_of(i, 200)), Status::ok);
  for (std::size_t i = 0; i < 100; i += 2) ASSERT_EQ(s->put(key_of(i), value_of(i, 40)), Status::ok);
  for (std::size_t i = 1; i < 100; i += 4) ASSERT_TRUE(s->remove(key_of(i)).ok());
  std::uint64_t orphan = 0;
  ASSERT_EQ(s->impl().pool->allocator().allocate(5000, &orphan), Status::ok);
  // The crash image: the file's bytes as they are now (the mapping is shared).
  const auto bytes = std::filesystem::file_size(f.path);
  std::vector<std::byte> raw(bytes + 64);
  std::byte* img = reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(raw.data()) + 63) & ~std::uintptr_t{63});
  {
    std::ifstream in(f.path, std::ios::binary);
    in.read(reinterpret_cast<char*>(img), static_cast<std::streamsize>(bytes));
  }
  auto r = store::open_image({img, bytes}, "crash image");
  ASSERT_TRUE(r.ok()) << r.error().message;
  Store& c = **r;
  const auto a = c.impl().audit();
  EXPECT_TRUE(a.ok()) << a.describe();
  // Every allocated block is one the store reaches, and it reaches exactly the index's
  // blocks, the meta block and one blob per key.
  std::uint64_t reached = 0, values = 0;
  ASSERT_TRUE(c.impl().visit_blocks([&](std::uint64_t) { ++reached; }).ok());
  ASSERT_TRUE(c.impl().index->visit_blocks([&](std::uint64_t) { ++values; }).ok());
  EXPECT_EQ(c.impl().pool->allocator().stats().blocks_allocated, reached);
  EXPECT_EQ(reached - values, c.size() + 1);  // + the meta block
  EXPECT_EQ(c.size(), 75u);
}

TEST_P(StoreKinds, DamagedValueAnswersCorrupt) {
  TempFile f("damage");
  StoreOptions o;
  o.kind = GetParam();
  o.size = 8 << 20;
  std::uint64_t off = 0;
  {
    auto s = open_ok(f.path, o);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->put("a", "first"), Status::ok);
    ASSERT_EQ(s->put("damaged", value_of(7, 300)), Status::ok);
    ASSERT_EQ(s->put("z", "last"), Status::ok);
    const auto v = s->impl().index->lookup(as_key(data_key("damaged")));
    ASSERT_TRUE(v);
    off = *v;
  }
  {
    std::fstream io(f.path, std::ios::binary | std::ios::in | std::ios::out);
    const std::streamoff at = static_cast<std::streamoff>(off + sizeof(store::BlobHeader) + 7 + 100);
    io.seekg(at);
    char c = 0;
    io.read(&c, 1);
    c ^= 0x10;
    io.seekp(at);
    io.write(&c, 1);
  }
  auto s = open_ok(f.path);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->get("damaged").status(), Status::corrupt);
  EXPECT_EQ(s->read("damaged", [](std::string_view) { ADD_FAILURE(); }), Status::corrupt);
  EXPECT_EQ(get_ok(*s, "a"), "first");
  EXPECT_EQ(get_ok(*s, "z"), "last");
  EXPECT_EQ(s->verify().status(), Status::corrupt);
  auto cur = s->cursor();
  std::vector<std::string> seen;
  for (; cur.valid(); cur.next()) seen.emplace_back(cur.key());
  EXPECT_EQ(cur.status(), Status::corrupt);
  EXPECT_TRUE(seen.empty() || seen == std::vector<std::string>{"a"});
  // Rewriting the damaged key heals it.
  ASSERT_EQ(s->put("damaged", "new"), Status::ok);
  EXPECT_EQ(get_ok(*s, "damaged"), "new");
}

TEST_P(StoreKinds, CursorsMatchAnOrderedMap) {
  TempFile f("cursor");
  StoreOptions o;
  o.kind = GetParam();
  o.size = 16 << 20;
  auto s = open_ok(f.path, o);
  ASSERT_TRUE(s);
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(11);
  for (std::size_t i = 0; i < 500; ++i) {
    std::string k = key_of(rng() % 2000);
    if (i % 7 == 0) k += std::string("\0\xff", 2);  // a zero and a high byte inside keys
    const std::string v = value_of(i, rng() % 50);
    ASSERT_EQ(s->put(k, v), Status::ok);
    model[k] = v;
  }
  auto check = [&](std::optional<std::string> lo, std::optional<std::string> hi) {
    auto it = lo ? model.lower_bound(*lo) : model.begin();
    const auto end = hi ? model.lower_bound(*hi) : model.end();
    auto c = s->cursor(lo, hi);
    std::size_t n = 0;
    for (; c.valid(); c.next(), ++it, ++n) {
      ASSERT_TRUE(it != end) << "extra key " << c.key();
      EXPECT_EQ(c.key(), it->first);
      EXPECT_EQ(c.value(), it->second);
    }
    EXPECT_EQ(c.status(), Status::ok);
    EXPECT_TRUE(it == end || (hi && *hi <= *lo)) << "cursor stopped early after " << n;
  };
  check(std::nullopt, std::nullopt);
  check(std::string("key000500"), std::nullopt);
  check(std::nullopt, std::string("key001000"));
  check(std::string("key000100"), std::string("key000900"));
  check(std::string("key000100"), std::string("key000100"));  // empty
  check(std::string("zzz"), std::nullopt);                     // past the end
  // seek: first key >= k, never below the lower bound.
  auto c = s->cursor(std::string("key000300"), std::string("key001500"));
  c.seek("key001200");
  auto it = model.lower_bound("key001200");
  ASSERT_TRUE(c.valid());
  EXPECT_EQ(c.key(), it->first);
  c.seek("a");
  ASSERT_TRUE(c.valid());
  EXPECT_EQ(c.key(), model.lower_bound("key000300")->first);
  c.seek("key001500");
  EXPECT_FALSE(c.valid());
}

TEST_P(StoreKinds, BatchesApplyWholeAndSurviveReopen) {
  TempFile f("batch");
  StoreOptions o;
  o.kind = GetParam();
  o.size = 16 << 20;
  {
    auto s = open_ok(f.path, o);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->put("keep", "1"), Status::ok);
    ASSERT_EQ(s->put("gone", "2"), Status::ok);
    WriteBatch b;
    b.put("x", "10");
    b.put("y", value_of(3, 5000));
    b.remove("gone");
    b.put("x", "11");  // the later entry wins
    b.remove("absent");
    b.put("keep", "");
    ASSERT_EQ(s->write(b), Status::ok);
    ASSERT_EQ(s->write(WriteBatch{}), Status::ok);
    WriteBatch bad;
    bad.put("ok", "v");
    bad.put(std::string(s->max_key_size() + 1, 'k'), "v");
    EXPECT_EQ(s->write(bad), Status::invalid_argument);
    EXPECT_FALSE(s->contains("ok"));  // nothing of a refused batch
    EXPECT_EQ(s->size(), 3u);
    const auto a = s->impl().audit();
    EXPECT_TRUE(a.ok()) << a.describe();
  }
  auto s = open_ok(f.path);
  ASSERT_TRUE(s);
  EXPECT_EQ(get_ok(*s, "x"), "11");
  EXPECT_EQ(get_ok(*s, "y"), value_of(3, 5000));
  EXPECT_EQ(get_ok(*s, "keep"), "");
  EXPECT_FALSE(s->contains("gone"));
  EXPECT_EQ(s->size(), 3u);
  const auto a = s->impl().audit();
  EXPECT_TRUE(a.ok()) << a.describe();
}

// A batch meets out_of_space at every allocation in turn (its blobs, its log, the index's
// nodes while it applies): the store then holds the state before the batch or, once the
// log is committed, the whole batch after the next write() or open finishes it; the audit
// stays clean throughout.
TEST_P(StoreKinds, BatchFailingAtEveryAllocationIsAllOrNothing) {
  const std::map<std::string, std::string> before = {{"a", "1"}, {"b", "2"}, {"c", "3"}};
  std::map<std::string, std::string> after = before;
  WriteBatch b;
  for (std::size_t i = 0; i < 12; ++i) {
    b.put(key_of(i * 7), value_of(i, 50 + i));
    after[key_of(i * 7)] = value_of(i, 50 + i);
  }
  b.remove("b");
  after.erase("b");
  b.put("a", "new");
  after["a"] = "new";
  auto state = [](const Store& s) {
    std::map<std::string, std::string> m;
    for (auto c = s.cursor(); c.valid(); c.next()) m[std::string(c.key())] = std::string(c.value());
    return m;
  };
  bool succeeded = false;
  std::size_t applied_failed = 0;  // failures after the commit (during the apply)
  for (std::uint64_t nth = 1; nth < 200 && !succeeded; ++nth) {
    TempFile f("oom");
    StoreOptions o;
    o.kind = GetParam();
    o.size = 8 << 20;
    auto s = open_ok(f.path, o);
    ASSERT_TRUE(s);
    for (const auto& [k, v] : before) ASSERT_EQ(s->put(k, v), Status::ok);
    s->impl().pool->allocator().fail_nth_allocation(nth);
    const Status st = s->write(b);
    s->impl().pool->allocator().fail_nth_allocation(0);
    if (st == Status::ok) {
      succeeded = true;
      EXPECT_EQ(state(*s), after);
      continue;
    }
    ASSERT_EQ(st, Status::out_of_space) << nth;
    const bool committed = s->impl().index->lookup(as_key(store::kLogKey)).has_value();
    applied_failed += committed;
    if (!committed) {
      EXPECT_EQ(state(*s), before) << "nth " << nth;
    }
    auto a = s->impl().audit();
    EXPECT_TRUE(a.ok()) << "nth " << nth << ": " << a.describe();
    if (nth % 2 == 0) {  // finished by the next write()
      WriteBatch one;
      one.put("z", "after");
      ASSERT_EQ(s->write(one), Status::ok);
      auto want = committed ? after : before;
      want["z"] = "after";
      EXPECT_EQ(state(*s), want) << "nth " << nth;
    } else {  // finished by the next open
      s.reset();
      s = open_ok(f.path);
      ASSERT_TRUE(s);
      EXPECT_EQ(state(*s), committed ? after : before) << "nth " << nth;
    }
    EXPECT_EQ(s->size(), state(*s).size());
    a = s->impl().audit();
    EXPECT_TRUE(a.ok()) << "nth " << nth << ": " << a.describe();
  }
  EXPECT_TRUE(succeeded);
  EXPECT_GT(applied_failed, 0u) << "no failure while applying";
}

INSTANTIATE_TEST_SUITE_P(Kinds, StoreKinds, ::testing::ValuesIn(persistent_kinds()),
                         [](const auto& i) { return i.param; });

TEST(Store, Refusals) {
  {
    TempFile f("art");
    StoreOptions o;
    o.kind = "art";
    EXPECT_EQ(Store::open(f.path, o).status(), Status::invalid_argument);
    EXPECT_FALSE(std::filesystem::exists(f.path));
  }
  {
    TempFile f("nokind");
    StoreOptions o;
    o.kind = "nosuchkind";
    EXPECT_EQ(Store::open(f.path, o).status(), Status::invalid_argument);
  }
  {
    TempFile f("wrongkind");
    StoreOptions o;
    o.kind = "wort";
    ASSERT_TRUE(open_ok(f.path, o));
    o.kind = "fptree";
    auto r = Store::open(f.path, o);
    EXPECT_EQ(r.status(), Status::wrong_kind);
  }
  {
    TempFile f("bare");  // a bare index pool
    PoolOptions po;
    po.kind = "wort";
    po.size = 4 << 20;
    {
      auto p = Pool::create(f.path, po);
      ASSERT_TRUE(p.ok());
      auto ix = Index::create(**p, "wort");
      ASSERT_TRUE(ix.ok());
      ASSERT_EQ((*ix)->insert(as_key("k"), 1), Status::ok);
    }
    auto r = Store::open(f.path);
    EXPECT_EQ(r.status(), Status::not_a_pool) << r.error().message;
  }
  {
    TempFile f("foreign");  // values are blocks, but no store meta block
    PoolOptions po;
    po.kind = "wort";
    po.size = 4 << 20;
    po.values_are_blocks = true;
    {
      auto p = Pool::create(f.path, po);
      ASSERT_TRUE(p.ok());
      auto ix = Index::create(**p, "wort");
      ASSERT_TRUE(ix.ok());
      std::uint64_t b = 0;
      ASSERT_EQ((*p)->allocator().allocate(64, &b), Status::ok);
      ASSERT_EQ((*ix)->insert(as_key("\0wort-serve-meta"), b), Status::ok);
    }
    auto r = Store::open(f.path);
    EXPECT_EQ(r.status(), Status::not_a_pool) << r.error().message;
  }
}

}  // namespace
}  // namespace wort::test
