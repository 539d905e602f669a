#include "bench/llc.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace wort::bench {
namespace {

int perf_open(std::uint32_t type, std::uint64_t config) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = type;
  attr.config = config;
  attr.disabled = 1;
  attr.inherit = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
}

std::uint64_t read_counter(int fd) {
  std::uint64_t v = 0;
  if (fd < 0 || ::read(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return 0;
  return v;
}

}  // namespace

HwCounter::~HwCounter() {
  if (fd_llc_ >= 0) ::close(fd_llc_);
  if (fd_insn_ >= 0) ::close(fd_insn_);
}

Result<void> HwCounter::open() {
  fd_llc_ = perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES);
  if (fd_llc_ < 0)
    return Error{Status::io_error, std::string("perf_event_open(cache-misses) failed: ") +
                                       std::strerror(errno)};
  fd_insn_ = perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);  // optional
  return {};
}

void HwCounter::start() noexcept {
  for (int fd : {fd_llc_, fd_insn_}) {
    if (fd < 0) continue;
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  }
}

std::uint64_t HwCounter::stop() noexcept {
  for (int fd : {fd_llc_, fd_insn_})
    if (fd >= 0) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  insn_ = read_counter(fd_insn_);
  return read_counter(fd_llc_);
}

bool hw_counters_available(std::string* why) {
  HwCounter c;
  auto r = c.open();
  if (!r && why) *why = r.error().message;
  return r.ok();
}

void callgrind_begin() noexcept {
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_ZERO_STATS;
}

void callgrind_end(const std::string& tag) noexcept {
  CALLGRIND_DUMP_STATS_AT(tag.c_str());
  CALLGRIND_STOP_INSTRUMENTATION;
}

Result<std::pair<std::string, CallgrindTotals>> parse_callgrind_file(const std::string& text) {
  std::istringstream in(text);
  std::string tag, totals_line, summary_line;
  std::vector<std::string> names;
  constexpr std::string_view kTrigger = "desc: Trigger: Client Request: ";
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(kTrigger)) {
      tag = line.substr(kTrigger.size());
    } else if (line.starts_with("events:")) {
      std::istringstream ev(line.substr(7));
      names.clear();
      for (std::string n; ev >> n;) names.push_back(n);
    } else if (line.starts_with("totals:")) {
      totals_line = line.substr(7);
    } else if (line.starts_with("summary:")) {
      summary_line = line.substr(8);
    }
  }
  CallgrindTotals totals;
  std::istringstream nums(totals_line.empty() ? summary_line : totals_line);
  std::size_t i = 0;
  for (std::uint64_t v; i < names.size() && nums >> v; ++i) totals.events[names[i]] = v;
  if (names.empty() || totals.events.empty())
    return Error{Status::corrupt, "no events/totals line in callgrind output"};
  return std::pair{tag, totals};
}

Result<std::map<std::string, CallgrindTotals>> parse_callgrind_dir(const std::string& dir,
                                                                   const std::string& prefix) {
  std::map<std::string, CallgrindTotals> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    auto r = parse_callgrind_file(ss.str());
    if (!r || r.value().first.empty()) continue;  // the final dump at exit has no tag
    out[r.value().first] = r.value().second;
  }
  if (ec) return Error{Status::io_error, "cannot list " + dir + ": " + ec.message()};
  return out;
}

std::uint64_t simulated_ll_bytes(const std::string& valgrind_log) {
  const std::size_t line = valgrind_log.find("simulated LL cache:");
  if (line == std::string::npos) return 0;
  const std::size_t at = valgrind_log.find("total_size ", line);
  const std::size_t eol = valgrind_log.find('\n', line);
  if (at == std::string::npos || at > eol) return 0;
  std::uint64_t v = 0;
  for (std::size_t i = at + 11; i < valgrind_log.size(); ++i) {
    const char c = valgrind_log[i];
    if (c == ',') continue;
    if (c < '0' || c > '9') break;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

}  // namespace wort::bench
