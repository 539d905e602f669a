// tests/server/server_store.h — the server's Store (src/server/store.h) under the names the
// server's tests use.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "server/store.h"

namespace wort::test {

using server::Store;
using server::StoreMode;
using server::StoreOptions;
using server::StoreResult;

//! A Store on a new pool file at `path` (an old one removed first) of `mib` MiB for index
//! `kind`, on the global-lock path or not; nullptr, and a test failure, if it does not open.
inline std::unique_ptr<Store> open_new_store(const std::string& path, const std::string& kind,
                                             std::uint64_t mib, bool global_lock) {
  std::filesystem::remove(path);
  StoreOptions o;
  o.pool_path = path;
  o.kind = kind;
  o.pool_bytes = mib << 20;
  o.global_lock = global_lock;
  auto s = Store::open(o);
  EXPECT_TRUE(bool(s)) << (s ? "" : s.error().message);
  return s ? std::move(s).value() : nullptr;
}

}  // namespace wort::test
