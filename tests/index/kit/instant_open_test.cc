// Index::open with OpenOptions::instant_restart, through the public API only: an index that
// implements it (roart) serves lookups and writes at once while its recovery trace runs in
// the background, and after wait_recovery() the allocator audit is clean and nothing written
// before the reopen or during the trace is lost; every other persistent index ignores the
// option (opens synchronously) and wait_recovery() returns at once.
#include <gtest/gtest.h>

#include "index/kit/kit_support.h"
#include "pm/allocator.h"

namespace wort {
namespace {

using kittest::key_of;

class InstantOpen : public ::testing::TestWithParam<std::string> {};

TEST_P(InstantOpen, ServesAtOnceAndTheTraceLosesNothing) {
  const std::string kind = GetParam();
  // ROART implements the instant restart (roart_restart.cc); the registry must offer it.
  if (kind == "roart") {
    ASSERT_TRUE(registry::find(kind)->open_instant);
  }
  kittest::TempPath path("instant-" + kind);
  const auto keys = kittest::mixed_keys(20000);
  {
    PoolOptions o;
    o.size = 64ull << 20;
    o.kind = kind;
    auto pool = Pool::create(path.str(), o);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    auto ix = Index::create(**pool, kind);
    ASSERT_TRUE(ix.ok()) << ix.error().message;
    for (std::size_t i = 0; i < keys.size(); ++i)
      ASSERT_EQ((*ix)->insert(key_of(keys[i]), i), Status::ok);
    for (std::size_t i = 0; i < keys.size(); i += 4)
      ASSERT_EQ((*ix)->remove(key_of(keys[i])), Status::ok);  // freed space for the trace
  }
  auto pool = Pool::open(path.str());
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  OpenOptions oo;
  oo.instant_restart = true;
  auto ix = Index::open(**pool, oo);
  ASSERT_TRUE(ix.ok()) << ix.error().message;
  // Served while the trace may still run: reads, overwrites, removes and new keys.
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto v = (*ix)->lookup(key_of(keys[i]));
    if (i % 4 == 0) {
      ASSERT_FALSE(v.has_value()) << i;
    } else {
      ASSERT_TRUE(v.has_value()) << i;
      ASSERT_EQ(*v, i);
    }
  }
  for (std::size_t i = 1; i < keys.size(); i += 4) ASSERT_EQ((*ix)->upsert(key_of(keys[i]), i + 7), Status::ok);
  for (std::size_t i = 2; i < keys.size(); i += 4) ASSERT_EQ((*ix)->remove(key_of(keys[i])), Status::ok);
  for (std::size_t i = 0; i < keys.size(); i += 4) ASSERT_EQ((*ix)->insert(key_of(keys[i]), i), Status::ok);
  const auto waited = (*ix)->wait_recovery();
  ASSERT_TRUE(waited.ok()) << waited.error().message;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto v = (*ix)->lookup(key_of(keys[i]));
    switch (i % 4) {
      case 1: ASSERT_EQ(v, std::optional<Value>(i + 7)) << i; break;
      case 2: ASSERT_FALSE(v.has_value()) << i; break;
      default: ASSERT_EQ(v, std::optional<Value>(i)) << i;
    }
  }
  ASSERT_TRUE((*ix)->verify().ok());
  const pm::AuditReport a =
      (*pool)->allocator().audit([&](pm::BlockVisitor bv) { return (*ix)->visit_blocks(bv); });
  EXPECT_TRUE(a.ok()) << a.describe();
}

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, InstantOpen,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
