// tests/support/diff_harness.h — runs an index side by side with std::map, "a reference
// that always tells the truth" (abseil base_checker, rax fuzzTest). Every mutating call is
// applied to both and the results compared; check() compares the whole contents (lookup of
// every key, scan, range), runs verify() and the allocator audit.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "crashsim/harness.h"
#include "wort/index.h"
#include "wort/pool.h"

namespace wort::test {

class DiffChecker {
 public:
  //! An index from `factory` in a fresh in-memory pool of `pool_size` bytes.
  explicit DiffChecker(const crashsim::Factory& factory, std::uint64_t pool_size = 256ull << 20,
                       std::uint32_t chunk_size = 1u << 20);

  Index& index() { return *index_; }
  Pool& pool() { return *pool_; }
  const std::map<std::string, Value>& reference() const { return ref_; }

  // Each applies the operation to both and EXPECTs the same outcome.
  void insert(const std::string& k, Value v);
  void upsert(const std::string& k, Value v);
  void update(const std::string& k, Value v);
  void remove(const std::string& k);
  void lookup(const std::string& k);

  //! Full comparison: every key looked up, a full scan, scans and ranges from `probes`
  //! random points, verify(), allocator audit. Returns false (after ADD_FAILUREs) on a
  //! mismatch; stops reporting after the first few.
  bool check(std::uint64_t seed = 1, std::size_t probes = 32);

  //! Drops the index, copies the pool's bytes as they are (as after a crash without a clean
  //! shutdown), drops the pool and opens the index on the copy (runs recovery).
  void reopen();

 private:
  crashsim::Factory factory_;
  struct FreeAligned {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, FreeAligned> image_;  // backing memory after reopen()
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Index> index_;
  std::map<std::string, Value> ref_;
};

}  // namespace wort::test
