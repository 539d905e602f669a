// bench/llc.h — cache misses per operation: hardware counters when the machine exposes
// them (perf_event_open), otherwise callgrind's cache simulation.
//
// The callgrind path: `wort bench --llc callgrind` re-runs the same workload (same seed)
// under `valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no`; in that child each
// measured phase switches instrumentation on, zeroes the statistics, and dumps them under
// the phase's tag when it ends. The parent parses the dumps and attaches the figures to the
// matching phases. The simulation is deterministic, so the figures repeat exactly.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "bench/metrics.h"
#include "wort/status.h"

namespace wort::bench {

//! A hardware LLC-miss counter for this thread and the threads it starts afterwards.
class HwCounter {
 public:
  HwCounter() = default;
  ~HwCounter();
  HwCounter(const HwCounter&) = delete;
  HwCounter& operator=(const HwCounter&) = delete;
  //! Opens the counter; fails with a message (errno text) where the machine has none.
  Result<void> open();
  void start() noexcept;
  //! Stops and returns the count since start().
  std::uint64_t stop() noexcept;

 private:
  int fd_llc_ = -1;
  int fd_insn_ = -1;
  std::uint64_t insn_ = 0;

 public:
  std::uint64_t instructions() const noexcept { return insn_; }
};

//! Whether hardware counters work here; `why` gets the reason if not.
bool hw_counters_available(std::string* why);

//! Callgrind: start instrumenting and zero the statistics (no-op outside valgrind).
void callgrind_begin() noexcept;
//! Callgrind: dump the statistics under `tag` and stop instrumenting.
void callgrind_end(const std::string& tag) noexcept;

//! Totals of one callgrind dump.
struct CallgrindTotals {
  std::map<std::string, std::uint64_t> events;  //!< "Ir", "D1mr", "DLmr", ...
  std::uint64_t get(const std::string& e) const {
    auto it = events.find(e);
    return it == events.end() ? 0 : it->second;
  }
  std::uint64_t ll_misses() const { return get("ILmr") + get("DLmr") + get("DLmw"); }
  std::uint64_t d1_misses() const { return get("D1mr") + get("D1mw"); }
};

//! Parses one callgrind output file: its trigger tag ("Client Request: <tag>") and the
//! totals line under the events line.
Result<std::pair<std::string, CallgrindTotals>> parse_callgrind_file(const std::string& text);

//! Parses every dump file whose name starts with `prefix` in `dir`, by tag.
Result<std::map<std::string, CallgrindTotals>> parse_callgrind_dir(const std::string& dir,
                                                                   const std::string& prefix);

//! The simulated LL size valgrind logs when it picks one itself ("warning: simulated LL
//! cache: line_size 64  assoc 1  total_size 268,435,456"), in bytes; 0 if the log has none.
std::uint64_t simulated_ll_bytes(const std::string& valgrind_log);

}  // namespace wort::bench
