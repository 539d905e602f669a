// pm/pool.cc — creating, opening and checking pool files; the mapping (libpmem2 for
// files, anonymous memory for in-memory pools, a borrowed buffer for crash images).
#include "wort/pool.h"

#include <fcntl.h>
#include <libpmem2.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include "pm/allocator.h"
#include "pm/chunk_size.h"
#include "pm/chunk_table.h"
#include "pm/persist.h"
#include "pm/pool_layout.h"
#include "pm/size_classes.h"

// GCC 12 takes the destroying operator delete (pool.h) that a unique_ptr<Pool> calls for a
// mismatch with the class's operator new, in the functions here that make a Pool with `new`
// and may destroy it on an error path. They pair: the destroying delete frees with the
// global operator delete, which the class's operator new allocates with.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace wort {

using pm::PoolHeader;

struct Pool::Impl {
  std::string name;  // file path, or a description of the memory, for messages
  int fd = -1;
  pmem2_source* src = nullptr;
  pmem2_config* cfg = nullptr;
  pmem2_map* map = nullptr;
  void* anon = nullptr;  // create_in_memory
  std::size_t anon_size = 0;
  bool prev_clean = false;  // clean_shutdown as found at open
  // One Index handle at a time, and a Pool deleted under a live handle (see pool.h).
  std::mutex claim_lock;
  bool index_claimed = false;
  bool owner_deleted = false;

  ~Impl() {
    if (map) pmem2_map_delete(&map);
    if (src) pmem2_source_delete(&src);
    if (cfg) pmem2_config_delete(&cfg);
    if (fd >= 0) ::close(fd);
    if (anon) ::munmap(anon, anon_size);
  }
};

