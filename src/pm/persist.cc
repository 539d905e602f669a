// pm/persist.cc — the runtime half of the persistence primitives: process-wide mode and
// instruction (resolved once at static initialisation from cpuid), TSC calibration for the
// emulated mode, counters, names.
#include "pm/persist.h"

#include <algorithm>
#include <chrono>
#include <cpuid.h>
#include <x86intrin.h>

namespace wort {

std::string_view to_string(Status s) noexcept {
  switch (s) {
    case Status::ok: return "ok";
    case Status::not_found: return "not_found";
    case Status::exists: return "exists";
    case Status::out_of_space: return "out_of_space";
    case Status::corrupt: return "corrupt";
    case Status::invalid_argument: return "invalid_argument";
    case Status::io_error: return "io_error";
    case Status::no_such_file: return "no_such_file";
    case Status::truncated: return "truncated";
    case Status::not_a_pool: return "not_a_pool";
    case Status::newer_version: return "newer_version";
    case Status::wrong_kind: return "wrong_kind";
    case Status::in_use: return "in_use";
  }
  return "unknown";
}

}  // namespace wort

namespace wort::pm {
namespace {

// cpuid leaf 7, sub-leaf 0, EBX: bit 23 = CLFLUSHOPT, bit 24 = CLWB.
// cpuid leaf 1, EDX: bit 19 = CLFSH.
struct CpuFeatures {
  bool clflush = false;
  bool clflushopt = false;
  bool clwb = false;
};

CpuFeatures probe_cpu() noexcept {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) f.clflush = (d >> 19) & 1u;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.clflushopt = (b >> 23) & 1u;
    f.clwb = (b >> 24) & 1u;
  }
  return f;
}

// What the CPU reports, and (test builds, WORT_FAULTS) what tests pretend it lacks.
const CpuFeatures& probed() noexcept {
  static const CpuFeatures f = probe_cpu();
  return f;
}
#if WORT_FAULTS
CpuFeatures g_hidden;

CpuFeatures cpu() noexcept {
  const CpuFeatures& p = probed();
  return {p.clflush && !g_hidden.clflush, p.clflushopt && !g_hidden.clflushopt,
          p.clwb && !g_hidden.clwb};
}
#else
CpuFeatures cpu() noexcept { return probed(); }
#endif

FlushInsn best_insn() noexcept {
  if (cpu().clwb) return FlushInsn::clwb;
  if (cpu().clflushopt) return FlushInsn::clflushopt;
  return FlushInsn::clflush;
}

Config initial_config() noexcept {
  Config c;
  c.insn = best_insn();
  return c;
}

// The public view of the configuration; detail::hot is the resolved hot-path copy.
Config g_config = initial_config();

// TSC ticks per nanosecond, measured once (the first time an emulated latency is needed)
// against steady_clock over ~20 ms. Invariant TSC is assumed (every x86-64 CPU of the last
// decade has it; /proc/cpuinfo shows constant_tsc).
double tsc_per_ns() noexcept {
  static const double ratio = [] {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const std::uint64_t c0 = __rdtsc();
    while (clock::now() - t0 < std::chrono::milliseconds(20)) {
    }
    const auto t1 = clock::now();
    const std::uint64_t c1 = __rdtsc();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    return ns > 0 ? static_cast<double>(c1 - c0) / ns : 1.0;
  }();
  return ratio;
}

std::uint64_t ns_to_cycles(std::uint32_t ns) noexcept {
  if (ns == 0) return 0;
  return static_cast<std::uint64_t>(static_cast<double>(ns) * tsc_per_ns() + 0.5);
}

}  // namespace

namespace detail {
HotConfig hot = {Mode::real, best_insn(), 0, 0};

#if WORT_FAULTS
void hide_insn_for_testing(FlushInsn insn, bool hidden) noexcept {
  switch (insn) {
    case FlushInsn::clwb: g_hidden.clwb = hidden; break;
    case FlushInsn::clflushopt: g_hidden.clflushopt = hidden; break;
    case FlushInsn::clflush: g_hidden.clflush = hidden; break;
    case FlushInsn::automatic: break;
  }
}
#endif

void spin_cycles(std::uint64_t cycles) noexcept {
  if (cycles == 0) return;
  const std::uint64_t start = __rdtsc();
  while (__rdtsc() - start < cycles) _mm_pause();
}
}  // namespace detail

