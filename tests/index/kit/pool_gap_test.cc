// A pool with a gap (PoolOptions::chunk_area_offset): its chunk area, and so every block of
// its index, lies above 2^32 while the file holds only what is written (the gap is a hole).
// It creates as a file and in memory, reopens and attaches with its keys, and a header whose
// first_chunk_offset is damaged (and re-checksummed, as a crafted file would be) is refused.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "index/kit/kit_support.h"
#include "pm/allocator.h"
#include "pm/pool_layout.h"

namespace wort {
namespace {

using kittest::key_of;

constexpr std::uint64_t kAbove = (std::uint64_t{1} << 32) + (64u << 10);

PoolOptions gap_options() {
  PoolOptions o;
  o.size = 1u << 20;
  o.chunk_size = 16u << 10;
  o.kind = "wort";
  o.chunk_area_offset = kAbove;
  return o;
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          ("wort-pool-gap-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

void fill(Pool& pool, int n) {
  auto ix = Index::create(pool, "wort");
  ASSERT_TRUE(ix.ok()) << ix.error().message;
  for (int i = 0; i < n; ++i)
    ASSERT_EQ((*ix)->insert(key_of("key-" + std::to_string(i)), static_cast<Value>(i + 1)),
              Status::ok);
  EXPECT_GE(pool.root(), kAbove) << "the index root is not in the chunk area above 2^32";
}

void expect_keys(Pool& pool, int n) {
  auto ix = Index::open(pool);
  ASSERT_TRUE(ix.ok()) << ix.error().message;
  EXPECT_TRUE((*ix)->verify().ok());
  for (int i = 0; i < n; ++i)
    EXPECT_EQ((*ix)->lookup(key_of("key-" + std::to_string(i))), static_cast<Value>(i + 1));
}

TEST(PoolGap, GeometryPutsTheChunkAreaPastTheGap) {
  auto pool = Pool::create_in_memory(gap_options());
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  const pm::PoolHeader& h = (*pool)->header();
  EXPECT_EQ(h.first_chunk_offset, kAbove);
  EXPECT_EQ(h.pool_size, kAbove + (1u << 20));
  EXPECT_EQ((*pool)->size(), h.pool_size);
  const pm::PoolGap gap = pm::gap_of(h);
  EXPECT_EQ(gap.begin, pm::first_chunk_offset_for(h.chunk_count));
  EXPECT_EQ(gap.end, kAbove);
  std::uint64_t off = 0;
  ASSERT_EQ((*pool)->allocator().allocate(64, &off), Status::ok);
  EXPECT_GE(off, kAbove);
  EXPECT_TRUE((*pool)->contains(kAbove));
  EXPECT_FALSE((*pool)->contains(kAbove - 1)) << "the gap is not allocatable";
}

TEST(PoolGap, BadOffsetsAreRefusedAtCreate) {
  for (std::uint64_t bad : {kAbove + 32, std::uint64_t{4096}, std::uint64_t{1} << 50}) {
    PoolOptions o = gap_options();
    o.chunk_area_offset = bad;
    auto pool = Pool::create_in_memory(o);
    ASSERT_FALSE(pool.ok()) << bad;
    EXPECT_EQ(pool.error().code, Status::invalid_argument) << bad;
  }
}

// The file is sparse: its gap is a hole (create reserves blocks around it only), so a pool
// that spans 4 GiB of offsets takes about what its header, table and chunks take.
TEST(PoolGap, FileCreatesSparseReopensAndAttaches) {
  const std::string path = temp_path("file");
  std::filesystem::remove(path);
  {
    auto pool = Pool::create(path, gap_options());
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    fill(**pool, 500);
  }
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), kAbove + (1u << 20));
  const std::uint64_t allocated = static_cast<std::uint64_t>(st.st_blocks) * 512;
  EXPECT_LT(allocated, std::uint64_t{16} << 20) << "the gap was written or reserved";
  {
    auto pool = Pool::open(path, "wort");
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    expect_keys(**pool, 500);
  }
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_LT(static_cast<std::uint64_t>(st.st_blocks) * 512, std::uint64_t{16} << 20)
      << "open reserved the gap";
  std::filesystem::remove(path);
}

// attach() takes an image of the whole range; only its header, table and chunks are copied in
// (the rest stays untouched zero pages of an anonymous mapping).
TEST(PoolGap, InMemoryImageAttaches) {
  auto pool = Pool::create_in_memory(gap_options());
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  fill(**pool, 300);
  const std::uint64_t size = (*pool)->size();
  const pm::PoolGap gap = pm::gap_of((*pool)->header());
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* img = static_cast<std::byte*>(m);
  std::memcpy(img, (*pool)->base(), gap.begin);
  std::memcpy(img + gap.end, (*pool)->base() + gap.end, size - gap.end);
  {
    auto a = Pool::attach({img, size}, "wort");
    ASSERT_TRUE(a.ok()) << a.error().message;
    expect_keys(**a, 300);
  }
  ::munmap(m, size);
}

//! The header page of a fresh gap pool with first_chunk_offset (and pool_size, to keep them
//! consistent when `keep_size` is false) changed, and the checksum made to match.
std::vector<std::byte> crafted_header(std::uint64_t first, bool keep_size) {
  auto pool = Pool::create_in_memory(gap_options());
  EXPECT_TRUE(pool.ok());
  std::vector<std::byte> page(pm::kHeaderSize);
  std::memcpy(page.data(), (*pool)->base(), page.size());
  auto& h = *reinterpret_cast<pm::PoolHeader*>(page.data());
  if (!keep_size) h.pool_size = h.pool_size - h.first_chunk_offset + first;
  h.first_chunk_offset = first;
  h.checksum = pm::header_checksum(h);
  return page;
}

TEST(PoolGap, DamagedFirstChunkOffsetIsRefused) {
  const std::uint64_t table_end = pm::first_chunk_offset_for((1u << 20) / (16u << 10));
  struct Case {
    std::uint64_t first;
    bool keep_size;
    const char* what;
  };
  const Case cases[] = {
      {kAbove + 8, false, "not a multiple of 64"},
      {table_end - 4096, false, "inside the chunk table"},
      {kAbove + 64, true, "disagrees with the pool size"},
      {std::uint64_t{1} << 50, false, "past 1 PiB"},
      {~std::uint64_t{0} & ~std::uint64_t{4095}, false, "overflows the pool size"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto page = crafted_header(c.first, c.keep_size);
    const auto& h = *reinterpret_cast<const pm::PoolHeader*>(page.data());
    // An image as large as the header claims (capped: the claim may be absurd), zero beyond
    // the header: attach must refuse it for its geometry, before any chunk is looked at.
    const std::uint64_t size = std::min<std::uint64_t>(h.pool_size, kAbove + (2u << 20));
    void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    std::memcpy(m, page.data(), page.size());
    auto a = Pool::attach({static_cast<std::byte*>(m), size}, "wort");
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.error().code, Status::corrupt) << a.error().message;
    ::munmap(m, size);
  }
}

}  // namespace
}  // namespace wort
