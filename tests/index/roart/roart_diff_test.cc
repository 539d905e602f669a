// ROART against std::map on the ROART paper's key shape: random bytes, 4..128 long
// (paper_key_count() / 5 keys). Every other differential test of ROART (every key
// generator with each of LC, EC, SMP, MO turned off, the WORT paper's sets, long keys, a
// full pool) is the conformance suite's (tests/conformance/, its row in kinds.h).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/roart/roart_tree.h"
#include "support/diff_harness.h"
#include "support/diff_scripts.h"

namespace wort {
namespace {

// Insert, remove a third, reopen.
TEST(RoartDiff, RandomKeys4To128Bytes) {
  const std::size_t n = test::paper_key_count() / 5;
  std::mt19937_64 rng(128);
  test::DiffChecker d(crashsim::factory_of<roart::Roart>(), 512ull << 20);
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < n; ++i) {
    std::string k(4 + rng() % 125, '\0');
    for (char& c : k) c = static_cast<char>(rng());
    keys.push_back(std::move(k));
  }
  for (std::size_t i = 0; i < n; ++i) d.upsert(keys[i], i);
  ASSERT_TRUE(d.check(1, 32));
  for (std::size_t i = 0; i < n; i += 3) d.remove(keys[i]);
  d.reopen();
  ASSERT_TRUE(d.check(2, 32));
}

}  // namespace
}  // namespace wort
