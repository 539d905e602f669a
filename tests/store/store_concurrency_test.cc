// tests/store/store_concurrency_test.cc — wort::Store shared by threads: writers putting,
// replacing and removing overlapping keys (several on the same key), a thread applying
// batches, readers getting and running cursors meanwhile. Every value read must be whole
// (a pattern derived from its key and version, and its checksum passed), every cursor
// strictly ascending within its bounds; at the end the allocator audit finds no leak and no
// double use (a replaced blob freed once, after the readers that could hold it), and size()
// is the number of keys present. A concurrent kind (wort) and a serialised one (wbtree).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "store/store_impl.h"
#include "wort/key.h"
#include "wort/store.h"

namespace wort::test {
namespace {

std::string key_of(unsigned i) {
  char b[16];
  std::snprintf(b, sizeof b, "k%04u", i);
  return b;
}

//! key ":" version (8 digits) ";", repeated to a length that depends on the version (16 to
//! ~600 bytes: the first unit is always whole).
std::string value_of(const std::string& key, unsigned version) {
  char d[16];
  std::snprintf(d, sizeof d, "%08u", version);
  const std::string unit = key + ":" + d + ";";
  std::string v;
  const std::size_t len = 16 + (version * 37) % 600;
  while (v.size() < len) v += unit;
  v.resize(len);
  return v;
}

bool whole(const std::string& key, const std::string& v) {
  const std::size_t colon = key.size();
  if (v.size() < colon + 10 || v.compare(0, colon, key) != 0 || v[colon] != ':') return false;
  const unsigned version = static_cast<unsigned>(std::stoul(v.substr(colon + 1, 8)));
  return v == value_of(key, version);
}

void hammer(const std::string& kind) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("wort-store-conc-" + std::to_string(getpid()) + "-" + kind + ".pool"))
                               .string();
  std::remove(path.c_str());
  StoreOptions o;
  o.kind = kind;
  o.size = 64 << 20;
  auto opened = Store::open(path, o);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  Store& s = **opened;
  constexpr unsigned kKeys = 200;
  const unsigned rounds = 3000;
  std::atomic<bool> stop{false};
  std::atomic<unsigned> bad{0};
  std::vector<std::thread> writers, readers;
  for (unsigned w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (unsigned i = 0; i < rounds; ++i) {
        const unsigned k = (i * 7 + w) % kKeys;
        if (i % 5 == 4) {
          if (!s.remove(key_of(k)).ok()) bad.fetch_add(1);
        } else if (s.put(key_of(k), value_of(key_of(k), i * 2 + w)) != Status::ok) {
          bad.fetch_add(1);
        }
        if (i % 3 == 0 && s.put("same", value_of("same", i * 2 + w)) != Status::ok) bad.fetch_add(1);
      }
    });
  writers.emplace_back([&] {
    for (unsigned i = 0; i < rounds / 20; ++i) {
      WriteBatch b;
      for (unsigned j = 0; j < 4; ++j) {
        const unsigned k = (i * 13 + j * 50) % kKeys;
        if (j == 3) b.remove(key_of(k));
        else b.put(key_of(k), value_of(key_of(k), 100000 + i));
      }
      if (s.write(b) != Status::ok) bad.fetch_add(1);
    }
  });
  for (unsigned r = 0; r < 2; ++r)
    readers.emplace_back([&, r] {
      while (!stop.load(std::memory_order_relaxed)) {
        for (unsigned k = r; k < kKeys; k += 17) {
          auto v = s.get(key_of(k));
          if (!v || (v->has_value() && !whole(key_of(k), **v))) bad.fetch_add(1);
        }
        auto sv = s.get("same");
        if (!sv || (sv->has_value() && !whole("same", **sv))) bad.fetch_add(1);
        const Status rs = s.read("same", [&](std::string_view v) {
          if (!whole("same", std::string(v))) bad.fetch_add(1);
        });
        if (rs != Status::ok && rs != Status::not_found) bad.fetch_add(1);
        std::string prev;
        const std::string lo = key_of(20 + r * 30), hi = key_of(150);
        for (auto c = s.cursor(lo, hi); c.valid(); c.next()) {
          const std::string k(c.key());
          if (k < lo || k >= hi || (!prev.empty() && k <= prev) || !whole(k, std::string(c.value())))
            bad.fetch_add(1);
          prev = k;
        }
      }
    });
  for (auto& t : writers) t.join();
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0u);
  std::size_t present = 0;
  for (unsigned k = 0; k < kKeys; ++k) present += s.contains(key_of(k));
  present += s.contains("same");
  EXPECT_EQ(s.size(), present);
  const auto a = s.impl().audit();
  EXPECT_TRUE(a.ok()) << a.describe();
  EXPECT_TRUE(s.verify().ok());
  opened->reset();
  std::remove(path.c_str());
}

TEST(StoreConcurrency, WritersReadersCursorsBatchesWort) { hammer("wort"); }

// A value replaced while a reader is pinned stays allocated and whole until the reader lets
// go (the mutation "free the replaced blob at once" fails this test; the hammer above finds
// it only by chance).
TEST(StoreConcurrency, ReplacedValueWaitsForAPinnedReader) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("wort-store-pin-" + std::to_string(getpid()) + ".pool"))
                               .string();
  std::remove(path.c_str());
  auto opened = Store::open(path);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  Store& s = **opened;
  const std::string v1 = value_of("k", 1);
  ASSERT_EQ(s.put("k", v1), Status::ok);
  const auto off = s.impl().index->lookup(as_key(data_key("k")));
  ASSERT_TRUE(off);
  {
    kit::EpochReclaimer::Pin pin(*s.impl().retired);  // a reader between lookup and copy
    std::thread t([&] {
      EXPECT_EQ(s.put("k", value_of("k", 2)), Status::ok);
      EXPECT_EQ(s.put("other", value_of("other", 3)), Status::ok);  // may reuse a free block
    });
    t.join();
    EXPECT_GE(s.impl().retired->pending(), 1u);
    auto old = s.impl().read_blob(*off, "k");
    ASSERT_TRUE(old.ok()) << old.error().message;
    EXPECT_EQ(std::string(*old), v1);
  }
  auto now = s.get("k");
  ASSERT_TRUE(now.ok() && now->has_value());
  EXPECT_EQ(**now, value_of("k", 2));
  const auto a = s.impl().audit();
  EXPECT_TRUE(a.ok()) << a.describe();
  opened->reset();
  std::remove(path.c_str());
}
TEST(StoreConcurrency, WritersReadersCursorsBatchesWbTree) { hammer("wbtree"); }

}  // namespace
}  // namespace wort::test
