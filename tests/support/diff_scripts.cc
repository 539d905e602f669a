#include "support/diff_scripts.h"

#include <cstdlib>
#include <random>

namespace wort::test {

std::size_t paper_key_count() {
#if defined(__SANITIZE_ADDRESS__)
  return 100'000;
#else
  const char* scale = std::getenv("WORT_TEST_SCALE");
  return scale != nullptr && std::string(scale) == "small" ? 100'000 : 1'000'000;  // "full" or unset
#endif
}

void insert_update_remove_half(DiffChecker& d, const std::vector<std::string>& keys,
                               std::uint64_t seed) {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    d.insert(keys[i], i);
    if (i % 1000 == 999) {
      ASSERT_TRUE(d.check(seed + i));
    }
  }
  for (std::size_t i = 0; i < keys.size(); i += 7) d.insert(keys[i], 0);  // all exist
  for (std::size_t i = 0; i < keys.size(); i += 2) d.upsert(keys[i], i * 3);
  for (std::size_t i = 1; i < keys.size(); i += 3) d.update(keys[i], i * 5);
  ASSERT_TRUE(d.check(seed + 1));
  for (std::size_t i = 0; i < keys.size(); i += 2) d.remove(keys[i]);
  for (std::size_t i = 0; i < keys.size(); i += 4) d.update(keys[i], 1);  // removed: not_found
  ASSERT_TRUE(d.check(seed + 2));
}

void bring_back_then_remove_all(DiffChecker& d, const std::vector<std::string>& keys,
                                std::uint64_t seed) {
  for (std::size_t i = 0; i < keys.size(); i += 4) d.upsert(keys[i], 7);  // some come back
  ASSERT_TRUE(d.check(seed + 3));
  for (const auto& k : keys) d.remove(k);
  for (std::size_t i = 0; i < keys.size(); i += 5) d.lookup(keys[i]);
  ASSERT_TRUE(d.check(seed + 4));
}

void random_mix(DiffChecker& d, const std::vector<std::string>& keys, std::uint64_t seed,
                int steps, int check_every, bool reopen) {
  std::mt19937_64 rng(seed);
  for (int step = 0; step < steps; ++step) {
    const std::string& k = keys[rng() % keys.size()];
    switch (rng() % 8) {
      case 0: case 1: d.insert(k, step); break;
      case 2: d.upsert(k, step); break;
      case 3: d.update(k, step); break;
      case 4: case 5: d.remove(k); break;
      default: d.lookup(k); break;
    }
    if (step % check_every == check_every - 1) {
      ASSERT_TRUE(d.check(seed + step)) << "step " << step;
      if (reopen) d.reopen();
    }
  }
  ASSERT_TRUE(d.check(seed, 200));
}

}  // namespace wort::test
