// bench/runner.h — runs benchmark cases against registered indexes and collects results.
//
// A case is one (index kind, key set, PM write latency). The runner creates a fresh pool
// (a file under pool_dir, by default /dev/shm, or anonymous memory), creates the index
// through the registry, and runs the phases of the chosen workload, reading the
// persistence counters around each phase on every worker thread. With --threads > 1 an
// index that is not concurrent (registry Entry::concurrent) is called under one lock; a
// concurrent one is called from every thread at once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/keygen.h"
#include "bench/metrics.h"
#include "bench/workload.h"
#include "wort/index.h"
#include "wort/persist.h"

namespace wort::bench {

enum class LlcMode : std::uint8_t { off, perf, callgrind, callgrind_child };

//! Every option of a benchmark run (all of it goes into the JSON).
struct BenchOptions {
  std::vector<std::string> indexes;              //!< IndexSpecs; empty = every registered kind
  std::vector<KeyDist> dists{KeyDist::dense, KeyDist::sparse, KeyDist::clustered};
  std::size_t keys = 1'000'000;
  std::uint64_t seed = 42;
  std::size_t min_len = 4, max_len = 128;        //!< varbytes key sizes
  std::string words_file = "/usr/share/dict/words";
  std::string workload = "paper";                //!< "paper", a preset name, or "mix"
  MixSpec mix;                                   //!< for mixes
  std::vector<double> range_fractions{0.00001, 0.0001};  //!< 0.001% and 0.01%
  std::size_t range_queries = 10000;
  pm::Config pm;                                 //!< mode, instruction, fence latency
  std::vector<std::uint32_t> flush_latencies{0}; //!< emulated ns per flushed line (a sweep)
  std::string pool_dir = "/dev/shm";             //!< "" = anonymous memory
  std::uint64_t pool_size = 0;                   //!< 0 = sized from the key set
  unsigned threads = 1;
  bool index_concurrent = false;                 //!< set per case from the registry: no lock
  unsigned sample_every = 64;                    //!< time every Nth operation
  bool search_direct = true;                     //!< paper workload: search-virtual and
                                                 //!< search-direct (adapter overhead)
  bool prefault = true;                          //!< map every pool page before the phases
                                                 //!< (no first-touch page faults timed)
  bool verify = false;                           //!< run Index::verify() after the load
  bool recovery = false;                         //!< measure recovery after kill -9 mid-load
  LlcMode llc = LlcMode::off;
  std::size_t llc_keys = 0;                      //!< key count of the callgrind pass (0 = keys)
  std::uint64_t llc_size = 0;                    //!< simulated LL bytes (0 = callgrind's default)
  bool progress = true;                          //!< progress bar on stderr
};

//! Recovery after a crash left by kill -9 in the middle of the load.
struct RecoveryResult {
  bool measured = false;
  std::string error;              //!< why it could not be measured
  std::uint64_t acknowledged = 0; //!< inserts acknowledged before the kill signal was sent
  std::uint64_t lost = 0;         //!< acknowledged keys not found after recovery
  double open_s = 0;              //!< Pool::open + Index::open + first lookup answered
  double reclaim_s = 0;           //!< ... + allocator reclaim complete
  std::uint64_t pool_bytes = 0;
};

//! One case's results.
struct CaseResult {
  std::string index;
  KeyDist dist = KeyDist::dense;
  std::uint32_t flush_latency_ns = 0;
  std::size_t keys = 0;
  std::string key_source;
  double avg_key_len = 0;
  std::string error;                //!< non-empty if the case failed (the rest is partial)
  std::vector<PhaseResult> phases;
  IndexStats stats;                 //!< after the load/insert phase
  std::uint64_t pool_bytes = 0;     //!< allocator bytes in use after the load
  bool verified = false;
  std::string prefault;             //!< "N MiB in T s", "failed: why", or "off"
  RecoveryResult recovery;

  const PhaseResult* phase(std::string_view name) const;
  double pm_bytes_per_key() const { return per_op(static_cast<double>(stats.pm_bytes), stats.keys); }
  double dram_bytes_per_key() const { return per_op(static_cast<double>(stats.dram_bytes), stats.keys); }
  //! CPU ns/op of phase a over CPU ns/op of phase b (CPU time: on a shared machine wall
  //! time adds whatever preempted the thread); NaN if either is missing.
  double phase_ratio(std::string_view a, std::string_view b) const;
  //! The type-erased handle's cost: search-virtual over search-direct (the same loop, a
  //! virtual call per key against a direct one).
  double adapter_overhead() const { return phase_ratio("search-virtual", "search-direct"); }
  //! search over search-direct: the handle plus the bench's per-op bookkeeping in `search`.
  double search_over_direct() const { return phase_ratio("search", "search-direct"); }
};

//! One `--index` entry: a registered kind, alone or with create options after colons —
//! "roart:1" (IndexOptions::words[0] = 1: ROART without leaf compaction), "fptree:64:128"
//! (words[0..3], decimal or 0x hex; 0 keeps the index's default). The whole entry labels
//! the case, so a kind with and without options can run side by side.
struct IndexSpec {
  std::string kind;
  IndexOptions options;
};
Result<IndexSpec> parse_index_spec(std::string_view entry);

//! Progress callback: (case label, fraction of the case done).
using ProgressFn = std::function<void(const std::string&, double)>;

//! Turns each phase's own progress (0 to 1, starting again at every phase) into the case's:
//! phase i covers its share of the case, weighted by its planned operations, after the
//! phases before it. What it reports never decreases, whatever it is fed (a phase outside
//! the plan counts as the last one).
class CaseProgress {
 public:
  CaseProgress(const ProgressFn& out, std::vector<double> weights);
  //! Reports phase i at fraction f of itself.
  void report(std::size_t phase, const std::string& label, double f);
  //! The callback of the next phase in the plan (the first call gives phase 0's).
  ProgressFn next_phase();
  double last() const noexcept { return last_; }

 private:
  const ProgressFn& out_;
  std::vector<double> start_;  // share of the case done before phase i
  std::vector<double> share_;  // phase i's share
  std::size_t next_ = 0;
  double last_ = 0;
};

//! The name a phase is known by in callgrind dumps: "index/dist/latency/phase".
std::string phase_tag(const std::string& index, KeyDist d, std::uint32_t lat,
                      const std::string& phase);

//! Runs one case. Failures are recorded in the result's `error`, never thrown.
CaseResult run_case(const BenchOptions& o, const std::string& index, KeyDist dist,
                    std::uint32_t flush_latency_ns, const ProgressFn& progress);

//! Pool size for a key set when the options leave it 0.
std::uint64_t auto_pool_size(std::size_t keys, double avg_key_len);

//! Maps every page of the pool writable (no data changes: a hole reads as zeros either way),
//! so that no timed operation takes a page fault: real PM under DAX faults in 2 MiB pages,
//! a /dev/shm pool in 4 KiB ones, which would charge the indexes a tmpfs cost. Returns what
//! happened ("N MiB in T s", or "failed: why"), for the report.
std::string prefault_pool(Pool& pool);

//! CPU time of the calling thread, in seconds (time spent descheduled does not count).
double thread_cpu_seconds();

}  // namespace wort::bench
