// cli/check_cmd.cc — `wort check POOL` and `wort dump POOL [KEY]`: what an operator runs on a
// pool found after an incident. Both are read-only: the file is mapped privately
// (copy-on-write), so the session bump, recovery's repairs and the allocator's trace happen
// in this process's copy and never reach the file; a shared lock keeps a writer out (and is
// refused while one has the pool open). Both run the same checks (check_pool) and share one
// exit table; a pool `wort serve` wrote is checked by the server's own Store, a wort::Store
// pool by wort::Store's verify() and audit.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "pm/allocator.h"
#include "pm/pool_layout.h"
#include "server/store.h"
#include "store/layout.h"
#include "store/store_impl.h"
#include "wort/index.h"
#include "wort/key.h"
#include "wort/pool.h"
#include "wort/store.h"

namespace wort::cli {
namespace {

// The exit status both commands give (their --help and README.md's `wort check` section).
#define WORT_CHECK_EXIT_TABLE                                                                 \
  "exit status (the same for check and dump):\n"                                              \
  "  0  the pool is sound (dump: the index or KEY's value printed)\n"                         \
  "  1  the pool is damaged (the first problem is printed); dump prints nothing of it\n"      \
  "  2  it could not be checked: no such file, not a pool (no pool magic), in use by\n"       \
  "     another process, a newer layout, bad usage\n"                                         \
  "  3  dump KEY: the pool is sound and KEY is not in it\n"

constexpr const char* kCheckHelp = R"(usage: wort check POOL [--quiet]

Checks a pool file without changing it, the way an operator looks at a pool after an
incident. Prints the pool header (kind, layout version, size, chunks, root, generation,
whether the last close was clean), then opens the index as recovery would (in a private
copy-on-write mapping: nothing is written to the file), runs verify() and the allocator's
audit (every block reached once, no block leaked), and prints the index's statistics.
A pool written by `wort serve` (values are item blocks) is opened and checked as
`wort serve --check` does it: every item well formed, the items' blocks in the audit.
A wort::Store pool (values are value blobs, and the store's meta key is in the index) is
opened as wort::Store opens it (a committed batch replayed) and checked by its verify():
the index, and every value's checksum; the values' blocks in the audit.

  --quiet   print only the verdict line
)" WORT_CHECK_EXIT_TABLE;

constexpr const char* kDumpHelp = R"(usage: wort dump POOL [KEY] [--hex] [--u64]

Prints the index a pool holds, node by node (each index draws itself), or with KEY the
value stored under KEY (in a `wort serve` pool: the offset of the key's item block; in a
wort::Store pool: the value's bytes, checked).
Read-only, as `wort check`, and it runs the same checks first: a pool `wort check` calls
damaged is not drawn. Messages (damage, not found) go to stderr.

  KEY     the key as text; with --hex, as hexadecimal bytes ("00ff10"); with --u64, a
          decimal integer stored as an 8-byte big-endian key (wort::u64_key)
)" WORT_CHECK_EXIT_TABLE;

constexpr int kSound = 0, kDamaged = 1, kCannot = 2, kAbsent = 3;

//! A pool file mapped privately, with a shared lock held while it is mapped.
class ReadOnlyPool {
 public:
  ~ReadOnlyPool() {
    kv.reset();
    store.reset();
    index.reset();
    pool.reset();
    unmap();
    if (fd_ >= 0) ::close(fd_);
  }
  //! Maps and locks `path`; on failure sets `error` and returns false. A file that does not
  //! begin with the pool magic is not a pool, whatever its size.
  bool map(const std::string& path, std::string* error) {
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) return fail(error, "cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return fail(error, std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
      return fail(error, "'" + path + "' is not a regular file or device: not a pool");
    if (::flock(fd_, LOCK_SH | LOCK_NB) != 0)
      return fail(error, "pool '" + path + "' is in use: another process has it open");
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ == 0) return fail(error, "'" + path + "' is empty (0 bytes): not a pool");
    if (!remap()) return fail(error, std::string("cannot map: ") + std::strerror(errno));
    std::uint64_t magic = 0;
    if (size_ >= sizeof magic) std::memcpy(&magic, map_, sizeof magic);
    if (magic != pm::kPoolMagic)
      return fail(error, "'" + path + "' is not a pool: " +
                             (size_ < sizeof magic ? "shorter than the pool magic"
                              : magic == 0 ? "no pool magic (or its creation did not finish)"
                                           : "it does not begin with the pool magic"));
    return true;
  }
  //! A fresh private mapping of the file, as it is on disk (what an earlier attach changed
  //! in the old mapping is gone). Only with no Pool attached.
  bool remap() {
    unmap();
    map_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, 0);
    return map_ != MAP_FAILED;
  }
  std::span<std::byte> bytes() const { return {static_cast<std::byte*>(map_), size_}; }
  //! The index checked (the store's, for a server or wort::Store pool); null if the pool
  //! holds none.
  const Index* checked_index() const {
    return kv ? kv->impl().index.get() : store ? &store->index() : index.get();
  }
  const Pool& checked_pool() const {
    return kv ? *kv->impl().pool : store ? store->pool() : *pool;
  }