bool cpu_has(FlushInsn insn) noexcept {
  switch (insn) {
    case FlushInsn::automatic: return true;
    case FlushInsn::clwb: return cpu().clwb;
    case FlushInsn::clflushopt: return cpu().clflushopt;
    case FlushInsn::clflush: return cpu().clflush;
  }
  return false;
}

Result<void> configure(const Config& c) {
  if (!cpu_has(c.insn))
    return Error{Status::invalid_argument,
                 "this CPU does not support " + std::string(to_string(c.insn))};
  Config resolved = c;
  if (resolved.insn == FlushInsn::automatic) resolved.insn = best_insn();
  detail::HotConfig h;
  h.mode = resolved.mode;
  h.insn = resolved.insn;
  if (resolved.mode == Mode::emulated) {
    h.flush_delay_cycles = ns_to_cycles(resolved.flush_latency_ns);
    h.fence_delay_cycles = ns_to_cycles(resolved.fence_latency_ns);
  }
  g_config = resolved;
  detail::hot = h;
  return {};
}

const Config& config() noexcept { return g_config; }

std::string_view to_string(Mode m) noexcept {
  switch (m) {
    case Mode::real: return "real";
    case Mode::emulated: return "emulated";
    case Mode::none: return "none";
    case Mode::trace: return "trace";
  }
  return "unknown";
}

std::string_view to_string(FlushInsn i) noexcept {
  switch (i) {
    case FlushInsn::automatic: return "auto";
    case FlushInsn::clwb: return "clwb";
    case FlushInsn::clflushopt: return "clflushopt";
    case FlushInsn::clflush: return "clflush";
  }
  return "unknown";
}

bool parse(std::string_view s, Mode& out) noexcept {
  for (Mode m : {Mode::real, Mode::emulated, Mode::none, Mode::trace}) {
    if (s == to_string(m)) {
      out = m;
      return true;
    }
  }
  return false;
}

bool parse(std::string_view s, FlushInsn& out) noexcept {
  for (FlushInsn i :
       {FlushInsn::automatic, FlushInsn::clwb, FlushInsn::clflushopt, FlushInsn::clflush}) {
    if (s == to_string(i)) {
      out = i;
      return true;
    }
  }
  return false;
}

void fill(void* dst, std::uint8_t b, std::size_t n) noexcept {
  if (Tracer* t = detail::tls_tracer) [[unlikely]] {
    // The tracer wants the bytes being stored; report them in pieces from a small buffer
    // rather than allocating n bytes.
    std::byte pattern[512];
    std::memset(pattern, b, sizeof pattern);
    auto* d = static_cast<std::byte*>(dst);
    for (std::size_t done = 0; done < n;) {
      const std::size_t piece = std::min(n - done, sizeof pattern);
      t->on_store(d + done, pattern, piece);
      done += piece;
    }
  }
  std::memset(dst, b, n);
}

const Counters& counters() noexcept { return detail::tls_counters; }

void reset_counters() noexcept { detail::tls_counters = Counters{}; }

}  // namespace wort::pm

namespace wort::pm {

void copy_changed(void* dst, const void* src, std::size_t n) noexcept {
  const auto base = reinterpret_cast<std::uintptr_t>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  const std::uintptr_t end = base + n;
  std::uintptr_t run = 0;  // start of the current run of lines to write (0: none)
  const auto write = [&](std::uintptr_t lo, std::uintptr_t hi) {
    pm::copy(reinterpret_cast<void*>(lo), s + (lo - base), hi - lo);
    pm::flush(reinterpret_cast<void*>(lo), hi - lo);
  };
  for (std::uintptr_t line = base & ~(kCacheLine - 1); line < end; line += kCacheLine) {
    const std::uintptr_t lo = std::max(line, base), hi = std::min(line + kCacheLine, end);
    if (std::memcmp(reinterpret_cast<const void*>(lo), s + (lo - base), hi - lo) != 0) {
      if (run == 0) run = lo;
      continue;
    }
    if (run != 0) write(run, lo), run = 0;
    if (Tracer* t = detail::tls_tracer) [[unlikely]]
      t->on_assume_durable(reinterpret_cast<void*>(lo), hi - lo);
  }
  if (run != 0) write(run, end);
}

}  // namespace wort::pm
