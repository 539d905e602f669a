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

// What the options set: the options themselves, the outputs, and what is settled only once
// every option is read (a preset's ratios, which --mix may override, and so on).
struct BenchArgs {
  BenchOptions o;
  Outputs& out;
  std::string mix_ratios, preset, choice, latencies;
  double theta = -1;
  bool mode_given = false;
};

// One option of `wort bench`: its name, whether it takes a value, and what it sets.
struct BenchOption {
  const char* name;
  bool takes_value;
  void (*apply)(BenchArgs& a, const std::string& v);
};

void set_dists(BenchArgs& a, const std::string& v) {
  a.o.dists.clear();
  for (const auto& d : split_list(v)) {
    bench::KeyDist kd;
    if (!bench::parse(d, kd)) throw UsageError("unknown key distribution '" + d + "'");
    a.o.dists.push_back(kd);
  }
}

void set_key_len(BenchArgs& a, const std::string& v) {
  const auto dash = v.find('-');
  if (dash == std::string::npos) throw UsageError("--key-len wants MIN-MAX");
  a.o.min_len = parse_count(v.substr(0, dash), "--key-len");
  a.o.max_len = parse_count(v.substr(dash + 1), "--key-len");
}

void set_range(BenchArgs& a, const std::string& v) {
  a.o.range_fractions.clear();
  if (v != "none")
    for (const auto& p : split_list(v)) a.o.range_fractions.push_back(parse_number(p, "--range") / 100);
}

void set_pm_mode(BenchArgs& a, const std::string& v) {
  if (!pm::parse(v, a.o.pm.mode) || a.o.pm.mode == pm::Mode::trace)
    throw UsageError("--pm-mode: real, emulated or none");
  a.mode_given = true;
}

void set_llc(BenchArgs& a, const std::string& m) {
  bench::LlcMode& l = a.o.llc;
  if (m == "off") l = bench::LlcMode::off;
  else if (m == "perf") l = bench::LlcMode::perf;
  else if (m == "callgrind") l = bench::LlcMode::callgrind;
  else if (m == "callgrind-child") l = bench::LlcMode::callgrind_child;
  else if (m == "auto") l = bench::hw_counters_available(nullptr) ? bench::LlcMode::perf : bench::LlcMode::callgrind;
  else throw UsageError("--llc: off, perf, callgrind or auto");
}

void set_llc_size(BenchArgs& a, const std::string& v) {
  a.o.llc_size = parse_bytes(v, "--llc-size");
  // callgrind needs a power-of-two number of sets (size / (16 ways * 64 bytes)).
  if (a.o.llc_size < 16 * 64 || (a.o.llc_size & (a.o.llc_size - 1)) != 0)
    throw UsageError("--llc-size must be a power of two of at least 1K");
}

std::uint32_t count32(const std::string& v, const char* what) {
  return static_cast<std::uint32_t>(parse_count(v, what));
}

using A = BenchArgs&;
using V = const std::string&;

// Every option of `wort bench` but --help (kBenchHelp describes each).
constexpr BenchOption kBenchOptions[] = {
    // what to run
    {"--index", true, [](A a, V v) { a.o.indexes = split_list(v); }},
    {"--dist", true, set_dists},
    {"--keys", true, [](A a, V v) { a.o.keys = parse_count(v, "--keys"); }},
    {"--seed", true, [](A a, V v) { a.o.seed = parse_count(v, "--seed"); }},
    {"--key-len", true, set_key_len},
    {"--words", true, [](A a, V v) { a.o.words_file = v; }},
    // workload
    {"--workload", true, [](A a, V v) { a.preset = v; }},
    {"--mix", true, [](A a, V v) { a.mix_ratios = v; }},
    {"--ops", true, [](A a, V v) { a.o.mix.ops = parse_count(v, "--ops"); }},
    {"--duration", true, [](A a, V v) { a.o.mix.duration_s = parse_number(v, "--duration"); }},
    {"--dist-choice", true, [](A a, V v) { a.choice = v; }},
    {"--theta", true, [](A a, V v) { a.theta = parse_number(v, "--theta"); }},
    {"--scan-len", true, [](A a, V v) { a.o.mix.scan_len = parse_count(v, "--scan-len"); }},
    {"--range", true, set_range},
    {"--range-queries", true, [](A a, V v) { a.o.range_queries = parse_count(v, "--range-queries"); }},
    {"--no-search-direct", false, [](A a, V) { a.o.search_direct = false; }},
    {"--search-direct", false, [](A a, V) { a.o.search_direct = true; }},
    // conditions
    {"--pm-mode", true, set_pm_mode},
    {"--flush-insn", true,
     [](A a, V v) {
       if (!pm::parse(v, a.o.pm.insn)) throw UsageError("--flush-insn: auto, clwb, clflushopt or clflush");
     }},
    {"--write-latency", true, [](A a, V v) { a.latencies = v; }},
    {"--fence-latency", true, [](A a, V v) { a.o.pm.fence_latency_ns = count32(v, "--fence-latency"); }},
    {"--pool-dir", true, [](A a, V v) { a.o.pool_dir = v == "memory" ? std::string() : v; }},
    {"--pool-size", true, [](A a, V v) { a.o.pool_size = parse_bytes(v, "--pool-size"); }},
    {"--threads", true, [](A a, V v) { a.o.threads = count32(v, "--threads"); }},
    // extra measurements
    {"--verify", false, [](A a, V) { a.o.verify = true; }},
    {"--recovery", false, [](A a, V) { a.o.recovery = true; }},
    {"--no-recovery", false, [](A a, V) { a.o.recovery = false; }},
    {"--llc", true, set_llc},
    {"--llc-keys", true, [](A a, V v) { a.o.llc_keys = parse_count(v, "--llc-keys"); }},
    {"--llc-size", true, set_llc_size},
    {"--sample-every", true, [](A a, V v) { a.o.sample_every = count32(v, "--sample-every"); }},
    // output
    {"--json", true, [](A a, V v) { a.out.json = v; }},
    {"--csv", true, [](A a, V v) { a.out.csv = v; }},
    {"--quiet", false, [](A a, V) { a.out.quiet = true; }},
    {"--no-progress", false, [](A a, V) { a.out.progress = false; }},
};

