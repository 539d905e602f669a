// cli/demo_cmd.cc — `wort demo`: the smallest tour of the library.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
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

struct DemoOptions {
  std::string kind, path;  // path empty: a temporary pool in /dev/shm
  std::uint64_t n = 100000;
  pm::Config cfg;
};

//! The options; nullopt after --help (printed).
std::optional<DemoOptions> parse_demo_args(const Args& args) {
  DemoOptions o;
  ArgReader r(args);
  while (r.more()) {
    if (r.is("--help") || r.is("-h")) {
      std::fputs(kDemoHelp, stdout);
      return std::nullopt;
    } else if (r.is("--index")) o.kind = r.value();
    else if (r.is("--keys")) o.n = parse_count(r.value(), "--keys");
    else if (r.is("--pool")) o.path = r.value();
    else if (r.is("--pm-mode")) {
      if (!pm::parse(r.value(), o.cfg.mode)) throw UsageError("--pm-mode: real, emulated or none");
    } else throw UsageError("unknown option '" + r.peek() + "'");
  }
  return o;
}

//! Inserts keys 1..n and looks them up, printing the persistence counters of each phase and
//! the index's stats; true if every insert succeeded and every key was found.
bool insert_and_look_up(Index& idx, std::uint64_t n) {
  pm::reset_counters();
  std::uint64_t failed = 0;
  for (std::uint64_t k = 1; k <= n; ++k) {
    const auto key = u64_key(k);
    if (idx.insert(key, k * 10) != Status::ok) ++failed;
  }
  const pm::Counters ins = pm::counters();
  pm::reset_counters();
  std::uint64_t found = 0;
  for (std::uint64_t k = 1; k <= n; ++k)
    if (auto v = idx.lookup(u64_key(k)); v && *v == k * 10) ++found;
  const pm::Counters look = pm::counters();
  print_counters("insert", ins, n);
  print_counters("lookup", look, n);
  const IndexStats st = idx.stats();
  std::printf("  found %llu of %llu keys; %llu inserts failed; avg leaf depth %.2f; %.1f PM bytes/key;"
              " %.1f DRAM bytes/key\n",
              static_cast<unsigned long long>(found), static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(failed), st.avg_leaf_depth,
              bench::per_op(static_cast<double>(st.pm_bytes), st.keys),
              bench::per_op(static_cast<double>(st.dram_bytes), st.keys));
  return found == n && failed == 0;
}

//! Reopens the closed pool and counts the keys 1..n found again (printed).
std::uint64_t reopen_and_count(const std::string& path, const std::string& kind,
                               std::uint64_t n) {
  auto pool = Pool::open(path, kind);
  if (!pool) throw std::runtime_error("reopen: " + pool.error().message);
  auto idx = Index::open(*pool.value());
  if (!idx) throw std::runtime_error("reopen index: " + idx.error().message);
  std::uint64_t again = 0;
  for (std::uint64_t k = 1; k <= n; ++k)
    if (idx.value()->lookup(u64_key(k))) ++again;
  std::printf("  after close and reopen: %llu of %llu keys found\n",
              static_cast<unsigned long long>(again), static_cast<unsigned long long>(n));
  return again;
}

}  // namespace

int demo_main(const Args& args) {
  std::optional<DemoOptions> opts = parse_demo_args(args);
  if (!opts) return 0;
  std::string& kind = opts->kind;
  std::string& path = opts->path;
  const std::uint64_t n = opts->n;
  const auto kinds = Index::kinds();
  if (kinds.empty()) throw std::runtime_error("no index is registered in this build");
  if (kind.empty()) kind = std::find(kinds.begin(), kinds.end(), "wort") != kinds.end() ? "wort" : kinds.front();
  if (auto c = pm::configure(opts->cfg); !c) throw std::runtime_error(c.error().message);
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
  const bool ok = insert_and_look_up(*idx.value(), n);

  // A volatile baseline (the DRAM ART) keeps nothing in the pool: nothing to reopen.
  const bool in_pool = pool.value()->root() != 0;
  if (!in_pool)
    std::printf("  %s keeps its nodes in DRAM (no pool root): nothing survives a reopen\n",
                kind.c_str());
  // Close cleanly and reopen: the keys must all be there.
  idx.value().reset();
  pool.value().reset();
  const bool again = !in_pool || reopen_and_count(path, kind, n) == n;
  if (temp) ::unlink(path.c_str());
  return ok && again ? 0 : 1;
}

}  // namespace wort::cli
