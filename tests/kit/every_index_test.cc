// The differential and kill -9 tests every registered index gets by registering (DESIGN.md,
// "the index kit"): no per-index code here, only the registry. Each index's own tests under
// tests/diff and tests/crash go further (its node sizes and shapes, its commit paths); these
// make sure a new folder cannot register without meeting the common bar.
//
// - Differential: every key generator of tests/support/keygen.h, through DiffChecker
//   (std::map as the reference; full comparison, scans and ranges, verify(), allocator
//   audit): insert all, a random mix of insert/upsert/update/remove/lookup, a reopen from the
//   pool's bytes as a crash leaves them (persistent kinds), remove everything, insert half.
// - kill -9: a child process upserts and removes through a file pool and acknowledges each
//   operation; the parent kills it mid-stream, reopens, and checks every acknowledged write
//   (tests/support/kill_reopen.h), for every persistent kind.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "index/registry.h"
#include "support/diff_harness.h"
#include "support/keygen.h"
#include "support/kill_reopen.h"

namespace wort::test {
namespace {

crashsim::Factory factory_for(const std::string& kind) {
  const registry::Entry* e = registry::find(kind);
  return crashsim::Factory{kind, [e](Pool& p) { return e->create(p, IndexOptions{}); },
                           [e](Pool& p) { return e->open(p); }};
}

std::vector<std::string> all_kinds() {
  std::vector<std::string> out;
  for (const registry::Entry* e : registry::all()) out.push_back(e->name);
  return out;
}

std::vector<std::string> persistent_kinds() {
  std::vector<std::string> out;
  for (const registry::Entry* e : registry::all())
    if (e->persistent) out.push_back(e->name);
  return out;
}

class EveryIndexDiff : public ::testing::TestWithParam<std::tuple<std::string, Gen>> {};

TEST_P(EveryIndexDiff, MatchesStdMapThroughMixReopenAndEmptying) {
  const auto& [kind, g] = GetParam();
  const bool persistent = registry::find(kind)->persistent;
  const std::size_t n = g == Gen::long_keys ? 400 : 2000;
  const std::uint64_t seed = 11;
  auto keys = make_keys(g, n, seed);
  DiffChecker c(factory_for(kind), 64ull << 20);
  for (std::size_t i = 0; i < keys.size(); ++i) c.insert(keys[i], i);
  ASSERT_TRUE(c.check(seed));
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < 2 * keys.size(); ++i) {
    const std::string& k = keys[rng() % keys.size()];
    switch (rng() % 7) {
      case 0:
      case 1: c.remove(k); break;
      case 2: c.upsert(k, rng()); break;
      case 3: c.update(k, rng()); break;
      case 4: c.insert(k, i); break;
      case 5: c.lookup(k + std::string(1, '\0')); break;
      default: c.lookup(k.substr(0, k.size() / 2)); break;
    }
  }
  ASSERT_TRUE(c.check(seed + 1));
  if (persistent) {
    c.reopen();
    ASSERT_TRUE(c.check(seed + 2));
  }
  for (const auto& k : keys) c.remove(k);
  ASSERT_TRUE(c.check(seed + 3));
  EXPECT_EQ(c.index().stats().keys, 0u);
  for (std::size_t i = 0; i < keys.size(); i += 2) c.insert(keys[i], i);
  ASSERT_TRUE(c.check(seed + 4));
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryIndexDiff,
                         ::testing::Combine(::testing::ValuesIn(all_kinds()),
                                            ::testing::ValuesIn(kAllGens)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::string(to_string(std::get<1>(info.param)));
                         });

class EveryIndexKill : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryIndexKill, AcknowledgedWritesSurviveKill9) {
  KillReopenSpec spec;
  spec.tree = factory_for(GetParam());
  spec.keys = make_keys(Gen::random_bytes, 4000, 5);
  spec.stream = random_upserts_and_removes(spec.keys.size());
  spec.kill_after = 6000;
  kill_and_reopen(spec);
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryIndexKill, ::testing::ValuesIn(persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort::test