namespace {

std::string errno_text(int e) { return std::strerror(e); }

std::string pmem2_text() {
  const char* m = pmem2_errormsg();
  return m && *m ? m : "libpmem2 error";
}

PoolHeader* header_of(std::byte* base) { return reinterpret_cast<PoolHeader*>(base); }

//! Most chunks a pool may have: the allocator keeps ~40 bytes of DRAM per chunk while the
//! pool is open (an 8 TiB pool of 4 KiB chunks, 2^31 of them, would need 80 GiB of it).
constexpr std::uint64_t kMaxChunkCount = 1ull << 24;


//! Puts the chunk area of `g` (chunk_count known) where PoolOptions::chunk_area_offset
//! asks, or right after the chunk table, and sets the pool size.
Result<void> place_chunk_area(const PoolOptions& o, pm::PoolGeometry& g) {
  const std::uint64_t table_end = pm::first_chunk_offset_for(g.chunk_count);
  g.first_chunk_offset = o.chunk_area_offset == 0 ? table_end : o.chunk_area_offset;
  if (g.first_chunk_offset % pm::kChunkAreaAlign != 0 || g.first_chunk_offset < table_end ||
      g.first_chunk_offset >= pm::kMaxPoolBytes)
    return Error{Status::invalid_argument,
                 "chunk_area_offset " + std::to_string(o.chunk_area_offset) +
                     " must be a multiple of 64 from the chunk table's end (" +
                     std::to_string(table_end) + ") to below 1 PiB"};
  g.pool_size = g.first_chunk_offset + g.chunk_count * o.chunk_size;
  if (g.pool_size > pm::kMaxPoolBytes)
    return Error{Status::invalid_argument, "chunk_area_offset " +
                                               std::to_string(o.chunk_area_offset) +
                                               " makes the pool larger than 1 PiB"};
  return {};
}

//! Checks the options and derives the file geometry (fills in an automatic chunk size).
Result<pm::PoolGeometry> plan_geometry(PoolOptions& o) {
  if (o.chunk_size == 0) o.chunk_size = pm::auto_chunk_size(o.size);
  if (!std::has_single_bit(o.chunk_size) || o.chunk_size < pm::kMinChunkSize ||
      o.chunk_size > pm::kMaxChunkSize)
    return Error{Status::invalid_argument,
                 "chunk_size " + std::to_string(o.chunk_size) +
                     " must be a power of two between 4 KiB and 1 GiB"};
  if (o.kind.empty() || o.kind.size() >= pm::kKindCapacity ||
      o.kind.find('\0') != std::string::npos)
    return Error{Status::invalid_argument,
                 "index kind '" + o.kind + "' must be 1 to 31 characters"};
  if (o.size == 0 || o.size > pm::kMaxPoolBytes)
    return Error{Status::invalid_argument, "pool size " + std::to_string(o.size) +
                                               " must be between 1 byte and 1 PiB"};
  pm::PoolGeometry g{};
  g.chunk_count = (o.size + o.chunk_size - 1) / o.chunk_size;
  if (g.chunk_count > kMaxChunkCount)
    return Error{Status::invalid_argument,
                 "pool size " + std::to_string(o.size) + " in chunks of " +
                     std::to_string(o.chunk_size) + " bytes makes " +
                     std::to_string(g.chunk_count) + " chunks; at most " +
                     std::to_string(kMaxChunkCount) + " (each takes DRAM while the pool is "
                     "open): choose a larger chunk_size, or 0 for an automatic one"};
  g.chunk_table_offset = pm::kHeaderSize;
  if (auto r = place_chunk_area(o, g); !r) return r.error();
  return g;
}

std::array<std::byte, 16> random_uuid() {
  std::random_device rd;
  std::array<std::byte, 16> u;
  for (std::size_t i = 0; i < u.size(); i += 4) {
    const std::uint32_t r = rd();
    std::memcpy(&u[i], &r, 4);
  }
  u[6] = (u[6] & std::byte{0x0f}) | std::byte{0x40};  // version 4 (random)
  u[8] = (u[8] & std::byte{0x3f}) | std::byte{0x80};  // RFC 4122 variant
  return u;
}

//! Writes a fresh header into zeroed memory: every field, persisted, then the magic last.
void write_new_header(std::byte* base, const pm::PoolGeometry& g, const PoolOptions& o) {
  PoolHeader* h = header_of(base);
  pm::store(&h->layout_version, pm::kLayoutVersion);
  pm::store(&h->header_size, pm::kHeaderSize);
  pm::store(&h->pool_size, g.pool_size);
  const auto uuid = random_uuid();
  pm::copy(h->uuid, uuid.data(), uuid.size());
  char kind[pm::kKindCapacity] = {};
  std::memcpy(kind, o.kind.data(), o.kind.size());
  pm::copy(h->kind, kind, sizeof kind);
  for (int i = 0; i < 4; ++i) pm::store(&h->index_options[i], o.index_options[i]);
  pm::store(&h->chunk_size, std::uint64_t{o.chunk_size});
  pm::store(&h->chunk_count, g.chunk_count);
  pm::store(&h->chunk_table_offset, g.chunk_table_offset);
  pm::store(&h->first_chunk_offset, g.first_chunk_offset);
  pm::store(&h->flags, o.values_are_blocks ? pm::kFlagValuesAreBlocks : std::uint64_t{0});
  pm::store(&h->checksum, pm::header_checksum(*h));
  pm::store(&h->root, std::uint64_t{0});
  pm::store(&h->chunk_hwm, std::uint64_t{0});
  pm::store(&h->generation, std::uint64_t{1});
  pm::store(&h->clean_shutdown, std::uint64_t{0});
  pm::persist(h, sizeof *h);
  pm::store_persist(&h->magic, pm::kPoolMagic);
}

Error bad(Status s, const std::string& name, const std::string& what) {
  return Error{s, "pool '" + name + "': " + what};
}

//! Checks the immutable fields that define the geometry (after the checksum matched).
Result<void> check_geometry(const PoolHeader& h, const std::string& name) {
  if (h.header_size != pm::kHeaderSize)
    return bad(Status::corrupt, name, "header size " + std::to_string(h.header_size) +
                                          " is not " + std::to_string(pm::kHeaderSize));
  if (!std::has_single_bit(h.chunk_size) || h.chunk_size < pm::kMinChunkSize ||
      h.chunk_size > pm::kMaxChunkSize)
    return bad(Status::corrupt, name, "chunk size " + std::to_string(h.chunk_size) + " is invalid");
  // Bound the count before any arithmetic on it (a crafted header must not overflow).
  // The chunk area starts at the table's end or (a pool with a gap) at a multiple of 64
  // past it, below 1 PiB: with the count bounded too, the sum below cannot overflow.
  if (h.chunk_count == 0 || h.chunk_count > pm::kMaxPoolBytes / h.chunk_size ||
      h.chunk_table_offset != pm::kHeaderSize ||
      h.first_chunk_offset < pm::first_chunk_offset_for(h.chunk_count) ||
      h.first_chunk_offset % pm::kChunkAreaAlign != 0 ||
      h.first_chunk_offset >= pm::kMaxPoolBytes ||
      h.pool_size != h.first_chunk_offset + h.chunk_count * h.chunk_size)
    return bad(Status::corrupt, name,
               "chunk count, chunk table or pool size do not agree (" +
                   std::to_string(h.chunk_count) + " chunks of " + std::to_string(h.chunk_size) +
                   " from offset " + std::to_string(h.first_chunk_offset) + ", pool size " +
                   std::to_string(h.pool_size) + ")");
  if (h.kind[pm::kKindCapacity - 1] != '\0' || h.kind[0] == '\0')
    return bad(Status::corrupt, name, "index kind field is not a terminated name");
  return {};
}

//! Checks the mutable words by range (they are not under the checksum; see pool_layout.h).
Result<void> check_mutable(const PoolHeader& h, const std::string& name) {
  if (h.root != 0 && (h.root < h.first_chunk_offset || h.root >= h.pool_size))
    return bad(Status::corrupt, name,
               "root offset " + std::to_string(h.root) + " lies outside the chunk area [" +
                   std::to_string(h.first_chunk_offset) + ", " + std::to_string(h.pool_size) + ")");
  if (h.chunk_hwm > h.chunk_count)
    return bad(Status::corrupt, name,
               "chunk high-water mark " + std::to_string(h.chunk_hwm) + " exceeds chunk count " +
                   std::to_string(h.chunk_count));
  if (h.clean_shutdown > 1)
    return bad(Status::corrupt, name,
               "clean-shutdown flag is " + std::to_string(h.clean_shutdown) + ", not 0 or 1");
  // The generation counts opens from 1, and lock words carry it shifted left by up to 10
  // bits (index/kit/gen_lock.h, art_engine/node_lock.h): a damaged one past 2^40 (a
  // million opens a second for 35 years) would wrap there and turn every lock off.
  if (h.generation == 0 || h.generation >= pm::kMaxGeneration)
    return bad(Status::corrupt, name,
               "generation " + std::to_string(h.generation) + " is out of range (1 to 2^40)");
  return {};
}

//! The checks of the header page alone, in the order that gives the most useful answer;
//! `avail` is the size of the whole file or image.
Result<void> check_header_page(const PoolHeader& h, std::uint64_t avail, const std::string& name,
                               std::string_view expected_kind) {
  if (h.magic != pm::kPoolMagic)
    return bad(Status::not_a_pool, name,
               h.magic == 0 ? "no pool magic (not a pool, or its creation did not finish)"
                            : "wrong magic number: not a wort pool");
  if (h.layout_version > pm::kLayoutVersion)
    return bad(Status::newer_version, name,
               "layout version " + std::to_string(h.layout_version) +
                   " is newer than this build reads (" + std::to_string(pm::kLayoutVersion) + ")");
  if (h.layout_version == 0)
    return bad(Status::corrupt, name, "layout version 0");
  if (pm::header_checksum(h) != h.checksum)
    return bad(Status::corrupt, name, "header checksum mismatch");
  if (h.layout_version >= 2 && (h.flags & ~pm::kKnownFlags) != 0)
    return bad(Status::newer_version, name, "unknown header flags " + std::to_string(h.flags));
  if (auto r = check_geometry(h, name); !r) return r;
  if (h.pool_size > avail)
    return bad(Status::truncated, name,
               std::to_string(avail) + " bytes, shorter than the recorded pool size " +
                   std::to_string(h.pool_size));
  if (auto r = check_mutable(h, name); !r) return r;
  const std::string_view kind(h.kind);
  if (!expected_kind.empty() && kind != expected_kind)
    return bad(Status::wrong_kind, name,
               "holds index kind '" + std::string(kind) + "', not '" + std::string(expected_kind) +
                   "'");
  return {};
}

//! A file or image shorter than the header: truncated if it starts as a pool does (with
//! the magic, or as much of it as there is), else not a pool at all, whatever its size.
Error short_header(const std::byte* bytes, std::uint64_t avail, const std::string& name) {
  const std::uint64_t magic = pm::kPoolMagic;
  const std::size_t n = std::min<std::size_t>(avail, sizeof magic);
  if (avail == 0) return bad(Status::not_a_pool, name, "an empty file (0 bytes), not a pool");
  if (std::memcmp(bytes, &magic, n) != 0)
    return bad(Status::not_a_pool, name, "no pool magic: not a wort pool (" +
                                             std::to_string(avail) + " bytes)");
  return bad(Status::truncated, name,
             "only " + std::to_string(avail) + " bytes, shorter than the 4096-byte header");
}

//! Every check open() and attach() make: the header page, then the chunk table.
Result<void> check_header(const std::byte* base, std::uint64_t avail, const std::string& name,
                          std::string_view expected_kind) {
  if (avail < pm::kHeaderSize) return short_header(base, avail, name);
  const auto& h = *reinterpret_cast<const PoolHeader*>(base);
  if (auto r = check_header_page(h, avail, name, expected_kind); !r) return r;
  std::string why;
  if (!pm::validate_chunk_table(base, h, why)) return bad(Status::corrupt, name, why);
  return {};
}

//! Maps an open file in full with libpmem2 and reports what kind of mapping it gave.
Result<void> map_file(Pool::Impl& im, std::byte** base, MappingInfo& info) {
  if (pmem2_source_from_fd(&im.src, im.fd) != 0)
    return Error{Status::io_error, "pool '" + im.name + "': " + pmem2_text()};
  if (pmem2_config_new(&im.cfg) != 0)
    return Error{Status::io_error, "pool '" + im.name + "': " + pmem2_text()};
  // PAGE is the coarsest granularity, which every mapping satisfies; libpmem2 still gives
  // the finest it can (MAP_SYNC on DAX) and reports it, which is what we want to know.
  if (pmem2_config_set_required_store_granularity(im.cfg, PMEM2_GRANULARITY_PAGE) != 0)
    return Error{Status::io_error, "pool '" + im.name + "': " + pmem2_text()};
  if (pmem2_map_new(&im.map, im.cfg, im.src) != 0)
    return Error{Status::io_error, "pool '" + im.name + "': cannot map: " + pmem2_text()};
  *base = static_cast<std::byte*>(pmem2_map_get_address(im.map));
  switch (pmem2_map_get_store_granularity(im.map)) {
    case PMEM2_GRANULARITY_BYTE: info.dax = info.map_sync = info.eadr = true; break;
    case PMEM2_GRANULARITY_CACHE_LINE: info.dax = info.map_sync = true; break;
    default: break;
  }
  return {};
}

//! Takes the pool's exclusive lock (flock: held by the open file description, so a second
//! open in this process conflicts too, and a killed process releases it).
Result<void> lock_file(int fd, const std::string& path) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return {};
  const int e = errno;
  if (e == EWOULDBLOCK)
    return Error{Status::in_use, "pool '" + path +
                                     "' is in use: another process (or another Pool in this "
                                     "process) has it open"};
  return Error{Status::io_error, "cannot lock pool '" + path + "': " + errno_text(e)};
}