// --workload PRESET: the preset's mix, keeping the --ops, --duration and --scan-len given.
void apply_preset(BenchArgs& a) {
  const bench::Preset* p = bench::find_preset(a.preset);
  if (!p) throw UsageError("unknown workload '" + a.preset + "' (see 'wort list')");
  bench::MixSpec& mix = a.o.mix;
  const auto ops = mix.ops;
  const auto dur = mix.duration_s;
  const auto scan_len = mix.scan_len;
  mix = p->mix;
  mix.ops = ops, mix.duration_s = dur, mix.scan_len = scan_len;
  a.o.workload = a.preset;
}

// What depends on several options: the preset, then --mix over it, the key choice and its
// parameter, the latency sweep (a non-zero latency implies emulated unless --pm-mode said).
void settle(BenchArgs& a) {
  BenchOptions& o = a.o;
  if (!a.preset.empty() && a.preset != "paper" && a.preset != "mix") apply_preset(a);
  if (!a.mix_ratios.empty()) {
    if (auto res = bench::parse_ratios(a.mix_ratios, o.mix); !res) throw UsageError("--mix: " + res.error().message);
    if (o.workload == "paper") o.workload = "mix";
  }
  if (a.preset == "mix" && a.mix_ratios.empty()) throw UsageError("--workload mix needs --mix RATIOS");
  if (!a.choice.empty() && !bench::parse(a.choice, o.mix.choice))
    throw UsageError("--dist-choice: uniform, zipfian, selfsimilar or shuffled");
  if (a.theta >= 0) o.mix.choice_param = a.theta;
  if (!a.latencies.empty()) {
    o.flush_latencies = parse_latencies(a.latencies);
    bool any = false;
    for (auto l : o.flush_latencies) any |= l > 0;
    if (any && !a.mode_given) o.pm.mode = pm::Mode::emulated;
  }
  o.progress = a.out.progress;
}

BenchOptions parse_bench_args(const Args& args, Outputs& out) {
  BenchArgs a{BenchOptions{}, out};
  ArgReader r(args);
  while (r.more()) {
    if (r.is("--help") || r.is("-h")) {
      std::fputs(kBenchHelp, stdout);
      std::exit(0);
    }
    const auto it = std::find_if(std::begin(kBenchOptions), std::end(kBenchOptions),
                                 [&](const BenchOption& opt) { return r.is(opt.name); });
    if (it == std::end(kBenchOptions)) throw UsageError("unknown option '" + r.peek() + "'");
    it->apply(a, it->takes_value ? r.value() : std::string());
  }
  settle(a);
  return a.o;
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

// Runs this command again under callgrind (cache simulation, collection off until the
// child's measured phases), its outputs in `dir`. True if it exited 0.
bool run_callgrind_child(const std::string& dir, const BenchOptions& o, const Args& full_argv) {
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
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The last level the pass simulated, from valgrind's log in `dir`: its description and
// (into *ll_bytes) its size — --llc-size if given, else callgrind's choice, else this CPU's.
std::string simulated_ll(const std::string& dir, const BenchOptions& o, std::uint64_t* ll_bytes) {
  std::string ll = "this CPU's cache sizes";
  *ll_bytes = o.llc_size;
  std::ifstream log(dir + "/valgrind.log");
  std::stringstream text;
  text << log.rdbuf();
  // valgrind logs e.g. "--123-- warning: simulated LL cache: line_size 64  assoc 1  total_size 268,435,456"
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);)
    if (auto at = line.find("simulated LL cache: "); at != std::string::npos)
      ll = "callgrind's own choice of LL: " + line.substr(at + 20);
  if (!o.llc_size) *ll_bytes = bench::simulated_ll_bytes(text.str());
  // Without that warning callgrind simulates this CPU's own last level.
  if (*ll_bytes == 0) *ll_bytes = static_cast<std::uint64_t>(std::max(0L, ::sysconf(_SC_LEVEL3_CACHE_SIZE)));
  return ll;
}

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
  if (!run_callgrind_child(dir, o, full_argv))
    return "LLC: the callgrind pass failed (see " + dir + "/valgrind.log)";
  auto dumps = bench::parse_callgrind_dir(dir, "cg.");
  std::ifstream in(dir + "/child.json");
  std::stringstream ss;
  ss << in.rdbuf();
  if (!dumps) return "LLC: " + dumps.error().message;
  auto n = bench::attach_callgrind(report, dumps.value(), ss.str());
  if (!n) return "LLC: " + n.error().message;
  std::uint64_t ll_bytes = 0;
  const std::string ll = simulated_ll(dir, o, &ll_bytes);
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
