// pm_cost — what the persistence primitives cost on top of the raw instructions.
//
// Prints ns/op for: a raw clwb (and clflushopt) + sfence loop vs pm::flush + pm::fence on
// the same line(s), with the line clean and dirty; pm::store vs a plain store; and what a
// load of a line costs right after its write-back and fence (does the instruction keep the
// line in the cache? On some CPUs clwb evicts it like clflushopt); and whether a fence
// issued well after the write-back still waits as long (the last row of each section:
// there "raw" is a 1000-cycle spin alone and "pm::" the write-back, the spin, the fence). Each figure
// is the best of several runs of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID, so time
// spent descheduled on a shared machine does not count; the minimum is the least disturbed).
//
//   pm_cost [iterations]     (default 2,000,000)
#include <x86intrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "pm/allocator.h"
#include "pm/persist.h"
#include "wort/pool.h"

namespace {

using namespace wort;
//! This thread's CPU time in ns.
double cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

alignas(4096) std::uint64_t g_lines[8 * 64];  // 64 lines

inline void barrier() { asm volatile("" ::: "memory"); }

template <class F>
double best_ns_per_op(std::uint64_t iters, F&& body) {
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    const double t0 = cpu_ns();
    body(iters);
    best = std::min(best, (cpu_ns() - t0) / iters);
  }
  return best;
}

double time_once(std::uint64_t iters, auto&& body) {
  const double t0 = cpu_ns();
  body(iters);
  return (cpu_ns() - t0) / iters;
}

void print_row(const char* what, double raw, double wrapped) {
  std::printf("  %-44s raw %7.2f ns   pm:: %7.2f ns   delta %+6.2f ns (%+.1f%%)\n", what, raw,
              wrapped, wrapped - raw, raw > 0 ? 100.0 * (wrapped - raw) / raw : 0.0);
}

// Times the raw and the wrapped loop alternately (so drift in machine load hits both
// alike) and prints the best of 7 of each.
void row(const char* what, std::uint64_t iters, auto&& raw, auto&& wrapped) {
  double best_raw = 1e30, best_wrapped = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    best_raw = std::min(best_raw, time_once(iters, raw));
    best_wrapped = std::min(best_wrapped, time_once(iters, wrapped));
  }
  print_row(what, best_raw, best_wrapped);
}

// One line, written back and fenced each iteration; `dirty` stores to it first.
template <bool kDirty>
void raw_flush(pm::FlushInsn insn, std::uint64_t n) {
  volatile std::uint64_t* p = g_lines;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (kDirty) *p = i;
    pm::x86_64::flush_line(insn, const_cast<std::uint64_t*>(p));
    pm::x86_64::sfence();
  }
}
template <bool kDirty>
void wrapped_flush(std::uint64_t n) {
  std::uint64_t* p = g_lines;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (kDirty) pm::store(p, i);
    pm::flush(p, 8);
    pm::fence();
  }
}
// The dirty line's write-back issued, then ~`gap` TSC cycles of other work (a spin on the
// TSC: no memory traffic), then the fence: if the fence still costs what it costs right
// after the write-back, its wait is not the write-back's latency (which the gap would hide).
inline void spin(std::uint64_t gap) {
  const std::uint64_t until = __rdtsc() + gap;
  while (__rdtsc() < until) _mm_pause();
}
void raw_flush_gap(pm::FlushInsn insn, std::uint64_t gap, std::uint64_t n) {
  volatile std::uint64_t* p = g_lines;
  for (std::uint64_t i = 0; i < n; ++i) {
    *p = i;
    pm::x86_64::flush_line(insn, const_cast<std::uint64_t*>(p));
    spin(gap);
    pm::x86_64::sfence();
  }
}
void spin_only(std::uint64_t gap, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) spin(gap);
}

// Four consecutive lines per fence (the flush loop inside pm::flush).
void raw_flush4(pm::FlushInsn insn, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) {
    // Same order as the wrapped loop: all four stores, then the four write-backs.
    for (int l = 0; l < 4; ++l) reinterpret_cast<volatile std::uint64_t*>(g_lines)[l * 8] = i;
    for (int l = 0; l < 4; ++l) pm::x86_64::flush_line(insn, &g_lines[l * 8]);
    pm::x86_64::sfence();
  }
}
void wrapped_flush4(std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) {
    for (int l = 0; l < 4; ++l) pm::store(&g_lines[l * 8], i);
    pm::flush(g_lines, 4 * 64);
    pm::fence();
  }
}

void plain_stores(std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) {
    g_lines[i & 511] = i;
    barrier();
  }
}
void pm_stores(std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) {
    pm::store(&g_lines[i & 511], i);
    barrier();
  }
}