  std::unique_ptr<Pool> pool;
  std::unique_ptr<Index> index;
  std::unique_ptr<server::Store> store;  //!< a wort serve pool, opened as the server does
  std::unique_ptr<wort::Store> kv;       //!< a wort::Store pool, opened as Store::open does

 private:
  void unmap() {
    if (map_ && map_ != MAP_FAILED) ::munmap(map_, size_);
    map_ = nullptr;
  }
  static bool fail(std::string* error, std::string why) {
    *error = std::move(why);
    return false;
  }
  int fd_ = -1;
  void* map_ = nullptr;
  std::size_t size_ = 0;
};

void print_header(const Pool& p) {
  const pm::PoolHeader& h = p.header();
  std::printf("pool header\n");
  std::printf("  kind              %s\n", std::string(p.kind()).c_str());
  std::printf("  layout version    %u\n", h.layout_version);
  std::printf("  size              %llu bytes\n", static_cast<unsigned long long>(h.pool_size));
  std::printf("  chunks            %llu of %llu bytes, %llu carved\n",
              static_cast<unsigned long long>(h.chunk_count),
              static_cast<unsigned long long>(h.chunk_size),
              static_cast<unsigned long long>(h.chunk_hwm));
  std::printf("  root              0x%llx\n", static_cast<unsigned long long>(h.root));
  std::printf("  generation        %llu (every open adds %llu)\n",
              static_cast<unsigned long long>(h.generation),
              static_cast<unsigned long long>(pm::kGenerationStep));
  std::printf("  last close        %s\n", p.was_clean_shutdown() ? "clean" : "not clean (a crash, or still open)");
  std::printf("  values are blocks %s\n",
              p.values_are_blocks() ? "yes (a wort serve or wort::Store pool)" : "no");
}

bool damage_status(Status s) { return s == Status::corrupt || s == Status::truncated; }

//! Prints a failed open's verdict to `out`; returns the exit status.
int open_failed(FILE* out, const std::string& cannot, const std::string& what, const Error& e) {
  const bool damaged = damage_status(e.code);
  std::fprintf(out, "%s: %s%s [%s]\n", damaged ? "DAMAGED" : cannot.c_str(), what.c_str(),
               e.message.c_str(), std::string(to_string(e.code)).c_str());
  return damaged ? kDamaged : kCannot;
}

int audit_failed(FILE* out, const pm::AuditReport& a) {
  std::fprintf(out, "DAMAGED: allocator audit:\n%s",
               a.walk_error.empty() ? a.describe().c_str() : (a.walk_error + "\n").c_str());
  return kDamaged;
}

