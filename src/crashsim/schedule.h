// crashsim/schedule.h — the deterministic scheduler of concurrent histories
// (run_concurrent_kv): writer threads run one at a time; the turn passes only at a switch
// point (before a fence, at an operation boundary) by a seeded coin, or when the running
// writer stalls.
//
//   writer t: every traced event   enter(t, switch_point) -> the model -> leave(t)
//             enter: at a switch point the turn holder flips the seeded coin and may hand
//                    the turn on; then every thread waits until it holds the turn
//   main:     control()  polls every millisecond: the turn holder outside an event that
//             made no event since the last look is STALLED if it burned stall_cpu_ms of CPU
//             (spinning on a lock word the paused writer holds), slept stall_sleep_ms
//             (a futex: the allocator's mutex), or stall_wall_s passed whatever its state;
//             the turn then passes on and the stalled writer runs LOOSE (untraced code only:
//             its next event waits for its turn again); at the running writer's next
//             operation boundary (it holds no lock there) the turn goes back to it
//
// Deterministic: the coin and the choice of the next writer come from one seeded generator
// consumed in event order, and a stall is recorded as the global event number after which
// it happened (a replay arms it there and passes the turn once that writer blocks again,
// by the default bounds, whatever its own detection is set to). Only a
// loose writer's untraced code runs in parallel with the turn holder (the reads of a
// blocked writer); its lock attempts wait for its turn (wait_turn, before every
// pm::cas_volatile), so a replay repeats the history unless that parallel stretch reads
// differently — the stall bounds are generous so that a merely slow writer is not taken
// for a blocked one.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace wort::crashsim {

class Scheduler {
 public:
  struct Params {
    std::size_t threads = 2;
    std::uint64_t seed = 1;
    double switch_probability = 0.5;
    double stall_cpu_ms = 2;
    double stall_sleep_ms = 20;
    double stall_wall_s = 5;
    double hang_s = 60;                  //!< no other writer to run and none made progress
    std::vector<std::uint64_t> forced;   //!< replay: stalls at these global event numbers
                                         //!< (event * 16 + writer), armed there
  };
  explicit Scheduler(Params p);

  //! On writer t's thread before its first event (its CPU clock and kernel thread id).
  void attach(std::size_t t);
  //! Before an event of writer t: at a switch point the turn holder may hand the turn on;
  //! then waits until t holds it. Returns true if another writer runs loose now.
  bool enter(std::size_t t, bool switch_point, bool op_boundary = false);
  //! After the event: counts it; in a replay, a stall recorded here is armed (control()
  //! passes the turn on once the writer blocks).
  void leave(std::size_t t);
  //! Before writer t tries to take a lock (pm::cas_volatile, Tracer::on_before_cas): waits
  //! until t holds the turn. Not an event (nothing is counted, no switch point): a loose
  //! writer that sees the lock free waits here instead of taking it in parallel with the
  //! turn holder, so which writer gets a lock follows the schedule, not OS timing.
  void wait_turn(std::size_t t);
  //! Writer t is in a wait loop (Tracer::on_wait: it spins on a lock word or a sequence
  //! another writer holds): if it holds the turn, outside any event, the turn passes on now
  //! and t runs loose — the stall is where t began to wait, not where a clock noticed it.
  void waiting(std::size_t t);
  //! Writer t has no more operations.
  void finish(std::size_t t);
  //! The main thread's loop until every writer finished. False if the writers hung (the
  //! only unfinished writers made no event for hang_s): then they are left running.
  bool control();

  std::uint64_t events() const { return seq_; }
  std::uint64_t switches() const { return switches_; }
  //! Turns handed at an operation boundary to a writer a stall left loose.
  std::uint64_t handoffs() const { return handoffs_; }
  std::uint64_t stall_count() const { return stalls_.size(); }
  //! "12.1/40.0" (or "-"): each stall so far as (global event number).(the writer that
  //! stalled) — replay's stalls=. Params::forced holds them as event * 16 + writer.
  std::string stall_string();
  std::string hang_detail() const { return hang_detail_; }

 private:
  std::size_t pick_other(std::size_t t);  // the next writer by the generator, t if none
  void stall_switch();                    // mu_ held: the turn holder is stalled
  void arm_forced();                      // mu_ held: a replay's stall recorded here?
  double cpu_ms(std::size_t t) const;
  bool sleeping(std::size_t t) const;
  //! mu_ held: the turn holder counts as stalled (control()'s bounds, or a replay's armed
  //! stall by the default bounds).
  bool stalled(double cpu, bool asleep, double slept_ms, double elapsed) const;
  bool other_unfinished(std::size_t t) const;  // mu_ held: a writer other than t not done
  static std::string hang_text(double idle, std::size_t t);  // hang_detail_ of a hang

  Params p_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::mt19937_64 rng_;
  std::size_t turn_ = 0;  // writer 0 starts (fresh)
  bool in_event_ = false;
  std::uint64_t seq_ = 0;
  std::uint64_t switches_ = 0;
  std::uint64_t handoffs_ = 0;
  std::vector<std::uint64_t> stalls_;
  std::vector<std::uint64_t> forced_;  // sorted
  bool forced_pending_ = false;        // the turn holder stalls once it blocks (replay)
  //! A replay's recorded stall passes the turn once its writer has, since its last event,
  //! burned this much CPU or slept this long (ScheduleOptions' defaults: see control()).
  static constexpr double kForcedCpuMs = 2, kForcedSleepMs = 20;
  std::vector<char> done_, fresh_, loose_;  // fresh: no event since the turn came to it
  std::vector<clockid_t> clock_;
  std::vector<pid_t> tid_;
  std::vector<char> attached_;
  std::vector<std::uint64_t> wait_seen_;  // waiting(): event count of a writer's first call
  std::string hang_detail_;
};

}  // namespace wort::crashsim
