// tests/server/item_checksum_test.cc — the server's items are value blocks with a checksum
// (server/item_layout.h, store/value_block.h): a damaged item is a miss, counted in
// items_corrupt, never its wrong bytes, and the open's walk refuses a pool holding one;
// exptime lies outside the checksum (touch changes it in place); a pool of the older item
// format (meta block version 0) is refused at open with a message, never read.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "server/item_layout.h"
#include "server_store.h"

namespace wort::test {
namespace {

std::string pool_path(const std::string& kind, const char* tag) {
  return "/tmp/wort_itemcrc_" + kind + "_" + tag + "_" + std::to_string(getpid()) + ".pool";
}

//! The byte at `at` of the item block `key` names, for a test to damage (the pool is the
//! store's own mapping of the file).
char* item_byte(Store& s, std::string_view key, std::size_t at) {
  const auto off = s.index().lookup(as_key(key));
  EXPECT_TRUE(off.has_value());
  return const_cast<char*>(s.pool().at<char>(*off)) + at;
}

//! The value get answers for `key`, or "<miss>".
std::string get_value(Store& s, std::string_view key) {
  std::string out = "<miss>";
  s.get(key, [&](const server::ItemView& v) { out.assign(v.value); });
  return out;
}

class ItemChecksum : public ::testing::TestWithParam<const char*> {};

TEST_P(ItemChecksum, DamagedItemIsAMissNeverWrongBytes) {
  const std::string kind = GetParam();
  for (const bool global_lock : {false, true}) {
    const std::string path = pool_path(kind, "damaged");
    auto s = open_new_store(path, kind, 16, global_lock);
    ASSERT_TRUE(s);
    const std::string value(100, 'v');
    ASSERT_EQ(s->store(StoreMode::set, "good", 1, 0, value), StoreResult::stored);
    ASSERT_EQ(s->store(StoreMode::set, "bad", 1, 0, value), StoreResult::stored);
    // One value byte of "bad" flipped, as a media error would.
    *item_byte(*s, "bad", sizeof(server::ItemHeader) + 3 + 50) ^= 0x20;
    EXPECT_EQ(get_value(*s, "bad"), "<miss>");
    EXPECT_EQ(s->counters().items_corrupt.load(), 1u);
    EXPECT_EQ(get_value(*s, "good"), value);
    // An append to the damaged item must not copy its bytes into a new, valid item.
    EXPECT_EQ(s->store(StoreMode::append, "bad", 0, 0, "x"), StoreResult::not_stored);
    EXPECT_EQ(get_value(*s, "bad"), "<miss>");
    EXPECT_FALSE(bool(s->verify()));  // the walk checks every item whole
    // A set replaces the damaged item: the key reads again.
    ASSERT_EQ(s->store(StoreMode::set, "bad", 1, 0, "fresh"), StoreResult::stored);
    EXPECT_EQ(get_value(*s, "bad"), "fresh");
    EXPECT_TRUE(bool(s->verify()));
    s.reset();
    std::filesystem::remove(path);
  }
}

TEST_P(ItemChecksum, OpenRefusesAPoolWithADamagedItem) {
  const std::string kind = GetParam();
  const std::string path = pool_path(kind, "reopen");
  {
    auto s = open_new_store(path, kind, 16, false);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->store(StoreMode::set, "k", 5, 0, std::string(100, 'v')), StoreResult::stored);
    *item_byte(*s, "k", 16) ^= 0x01;  // the cas: inside the checksum
  }
  StoreOptions o;
  o.pool_path = path;
  auto r = Store::open(o);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.status(), Status::corrupt);
  EXPECT_NE(r.error().message.find("checksum mismatch"), std::string::npos) << r.error().message;
  std::filesystem::remove(path);
}

TEST_P(ItemChecksum, ExptimeLiesOutsideTheChecksum) {
  const std::string kind = GetParam();
  const std::string path = pool_path(kind, "touch");
  auto s = open_new_store(path, kind, 16, false);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->store(StoreMode::set, "k", 5, 0, "value"), StoreResult::stored);
  ASSERT_TRUE(s->touch("k", Store::now() + 1000));  // exptime changed in place, crc kept
  EXPECT_EQ(get_value(*s, "k"), "value");
  EXPECT_EQ(s->counters().items_corrupt.load(), 0u);
  EXPECT_TRUE(bool(s->verify()));
  s.reset();
  std::filesystem::remove(path);
}

TEST_P(ItemChecksum, OlderItemFormatIsRefusedAtOpen) {
  const std::string kind = GetParam();
  const std::string path = pool_path(kind, "v1");
  {
    auto s = open_new_store(path, kind, 16, false);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->store(StoreMode::set, "k", 5, 0, "value"), StoreResult::stored);
    // The meta block of a pool of item format 1: its version word was reserved (zero).
    const auto off = s->index().lookup(as_key(server::kMetaKey));
    ASSERT_TRUE(off.has_value());
    auto* m = const_cast<server::MetaBlock*>(s->pool().at<server::MetaBlock>(*off));
    EXPECT_EQ(m->version, server::kServerVersion);
    m->version = 0;
  }
  StoreOptions o;
  o.pool_path = path;
  auto r = Store::open(o);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.status(), Status::not_a_pool);
  EXPECT_NE(r.error().message.find("older format"), std::string::npos) << r.error().message;
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Kinds, ItemChecksum,
                         ::testing::Values("wort", "fastfair", "wbtree", "roart"));

}  // namespace
}  // namespace wort::test
