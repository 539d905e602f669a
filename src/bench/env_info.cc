#include "bench/env_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "bench/llc.h"
#include "wort/persist.h"

namespace wort::bench {
namespace {

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 256> buf;
    while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("model name")) {
      auto p = line.find(':');
      return p == std::string::npos ? line : line.substr(p + 2);
    }
  }
  return "unknown";
}

// The compile command of a bench source in compile_commands.json next to the executable
// (CMAKE_EXPORT_COMPILE_COMMANDS is on), minus the file names: the flags really used.
std::string build_flags() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  std::ifstream in(exe.parent_path() / "compile_commands.json");
  if (!in) return "";
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"command\"") == std::string::npos ||
        line.find("bench/runner.cc") == std::string::npos)
      continue;
    auto b = line.find(": \"");
    std::string cmd = line.substr(b + 3);
    if (auto e = cmd.rfind('"'); e != std::string::npos) cmd.resize(e);
    // Keep only the flags (-O2, -std=, -f..., -D..., -m...), not paths.
    std::istringstream ss(cmd);
    std::string out;
    for (std::string w; ss >> w;) {
      if (w.starts_with("-O") || w.starts_with("-std") || w.starts_with("-f") ||
          w.starts_with("-D") || w.starts_with("-m") || w.starts_with("-g") || w.starts_with("-W"))
        out += (out.empty() ? "" : " ") + w;
    }
    return out;
  }
  return "";
}

std::string build_type() {
  std::string t;
#if defined(__OPTIMIZE__)
  t = "optimized";
#else
  t = "unoptimized";
#endif
#if defined(NDEBUG)
  t += ", NDEBUG";
#endif
#if defined(__SANITIZE_ADDRESS__)
  t += ", ASan (numbers not representative)";
#endif
  return t;
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

//! The median interval between two back-to-back reads of steady_clock (the clock a
//! sampled latency is timed with, runner.cc): what each sample carries beyond its operation.
double clock_read_ns() {
  using Clock = std::chrono::steady_clock;
  std::vector<std::int64_t> d(10001);
  for (auto& x : d) {
    const auto a = Clock::now();
    const auto b = Clock::now();
    x = std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
  }
  std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
  return static_cast<double>(d[d.size() / 2]);
}

}  // namespace

EnvInfo gather_env(const std::string& source_dir, const std::vector<std::string>& argv) {
  EnvInfo e;
  if (!source_dir.empty()) {
    e.git_revision = run_command("git -C '" + source_dir + "' rev-parse HEAD 2>/dev/null");
    if (!e.git_revision.empty() &&
        !run_command("git -C '" + source_dir + "' status --porcelain --untracked-files=no 2>/dev/null").empty())
      e.git_revision += "-dirty";
  }
  if (e.git_revision.empty()) e.git_revision = "unknown";
  e.compiler = __VERSION__;
  e.build_flags = build_flags();
  e.build_type = build_type();
  e.cpu_model = cpu_model();
  e.cpus = std::thread::hardware_concurrency();
  utsname u{};
  if (::uname(&u) == 0) e.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  e.hostname = host;
  const pm::Config& c = pm::config();
  e.flush_insn = std::string(pm::to_string(c.insn));
  e.pm_mode = std::string(pm::to_string(c.mode));
  for (auto i : {pm::FlushInsn::clwb, pm::FlushInsn::clflushopt, pm::FlushInsn::clflush})
    if (pm::cpu_has(i)) e.cpu_flush_insns.emplace_back(pm::to_string(i));
  std::string why;
  e.hw_counters = hw_counters_available(&why) ? "available" : "unavailable (" + why + ")";
  e.clock_read_ns = clock_read_ns();
  e.time_utc = now_utc();
  e.load_start = read_loadavg();
  for (const auto& a : argv) e.command_line += (e.command_line.empty() ? "" : " ") + a;
  return e;
}

EnvInfo::LoadAvg read_loadavg(const std::string& path) {
  EnvInfo::LoadAvg l{std::nan(""), std::nan(""), std::nan("")};
  std::ifstream in(path);
  for (double& v : l) {
    double x = 0;
    if (!(in >> x)) break;
    v = x;
  }
  return l;
}

}  // namespace wort::bench