//! The gap of a pool about to be created (pm::gap_of reads it from a header).
pm::PoolGap gap_of(const pm::PoolGeometry& g) {
  return pm::PoolGap{pm::first_chunk_offset_for(g.chunk_count), g.first_chunk_offset};
}

//! Reserves the file's blocks (posix_fallocate) except the gap before the chunk area, which
//! stays a hole: nothing is ever stored there. 0, or the error number.
int reserve_space(int fd, const pm::PoolGap& gap, std::uint64_t pool_size) {
  const auto reserve = [fd](std::uint64_t from, std::uint64_t to) {
    if (to <= from) return 0;
    const int e = ::posix_fallocate(fd, static_cast<off_t>(from), static_cast<off_t>(to - from));
    return e == EOPNOTSUPP || e == EINVAL ? 0 : e;  // a filesystem without it: nothing to do
  };
  if (const int e = reserve(0, gap.begin); e != 0) return e;
  return reserve(gap.end, pool_size);
}

//! Records a new session: bumps the generation (by kGenerationStep: pool_layout.h says why)
//! and clears the clean flag (one line).
void start_session(PoolHeader* h) {
  pm::store(&h->generation, h->generation + pm::kGenerationStep);
  pm::store(&h->clean_shutdown, std::uint64_t{0});
  pm::persist(&h->generation, 2 * sizeof(std::uint64_t));
}

