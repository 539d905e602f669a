// crashsim/isolate.cc — the forked child, its heartbeat and the parent's watchdog.
#include "crashsim/isolate.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace wort::crashsim {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

//! Shared between the child (writer) and the parent (watchdog).
struct Heartbeat {
  std::atomic<std::uint64_t> start_ns{0};  // when the innermost image began; 0: none
  std::atomic<std::uint32_t> in_image{0};
  std::atomic<std::uint64_t> images{0};  // images started (the report if the child dies)
  char replay[512] = {};
};

Heartbeat* g_beat = nullptr;  // set in the child

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out.push_back(c);
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    const char c = s[++i];
    out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
  }
  return out;
}

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t n = s.size();
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t t = line.find('\t', start);
    out.push_back(unescape(line.substr(start, t - start)));
    if (t == std::string::npos) return out;
    start = t + 1;
  }
}

//! Virtual memory in use now (bytes), from /proc/self/statm.
std::uint64_t vm_bytes() {
  std::ifstream f("/proc/self/statm");
  std::uint64_t pages = 0;
  f >> pages;
  return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

//! Address space a run with a pool gap (Options::chunk_area_offset) maps without using:
//! the live pool, each model's durable image and shadow (the run's and the nested one's)
//! and the three image buffers span the whole pool, gap included (crashsim/sparse.h), and
//! never touch the gap. The budget counts what is used beyond that.
rlim_t gap_reservation(const Options& o) {
  if (o.chunk_area_offset == 0) return 0;
  constexpr rlim_t kPoolSizedMappings = 8;
  return kPoolSizedMappings * (rlim_t{o.chunk_area_offset} + rlim_t{o.pool_size});
}

const char* signal_text(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (a bad pointer followed, or the stack overflowed: runaway recursion)";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT (an abort: a failed assertion, or std::bad_alloc in noexcept code)";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "a signal";
  }
}

}  // namespace

bool memory_budget_enforced() noexcept { return !kSanitized; }

ImageWatch::ImageWatch(const std::string& replay) noexcept {
  if (g_beat == nullptr) return;
  // Nested (a second crash inside this image's recovery): the outer image's replay and
  // start come back when the inner one ends.
  saved_replay_ = g_beat->replay;
  saved_start_ = g_beat->start_ns.load(std::memory_order_relaxed);
  const std::size_t n = std::min(replay.size(), sizeof g_beat->replay - 1);
  std::memcpy(g_beat->replay, replay.data(), n);
  g_beat->replay[n] = '\0';
  g_beat->start_ns.store(now_ns(), std::memory_order_release);
  g_beat->in_image.fetch_add(1, std::memory_order_acq_rel);
  g_beat->images.fetch_add(1, std::memory_order_relaxed);
  armed_ = true;
}

ImageWatch::~ImageWatch() {
  if (!armed_) return;
  const std::size_t n = std::min(saved_replay_.size(), sizeof g_beat->replay - 1);
  std::memcpy(g_beat->replay, saved_replay_.data(), n);
  g_beat->replay[n] = '\0';
  g_beat->start_ns.store(saved_start_, std::memory_order_release);
  g_beat->in_image.fetch_sub(1, std::memory_order_acq_rel);
}

void stream_finding(int fd, const Finding& f) {
  if (fd < 0) return;
  write_all(fd, "F\t" + escape(f.kind) + "\t" + escape(f.detail) + "\t" + escape(f.replay) + "\n");
}

void stream_report(int fd, const Report& r) {
  if (fd < 0) return;
  std::ostringstream os;
  os << "S\t" << r.ops << "\t" << r.crash_points << "\t" << r.images << "\t" << r.failed_images
     << "\t" << r.suppressed << "\t" << r.read_checks << "\t" << escape(r.error) << "\t"
     << r.switches << "\t" << r.stalls << "\t" << escape(r.schedule) << "\n";
  write_all(fd, os.str());
}

