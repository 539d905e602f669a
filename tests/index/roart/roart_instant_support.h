// tests/index/roart/roart_instant_support.h — what the instant-restart tests share (the threaded
// ones in roart_instant_concurrency_test.cc, the forking ones in roart_instant_test.cc): a
// scratch directory, a ROART pool, the audit, and a pool built with keys and leaked blocks.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "index/roart/roart_tree.h"
#include "pm/allocator.h"
#include "wort/pool.h"

namespace wort::test::roart_instant {

using roart::Roart;
namespace fs = std::filesystem;

//! Where the scratch directories go: /dev/shm, else the system's temporary directory.
inline fs::path temp_base() {
  const char* shm = "/dev/shm";
  return fs::exists(shm) ? fs::path(shm) : fs::temp_directory_path();
}

struct TempDir {
  fs::path dir;
  explicit TempDir(const std::string& name) {
    dir = temp_base() / ("roart_instant_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string pool() const { return (dir / "pool").string(); }
};

//! Removes the TempDirs of `name` whose process has ended: a death test's child that aborts
//! (as it is meant to) never runs its TempDir's destructor.
inline void remove_orphaned(const std::string& name) {
  const std::string prefix = "roart_instant_" + name + "_";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(temp_base(), ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(f.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      fs::remove_all(e.path(), ec);
  }
}

inline std::unique_ptr<Pool> create_pool(const std::string& path, std::uint64_t size) {
  PoolOptions o;
  o.size = size;
  o.kind = std::string(Roart::kKind);
  auto p = Pool::create(path, o);
  EXPECT_TRUE(p) << p.error().message;
  return p ? std::move(*p) : nullptr;
}

inline pm::AuditReport audit(Pool& pool, const Roart& t) {
  return pool.allocator().audit([&](pm::BlockVisitor v) { return t.visit_blocks(v); });
}

//! A pool holding keys[0..n) (value i), plus `leaked` blocks allocated and never linked (what
//! a crash between an allocation and its commit leaves): the trace must reclaim them.
inline void build(const std::string& path, const std::vector<std::string>& keys, std::size_t n,
           unsigned leaked, std::uint64_t size = 64ull << 20) {
  auto pool = create_pool(path, size);
  ASSERT_TRUE(pool);
  auto t = Roart::create(*pool, IndexOptions{});
  ASSERT_TRUE(t);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ((*t)->insert(as_key(keys[i]), i), Status::ok);
  for (unsigned i = 0; i < leaked; ++i) {
    std::uint64_t off;
    ASSERT_EQ(pool->allocator().allocate(64 + 64 * (i % 4), &off), Status::ok);
  }
}

//! The checks of a scenario run two ways: as a test (each must hold: EXPECT_TRUE) or on a
//! broken variant (the first one that fails is printed as what caught it; ok() says whether
//! all held, which the broken variant's test expects to be false).
class ScenarioChecks {
 public:
  explicit ScenarioChecks(bool expect_ok) : expect_ok_(expect_ok) {}
  bool operator()(bool c, const std::string& what) {
    if (!c && ok_ && !expect_ok_)
      std::printf("[roart instant] broken variant caught: %s\n", what.c_str());
    if (!c) ok_ = false;
    if (expect_ok_) {
      EXPECT_TRUE(c) << what;
    }
    return c;
  }
  bool ok() const { return ok_; }

 private:
  bool expect_ok_;
  bool ok_ = true;
};

}  // namespace wort::test::roart_instant
