// wort/persist.h — process-wide persistence configuration and per-thread counters.
//
// The primitives themselves (pm::store, pm::copy, pm::flush, pm::fence, pm::persist,
// pm::nt_store) live in src/pm/persist.h; this public header is what an embedding program
// or the benchmark needs to choose a mode and read the counters.
#pragma once

#include <cstdint>
#include <string_view>

#include "wort/status.h"

namespace wort::pm {

//! How flushes and fences behave.
enum class Mode : std::uint8_t {
  real,      //!< issue the flush instruction and sfence
  emulated,  //!< as real, plus a TSC busy-wait per flushed line and per fence (PM latency)
  none,      //!< no flush, no fence: the DRAM baseline (counters still count)
  trace,     //!< no instructions; events go to the installed Tracer (the crash simulator)
};

//! Which cache-line write-back instruction `real`/`emulated` use.
enum class FlushInsn : std::uint8_t { automatic, clwb, clflushopt, clflush };

//! Process-wide configuration, set once before the indexes run (not thread-safe to change
//! while other threads flush).
struct Config {
  Mode mode = Mode::real;
  FlushInsn insn = FlushInsn::automatic;  //!< automatic = best the CPU has: clwb > clflushopt > clflush
  std::uint32_t flush_latency_ns = 0;     //!< emulated: extra ns per flushed cache line
  std::uint32_t fence_latency_ns = 0;     //!< emulated: extra ns per fence
};

//! Applies a configuration. Fails with invalid_argument if the CPU lacks the instruction.
Result<void> configure(const Config& c);
//! The configuration in force (insn resolved: never `automatic`).
const Config& config() noexcept;
//! Instructions this CPU supports.
bool cpu_has(FlushInsn insn) noexcept;

std::string_view to_string(Mode m) noexcept;
std::string_view to_string(FlushInsn i) noexcept;
//! Parses "real" / "emulated" / "none" / "trace"; false on anything else.
bool parse(std::string_view s, Mode& out) noexcept;
//! Parses "auto" / "clwb" / "clflushopt" / "clflush"; false on anything else.
bool parse(std::string_view s, FlushInsn& out) noexcept;

//! Per-thread persistence counters. Always on; each is a plain thread-local increment.
struct Counters {
  std::uint64_t flushes = 0;        //!< pm::flush calls
  std::uint64_t lines_flushed = 0;  //!< cache lines written back (flush instructions issued)
  std::uint64_t fences = 0;         //!< pm::fence calls (sfence issued)
  std::uint64_t nt_stores = 0;      //!< non-temporal 8-byte stores
  std::uint64_t commits = 0;        //!< commit stores (pm::commit / pm::publish)
};

//! This thread's counters.
const Counters& counters() noexcept;
//! Zeroes this thread's counters.
void reset_counters() noexcept;

}  // namespace wort::pm
