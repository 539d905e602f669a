// cli/demo_cmd.cc — `wort demo`: the smallest tour of the library.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "bench/metrics.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "wort/index.h"
#include "wort/persist.h"
#include "wort/pool.h"

namespace wort::cli {
namespace {

constexpr const char* kDemoHelp = R"(usage: wort demo [options]

Creates a pool, creates an index in it, inserts keys 1..N (8-byte big-endian), looks them
up, and prints the persistence counters (flush calls, cache lines flushed, fences) per
insert and per lookup; then closes and reopens the pool and checks the keys again.

  --index KIND   index kind (default: wort if registered, else the first registered)
  --keys N       keys to insert (default 100000)
  --pool PATH    a new pool file, kept afterwards (refused if PATH exists); default
                 /dev/shm/wort-demo-<pid>.pool, removed afterwards
  --pm-mode M    real, emulated or none (default real)
)";

void print_counters(const char* what, const pm::Counters& c, std::uint64_t ops) {
  std::printf("  %-8s %9llu ops  %7.2f flush calls/op  %7.2f lines/op  %7.2f fences/op\n", what,
              static_cast<unsigned long long>(ops),
              bench::per_op(static_cast<double>(c.flushes), ops),
              bench::per_op(static_cast<double>(c.lines_flushed), ops),
              bench::per_op(static_cast<double>(c.fences), ops));
}

}  // namespace

int demo_main(const Args& args) {
  std::string kind, path;
  std::uint64_t n = 100000;
  pm::Config cfg;
  ArgReader r(args);
  while (r.more()) {
    if (r.is("--help") || r.is("-h")) {
      std::fputs(kDemoHelp, stdout);
      return 0;
    } else if (r.is("--index")) kind = r.value();
    else if (r.is("--keys")) n = parse_count(r.value(), "--keys");
    else if (r.is("--pool")) path = r.value();
    else if (r.is("--pm-mode")) {
      if (!pm::parse(r.value(), cfg.mode)) throw UsageError("--pm-mode: real, emulated or none");
    } else throw UsageError("unknown option '" + r.peek() + "'");
  }
  const auto kinds = Index::kinds();
  if (kinds.empty()) throw std::runtime_error("no index is registered in this build");
  if (kind.empty()) kind = std::find(kinds.begin(), kinds.end(), "wort") != kinds.end() ? "wort" : kinds.front();
  if (auto c = pm::configure(cfg); !c) throw std::runtime_error(c.error().message);
  const bool temp = path.empty();
  if (temp) {
    path = "/dev/shm/wort-demo-" + std::to_string(::getpid()) + ".pool";
    ::unlink(path.c_str());  // our own name (a dead demo's file of this pid)
  }
  // A given PATH is never removed first: it may be another process's pool (an outside
  // review lost a running `wort serve`'s items this way); Pool::create refuses it.

  PoolOptions po;
  po.kind = kind;
  po.size = std::max<std::uint64_t>(64ull << 20, n * 320);
  auto pool = Pool::create(path, po);
  if (!pool) throw std::runtime_error("pool: " + pool.error().message);
  auto idx = Index::create(*pool.value(), kind);
  if (!idx) throw std::runtime_error("index: " + idx.error().message);
  std::printf("wort demo: index %s, pool %s (%llu MiB), PM mode %s, flush instruction %s\n",
              kind.c_str(), path.c_str(), static_cast<unsigned long long>(po.size >> 20),
              std::string(pm::to_string(pm::config().mode)).c_str(),
              std::string(pm::to_string(pm::config().insn)).c_str());

  pm::reset_counters();
  std::uint64_t failed = 0;
  for (std::uint64_t k = 1; k <= n; ++k) {
    const auto key = u64_key(k);
    if (idx.value()->insert(key, k * 10) != Status::ok) ++failed;
  }
  const pm::Counters ins = pm::counters();
  pm::reset_counters();
  std::uint64_t found = 0;
  for (std::uint64_t k = 1; k <= n; ++k)
    if (auto v = idx.value()->lookup(u64_key(k)); v && *v == k * 10) ++found;
  const pm::Counters look = pm::counters();
  print_counters("insert", ins, n);
  print_counters("lookup", look, n);
  const IndexStats st = idx.value()->stats();
  std::printf("  found %llu of %llu keys; %llu inserts failed; avg leaf depth %.2f; %.1f PM bytes/key;"
              " %.1f DRAM bytes/key\n",
              static_cast<unsigned long long>(found), static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(failed), st.avg_leaf_depth,
              bench::per_op(static_cast<double>(st.pm_bytes), st.keys),
              bench::per_op(static_cast<double>(st.dram_bytes), st.keys));

  // A volatile baseline (the DRAM ART) keeps nothing in the pool: nothing to reopen.
  if (pool.value()->root() == 0) {
    std::printf("  %s keeps its nodes in DRAM (no pool root): nothing survives a reopen\n",
                kind.c_str());
    idx.value().reset();
    pool.value().reset();
    if (temp) ::unlink(path.c_str());
    return found == n && failed == 0 ? 0 : 1;
  }
  // Close cleanly and reopen: the keys must all be there.
  idx.value().reset();
  pool.value().reset();
  auto pool2 = Pool::open(path, kind);
  if (!pool2) throw std::runtime_error("reopen: " + pool2.error().message);
  auto idx2 = Index::open(*pool2.value());
  if (!idx2) throw std::runtime_error("reopen index: " + idx2.error().message);
  std::uint64_t again = 0;
  for (std::uint64_t k = 1; k <= n; ++k)
    if (idx2.value()->lookup(u64_key(k))) ++again;
  std::printf("  after close and reopen: %llu of %llu keys found\n",
              static_cast<unsigned long long>(again), static_cast<unsigned long long>(n));
  idx2.value().reset();
  pool2.value().reset();
  if (temp) ::unlink(path.c_str());
  return found == n && again == n && failed == 0 ? 0 : 1;
}

}  // namespace wort::cli