//! A wort::Store pool (ro mapped): opened as Store::open does, checked by Store::verify()
//! (the index and every value's checksum) and the store's audit.
int check_kv_store(const std::string& path, ReadOnlyPool& ro, FILE* out,
                   const std::string& cannot) {
  auto kv = store::open_image(ro.bytes(), path);
  if (!kv) return open_failed(out, cannot, "wort::Store open (recovery) failed: ", kv.error());
  ro.kv = std::move(*kv);
  if (auto v = ro.kv->verify(); !v) {
    std::fprintf(out, "DAMAGED: verify: %s [%s]\n", v.error().message.c_str(),
                 std::string(to_string(v.error().code)).c_str());
    return kDamaged;
  }
  if (const pm::AuditReport a = ro.kv->impl().audit(); !a.ok()) return audit_failed(out, a);
  return kSound;
}

//! A `wort serve` pool (ro mapped): opened as the server's Store, checked by its own
//! verify() and audit().
int check_server_store(const std::string& path, ReadOnlyPool& ro, FILE* out,
                       const std::string& cannot) {
  server::StoreOptions so;
  so.pool_path = path;
  so.image = ro.bytes();
  so.open_only = true;
  auto st = server::Store::open(so);
  if (!st) return open_failed(out, cannot, "wort serve pool open (recovery) failed: ", st.error());
  ro.store = std::move(*st);
  if (auto v = ro.store->verify(); !v) {
    std::fprintf(out, "DAMAGED: verify: %s\n", v.error().message.c_str());
    return kDamaged;
  }
  if (const pm::AuditReport a = ro.store->audit(); !a.ok()) return audit_failed(out, a);
  return kSound;
}

//! A pool whose values are blocks, attached as `pool`: finds which layer wrote it, releases
//! `pool`, maps the file again and checks it the way that layer opens it.
int check_blocks_pool(const std::string& path, ReadOnlyPool& ro, std::unique_ptr<Pool>& pool,
                      FILE* out, const std::string& cannot) {
  // Which layer wrote it: a wort::Store names its meta block under store::kMetaKey. Looked
  // up in this mapping; the layer then opens a fresh one (what this open changed is gone).
  bool is_kv = false;
  if (pool->root() != 0) {
    auto ix = Index::open(*pool);
    if (!ix) return open_failed(out, cannot, "index open (recovery) failed: ", ix.error());
    is_kv = (*ix)->lookup(as_key(store::kMetaKey)).has_value();
  }
  pool.reset();  // the store attaches the file's own bytes, as its writer opens them
  if (!ro.remap()) {
    std::fprintf(out, "%s: cannot map: %s\n", cannot.c_str(), std::strerror(errno));
    return kCannot;
  }
  return is_kv ? check_kv_store(path, ro, out, cannot) : check_server_store(path, ro, out, cannot);
}

//! A pool of an index alone, attached as `pool`: the index opened (recovery), verify() and
//! the allocator's audit against the index's blocks.
int check_index_pool(ReadOnlyPool& ro, std::unique_ptr<Pool> pool, FILE* out,
                     const std::string& cannot) {
  ro.pool = std::move(pool);
  if (ro.pool->root() == 0) return kSound;  // no index: nothing more to check
  auto index = Index::open(*ro.pool);
  if (!index) return open_failed(out, cannot, "index open (recovery) failed: ", index.error());
  ro.index = std::move(*index);
  const Index& ix = *ro.index;
  if (auto v = ix.verify(); !v) {
    std::fprintf(out, "DAMAGED: verify: %s\n", v.error().message.c_str());
    return kDamaged;
  }
  const pm::AuditReport a =
      ro.pool->allocator().audit([&](pm::BlockVisitor bv) { return ix.visit_blocks(bv); });
  if (!a.ok()) return audit_failed(out, a);
  return kSound;
}