void section(pm::FlushInsn insn, std::uint64_t iters) {
  pm::Config c;
  c.insn = insn;
  if (!pm::configure(c).ok()) {
    std::printf("%s: not supported by this CPU\n", std::string(to_string(insn)).c_str());
    return;
  }
  std::printf("%s + sfence (mode real):\n", std::string(to_string(insn)).c_str());
  row("1 clean line + fence", iters, [&](std::uint64_t n) { raw_flush<false>(insn, n); },
      [](std::uint64_t n) { wrapped_flush<false>(n); });
  row("store + 1 dirty line + fence", iters, [&](std::uint64_t n) { raw_flush<true>(insn, n); },
      [](std::uint64_t n) { wrapped_flush<true>(n); });
  row("4 stores + 4 dirty lines + fence", iters / 4,
      [&](std::uint64_t n) { raw_flush4(insn, n); }, [](std::uint64_t n) { wrapped_flush4(n); });
  // "raw" here is the 1000-cycle spin alone, "pm::" the write-back, spin, fence: their
  // difference is what the fence still costs once the write-back had time to finish.
  row("store + 1 dirty line, 1000 cycles, fence", iters / 10,
      [&](std::uint64_t n) { spin_only(1000, n); },
      [&](std::uint64_t n) { raw_flush_gap(insn, 1000, n); });
}

// Cycles (rdtscp) of one load of a line that was just stored to, written back with `insn`
// (none: not written back) and fenced; the median over `n` lines chosen at random among 64
// (4 KiB: in the L1 cache unless the write-back evicted it).
double reload_cycles(pm::FlushInsn insn, bool flush, std::uint64_t n) {
  std::vector<double> c;
  c.reserve(n);
  std::uint64_t x = 88172645463325252ull, sink = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    volatile std::uint64_t* p = &g_lines[(x % 64) * 8];
    *p = i;
    if (flush) pm::x86_64::flush_line(insn, const_cast<std::uint64_t*>(p));
    pm::x86_64::sfence();
    _mm_lfence();
    unsigned aux;
    const std::uint64_t t0 = __rdtscp(&aux);
    sink += p[1];
    const std::uint64_t t1 = __rdtscp(&aux);
    c.push_back(static_cast<double>(t1 - t0));
  }
  if (sink == 42) std::puts("");  // keep the loads
  std::nth_element(c.begin(), c.begin() + c.size() / 2, c.end());
  return c[c.size() / 2];
}

void reload_section(std::uint64_t n) {
  std::printf("a load of a line just stored to, written back and fenced (TSC cycles, median):\n");
  std::printf("  not written back                             %7.0f\n",
              reload_cycles(pm::FlushInsn::clwb, false, n));
  for (auto insn : {pm::FlushInsn::clwb, pm::FlushInsn::clflushopt, pm::FlushInsn::clflush}) {
    if (!pm::cpu_has(insn)) continue;
    std::printf("  after %-38s %7.0f\n", std::string(to_string(insn)).c_str(),
                reload_cycles(insn, true, n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t iters = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2'000'000;
  const pm::Config saved = pm::config();
  std::printf("pm_cost: %llu iterations, best of 7; default instruction here: %s\n",
              static_cast<unsigned long long>(iters),
              std::string(to_string(saved.insn)).c_str());
  for (auto insn : {pm::FlushInsn::clwb, pm::FlushInsn::clflushopt, pm::FlushInsn::clflush})
    section(insn, iters);
  (void)pm::configure(saved);
  reload_section(std::min<std::uint64_t>(iters / 10, 200'000));
  std::printf("stores (8 bytes, 512 words round-robin, compiler barrier each):\n");
  row("plain store vs pm::store", iters * 10, [](std::uint64_t n) { plain_stores(n); },
      [](std::uint64_t n) { pm_stores(n); });
  pm::Config none;
  none.mode = pm::Mode::none;
  (void)pm::configure(none);
  std::printf("mode none (counters only):\n");
  std::printf("  pm::flush + pm::fence, 1 line               %7.2f ns\n",
              best_ns_per_op(iters, [](std::uint64_t n) { wrapped_flush<false>(n); }));
  (void)pm::configure(saved);
  // The allocator's fast path (thread cache hit): no flush, no pool store.
  PoolOptions po;
  po.size = 64ull << 20;
  po.kind = "pm_cost";
  if (auto pool = Pool::create_in_memory(po)) {
    pm::Allocator& a = (*pool)->allocator();
    std::printf("allocator fast path (thread-cache hit):\n");
    for (std::size_t bytes : {64u, 256u}) {
      const double ns = best_ns_per_op(iters, [&](std::uint64_t n) {
        for (std::uint64_t i = 0; i < n; ++i) {
          std::uint64_t off;
          if (a.allocate(bytes, &off) != Status::ok) std::abort();
          barrier();
          a.free(off);
        }
      });
      std::printf("  allocate+free %3zu B                          %7.2f ns\n", bytes, ns);
    }
  }
  const auto& k = pm::counters();
  std::printf("counters on this thread: %llu flushes, %llu lines, %llu fences\n",
              static_cast<unsigned long long>(k.flushes),
              static_cast<unsigned long long>(k.lines_flushed),
              static_cast<unsigned long long>(k.fences));
  return 0;
}
