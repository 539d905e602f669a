// tests/support/diff_scripts.h — operation scripts the differential tests (the conformance suite and tests/index/<kind>/) run
// over any index through a DiffChecker, so art, woart and artcow go through the same steps.
// Each function uses gtest ASSERTs: call it inside ASSERT_NO_FATAL_FAILURE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "support/diff_harness.h"

namespace wort::test {

//! Size of the paper's Dense/Sparse/Clustered sets: 1M keys, 100k under ASan or with
//! WORT_TEST_SCALE=small.
std::size_t paper_key_count();

//! Inserts every key (checking every 1000), re-inserts some (all exist), upserts, updates,
//! then removes every second key and updates removed ones (not_found), checking after each.
void insert_update_remove_half(DiffChecker& d, const std::vector<std::string>& keys,
                               std::uint64_t seed);

//! Brings a quarter of the keys back, removes every key, looks some up, and checks.
void bring_back_then_remove_all(DiffChecker& d, const std::vector<std::string>& keys,
                                std::uint64_t seed);

//! `steps` random insert/upsert/update/remove/lookup calls over `keys` (a small universe, so
//! they keep hitting present keys), a check every `check_every` steps (then a reopen when
//! `reopen` is set), and a final check with 200 probes.
void random_mix(DiffChecker& d, const std::vector<std::string>& keys, std::uint64_t seed,
                int steps, int check_every, bool reopen);

}  // namespace wort::test