//! Gives the new pool file its name, refusing to replace a file that appeared meanwhile: an
//! unnamed (O_TMPFILE) file is linked through /proc/self/fd, or without /proc with
//! AT_EMPTY_PATH (which needs CAP_DAC_READ_SEARCH); a temporary name is renamed. False with
//! errno set.
bool name_new_file(int fd, const std::string& tmp, const std::string& path) {
  if (!tmp.empty())
    return ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0;
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0)
    return true;
  if (errno != ENOENT || ::access("/proc/self/fd", F_OK) == 0) return false;
  return ::linkat(fd, "", AT_FDCWD, path.c_str(), AT_EMPTY_PATH) == 0;
}

//! The directory a new pool at `path` goes in: refused if a file (or a link) is at `path`
//! already, or if the directory is missing or not a directory.
Result<std::string> creation_dir(const std::string& path) {
  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0)
    return Error{Status::io_error, "cannot create pool '" + path + "': " + errno_text(EEXIST)};
  std::string dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  struct stat dir_st {};
  if (const bool found = ::stat(dir.c_str(), &dir_st) == 0; !found || !S_ISDIR(dir_st.st_mode)) {
    const int e = found ? ENOTDIR : errno;
    return Error{e == ENOENT ? Status::no_such_file : Status::io_error,
                 "cannot create pool '" + path + "': its directory '" + dir + "': " + errno_text(e)};
  }
  return dir;
}

