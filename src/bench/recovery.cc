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
  int fds[2];
  if (::pipe(fds) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  const std::size_t signal_at = std::max<std::size_t>(1, n / 2);
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    return r;
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
    r.error = "the loading child acknowledged no insert";
    ::unlink(path.c_str());
    return r;
  }
  r.acknowledged = acked;

  const auto t0 = Clock::now();
  auto pool = Pool::open(path, index.kind);
  if (!pool) {
    r.error = "Pool::open: " + pool.error().message;
    ::unlink(path.c_str());
    return r;
  }
  auto idx = Index::open(*pool.value());
  if (!idx) {
    r.error = "Index::open: " + idx.error().message;
    ::unlink(path.c_str());
    return r;
  }
  const bool first = idx.value()->lookup(keys[0]).has_value();
  r.open_s = since(t0);
  pm::Allocator& alloc = pool.value()->allocator();
  if (alloc.trace_pending()) {
    Index& ix = *idx.value();
    auto rec = alloc.recover([&](pm::BlockVisitor v) { return ix.visit_blocks(v); });
    if (!rec) r.error = "allocator reclaim: " + rec.error().message;
  }
  r.reclaim_s = since(t0);
  r.pool_bytes = alloc.stats().bytes_allocated;
  for (std::size_t i = 0; i < acked; ++i)
    if (!idx.value()->lookup(keys[i])) ++r.lost;
  if (!first) r.error = "the first acknowledged key was not found after recovery";
  r.measured = true;
  idx.value().reset();
  pool.value().reset();
  ::unlink(path.c_str());
  return r;
}

}  // namespace wort::bench
