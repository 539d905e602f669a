// A handle of a kind without concurrency of its own (wB+Tree, NV-Tree) is safe to share:
// its adapter serialises the callers (readers together, a writer alone). A writer replaces
// values while readers look keys up; every value a reader sees must be one the writer
// stored for that key, and never older than one it saw before. Without the adapter's lock
// NV-Tree gave wrong reads (an entry read while its leaf was appended to) and
// ThreadSanitizer reports the race. Named *_concurrency_test so the TSan build runs it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "index/kit/kit_support.h"

namespace wort {
namespace {

std::vector<std::string> serialised_kinds() {
  std::vector<std::string> out;
  for (const registry::Entry* e : registry::all())
    if (e->persistent && !e->concurrent) out.push_back(e->name);
  return out;
}

//! Value of key i at version v: the key's number in the low 32 bits, so a reader can tell
//! a value that belongs to another key.
Value value_of(std::uint32_t i, std::uint32_t v) { return (std::uint64_t{v} << 32) | i; }

class SharedHandle : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedHandle, ReadersBesideAWriterSeeOnlyValuesTheWriterStored) {
  const std::string kind = GetParam();
  PoolOptions o;
  o.size = 32u << 20;
  o.kind = kind;
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool) << pool.error().message;
  auto made = Index::create(**pool, kind);
  ASSERT_TRUE(made) << made.error().message;
  Index& ix = **made;
  EXPECT_FALSE(ix.concurrent());
  constexpr std::uint32_t kKeys = 2000, kRounds = 6;
  std::vector<std::string> keys;
  for (std::uint32_t i = 0; i < kKeys; ++i) keys.push_back("key:" + std::to_string(i * 7919u));
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> wrong{0}, reads{0};
  auto reader = [&](std::uint32_t seed) {
    std::vector<std::uint32_t> seen(kKeys, 0);
    std::uint32_t i = seed;
    while (!done.load(std::memory_order_acquire)) {
      i = (i * 1103515245u + 12345u) % kKeys;
      const std::optional<Value> v = ix.lookup(kittest::key_of(keys[i]));
      reads.fetch_add(1, std::memory_order_relaxed);
      if (!v) continue;  // not inserted yet
      const auto version = static_cast<std::uint32_t>(*v >> 32);
      if (static_cast<std::uint32_t>(*v) != i || version < seen[i] || version > kRounds)
        wrong.fetch_add(1, std::memory_order_relaxed);
      seen[i] = version;
    }
  };
  std::thread r1(reader, 1), r2(reader, 2);
  for (std::uint32_t round = 1; round <= kRounds; ++round)
    for (std::uint32_t i = 0; i < kKeys; ++i)
      ASSERT_EQ(ix.upsert(kittest::key_of(keys[i]), value_of(i, round)), Status::ok);
  done.store(true, std::memory_order_release);
  r1.join();
  r2.join();
  EXPECT_EQ(wrong.load(), 0u) << "of " << reads.load() << " reads";
  for (std::uint32_t i = 0; i < kKeys; ++i)
    ASSERT_EQ(ix.lookup(kittest::key_of(keys[i])), std::optional<Value>(value_of(i, kRounds)));
  EXPECT_TRUE(ix.verify()) << ix.verify().error().message;
}

INSTANTIATE_TEST_SUITE_P(EverySerialisedIndex, SharedHandle,
                         ::testing::ValuesIn(serialised_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