//! A new file for the pool at `path`, without a name (O_TMPFILE in `dir`), or, where the
//! filesystem has no O_TMPFILE, under a temporary name stored in `*tmp`. -1 (errno set) on
//! failure.
int open_unnamed(const std::string& dir, const std::string& path, std::string* tmp) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    *tmp = path + ".creating.XXXXXX";
    fd = ::mkostemp(tmp->data(), O_CLOEXEC);
    if (fd >= 0) ::fchmod(fd, 0644);
  }
  return fd;
}

}  // namespace

Pool::Pool() = default;

Pool::~Pool() {
  alloc_.reset();
  if (base_) {
    PoolHeader* h = header_of(base_);
    pm::store_persist(&h->clean_shutdown, std::uint64_t{1});
  }
  // impl_ unmaps and closes.
}

//! Creates a pool the way a crash cannot leave half made: the file is built without a name
//! (O_TMPFILE in the pool's directory: sized, its space reserved, the header persisted) and
//! only then linked at `path`, with a link that refuses to replace an existing file. A crash
//! before that leaves no file at all: the unnamed file goes with the last descriptor. On a
//! filesystem without O_TMPFILE the file is built under a temporary name
//! (`NAME.creating.XXXXXX`), which a crash leaves behind. The space is reserved with
//! posix_fallocate: a sparse file on a filesystem without room for it (a small tmpfs) would
//! otherwise fail later, as a SIGBUS at the first store to a page that cannot be allocated.
Result<std::unique_ptr<Pool>> Pool::create(const std::string& path, const PoolOptions& options) {
  PoolOptions opts = options;
  auto geom = plan_geometry(opts);
  if (!geom) return geom.error();
  if (path.empty()) return Error{Status::invalid_argument, "cannot create a pool: the path is empty"};
  auto dir = creation_dir(path);
  if (!dir) return dir.error();
  std::string tmp;  // the temporary name, when O_TMPFILE was not available
  const int fd = open_unnamed(*dir, path, &tmp);
  if (fd < 0)
    return Error{Status::io_error, "cannot create pool '" + path + "': " + errno_text(errno)};
  // The Pool object is made only when the file is whole and named: until then the mapping
  // lives in `im` alone, and every failure below unmaps, closes and removes what it made
  // (a Pool's destructor writes the clean-shutdown flag, which a half-made file must not
  // get, and which would fault on a mapping already gone).
  auto im = std::make_unique<Impl>();
  im->name = path;
  im->fd = fd;
  auto fail = [&](Status s, const std::string& what) -> Result<std::unique_ptr<Pool>> {
    if (!tmp.empty()) ::unlink(tmp.c_str());
    return Error{s, what};
  };
  if (auto r = lock_file(fd, path); !r) return fail(r.error().code, r.error().message);
  const auto bytes = static_cast<off_t>(geom->pool_size);
  if (::ftruncate(fd, bytes) != 0) {
    const int e = errno;
    return fail(e == EFBIG || e == ENOSPC ? Status::out_of_space : Status::io_error,
                "cannot size pool '" + path + "' to " + std::to_string(geom->pool_size) +
                    " bytes: " + errno_text(e));
  }
  if (const int e = reserve_space(fd, gap_of(*geom), geom->pool_size); e != 0)
    return fail(e == ENOSPC || e == EFBIG ? Status::out_of_space : Status::io_error,
                "cannot reserve " + std::to_string(geom->pool_size) + " bytes for pool '" + path +
                    "': " + errno_text(e));
  std::byte* base = nullptr;
  MappingInfo mapping;
  if (auto r = map_file(*im, &base, mapping); !r) return fail(r.error().code, r.error().message);
  write_new_header(base, *geom, opts);
  if (!name_new_file(fd, tmp, path)) {
    const int e = errno;
    return fail(Status::io_error, "cannot create pool '" + path + "': " + errno_text(e));
  }
  std::unique_ptr<Pool> p(new Pool());
  p->impl_ = std::move(im);
  p->base_ = base;
  p->mapping_ = mapping;
  p->size_ = geom->pool_size;
  p->impl_->prev_clean = false;
  p->alloc_ = std::make_unique<pm::Allocator>(*p, /*fresh=*/true);
  return p;
}

