// crashsim/schedule.cc — the turn, the seeded coin, stall detection.
#include "crashsim/schedule.h"

#include <unistd.h>
#include <sys/syscall.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

namespace wort::crashsim {

Scheduler::Scheduler(Params p)
    : p_(std::move(p)),
      rng_(p_.seed * 0x9e3779b97f4a7c15ull + 0x5eedull),
      forced_(p_.forced),
      done_(p_.threads, 0),
      fresh_(p_.threads, 0),
      loose_(p_.threads, 0),
      clock_(p_.threads, 0),
      tid_(p_.threads, 0),
      attached_(p_.threads, 0),
      wait_seen_(p_.threads, UINT64_MAX) {
  fresh_[0] = 1;
}

void Scheduler::attach(std::size_t t) {
  clockid_t c;
  pthread_getcpuclockid(pthread_self(), &c);
  std::lock_guard l(mu_);
  clock_[t] = c;
  tid_[t] = static_cast<pid_t>(::syscall(SYS_gettid));
  attached_[t] = 1;
}

std::size_t Scheduler::pick_other(std::size_t t) {
  std::vector<std::size_t> c;
  for (std::size_t u = 0; u < p_.threads; ++u)
    if (u != t && !done_[u]) c.push_back(u);
  if (c.empty()) return t;
  return c[rng_() % c.size()];
}

void Scheduler::stall_switch() {
  stalls_.push_back(seq_ * 16 + turn_);
  loose_[turn_] = 1;
  turn_ = pick_other(turn_);
  fresh_[turn_] = 1;
  forced_pending_ = false;
  arm_forced();  // the next recorded stall may be at the same event (the new holder blocked)
  cv_.notify_all();
}

// A replay's recorded stall at (global event number, turn holder) is armed when the run
// reaches that event with that holder (after each event, and wherever the turn changes);
// control() passes the turn once the holder is blocked.
void Scheduler::arm_forced() {
  if (!forced_pending_ && !forced_.empty() && forced_.front() == seq_ * 16 + turn_) {
    forced_.erase(forced_.begin());
    forced_pending_ = true;
  }
}

bool Scheduler::enter(std::size_t t, bool switch_point, bool op_boundary) {
  std::unique_lock l(mu_);
  // At an operation boundary the running writer holds no index lock: a writer left loose by
  // a stall (spinning on a lock, or already parked at its next event) gets the turn now,
  // before the running one can race it for the lock again in its next operation.
  if (op_boundary && turn_ == t && !done_[t] && !fresh_[t]) {
    for (std::size_t u = 0; u < p_.threads; ++u)
      if (u != t && loose_[u] && !done_[u]) {
        turn_ = u;
        fresh_[u] = 1;
        ++handoffs_;
        arm_forced();
        cv_.notify_all();
        break;
      }
  }
  // A writer flips the coin at a switch point it reaches holding the turn, unless it has
  // made no event since the turn came to it: then it behaves as if it had been parked at
  // this point when the turn came (whether it had reached the point by then is timing).
  if (switch_point && turn_ == t && !done_[t] && !fresh_[t]) {  // (not if handed on above)
    const bool flip = static_cast<double>(rng_() % 1024) < p_.switch_probability * 1024;
    if (flip) {
      const std::size_t n = pick_other(t);
      if (n != t) {
        turn_ = n;
        fresh_[n] = 1;
        ++switches_;
        arm_forced();
        cv_.notify_all();
      }
    }
  }
  cv_.wait(l, [&] { return turn_ == t; });
  // An armed stall of t's that t did not block for: the replay has left the recorded
  // history (the replay's own stall string will show it); dropped.
  forced_pending_ = false;
  loose_[t] = 0;
  fresh_[t] = 0;
  in_event_ = true;
  return std::any_of(loose_.begin(), loose_.end(), [](char c) { return c != 0; });
}

void Scheduler::leave(std::size_t) {
  std::lock_guard l(mu_);
  ++seq_;
  in_event_ = false;
  arm_forced();
}

void Scheduler::wait_turn(std::size_t t) {
  std::unique_lock l(mu_);
  cv_.wait(l, [&] { return turn_ == t; });
  loose_[t] = 0;  // it runs with the turn now (fresh_ stays: it has made no event yet)
}

void Scheduler::waiting(std::size_t t) {
  std::lock_guard l(mu_);
  if (turn_ != t || in_event_ || done_[t]) return;
  // What t read before this call may predate the turn coming to it (the writer that passed
  // the turn may have released the lock first): the first call holding the turn only marks
  // it, and t reads the word again; a second call at the same event count means t saw the
  // word held while it held the turn — blocked (no other writer changes the word meanwhile:
  // a writer changes the words others wait on only while it holds the turn, and a loose
  // writer only spins).
  if (wait_seen_[t] != seq_) {
    wait_seen_[t] = seq_;
    return;
  }
  for (std::size_t u = 0; u < p_.threads; ++u)
    if (u != t && !done_[u]) {
      stall_switch();
      return;
    }
}

void Scheduler::finish(std::size_t t) {
  std::lock_guard l(mu_);
  done_[t] = 1;
  loose_[t] = 0;
  in_event_ = false;
  if (turn_ == t) {
    forced_pending_ = false;
    turn_ = pick_other(t);
    fresh_[turn_] = 1;
    arm_forced();
    cv_.notify_all();
  }
}

std::string Scheduler::stall_string() {
  std::lock_guard l(mu_);
  if (stalls_.empty()) return "-";
  std::string s;
  for (std::uint64_t v : stalls_) {  // "event.writer"
    if (!s.empty()) s += '/';
    s += std::to_string(v / 16);
    s += '.';
    s += std::to_string(v % 16);
  }
  return s;
}

double Scheduler::cpu_ms(std::size_t t) const {
  timespec ts{};
  if (clock_gettime(clock_[t], &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

bool Scheduler::sleeping(std::size_t t) const {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid_[t]));
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  const auto rp = s.rfind(')');
  return rp != std::string::npos && rp + 2 < s.size() && (s[rp + 2] == 'S' || s[rp + 2] == 'D');
}

// `cpu` ms of CPU burned, `slept_ms` asleep (if `asleep`), `elapsed` s passed since the turn
// holder's last event.
bool Scheduler::stalled(double cpu, bool asleep, double slept_ms, double elapsed) const {
  // A replay's armed stall: the holder blocked as when it was recorded (the default
  // bounds, whatever this run's detection is set to).
  const bool forced = forced_pending_ && (cpu >= kForcedCpuMs || slept_ms >= kForcedSleepMs ||
                                          elapsed >= p_.stall_wall_s);
  return forced || cpu >= p_.stall_cpu_ms || (asleep && slept_ms >= p_.stall_sleep_ms) ||
         elapsed >= p_.stall_wall_s;
}

bool Scheduler::other_unfinished(std::size_t t) const {
  bool other = false;
  for (std::size_t u = 0; u < p_.threads; ++u) other = other || (u != t && !done_[u]);
  return other;
}

std::string Scheduler::hang_text(double idle, std::size_t t) {
  return "no writer made a traced event for " + std::to_string(static_cast<int>(idle)) +
         " s (writer " + std::to_string(t) +
         " holds the turn; a lock never released, or writers waiting on each other?)";
}

bool Scheduler::control() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock l(mu_);
  std::uint64_t seen_seq = UINT64_MAX;
  std::size_t seen_turn = SIZE_MAX;
  Clock::time_point base{}, sleep_since{}, progress = Clock::now();
  std::uint64_t progress_seq = seq_;
  bool asleep = false;
  double base_cpu = 0;
  for (;;) {
    if (std::all_of(done_.begin(), done_.end(), [](char c) { return c != 0; })) return true;
    l.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    l.lock();
    const std::size_t t = turn_;
    if (done_[t]) continue;
    const auto now = Clock::now();
    if (seq_ != progress_seq || in_event_) {
      progress_seq = seq_;
      progress = now;
    }
    const bool moved = seq_ != seen_seq || t != seen_turn || in_event_ || !attached_[t];
    const std::uint64_t seq = seq_;
    // The thread's CPU clock and /proc state are read without the lock: a writer blocked
    // on mu_ while this thread reads would itself look asleep.
    l.unlock();
    const double cpu_now = cpu_ms(t);
    const bool is_asleep = !moved && sleeping(t);
    l.lock();
    if (moved || seq_ != seq || turn_ != t || in_event_) {
      seen_seq = seq_;
      seen_turn = turn_;
      base = now;
      base_cpu = turn_ == t ? cpu_now : (attached_[turn_] ? cpu_ms(turn_) : 0);
      asleep = false;
      continue;
    }
    const double elapsed = std::chrono::duration<double>(now - base).count();
    const double cpu = cpu_now - base_cpu;
    if (is_asleep) {
      if (!asleep) sleep_since = now;
      asleep = true;
    } else {
      asleep = false;
    }
    const double slept_ms =
        asleep ? std::chrono::duration<double, std::milli>(now - sleep_since).count() : 0;
    if (!stalled(cpu, asleep, slept_ms, elapsed)) continue;
    const double idle = std::chrono::duration<double>(now - progress).count();
    if (idle >= p_.hang_s) {
      hang_detail_ = hang_text(idle, t);
      return false;
    }
    if (other_unfinished(t)) {
      stall_switch();
      seen_seq = UINT64_MAX;
    }
  }
}

}  // namespace wort::crashsim