//! What check and dump both run (`verb` names the command in messages): the pool attached
//! in a private mapping and opened as recovery would, then verify() and the allocator's
//! audit. A pool whose values are blocks is opened by the layer that wrote it: a wort::Store
//! pool (the store's meta key in the index) as Store::open does, checked by Store::verify()
//! (the index and every value's checksum) and the store's audit; any other (written by
//! `wort serve`) as the server's Store, checked by its own verify() and audit(), the code
//! `wort serve --check` runs: every item well formed, its block counted as reached.
//! Prints the header when `header`, the first problem to `out`. Returns the exit status;
//! on 0, ro holds the index (or none: the pool holds no index).
int check_pool(const std::string& path, ReadOnlyPool& ro, bool header, FILE* out, const char* verb) {
  const std::string cannot = std::string("cannot ") + verb;
  std::string why;
  if (!ro.map(path, &why)) {
    std::fprintf(out, "%s: %s\n", cannot.c_str(), why.c_str());
    return kCannot;
  }
  auto pool = Pool::attach(ro.bytes(), {}, path);  // messages name the file, not the copy
  if (!pool) return open_failed(out, cannot, "", pool.error());
  if (header) print_header(**pool);
  if ((*pool)->values_are_blocks()) return check_blocks_pool(path, ro, *pool, out, cannot);
  return check_index_pool(ro, std::move(*pool), out, cannot);
}

//! `wort check`'s details of a sound pool holding an index (all but --quiet).
void print_check_details(const Index& ix, const ReadOnlyPool& ro, const IndexStats& s,
                         const pm::AllocatorStats& as) {
  std::printf("index             %s, opened (recovery ran in a private copy)\n",
              std::string(ix.kind()).c_str());
  std::printf("verify            ok%s\n", ro.kv      ? " (the index and every value's checksum)"
                                       : ro.store ? " (the index and every item)"
                                                  : "");
  std::printf("audit             ok (%llu blocks, %llu bytes in use%s)\n",
              static_cast<unsigned long long>(as.blocks_allocated),
              static_cast<unsigned long long>(as.bytes_allocated),
              ro.kv ? ", the values' blocks among them" : ro.store ? ", the items' blocks among them" : "");
  std::printf("keys              %llu\n", static_cast<unsigned long long>(s.keys));
  if (ro.store)
    std::printf("items             %llu (the other key names the server's meta block)\n",
                static_cast<unsigned long long>(ro.store->counters().curr_items.load()));
  if (ro.kv)
    std::printf("values            %llu (the other key names the store's meta block)\n",
                static_cast<unsigned long long>(ro.kv->size()));
  std::printf("leaf depth        %.2f average, %llu max\n", s.avg_leaf_depth,
              static_cast<unsigned long long>(s.max_leaf_depth));
  std::printf("pool bytes        %llu in the index's blocks\n", static_cast<unsigned long long>(s.pm_bytes));
  for (const auto& [type, n] : s.nodes)
    std::printf("  %-15s %llu\n", type.c_str(), static_cast<unsigned long long>(n));
}

//! `wort check`'s last line for a sound pool holding an index.
void print_check_verdict(const Index& ix, const ReadOnlyPool& ro, const IndexStats& s,
                         const std::string& path) {
  if (ro.kv)
    std::printf("OK: %s pool %s, %llu keys (a wort::Store pool: %llu values), sound\n",
                std::string(ix.kind()).c_str(), path.c_str(),
                static_cast<unsigned long long>(s.keys),
                static_cast<unsigned long long>(ro.kv->size()));
  else if (ro.store)
    std::printf("OK: %s pool %s, %llu keys (a wort serve pool: %llu items), sound\n",
                std::string(ix.kind()).c_str(), path.c_str(),
                static_cast<unsigned long long>(s.keys),
                static_cast<unsigned long long>(ro.store->counters().curr_items.load()));
  else
    std::printf("OK: %s pool %s, %llu keys, sound\n", std::string(ix.kind()).c_str(),
                path.c_str(), static_cast<unsigned long long>(s.keys));
}

}  // namespace