Result<std::unique_ptr<Pool>> Pool::open(const std::string& path, std::string_view expected_kind) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return Error{e == ENOENT ? Status::no_such_file : Status::io_error,
                 "cannot open pool '" + path + "': " + errno_text(e)};
  }
  std::unique_ptr<Pool> p(new Pool());
  p->impl_ = std::make_unique<Impl>();
  p->impl_->name = path;
  p->impl_->fd = fd;
  if (auto r = lock_file(fd, path); !r) return r.error();
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return Error{Status::io_error, "cannot stat pool '" + path + "': " + errno_text(errno)};
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
    return Error{Status::not_a_pool, "pool '" + path + "': not a regular file or device"};
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (S_ISREG(st.st_mode)) {
    // The header is read and checked before anything is reserved or mapped: a file that is
    // not a valid pool is never written to (its holes, its mtime), whatever its size.
    alignas(PoolHeader) std::byte page[pm::kHeaderSize] = {};
    const std::size_t want = std::min<std::uint64_t>(file_size, sizeof page);
    const ssize_t got = ::pread(fd, page, want, 0);
    if (got < 0) return bad(Status::io_error, path, "cannot read its header: " + errno_text(errno));
    if (static_cast<std::size_t>(got) < sizeof page)
      return short_header(page, static_cast<std::uint64_t>(got), path);
    if (auto r = check_header_page(*reinterpret_cast<const PoolHeader*>(page), file_size, path,
                                   expected_kind);
        !r)
      return r.error();
    // A pool made sparse (copied so, or by an older build) gets its space now, not as a
    // SIGBUS at the first store to a page its filesystem has no room for; its gap stays a
    // hole.
    const auto& h = *reinterpret_cast<const PoolHeader*>(page);
    if (const int e = reserve_space(fd, pm::gap_of(h), file_size); e != 0)
      return bad(e == ENOSPC ? Status::out_of_space : Status::io_error, path,
                 "cannot reserve its " + std::to_string(file_size) + " bytes: " + errno_text(e));
  }
  std::byte* base = nullptr;
  if (auto r = map_file(*p->impl_, &base, p->mapping_); !r) {
    // libpmem2 maps a character device only if it is a Device DAX one (/dev/daxX.Y), and
    // for /dev/null or a tty it says nothing more than that it failed.
    if (S_ISCHR(st.st_mode))
      return Error{Status::not_a_pool,
                   "pool '" + path + "': a character device that is not a Device DAX one"};
    return r.error();
  }
  const std::uint64_t mapped = pmem2_map_get_size(p->impl_->map);
  if (auto r = check_header(base, mapped, path, expected_kind); !r) return r.error();
  p->base_ = base;
  p->size_ = header_of(base)->pool_size;
  p->impl_->prev_clean = header_of(base)->clean_shutdown == 1;
  start_session(header_of(base));
  p->alloc_ = std::make_unique<pm::Allocator>(*p, /*fresh=*/false);
  return p;
}

