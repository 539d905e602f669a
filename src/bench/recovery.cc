#include "bench/recovery.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "pm/allocator.h"

namespace wort::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The child: create the pool and index, insert; after `signal_at` acknowledged inserts,
// write the count to the pipe and keep inserting until killed. Never returns.
[[noreturn]] void child_load(const std::string& path, const IndexSpec& index,
                             std::uint64_t size, const KeySet& keys, std::size_t n,
                             std::size_t signal_at, int fd) {
  PoolOptions po;
  po.size = size;
  po.kind = index.kind;
  std::uint64_t acked = 0;
  auto pool = Pool::create(path, po);
  if (pool) {
    auto idx = Index::create(*pool.value(), index.kind, index.options);
    if (idx) {
      for (std::size_t i = 0; i < n; ++i) {
        if (idx.value()->insert(keys[i], i + 1) != Status::ok) break;
        if (++acked == signal_at) {
          if (::write(fd, &acked, sizeof acked) < 0) _exit(3);
        }
      }
    }
  }
  // Finished (or failed) before the kill: report what was acknowledged and wait for it.
  if (acked < signal_at) {
    if (::write(fd, &acked, sizeof acked) < 0) _exit(3);
  }
  for (;;) ::pause();
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

//! Loads a new pool at `path` in a child process, killed with SIGKILL once it acknowledged
//! half of the `n` inserts (or all it could). The count acknowledged, or 0 with `*error` set.
std::uint64_t load_and_kill(const std::string& path, const IndexSpec& index, std::uint64_t size,
                            const KeySet& keys, std::size_t n, std::string* error) {
  int fds[2];
  if (::pipe(fds) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return 0;
  }
  const std::size_t signal_at = std::max<std::size_t>(1, n / 2);
  const pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return 0;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_load(path, index, size, keys, n, signal_at, fds[1]);
  }
  ::close(fds[1]);
  std::uint64_t acked = 0;
  const bool got = ::read(fds[0], &acked, sizeof acked) == static_cast<ssize_t>(sizeof acked);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  if (!got || acked == 0) {
    *error = "the loading child acknowledged no insert";
    ::unlink(path.c_str());
    return 0;
  }
  return acked;
}

//! Opens the killed child's pool and index (timed: open, then allocator reclaim) and looks
//! up every acknowledged key; fills `r`'s times, pool bytes, losses and error.
void recover_and_count(const std::string& path, const IndexSpec& index, const KeySet& keys,
                       RecoveryResult* r) {
  const std::uint64_t acked = r->acknowledged;
  const auto t0 = Clock::now();
  auto pool = Pool::open(path, index.kind);
  if (!pool) {
    r->error = "Pool::open: " + pool.error().message;
    return;
  }
  auto idx = Index::open(*pool.value());
  if (!idx) {
    r->error = "Index::open: " + idx.error().message;
    return;
  }
  const bool first = idx.value()->lookup(keys[0]).has_value();
  r->open_s = since(t0);
  pm::Allocator& alloc = pool.value()->allocator();
  if (alloc.trace_pending()) {
    Index& ix = *idx.value();
    auto rec = alloc.recover([&](pm::BlockVisitor v) { return ix.visit_blocks(v); });
    if (!rec) r->error = "allocator reclaim: " + rec.error().message;
  }
  r->reclaim_s = since(t0);
  r->pool_bytes = alloc.stats().bytes_allocated;
  for (std::size_t i = 0; i < acked; ++i)
    if (!idx.value()->lookup(keys[i])) ++r->lost;
  if (!first) r->error = "the first acknowledged key was not found after recovery";
  r->measured = true;
  idx.value().reset();
  pool.value().reset();
}

}  // namespace

RecoveryResult measure_recovery(const BenchOptions& o, const IndexSpec& index,
                                const KeySet& keys, std::size_t n) {
  RecoveryResult r;
  if (o.pool_dir.empty() || n == 0) {
    r.error = "recovery needs a pool file (--pool-dir) and keys";
    return r;
  }
  const std::string path = o.pool_dir + "/wort-bench-recovery-" + std::to_string(::getpid()) + ".pool";
  ::unlink(path.c_str());
  const std::uint64_t size =
      o.pool_size ? o.pool_size
                  : auto_pool_size(n, keys.size() ? double(keys.total_bytes()) / keys.size() : 8);
  r.acknowledged = load_and_kill(path, index, size, keys, n, &r.error);
  if (r.acknowledged == 0) return r;
  recover_and_count(path, index, keys, &r);
  ::unlink(path.c_str());
  return r;
}

}  // namespace wort::bench