namespace {

//! The forked child: caps its address space (Options::memory_budget_mb), runs the body with
//! its findings streamed to `fd`, then the report. Never returns.
[[noreturn]] void run_child(const Options& o, const std::function<Report(int fd)>& body,
                            Heartbeat* beat, int fd) {
  g_beat = beat;
  if (!kSanitized && o.memory_budget_mb > 0) {
    const rlim_t cap = vm_bytes() + (rlim_t{o.memory_budget_mb} << 20) + gap_reservation(o);
    rlimit rl{cap, cap};
    ::setrlimit(RLIMIT_AS, &rl);
  }
  const Report r = body(fd);
  stream_report(fd, r);
  ::close(fd);
  std::fflush(nullptr);
  ::_exit(0);
}

//! The parent's view of the child: what it streamed, and whether the watchdog killed it.
struct Watch {
  Report rep;
  bool ended = false;  // the child's report ("S" line) arrived
  bool killed = false;
  std::string buf;  // a partial line
  std::string hung_replay;
};

//! Takes one streamed line: a finding ("F") or the final report ("S").
void take_line(const std::string& line, Watch& w) {
  const auto f = split_tabs(line);
  if (f[0] == "F" && f.size() == 4) {
    w.rep.findings.push_back(Finding{f[1], f[2], f[3]});
  } else if (f[0] == "S" && f.size() == 11) {
    Report& rep = w.rep;
    rep.switches = std::stoull(f[8]);
    rep.stalls = std::stoull(f[9]);
    rep.schedule = f[10];
    rep.ops = std::stoull(f[1]);
    rep.crash_points = std::stoull(f[2]);
    rep.images = std::stoull(f[3]);
    rep.failed_images = std::stoull(f[4]);
    rep.suppressed = std::stoull(f[5]);
    rep.read_checks = std::stoull(f[6]);
    rep.error = f[7];
    w.ended = true;
  }
}

//! Reads the child's stream until it ends (EOF), killing the child once one image has run
//! longer than Options::image_seconds.
void watch_child(const Options& o, pid_t pid, int fd, const Heartbeat& beat, Watch& w) {
  const std::uint64_t budget_ns = static_cast<std::uint64_t>(o.image_seconds * 1e9);
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int pr = ::poll(&p, 1, 50);
    if (pr > 0) {
      char chunk[65536];
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) break;  // EOF: the child exited (or died)
      w.buf.append(chunk, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = w.buf.find('\n')) != std::string::npos; w.buf.erase(0, nl + 1))
        take_line(w.buf.substr(0, nl), w);
    }
    // One word decides (start_ns is 0 outside every image), so no torn pair of loads can
    // make a finished image look hung.
    const std::uint64_t start = beat.start_ns.load(std::memory_order_acquire);
    if (!w.killed && budget_ns > 0 && start != 0 && now_ns() > start + budget_ns) {
      w.hung_replay = beat.replay;
      ::kill(pid, SIGKILL);
      w.killed = true;
    }
  }
}

//! A child that ended without its report: a finding if it was inside an image (killed by
//! the watchdog, or died recovering), else the report's error.
void report_abnormal_end(const Options& o, int status, bool in_image, const std::string& replay,
                         Watch& w) {
  Report& rep = w.rep;
  if (w.killed) {
    rep.findings.push_back(Finding{
        "RECOVERY_HUNG",
        "recovery and checks of one crash image ran longer than the budget of " +
            std::to_string(o.image_seconds) + " s; the run stopped there",
        w.hung_replay});
  } else if (!w.ended) {
    if (in_image) {
      const std::string how =
          WIFSIGNALED(status) ? std::string("died of ") + signal_text(WTERMSIG(status))
                              : "exited with status " + std::to_string(WEXITSTATUS(status)) +
                                    " (a sanitizer report?)";
      rep.findings.push_back(Finding{
          "RECOVERY_CRASHED",
          "the process " + how + " while recovering or checking one crash image; the run "
          "stopped there", replay});
    } else {
      rep.error = "crash simulator child ended without a report (status " +
                  std::to_string(status) + ")";
    }
  }
}

}  // namespace

Report run_isolated(const Options& o, const std::function<Report(int fd)>& body) {
  if (!o.isolate || std::getenv("WORT_CRASHSIM_NOFORK") != nullptr) return body(-1);
  const auto t0 = std::chrono::steady_clock::now();
  void* shm = ::mmap(nullptr, sizeof(Heartbeat), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  int fds[2];
  if (shm == MAP_FAILED || ::pipe(fds) != 0) return body(-1);
  auto* beat = new (shm) Heartbeat();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::munmap(shm, sizeof(Heartbeat));
    ::close(fds[0]);
    ::close(fds[1]);
    return body(-1);
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(o, body, beat, fds[1]);
  }
  ::close(fds[1]);
  Watch w;
  watch_child(o, pid, fds[0], *beat, w);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  const bool in_image = beat->in_image.load() > 0;
  if (!w.ended) w.rep.images = beat->images.load();
  const std::string replay = beat->replay;
  ::munmap(shm, sizeof(Heartbeat));
  report_abnormal_end(o, status, in_image, replay, w);
  w.rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return w.rep;
}

}  // namespace wort::crashsim
