#include "bench/json.h"
#include "bench/report.h"

namespace wort::bench {
namespace {

void write_options(JsonWriter& w, const BenchOptions& o) {
  w.key("options");
  w.begin_object();
  w.key("indexes");
  w.begin_array();
  for (const auto& i : o.indexes) w.value(i);
  w.end_array();
  w.key("dists");
  w.begin_array();
  for (auto d : o.dists) w.value(to_string(d));
  w.end_array();
  w.field("keys", std::uint64_t{o.keys});
  w.field("seed", o.seed);
  w.field("min_len", std::uint64_t{o.min_len});
  w.field("max_len", std::uint64_t{o.max_len});
  w.field("words_file", o.words_file);
  w.field("workload", o.workload);
  w.key("mix");
  w.begin_object();
  w.field("ratios", o.mix.total() > 0 ? o.mix.describe() : std::string());
  w.field("lookup", o.mix.lookup);
  w.field("insert", o.mix.insert);
  w.field("update", o.mix.update);
  w.field("remove", o.mix.remove);
  w.field("scan", o.mix.scan);
  w.field("scan_len", std::uint64_t{o.mix.scan_len});
  w.field("choice", to_string(o.mix.choice));
  w.field("choice_param", o.mix.choice_param);
  w.field("ops", o.mix.ops);
  w.field("duration_s", o.mix.duration_s);
  w.end_object();
  w.key("range_fractions");
  w.begin_array();
  for (double f : o.range_fractions) w.value(f);
  w.end_array();
  w.field("range_queries", std::uint64_t{o.range_queries});
  w.field("pm_mode", pm::to_string(o.pm.mode));
  w.field("flush_insn", pm::to_string(o.pm.insn));
  w.field("fence_latency_ns", std::uint64_t{o.pm.fence_latency_ns});
  w.key("flush_latencies_ns");
  w.begin_array();
  for (auto l : o.flush_latencies) w.value(std::uint64_t{l});
  w.end_array();
  w.field("pool_dir", o.pool_dir.empty() ? std::string("(anonymous memory)") : o.pool_dir);
  w.field("pool_size", o.pool_size);
  w.field("threads", o.threads);
  w.field("sample_every", o.sample_every);
  w.field("prefault", o.prefault);
  w.field("search_direct", o.search_direct);
  w.field("verify", o.verify);
  w.field("recovery", o.recovery);
  w.field("llc", to_string(o.llc));
  w.field("llc_keys", std::uint64_t{o.llc_keys});
  w.field("llc_size", o.llc_size);
  w.end_object();
}

void write_env(JsonWriter& w, const EnvInfo& e) {
  w.key("env");
  w.begin_object();
  w.field("git_revision", e.git_revision);
  w.field("compiler", e.compiler);
  w.field("build_flags", e.build_flags);
  w.field("build_type", e.build_type);
  w.field("cpu_model", e.cpu_model);
  w.field("cpus", e.cpus);
  w.field("kernel", e.kernel);
  w.field("hostname", e.hostname);
  w.field("flush_insn", e.flush_insn);
  w.key("cpu_flush_insns");
  w.begin_array();
  for (const auto& i : e.cpu_flush_insns) w.value(i);
  w.end_array();
  w.field("pm_mode", e.pm_mode);
  w.field("hw_counters", e.hw_counters);
  w.field("clock_read_ns", e.clock_read_ns);
  w.field("time_utc", e.time_utc);
  w.field("command_line", e.command_line);
  for (const auto& [name, l] : {std::pair{"load_start", &e.load_start}, std::pair{"load_end", &e.load_end}}) {
    w.key(name);  // 1, 5 and 15 minute load averages (/proc/loadavg)
    w.begin_array();
    for (double v : *l) w.value(v);
    w.end_array();
  }
  w.end_object();
}

// `phase_mean`: the phase's wall ns/op when this op type is the whole phase, else NaN.
// The sampled mean should agree with it (the samples are unbiased, sampler.h); it is a
// little higher, by the clock reads and the bookkeeping the phase mean spreads thinner.
void write_latency(JsonWriter& w, const LatencyHistogram& h, double phase_mean) {
  w.begin_object();
  w.field("samples", h.count());
  w.field("mean", h.mean());
  w.field("phase_mean", phase_mean);
  w.field("mean_over_phase_mean", h.mean() / phase_mean);
  w.field("min", h.count() ? static_cast<double>(h.min()) : std::nan(""));
  w.field("p50", h.percentile(50));
  w.field("p90", h.percentile(90));
  w.field("p99", h.percentile(99));
  w.field("p99_9", h.percentile(99.9));
  w.field("max", h.count() ? static_cast<double>(h.max()) : std::nan(""));
  w.end_object();
}

void write_cache(JsonWriter& w, const CacheStats& c) {
  w.begin_object();
  w.field("source", c.source);
  w.field("at_keys", c.at_keys);
  w.field("ops", c.ops);
  w.field("llc_misses", c.llc_misses);
  w.field("llc_misses_per_op", per_op(c.llc_misses, c.ops));
  w.field("d1_misses_per_op", per_op(c.d1_misses, c.ops));
  w.field("instructions_per_op", per_op(c.instructions, c.ops));
  w.end_object();
}

//! The phase's persistence counters: totals, then per operation.
void write_counters(JsonWriter& w, const PhaseResult& p) {
  w.key("counters");
  w.begin_object();
  w.field("flushes", p.counters.flushes);
  w.field("lines_flushed", p.counters.lines_flushed);
  w.field("fences", p.counters.fences);
  w.field("nt_stores", p.counters.nt_stores);
  w.field("lines_written_back", lines_written_back(p.counters));  // lines_flushed + nt_stores
  w.field("flush_calls_per_op", p.flushes_per_op());
  w.field("lines_written_back_per_op", p.written_back_per_op());
  w.field("lines_per_op", p.lines_per_op());  // lines flushed per op
  w.field("nt_stores_per_op", p.nt_stores_per_op());
  w.field("fences_per_op", p.fences_per_op());
  w.field("commits", p.counters.commits);
  w.field("commits_per_op", per_op(static_cast<double>(p.counters.commits), p.ops));
  w.end_object();
}

//! Sampled latency of each op type the phase ran.
void write_latencies(JsonWriter& w, const PhaseResult& p) {
  w.key("latency_ns");
  w.begin_object();
  for (std::size_t i = 0; i < kOpTypes; ++i) {
    const OpStats& s = p.per_type[i];
    if (s.ops == 0) continue;
    w.key(to_string(static_cast<OpType>(i)));
    write_latency(w, s.latency, s.ops == p.ops ? p.ns_per_op() : std::nan(""));
  }
  w.end_object();
}

//! Counts and persistence work per op type the phase ran.
void write_per_type(JsonWriter& w, const PhaseResult& p) {
  w.key("per_type");
  w.begin_object();
  for (std::size_t i = 0; i < kOpTypes; ++i) {
    const OpStats& s = p.per_type[i];
    if (s.ops == 0) continue;
    w.key(to_string(static_cast<OpType>(i)));
    w.begin_object();
    w.field("ops", s.ops);
    w.field("misses", s.misses);
    w.field("lines_written_back_per_op", s.written_back_per_op());
    w.field("lines_per_op", s.lines_per_op());
    w.field("nt_stores_per_op", s.nt_stores_per_op());
    w.field("flush_calls_per_op", s.flushes_per_op());
    w.field("fences_per_op", s.fences_per_op());
    w.end_object();
  }
  w.end_object();
}

//! Per worker thread ops and throughput, and the timeline of (seconds, ops) points.
void write_threads_and_timeline(JsonWriter& w, const PhaseResult& p) {
  w.key("threads");  // per worker thread: its operations over its own wall time
  w.begin_array();
  for (std::size_t t = 0; t < p.thread_ops.size(); ++t) {
    w.begin_object();
    w.field("ops", p.thread_ops[t]);
    w.field("seconds", p.thread_seconds[t]);
    w.field("throughput_ops_s", p.thread_throughput(t));
    w.end_object();
  }
  w.end_array();
  w.key("timeline");
  w.begin_array();
  for (const auto& [t, n] : p.timeline) {
    w.begin_array();
    w.value(t);
    w.value(n);
    w.end_array();
  }
  w.end_array();
}

void write_phase(JsonWriter& w, const PhaseResult& p) {
  w.begin_object();
  w.field("name", p.name);
  w.field("ops", p.ops);
  w.field("seconds", p.seconds);
  w.field("throughput_ops_s", p.throughput());
  w.field("ns_per_op", p.ns_per_op());
  w.field("cpu_seconds", p.cpu_seconds);
  w.field("cpu_ns_per_op", p.cpu_ns_per_op());
  w.field("items", p.items);
  w.field("misses", p.misses());
  write_counters(w, p);
  write_latencies(w, p);
  write_per_type(w, p);
  w.key("cache");
  write_cache(w, p.cache);
  write_threads_and_timeline(w, p);
  w.end_object();
}

void write_case(JsonWriter& w, const CaseResult& c) {
  w.begin_object();
  w.field("index", c.index);
  w.field("dist", to_string(c.dist));
  w.field("flush_latency_ns", std::uint64_t{c.flush_latency_ns});
  w.field("keys", std::uint64_t{c.keys});
  w.field("key_source", c.key_source);
  w.field("avg_key_len", c.avg_key_len);
  w.field("error", c.error);
  w.key("stats");
  w.begin_object();
  w.field("keys", c.stats.keys);
  w.field("avg_leaf_depth", c.stats.avg_leaf_depth);
  w.field("max_leaf_depth", c.stats.max_leaf_depth);
  w.field("pm_bytes", c.stats.pm_bytes);
  w.field("dram_bytes", c.stats.dram_bytes);
  w.field("pm_bytes_per_key", c.pm_bytes_per_key());
  w.field("dram_bytes_per_key", c.dram_bytes_per_key());
  w.field("allocator_bytes", c.pool_bytes);
  w.key("nodes");
  w.begin_object();
  for (const auto& [k, v] : c.stats.nodes) w.field(k, v);
  w.end_object();
  w.end_object();
  w.field("verified", c.verified);
  w.field("prefault", c.prefault);
  w.key("recovery");
  w.begin_object();
  w.field("measured", c.recovery.measured);
  w.field("error", c.recovery.error);
  w.field("acknowledged", c.recovery.acknowledged);
  w.field("lost", c.recovery.lost);
  w.field("open_s", c.recovery.measured ? c.recovery.open_s : std::nan(""));
  w.field("reclaim_s", c.recovery.measured ? c.recovery.reclaim_s : std::nan(""));
  w.end_object();
  // Ratios of ns/op (null when a phase is missing): search-virtual / search-direct, the
  // type-erased handle's cost; search / search-direct, that plus the bench's bookkeeping.
  w.field("adapter_overhead", c.adapter_overhead());
  w.field("search_over_direct", c.search_over_direct());
  w.key("phases");
  w.begin_array();
  for (const auto& p : c.phases) write_phase(w, p);
  w.end_array();
  w.end_object();
}

}  // namespace

std::string_view to_string(LlcMode m) noexcept {
  switch (m) {
    case LlcMode::off: return "off";
    case LlcMode::perf: return "perf";
    case LlcMode::callgrind: return "callgrind";
    case LlcMode::callgrind_child: return "callgrind-child";
  }
  return "?";
}

std::string to_json(const BenchReport& r) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", "wort-bench");
  w.field("schema_version", kJsonSchemaVersion);
  write_options(w, r.options);
  write_env(w, r.env);
  w.key("notes");
  w.begin_array();
  for (const auto& n : r.notes) w.value(n);
  w.end_array();
  w.key("cases");
  w.begin_array();
  for (const auto& c : r.cases) write_case(w, c);
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace wort::bench
