// cli/check_cmd.cc — `wort check POOL` and `wort dump POOL [KEY]`: what an operator runs on a
// pool found after an incident. Both are read-only: the file is mapped privately
// (copy-on-write), so the session bump, recovery's repairs and the allocator's trace happen
// in this process's copy and never reach the file; a shared lock keeps a writer out (and is
// refused while one has the pool open).
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
#include <span>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "pm/allocator.h"
#include "pm/pool_layout.h"
#include "wort/index.h"
#include "wort/key.h"
#include "wort/pool.h"

namespace wort::cli {
namespace {

constexpr const char* kCheckHelp = R"(usage: wort check POOL [--quiet]

Checks a pool file without changing it, the way an operator looks at a pool after an
incident. Prints the pool header (kind, layout version, size, chunks, root, generation,
whether the last close was clean), then opens the index as recovery would (in a private
copy-on-write mapping: nothing is written to the file), runs verify() and the allocator's
audit (every block reached once, no block leaked), and prints the index's statistics.

exit status: 0 the pool is sound, 1 it is damaged (the first problem is printed),
             2 it could not be checked (no such file, not a pool, in use, bad usage)

  --quiet   print only the verdict line
)";

constexpr const char* kDumpHelp = R"(usage: wort dump POOL [KEY] [--hex] [--u64]

Prints the index a pool holds, node by node (each index draws itself), or with KEY the
value stored under KEY. Read-only, as `wort check`: the file is never written.

  KEY     the key as text; with --hex, as hexadecimal bytes ("00ff10"); with --u64, a
          decimal integer stored as an 8-byte big-endian key (wort::u64_key)
exit status: 0 printed (or KEY found), 1 KEY not found or the pool is damaged,
             2 it could not be opened
)";

//! A pool file mapped privately, with a shared lock held while it is mapped.
class ReadOnlyPool {
 public:
  ~ReadOnlyPool() {
    index.reset();
    pool.reset();
    if (map_ && map_ != MAP_FAILED) ::munmap(map_, size_);
    if (fd_ >= 0) ::close(fd_);
  }
  //! Maps and locks `path`; on failure sets `error` and returns false.
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
    if (size_ == 0) return fail(error, "pool '" + path + "' is empty (0 bytes): not a pool");
    map_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, 0);
    if (map_ == MAP_FAILED) return fail(error, std::string("cannot map: ") + std::strerror(errno));
    return true;
  }
  std::span<std::byte> bytes() const { return {static_cast<std::byte*>(map_), size_}; }

  std::unique_ptr<Pool> pool;
  std::unique_ptr<Index> index;

 private:
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
  std::printf("  values are blocks %s\n", p.values_are_blocks() ? "yes (a wort serve pool)" : "no");
}

//! Opens pool and index read-only; prints what fails, naming the command (`verb`: "check"
//! or "dump"). Returns the exit status on failure.
int open_read_only(const std::string& path, ReadOnlyPool& ro, bool header, bool quiet,
                   const char* verb) {
  const std::string cannot = std::string("cannot ") + verb;
  std::string why;
  if (!ro.map(path, &why)) {
    std::printf("%s: %s\n", cannot.c_str(), why.c_str());
    return 2;
  }
  auto pool = Pool::attach(ro.bytes(), {}, path);  // messages name the file, not the copy
  if (!pool) {
    const Status s = pool.status();
    const bool damaged = s == Status::corrupt || s == Status::truncated;
    std::printf("%s: %s [%s]\n", damaged ? "DAMAGED" : cannot.c_str(),
                pool.error().message.c_str(), std::string(to_string(s)).c_str());
    return damaged ? 1 : 2;
  }
  ro.pool = std::move(*pool);
  if (header && !quiet) print_header(*ro.pool);
  if (ro.pool->root() == 0) {
    std::printf("the pool holds no index (created, but no index was created in it)\n");
    return 0;
  }
  auto index = Index::open(*ro.pool);
  if (!index) {
    const Status s = index.status();
    std::printf("%s: index open (recovery) failed: %s [%s]\n",
                s == Status::corrupt ? "DAMAGED" : cannot.c_str(), index.error().message.c_str(),
                std::string(to_string(s)).c_str());
    return s == Status::corrupt ? 1 : 2;
  }
  ro.index = std::move(*index);
  return 0;
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
  if (int rc = open_read_only(path, ro, /*header=*/true, quiet, "check"); rc != 0 || !ro.index) return rc;
  Index& ix = *ro.index;
  if (!quiet) std::printf("index             %s, opened (recovery ran in a private copy)\n",
                          std::string(ix.kind()).c_str());
  if (auto v = ix.verify(); !v) {
    std::printf("DAMAGED: verify: %s\n", v.error().message.c_str());
    return 1;
  }
  const pm::AuditReport a =
      ro.pool->allocator().audit([&](pm::BlockVisitor bv) { return ix.visit_blocks(bv); });
  if (!a.ok()) {
    std::printf("DAMAGED: allocator audit:\n%s", a.walk_error.empty() ? a.describe().c_str()
                                                                     : (a.walk_error + "\n").c_str());
    return 1;
  }
  const IndexStats s = ix.stats();
  const pm::AllocatorStats as = ro.pool->allocator().stats();
  if (!quiet) {
    std::printf("verify            ok\naudit             ok (%llu blocks, %llu bytes in use)\n",
                static_cast<unsigned long long>(as.blocks_allocated),
                static_cast<unsigned long long>(as.bytes_allocated));
    std::printf("keys              %llu\n", static_cast<unsigned long long>(s.keys));
    std::printf("leaf depth        %.2f average, %llu max\n", s.avg_leaf_depth,
                static_cast<unsigned long long>(s.max_leaf_depth));
    std::printf("pool bytes        %llu in the index's blocks\n", static_cast<unsigned long long>(s.pm_bytes));
    for (const auto& [type, n] : s.nodes)
      std::printf("  %-15s %llu\n", type.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("OK: %s pool %s, %llu keys, sound\n", std::string(ix.kind()).c_str(), path.c_str(),
              static_cast<unsigned long long>(s.keys));
  return 0;
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
  ReadOnlyPool ro;
  if (int rc = open_read_only(path, ro, /*header=*/false, true, "dump"); rc != 0) return rc;
  if (!ro.index) return have_key ? 1 : 0;  // no index: KEY is not found (dump --help: 1)
  if (!have_key) {
    ro.index->dump(std::cout);
    return 0;
  }
  std::string bytes = key;
  if (hex) bytes = parse_hex(key);
  if (u64) {
    const auto k = u64_key(parse_count(key, "KEY"));
    bytes.assign(reinterpret_cast<const char*>(k.data()), k.size());
  }
  const auto v = ro.index->lookup(as_key(bytes));
  if (!v) {
    std::printf("not found\n");
    return 1;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(*v));
  return 0;
}

}  // namespace wort::cli