Result<std::unique_ptr<Pool>> Pool::create_in_memory(const PoolOptions& options) {
  PoolOptions opts = options;
  auto geom = plan_geometry(opts);
  if (!geom) return geom.error();
  void* mem = ::mmap(nullptr, geom->pool_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED)
    return Error{Status::io_error, "cannot map " + std::to_string(geom->pool_size) +
                                       " bytes of anonymous memory: " + errno_text(errno)};
  std::unique_ptr<Pool> p(new Pool());
  p->impl_ = std::make_unique<Impl>();
  p->impl_->name = "<in-memory>";
  p->impl_->anon = mem;
  p->impl_->anon_size = geom->pool_size;
  p->base_ = static_cast<std::byte*>(mem);
  p->size_ = geom->pool_size;
  p->mapping_.in_memory = true;
  write_new_header(p->base_, *geom, opts);
  p->alloc_ = std::make_unique<pm::Allocator>(*p, /*fresh=*/true);
  return p;
}

Result<std::unique_ptr<Pool>> Pool::attach(std::span<std::byte> image,
                                           std::string_view expected_kind,
                                           std::string_view given_name) {
  char name_buf[48];
  std::snprintf(name_buf, sizeof name_buf, "<image at %p>", static_cast<void*>(image.data()));
  const std::string name = given_name.empty() ? std::string(name_buf) : std::string(given_name);
  if (reinterpret_cast<std::uintptr_t>(image.data()) % pm::kCacheLine != 0)
    return bad(Status::invalid_argument, name, "image buffer is not 64-byte aligned");
  if (auto r = check_header(image.data(), image.size(), name, expected_kind); !r) return r.error();
  std::unique_ptr<Pool> p(new Pool());
  p->impl_ = std::make_unique<Impl>();
  p->impl_->name = name;
  p->base_ = image.data();
  p->size_ = header_of(p->base_)->pool_size;
  p->mapping_.in_memory = true;
  p->impl_->prev_clean = header_of(p->base_)->clean_shutdown == 1;
  start_session(header_of(p->base_));
  p->alloc_ = std::make_unique<pm::Allocator>(*p, /*fresh=*/false);
  return p;
}

