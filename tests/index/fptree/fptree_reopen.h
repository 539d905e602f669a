// tests/index/fptree/fptree_reopen.h — what the FPTree recovery and leaf-group tests share: reopen a
// tree from a copy of its pool's bytes, as after a crash (no clean shutdown), so open()
// runs recovery.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include "index/fptree/fptree_tree.h"
#include "wort/pool.h"

namespace wort::test {

struct FreeAligned {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedImage = std::unique_ptr<std::byte, FreeAligned>;

//! Copies `pool`'s bytes into a new `image` (the caller dropped the tree first), drops the
//! old pool, attaches the copy as `pool` and opens the tree on it: recovery runs.
inline Result<std::unique_ptr<FPTree>> reopen_from_copy(std::unique_ptr<Pool>& pool,
                                                                      AlignedImage& image) {
  const std::uint64_t size = pool->size();
  AlignedImage copy(static_cast<std::byte*>(std::aligned_alloc(4096, size)));
  std::memcpy(copy.get(), pool->base(), size);
  pool.reset();
  image = std::move(copy);
  auto p = Pool::attach({image.get(), size}, "fptree");
  EXPECT_TRUE(p.ok()) << p.error().message;
  if (!p) return p.error();
  pool = std::move(p).value();
  return FPTree::open(*pool);
}

}  // namespace wort::test
