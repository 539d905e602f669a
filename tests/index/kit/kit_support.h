// tests/index/kit/kit_support.h — what the registry-wide kit tests share: the persistent kinds, a
// mixed key set, a temporary pool file.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "index/registry.h"
#include "pm/allocator.h"
#include "wort/index.h"
#include "wort/key.h"
#include "wort/pool.h"

namespace wort::kittest {

//! Every registered index that keeps its data in the pool (every kind a new index folder
//! registers joins these tests).
inline std::vector<std::string> persistent_kinds() {
  std::vector<std::string> out;
  for (const registry::Entry* e : registry::all())
    if (e->persistent) out.push_back(e->name);
  return out;
}

//! Keys of every shape the indexes must handle: 8-byte integers, short and long strings,
//! keys that are prefixes of others, embedded and trailing zero bytes, the empty key.
inline std::vector<std::string> mixed_keys(std::size_t n) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  auto add = [&](std::string k) {
    if (seen.insert(k).second) keys.push_back(std::move(k));
  };
  add("");  // the empty key
  for (std::size_t i = 0; keys.size() < n; ++i) {
    switch (i % 5) {
      case 0: {
        const std::uint64_t v = i * 0x9e3779b97f4a7c15ull;
        std::string k(8, '\0');
        for (int b = 0; b < 8; ++b) k[b] = static_cast<char>(v >> (56 - 8 * b));
        add(k);
        break;
      }
      case 1: add("user:" + std::to_string(i)); break;
      case 2: add("user:" + std::to_string(i / 50)); break;  // prefixes of case 1
      case 3: add(std::string(40 + i % 60, static_cast<char>('a' + i % 26)) + std::to_string(i)); break;
      default: add(std::string("z\0", 2) + std::to_string(i) + std::string(i % 3, '\0'));
    }
  }
  return keys;
}

inline Key key_of(const std::string& s) { return as_key(s); }

//! A fresh path under the test's temporary directory, removed with the object.
class TempPath {
 public:
  explicit TempPath(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("wort-kit-" + std::to_string(::getpid()) + "-" + name)) {
    std::filesystem::remove(path_);
  }
  ~TempPath() { std::filesystem::remove(path_); }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

//! The allocator's audit of `pool` against the blocks `ix` reaches is clean.
inline void expect_audit_clean(Pool& pool, Index& ix) {
  const pm::AuditReport a =
      pool.allocator().audit([&](pm::BlockVisitor bv) { return ix.visit_blocks(bv); });
  EXPECT_TRUE(a.ok()) << a.describe();
}

}  // namespace wort::kittest