void Pool::operator delete(Pool* p, std::destroying_delete_t) {
  if (p->impl_) {
    std::lock_guard g(p->impl_->claim_lock);
    if (p->impl_->index_claimed) {
      p->impl_->owner_deleted = true;  // the handle's release_index_claim destroys it
      return;
    }
  }
  destroy(p);
}

void Pool::destroy(Pool* p) noexcept {
  p->~Pool();
  ::operator delete(p);
}

bool Pool::claim_for_index() noexcept {
  std::lock_guard g(impl_->claim_lock);
  if (impl_->index_claimed) return false;
  impl_->index_claimed = true;
  return true;
}

void Pool::release_index_claim(Pool* p) noexcept {
  bool destroy_now = false;
  {
    std::lock_guard g(p->impl_->claim_lock);
    p->impl_->index_claimed = false;
    destroy_now = p->impl_->owner_deleted;
  }
  if (destroy_now) destroy(p);
}

bool Pool::contains(std::uint64_t off, std::uint64_t len) const noexcept {
  const std::uint64_t first = header().first_chunk_offset;
  return off >= first && off < size_ && len <= size_ - off;
}

std::uint64_t Pool::root() const noexcept { return header().root; }

void Pool::set_root(std::uint64_t off) noexcept {
  pm::publish(&header_of(base_)->root, off);
}

bool Pool::values_are_blocks() const noexcept {
  const PoolHeader& h = header();
  return h.layout_version >= 2 && (h.flags & pm::kFlagValuesAreBlocks) != 0;
}

std::string_view Pool::kind() const noexcept {
  const char* k = header().kind;
  return std::string_view(k, ::strnlen(k, pm::kKindCapacity));
}

const std::array<std::uint64_t, 4>& Pool::index_options() const noexcept {
  static_assert(sizeof(std::array<std::uint64_t, 4>) == sizeof(PoolHeader::index_options));
  return *reinterpret_cast<const std::array<std::uint64_t, 4>*>(header().index_options);
}

std::uint64_t Pool::generation() const noexcept { return header().generation; }

bool Pool::was_clean_shutdown() const noexcept { return impl_->prev_clean; }

std::array<std::byte, 16> Pool::uuid() const noexcept {
  std::array<std::byte, 16> u;
  std::memcpy(u.data(), header().uuid, u.size());
  return u;
}

const PoolHeader& Pool::header() const noexcept {
  return *reinterpret_cast<const PoolHeader*>(base_);
}

}  // namespace wort

namespace wort::pm {

std::uint32_t auto_chunk_size(std::uint64_t size) {
  const std::uint64_t c = std::bit_floor(std::max<std::uint64_t>(size / 256, 1));
  std::uint64_t chunk = std::clamp<std::uint64_t>(c, kMinChunkSize, 1u << 20);
  while (chunk < kMaxChunkSize && (size + chunk - 1) / chunk > kMaxChunkCount) chunk <<= 1;
  return static_cast<std::uint32_t>(chunk);
}

}  // namespace wort::pm
