// bench/env_info.h — the environment a result was measured in (goes into the JSON).
#pragma once

#include <array>
#include <cmath>
#include <string>
#include <vector>

namespace wort::bench {

struct EnvInfo {
  std::string git_revision;   //!< `git rev-parse HEAD` of the source tree (+ "-dirty")
  std::string compiler;       //!< __VERSION__
  std::string build_flags;    //!< from the build's compile_commands.json, if found
  std::string build_type;     //!< optimised / sanitizers, from predefined macros
  std::string cpu_model;      //!< /proc/cpuinfo
  unsigned cpus = 0;
  std::string kernel;         //!< uname
  std::string flush_insn;     //!< resolved instruction in force
  std::vector<std::string> cpu_flush_insns;  //!< what the CPU offers
  std::string pm_mode;
  std::string hw_counters;    //!< "available" or why not
  //! What one clock read adds to a sampled latency: the median of 10,001 intervals between
  //! two back-to-back reads of the clock the bench times operations with (steady_clock).
  double clock_read_ns = 0;
  std::string hostname;
  std::string time_utc;       //!< when the run started (ISO 8601)
  std::string command_line;
  //! The machine's load averages (1, 5, 15 min, /proc/loadavg) when the run started and when
  //! its cases had run: wall times mean little on a machine whose load exceeds its CPUs.
  //! NaN where /proc/loadavg cannot be read.
  using LoadAvg = std::array<double, 3>;
  LoadAvg load_start{std::nan(""), std::nan(""), std::nan("")};
  LoadAvg load_end{std::nan(""), std::nan(""), std::nan("")};
};

//! The 1, 5 and 15 minute load averages from `path` (/proc/loadavg's format); NaN each
//! where it cannot be read.
EnvInfo::LoadAvg read_loadavg(const std::string& path = "/proc/loadavg");

//! Gathers the environment. `source_dir` is the git tree (may be empty); `argv` the
//! command line as given.
EnvInfo gather_env(const std::string& source_dir, const std::vector<std::string>& argv);

}  // namespace wort::bench
