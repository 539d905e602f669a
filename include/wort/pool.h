// wort/pool.h — a pool: one file mapped in full, holding one index.
//
// Layout of the file (details in src/pm/pool_layout.h):
//   [ header 4 KiB | chunk table | (gap) | chunk 0 | chunk 1 | ... ]
// (the gap is empty unless PoolOptions::chunk_area_offset asks for one)
// The header carries magic, layout version, size, UUID, index kind and options, root
// offset, allocator state (chunk size, high-water mark), generation, clean-shutdown flag
// and a checksum over its immutable part.
//
// Persistent pointers are byte offsets from the pool base (0 = null), so a pool opens at
// any address.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>

#include "wort/status.h"

namespace wort {

namespace pm {
class Allocator;
struct PoolHeader;
}  // namespace pm

//! Options fixed when a pool is created.
struct PoolOptions {
  std::uint64_t size = 64ull << 20;          //!< bytes of chunks; rounded up to whole chunks
  //! Allocator chunk: a power of two from 4 KiB to 1 GiB, or 0 (the default) to choose from
  //! the size: the largest power of two giving at least 256 chunks, between 4 KiB and 1 MiB
  //! (so a small pool has room for every size class it needs: 1 MiB -> 4 KiB chunks), larger
  //! for pools over 16 TiB. A pool has at most 2^24 chunks (the allocator keeps ~40 bytes
  //! of DRAM per chunk while the pool is open): create refuses a smaller chunk_size.
  std::uint32_t chunk_size = 0;
  std::string kind;                          //!< index kind stored in the header ("wort")
  std::array<std::uint64_t, 4> index_options{};  //!< opaque to the pool, for the index
  //! Every value the index stores names a pool block that the application allocated (the
  //! server's items): the recovery trace then keeps those blocks too. Fixed at create.
  bool values_are_blocks = false;
  //! Where the chunk area starts, in bytes from the pool's base: 0 (the default) puts it right
  //! after the chunk table; otherwise a multiple of 64 at or past the chunk table's end,
  //! and the bytes between are a gap nobody writes (a hole of a sparse file, never reserved
  //! with posix_fallocate; untouched pages of an in-memory pool). pool_size is then
  //! chunk_area_offset + chunks x chunk_size. For tests whose blocks must lie at real-pool
  //! offsets (above 2^32: tests/crash, crashsim::Options::chunk_area_offset); at most 1 PiB.
  std::uint64_t chunk_area_offset = 0;
};

//! How the pool file is mapped (reported, not chosen: libpmem2 decides).
struct MappingInfo {
  bool dax = false;       //!< the file is on a DAX file system
  bool map_sync = false;  //!< mapped with MAP_SYNC
  bool eadr = false;      //!< the platform flushes caches on power failure
  bool in_memory = false; //!< an anonymous or borrowed buffer, not a file
};

class Pool {
 public:
  //! Creates a new pool file (fails with io_error if it exists or cannot be written).
  static Result<std::unique_ptr<Pool>> create(const std::string& path, const PoolOptions& opts);
  //! Opens an existing pool. If `expected_kind` is non-empty and differs from the stored
  //! kind, fails with wrong_kind. Every bad file gets its own Status and a message.
  static Result<std::unique_ptr<Pool>> open(const std::string& path,
                                            std::string_view expected_kind = {});
  //! Creates a pool in anonymous DRAM (tests, benchmarks on no file).
  static Result<std::unique_ptr<Pool>> create_in_memory(const PoolOptions& opts);
  //! Opens a pool image held in a caller-owned buffer (a crash image); the buffer must
  //! outlive the Pool and be 64-byte aligned. Same checks as open(). Messages name the pool
  //! `name` (`wort check`: the file it copied), "<image at 0x...>" when it is empty.
  static Result<std::unique_ptr<Pool>> attach(std::span<std::byte> image,
                                              std::string_view expected_kind = {},
                                              std::string_view name = {});

  ~Pool();  //!< records a clean shutdown and unmaps
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  //! Deleting a Pool (its unique_ptr let go) while an Index handle made on it by
  //! Index::create / Index::open still lives only marks it: the pool stays mapped, locked
  //! and usable through that handle, and is closed when the handle is destroyed. So an
  //! index can never outlive the memory it points into, whatever order the two go in.
  static void operator delete(Pool* p, std::destroying_delete_t);
  //! The allocation the operator delete above frees (the global one), and its plain
  //! counterpart (a new-expression whose constructor throws frees with it).
  static void* operator new(std::size_t n) { return ::operator new(n); }
  static void operator delete(void* p) noexcept { ::operator delete(p); }

  std::byte* base() const noexcept { return base_; }
  std::uint64_t size() const noexcept { return size_; }

  //! Pointer for a non-null offset.
  template <class T>
  T* at(std::uint64_t off) const noexcept { return reinterpret_cast<T*>(base_ + off); }
  //! Offset of a pointer into the pool.
  std::uint64_t offset_of(const void* p) const noexcept {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - base_);
  }
  //! True if [off, off+len) lies inside the allocatable area.
  bool contains(std::uint64_t off, std::uint64_t len = 1) const noexcept;

  //! The index root offset (0 until an index is created).
  std::uint64_t root() const noexcept;
  //! Commits the root offset: pm::publish (a fence orders the anchor's pending write-back,
  //! then one 8-byte commit store). The create commit of every index.
  void set_root(std::uint64_t off) noexcept;
  //! PoolOptions::values_are_blocks as stored at create.
  bool values_are_blocks() const noexcept;

  std::string_view kind() const noexcept;
  const std::array<std::uint64_t, 4>& index_options() const noexcept;
  std::uint64_t generation() const noexcept;   //!< bumped on every open
  bool was_clean_shutdown() const noexcept;    //!< the previous close was clean
  std::array<std::byte, 16> uuid() const noexcept;
  const MappingInfo& mapping() const noexcept { return mapping_; }

  pm::Allocator& allocator() noexcept { return *alloc_; }
  const pm::Allocator& allocator() const noexcept { return *alloc_; }

  const pm::PoolHeader& header() const noexcept;

  struct Impl;  // mapping handles (libpmem2 objects, fd, anonymous buffer)

 private:
  friend struct IndexClaim;  // Index::create / Index::open: one handle per Pool
  //! Takes the one index-handle claim; false if a handle holds it already.
  bool claim_for_index() noexcept;
  //! Gives the claim back, and destroys the Pool if its owner deleted it meanwhile.
  static void release_index_claim(Pool* p) noexcept;
  //! Runs the destructor and frees the memory (what `delete` does without a live handle).
  static void destroy(Pool* p) noexcept;

  Pool();
  std::byte* base_ = nullptr;
  std::uint64_t size_ = 0;
  MappingInfo mapping_;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<pm::Allocator> alloc_;
};

}  // namespace wort
