// cli/bench_cmd.cc — `wort bench`: options, progress bar, the callgrind pass, outputs.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bench/bench.h"
#include "bench/llc.h"
#include "bench/report.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "index/registry.h"
#include "wort/index.h"

namespace wort::cli {
namespace {

using bench::BenchOptions;

constexpr const char* kBenchHelp = R"(usage: wort bench [options]

Runs every chosen index on every chosen key set and prints a table laid out like the WORT
paper's Table 1, then per-phase figures. Every phase reports throughput, wall and CPU time
per operation, sampled latency percentiles per operation type (p50/p90/p99/p99.9), cache
lines written back (lines flushed + non-temporal stores, both parts shown), flush calls
and fences per operation; every case reports leaf depth and PM/DRAM bytes per key. The
paper's time tables use CPU time; the header gives the machine's load average. A failed
case prints its reason on stderr (also with --quiet) and the run exits 1.

what to run:
  --index LIST         index kinds, comma-separated (default: every registered one;
                       see 'wort list'); KIND:W0[:W1...] creates it with those option
                       words (IndexOptions, decimal or 0x; each index's README lists
                       them), e.g. roart,roart:1 runs ROART with and without leaf
                       compaction side by side
  --dist LIST          key sets (default dense,sparse,clustered):
                         dense      8-byte keys 1..N in random order
                         sparse     N uniform random 64-bit keys
                         clustered  groups of 64 sequential keys at random bases
                         varbytes   random byte strings, sizes from --key-len (ROART)
                         words      lines of --words FILE (default /usr/share/dict/words);
                                    email-like keys if the file is missing
                         email      generated email-like strings
                         fixed20    random 20-byte keys (WORT's Memcached test)
  --keys N             keys to insert/load (default 1M; suffixes k, M, G)
  --seed N             seed of every random choice (default 42); the load is a pure
                       function of the seed and the options
  --key-len MIN-MAX    varbytes key sizes in bytes (default 4-128)
  --words FILE         word list for --dist words

workload:
  --workload NAME      'paper' (default): insert all keys, search all keys, then range
                       queries; or a mix preset: ycsb-a ycsb-b ycsb-c ycsb-e
                       write-intensive read-intensive read-only insert-only scan-insert;
                       or 'mix' with --mix
  --mix RATIOS         e.g. lookup=50,insert=30,update=10,remove=5,scan=5 (implies
                       --workload mix; also overrides a preset's ratios)
  --ops N              operations in the mix phase (default: --keys)
  --duration SEC       run the mix phase for SEC seconds instead of --ops
  --dist-choice KIND   which key a mix operation touches: uniform, zipfian, selfsimilar,
                       or shuffled (each loaded key once, in a random order; draws past
                       the last key count as misses: the FPTree paper's back-to-back
                       finds, updates and deletes)
  --theta X            zipfian skew (default 0.99) or self-similar h (default 0.2)
  --scan-len N         keys per scan (default 100)
  --range PERCENTS     paper range queries, percent of the keys each covers
                       (default 0.001,0.01 as the paper's Fig. 10; 'none' skips them)
  --range-queries N    range queries per size (default 10000)
  --no-search-direct   skip the paper workload's adapter-overhead phases, on by default:
                       the search phase's lookups (same keys, same order) run again in
                       one tight loop through the type-erased wort::Index
                       ('search-virtual') and on the index's concrete class, no virtual
                       call ('search-direct'); the table and the JSON give the ratio
                       virtual/direct (the adapter's cost) and search/direct. Then
                       'search-chained': the direct loop with each lookup's key chosen
                       through the previous lookup's value, so no two lookups overlap:
                       its ns/op is one lookup's latency (what the sampled percentiles
                       time), search-direct's a throughput. Skipped with --threads > 1
                       (search then takes a lock per call)

conditions:
  --pm-mode MODE       real (flush + fence), emulated (real + write latency), none
                       (no flushes: DRAM baseline); default real
  --flush-insn INSN    auto, clwb, clflushopt, clflush (default auto = best available)
  --write-latency LIST extra ns per flushed cache line, emulated (a list sweeps it, as the
                       paper's Fig. 8: 0,100,300,500); non-zero implies --pm-mode emulated
  --fence-latency NS   extra ns per fence in emulated mode
  --pool-dir DIR       where pool files go (default /dev/shm); 'memory' for anonymous DRAM
  --pool-size BYTES    pool size, e.g. 512M (default: from the key count and key size)
  --threads N          worker threads (default 1). A concurrent index (see `wort list`)
                       is called from every thread at once; any other index takes one
                       lock per call when N > 1. The load phase of a mix always runs on
                       one thread so it is deterministic

extra measurements:
  --verify             run the index's full structural check after the load
  --recovery           fork a child that loads into a file pool, kill -9 it half-way,
                       then time Pool::open + Index::open + first lookup, and the
                       allocator's reclaim, and count acknowledged keys lost
                       (--no-recovery turns it off again)
  --llc MODE           LLC misses per operation: off (default), perf (hardware counters;
                       reported unavailable where perf_event_open fails), callgrind
                       (re-runs the workload under valgrind's cache simulation, with
                       collection on only around each measured phase: deterministic; also
                       gives instructions and L1 misses per op), auto (perf if available,
                       else callgrind)
  --llc-keys N         key count of the callgrind pass (default --keys; it runs ~50x
                       slower, so a smaller N keeps it short); warns when a case's tree
                       at N keys fits in the simulated LL (its misses would mislead)
  --llc-size BYTES     size of the simulated last-level cache, a power of two such as 1M
                       (16-way, 64-byte lines;
                       default: callgrind's detection of this CPU's). A smaller cache
                       keeps the tree-to-cache ratio of a large run in a small pass
  --sample-every N     time every Nth operation for the percentiles (default 64; the
                       clock reads slow miss-bound lookups, see src/bench/README.md)

output:
  --json FILE          every figure plus the environment (git revision, compiler and
                       flags, CPU, flush instruction, PM mode, seed, every option)
  --csv FILE           one row per case x phase x operation type
  --quiet              no table on stdout
  --no-progress        no progress bar on stderr

examples:
  wort bench --index wort,woart --dist dense,sparse,clustered --keys 1000000 --json out.json
  wort bench --workload ycsb-a --keys 1M --ops 2M --threads 2
  wort bench --dist dense --write-latency 0,100,300,500 --keys 200k
  wort bench --keys 100k --llc callgrind
)";

std::vector<std::uint32_t> parse_latencies(const std::string& s) {
  std::vector<std::uint32_t> out;
  for (const auto& item : split_list(s))
    out.push_back(static_cast<std::uint32_t>(parse_count(item, "--write-latency")));
  if (out.empty()) throw UsageError("--write-latency: empty list");
  return out;
}

struct Outputs {
  std::string json, csv, child_json;
  bool quiet = false;
  bool progress = true;
};

BenchOptions parse_bench_args(const Args& args, Outputs& out) {
  BenchOptions o;
  ArgReader r(args);
  std::string mix_ratios, preset, choice, latencies;
  double theta = -1;
  bool mode_given = false;
  while (r.more()) {
    if (r.is("--help") || r.is("-h")) {
      std::fputs(kBenchHelp, stdout);
      std::exit(0);
    } else if (r.is("--index")) o.indexes = split_list(r.value());
    else if (r.is("--dist")) {
      o.dists.clear();
      for (const auto& d : split_list(r.value())) {
        bench::KeyDist kd;
        if (!bench::parse(d, kd)) throw UsageError("unknown key distribution '" + d + "'");
        o.dists.push_back(kd);
      }
    } else if (r.is("--keys")) o.keys = parse_count(r.value(), "--keys");
    else if (r.is("--seed")) o.seed = parse_count(r.value(), "--seed");
    else if (r.is("--key-len")) {
      const std::string v = r.value();
      const auto dash = v.find('-');
      if (dash == std::string::npos) throw UsageError("--key-len wants MIN-MAX");
      o.min_len = parse_count(v.substr(0, dash), "--key-len");
      o.max_len = parse_count(v.substr(dash + 1), "--key-len");
    } else if (r.is("--words")) o.words_file = r.value();
    else if (r.is("--workload")) preset = r.value();
    else if (r.is("--mix")) mix_ratios = r.value();
    else if (r.is("--ops")) o.mix.ops = parse_count(r.value(), "--ops");
    else if (r.is("--duration")) o.mix.duration_s = parse_number(r.value(), "--duration");
    else if (r.is("--dist-choice")) choice = r.value();
    else if (r.is("--theta")) theta = parse_number(r.value(), "--theta");
    else if (r.is("--scan-len")) o.mix.scan_len = parse_count(r.value(), "--scan-len");
    else if (r.is("--range")) {
      o.range_fractions.clear();
      const std::string v = r.value();
      if (v != "none")
        for (const auto& p : split_list(v)) o.range_fractions.push_back(parse_number(p, "--range") / 100);
    } else if (r.is("--range-queries")) o.range_queries = parse_count(r.value(), "--range-queries");
    else if (r.is("--pm-mode")) {
      if (!pm::parse(r.value(), o.pm.mode) || o.pm.mode == pm::Mode::trace)
        throw UsageError("--pm-mode: real, emulated or none");
      mode_given = true;
    } else if (r.is("--flush-insn")) {
      if (!pm::parse(r.value(), o.pm.insn)) throw UsageError("--flush-insn: auto, clwb, clflushopt or clflush");
    } else if (r.is("--write-latency")) latencies = r.value();
    else if (r.is("--fence-latency")) o.pm.fence_latency_ns = static_cast<std::uint32_t>(parse_count(r.value(), "--fence-latency"));
    else if (r.is("--pool-dir")) {
      o.pool_dir = r.value();
      if (o.pool_dir == "memory") o.pool_dir.clear();
    } else if (r.is("--pool-size")) o.pool_size = parse_bytes(r.value(), "--pool-size");
    else if (r.is("--threads")) o.threads = static_cast<unsigned>(parse_count(r.value(), "--threads"));
    else if (r.is("--sample-every")) o.sample_every = static_cast<unsigned>(parse_count(r.value(), "--sample-every"));
    else if (r.is("--verify")) o.verify = true;
    else if (r.is("--no-search-direct")) o.search_direct = false;
    else if (r.is("--search-direct")) o.search_direct = true;
    else if (r.is("--recovery")) o.recovery = true;
    else if (r.is("--no-recovery")) o.recovery = false;
    else if (r.is("--llc")) {
      const std::string m = r.value();
      if (m == "off") o.llc = bench::LlcMode::off;
      else if (m == "perf") o.llc = bench::LlcMode::perf;
      else if (m == "callgrind") o.llc = bench::LlcMode::callgrind;
      else if (m == "callgrind-child") o.llc = bench::LlcMode::callgrind_child;
      else if (m == "auto") o.llc = bench::hw_counters_available(nullptr) ? bench::LlcMode::perf : bench::LlcMode::callgrind;
      else throw UsageError("--llc: off, perf, callgrind or auto");
    } else if (r.is("--llc-keys")) o.llc_keys = parse_count(r.value(), "--llc-keys");
    else if (r.is("--llc-size")) {
      o.llc_size = parse_bytes(r.value(), "--llc-size");
      // callgrind needs a power-of-two number of sets (size / (16 ways * 64 bytes)).
      if (o.llc_size < 16 * 64 || (o.llc_size & (o.llc_size - 1)) != 0)
        throw UsageError("--llc-size must be a power of two of at least 1K");
    }
    else if (r.is("--json")) out.json = r.value();
    else if (r.is("--csv")) out.csv = r.value();
    else if (r.is("--quiet")) out.quiet = true;
    else if (r.is("--no-progress")) out.progress = false;
    else throw UsageError("unknown option '" + r.peek() + "'");
  }
  if (!preset.empty() && preset != "paper" && preset != "mix") {
    const bench::Preset* p = bench::find_preset(preset);
    if (!p) throw UsageError("unknown workload '" + preset + "' (see 'wort list')");
    const auto ops = o.mix.ops;
    const auto dur = o.mix.duration_s;
    const auto scan_len = o.mix.scan_len;
    o.mix = p->mix;
    o.mix.ops = ops, o.mix.duration_s = dur, o.mix.scan_len = scan_len;
    o.workload = preset;
  }
  if (!mix_ratios.empty()) {
    if (auto res = bench::parse_ratios(mix_ratios, o.mix); !res) throw UsageError("--mix: " + res.error().message);
    if (o.workload == "paper") o.workload = "mix";
  }
  if (preset == "mix" && mix_ratios.empty()) throw UsageError("--workload mix needs --mix RATIOS");
  if (!choice.empty() && !bench::parse(choice, o.mix.choice))
    throw UsageError("--dist-choice: uniform, zipfian, selfsimilar or shuffled");
  if (theta >= 0) o.mix.choice_param = theta;
  if (!latencies.empty()) {
    o.flush_latencies = parse_latencies(latencies);
    bool any = false;
    for (auto l : o.flush_latencies) any |= l > 0;
    if (any && !mode_given) o.pm.mode = pm::Mode::emulated;
  }
  o.progress = out.progress;
  return o;
}

// A one-line progress bar on stderr, drawn only once the run has taken 2 s, at most every
// 100 ms; on a non-terminal, a line per 10%.
class ProgressBar {
 public:
  explicit ProgressBar(bool on) : on_(on), tty_(::isatty(2)), t0_(Clock::now()) {}
  void update(const std::string& label, double f) {
    if (!on_) return;
    const auto now = Clock::now();
    if (now - t0_ < std::chrono::seconds(2) || now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const int pct = static_cast<int>(f * 100);
    if (tty_) {
      constexpr int kWidth = 30;
      const int fill = static_cast<int>(f * kWidth);
      std::fprintf(stderr, "\r[%s%s] %3d%% %-40.40s", std::string(fill, '#').c_str(),
                   std::string(kWidth - fill, ' ').c_str(), pct, label.c_str());
      drawn_ = true;
    } else if (pct / 10 > last_decile_) {
      last_decile_ = pct / 10;
      std::fprintf(stderr, "wort bench: %3d%% %s\n", pct, label.c_str());
    }
  }
  void finish() {
    if (drawn_) std::fprintf(stderr, "\r%80s\r", "");
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool on_, tty_;
  Clock::time_point t0_, last_{};
  bool drawn_ = false;
  int last_decile_ = -1;
};

bool valgrind_present() { return std::system("valgrind --version >/dev/null 2>&1") == 0; }

// Re-runs this command under callgrind with the cache simulation, collection confined to
// the measured phases, and attaches the figures to `report`. Returns a note for the reader;
// adds to `warnings` a line per case whose tree fits in the simulated LL.
std::string callgrind_pass(bench::BenchReport& report, const Args& full_argv,
                           std::vector<std::string>& warnings) {
  if (!valgrind_present()) return "LLC: valgrind not found; no callgrind figures";
  char tmpl[] = "/tmp/wort-callgrind-XXXXXX";
  if (!::mkdtemp(tmpl)) return "LLC: cannot create a temporary directory";
  const std::string dir = tmpl;
  const BenchOptions& o = report.options;
  std::vector<std::string> cmd{"valgrind", "--tool=callgrind", "--cache-sim=yes",
                               "--instr-atstart=no", "--callgrind-out-file=" + dir + "/cg.%p",
                               "--log-file=" + dir + "/valgrind.log",
                               std::filesystem::read_symlink("/proc/self/exe").string()};
  if (o.llc_size) cmd.insert(cmd.end() - 1, "--LL=" + std::to_string(o.llc_size) + ",16,64");
  cmd.insert(cmd.end(), full_argv.begin() + 1, full_argv.end());
  // Later options win: same workload, fewer keys if asked, no extras, first latency only.
  const std::vector<std::string> extra{"--llc=callgrind-child", "--keys=" + std::to_string(o.llc_keys),
                                       "--json=" + dir + "/child.json", "--csv=", "--quiet",
                                       "--no-recovery", "--write-latency=" + std::to_string(o.flush_latencies.front())};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  std::vector<char*> cargv;
  for (auto& s : cmd) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  std::fprintf(stderr, "wort bench: callgrind pass (%zu keys) under valgrind; this is slow...\n", o.llc_keys);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execvp("valgrind", cargv.data());
    _exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::string note;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    note = "LLC: the callgrind pass failed (see " + dir + "/valgrind.log)";
    return note;
  }
  auto dumps = bench::parse_callgrind_dir(dir, "cg.");
  std::ifstream in(dir + "/child.json");
  std::stringstream ss;
  ss << in.rdbuf();
  if (!dumps) return "LLC: " + dumps.error().message;
  auto n = bench::attach_callgrind(report, dumps.value(), ss.str());
  if (!n) return "LLC: " + n.error().message;
  std::string ll = "this CPU's cache sizes";
  std::uint64_t ll_bytes = o.llc_size;
  {
    std::ifstream log(dir + "/valgrind.log");
    std::stringstream text;
    text << log.rdbuf();
    // valgrind logs e.g. "--123-- warning: simulated LL cache: line_size 64  assoc 1  total_size 268,435,456"
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);)
      if (auto at = line.find("simulated LL cache: "); at != std::string::npos)
        ll = "callgrind's own choice of LL: " + line.substr(at + 20);
    if (!o.llc_size) ll_bytes = bench::simulated_ll_bytes(text.str());
    // Without that warning callgrind simulates this CPU's own last level.
    if (ll_bytes == 0) ll_bytes = static_cast<std::uint64_t>(std::max(0L, ::sysconf(_SC_LEVEL3_CACHE_SIZE)));
  }
  if (auto w = bench::llc_fit_warnings(ss.str(), ll_bytes); w)
    warnings.insert(warnings.end(), w.value().begin(), w.value().end());
  std::filesystem::remove_all(dir);
  return "LLC misses per op from callgrind's cache simulation (" + std::to_string(o.llc_keys) +
         " keys, " + std::to_string(n.value()) + " phases; " +
         (o.llc_size ? "simulated LL " + std::to_string(o.llc_size) + " bytes, 16-way" : ll) + ")";
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

}  // namespace

int bench_main(const Args& args, const Args& full_argv) {
  Outputs out;
  BenchOptions o = parse_bench_args(args, out);
  if (auto v = bench::validate(o); !v) throw UsageError(v.error().message);
  // Configure once up front so the environment records the resolved instruction.
  if (auto c = pm::configure(o.pm); !c) throw UsageError(c.error().message);

  bench::BenchReport report;
  report.options = o;
  report.env = bench::gather_env(source_dir(), full_argv);
  if (o.threads > 1) {
    std::string serial;
    for (const std::string& k : o.indexes.empty() ? Index::kinds() : o.indexes)
      if (const registry::Entry* e = registry::find(bench::parse_index_spec(k).value().kind);
          e && !e->concurrent)
        serial += (serial.empty() ? "" : ", ") + k;
    if (!serial.empty())
      report.notes.push_back("not concurrent, so every call holds one lock with --threads > 1: " + serial);
  }
  if (o.llc == bench::LlcMode::perf && report.env.hw_counters != "available")
    report.notes.push_back("LLC: hardware counters " + report.env.hw_counters + "; try --llc callgrind");

  ProgressBar bar(out.progress);
  const std::string pass = o.llc == bench::LlcMode::callgrind_child ? "callgrind pass: " : "";
  report.cases = bench::run_all(o, [&](const std::string& l, double f) { bar.update(pass + l, f); });
  report.env.load_end = bench::read_loadavg();
  bar.finish();
  // A failed case says why on stderr too: with --quiet (or only a JSON) nothing else would.
  const std::vector<std::string> failures = bench::case_failures(report.cases);
  for (const auto& f : failures) {
    report.notes.push_back(f);
    std::fprintf(stderr, "wort bench: %s\n", f.c_str());
  }
  if (!failures.empty() && failures.size() == report.cases.size())
    std::fprintf(stderr, "wort bench: every case failed\n");

  if (o.llc == bench::LlcMode::callgrind) {
    std::vector<std::string> warnings;
    report.notes.push_back(callgrind_pass(report, full_argv, warnings));
    for (const auto& w : warnings) {
      std::fprintf(stderr, "wort bench: warning: %s\n", w.c_str());
      report.notes.push_back("warning: " + w);
    }
  }

  if (!out.quiet) bench::write_table(report, std::cout);
  if (!out.json.empty() && !write_file(out.json, bench::to_json(report)))
    throw std::runtime_error("cannot write " + out.json);
  if (!out.csv.empty() && !write_file(out.csv, bench::to_csv(report)))
    throw std::runtime_error("cannot write " + out.csv);
  for (const auto& c : report.cases)
    if (!c.error.empty()) return 1;
  return 0;
}

}  // namespace wort::cli