int check_main(const Args& args) {
  std::string path;
  bool quiet = false;
  ArgReader r(args);
  while (r.more()) {
    if (r.is("--help") || r.is("-h")) {
      std::fputs(kCheckHelp, stdout);
      return 0;
    } else if (r.is("--quiet")) {
      quiet = true;
    } else if (r.positional() && path.empty()) {
      path = r.take();
    } else {
      throw UsageError("unexpected argument '" + r.peek() + "'");
    }
  }
  if (path.empty()) throw UsageError("which pool? wort check POOL");
  ReadOnlyPool ro;
  if (int rc = check_pool(path, ro, /*header=*/!quiet, stdout, "check"); rc != kSound) return rc;
  const Index* ix = ro.checked_index();
  if (!ix) {
    std::printf("the pool holds no index (created, but no index was created in it)\n");
    return kSound;
  }
  const IndexStats s = ix->stats();
  const pm::AllocatorStats as = ro.checked_pool().allocator().stats();
  if (!quiet) print_check_details(*ix, ro, s, as);
  print_check_verdict(*ix, ro, s, path);
  return kSound;
}

namespace {

std::string parse_hex(const std::string& s) {
  if (s.size() % 2) throw UsageError("--hex: an even number of hex digits");
  std::string out;
  for (std::size_t i = 0; i < s.size(); i += 2) {
    const std::string byte = s.substr(i, 2);
    if (byte.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      throw UsageError("--hex: '" + byte + "' is not a hex byte");
    out.push_back(static_cast<char>(std::stoul(byte, nullptr, 16)));
  }
  return out;
}

}  // namespace

int dump_main(const Args& args) {
  std::string path, key;
  bool have_key = false, hex = false, u64 = false;
  ArgReader r(args);
  while (r.more()) {
    if (r.is("--help") || r.is("-h")) {
      std::fputs(kDumpHelp, stdout);
      return 0;
    } else if (r.is("--hex")) {
      hex = true;
    } else if (r.is("--u64")) {
      u64 = true;
    } else if (r.positional() && path.empty()) {
      path = r.take();
    } else if (r.positional() && !have_key) {
      key = r.take();
      have_key = true;
    } else {
      throw UsageError("unexpected argument '" + r.peek() + "'");
    }
  }
  if (path.empty()) throw UsageError("which pool? wort dump POOL [KEY]");
  if (hex && u64) throw UsageError("--hex and --u64 do not go together");
  std::string bytes = key;
  if (hex) bytes = parse_hex(key);
  if (u64) {
    const auto k = u64_key(parse_count(key, "KEY"));
    bytes.assign(reinterpret_cast<const char*>(k.data()), k.size());
  }
  ReadOnlyPool ro;
  if (int rc = check_pool(path, ro, /*header=*/false, stderr, "dump"); rc != kSound) return rc;
  const Index* ix = ro.checked_index();
  if (!have_key) {
    if (ix) ix->dump(std::cout);
    return kSound;
  }
  if (ro.kv) {  // the value's bytes, checked against its checksum
    auto got = ro.kv->get(bytes);
    if (!got) {
      std::fprintf(stderr, "DAMAGED: %s [%s]\n", got.error().message.c_str(),
                   std::string(to_string(got.error().code)).c_str());
      return kDamaged;
    }
    if (!*got) {
      std::fprintf(stderr, "not found\n");
      return kAbsent;
    }
    std::fwrite((*got)->data(), 1, (*got)->size(), stdout);
    std::printf("\n");
    return kSound;
  }
  const auto v = ix ? ix->lookup(as_key(bytes)) : std::nullopt;
  if (!v) {
    std::fprintf(stderr, "not found%s\n", ix ? "" : " (the pool holds no index)");
    return kAbsent;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(*v));
  return kSound;
}

}  // namespace wort::cli
