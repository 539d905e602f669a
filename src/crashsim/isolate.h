// crashsim/isolate.h — bounds on a crash-simulator run: the run happens in a forked child
// whose address space is capped (RLIMIT_AS, except under sanitizers), and the parent
// watches a heartbeat in shared memory. An image whose recovery (plus oracles) runs longer
// than the per-image budget, or that exhausts the memory budget, becomes a finding
// RECOVERY_HUNG with that image's replay string; a child killed by a signal inside an image
// (a stack overflow from runaway recursion, an abort) becomes RECOVERY_CRASHED. Findings
// stream to the parent as they are made, so those found before are kept; the run stops at
// the hung or crashed image (the report says so).
//
//   parent                              child (the whole run_kv)
//   ------                              -----
//   poll(pipe, 50 ms)  <-- F kind detail replay        (each finding)
//   beat.in_image && now - start > budget              ImageWatch: start = now, replay
//      -> SIGKILL, RECOVERY_HUNG(beat.replay)           recover + oracles
//   waitpid: signal while in_image -> RECOVERY_CRASHED  <-- S ops points images ... (end)
//
// WORT_CRASHSIM_NOFORK=1 in the environment runs in-process (for a debugger).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "crashsim/harness.h"

namespace wort::crashsim {

//! Marks the recovery of one crash image for the watchdog (no-op when not isolated).
class ImageWatch {
 public:
  explicit ImageWatch(const std::string& replay) noexcept;
  ~ImageWatch();
  ImageWatch(const ImageWatch&) = delete;
  ImageWatch& operator=(const ImageWatch&) = delete;

 private:
  bool armed_ = false;
  std::string saved_replay_;
  std::uint64_t saved_start_ = 0;
};

//! Runs body(fd) in a forked child (fd: where the child streams findings with
//! stream_finding and ends with stream_report) and builds the Report from what arrives,
//! adding RECOVERY_HUNG / RECOVERY_CRASHED as described above. Runs body(-1) in-process
//! if isolation is off (Options::isolate false, or WORT_CRASHSIM_NOFORK set).
Report run_isolated(const Options& o, const std::function<Report(int fd)>& body);

//! False under ASan/TSan (their shadow memory does not fit under RLIMIT_AS): then only the
//! time budget bounds an image.
bool memory_budget_enforced() noexcept;

void stream_finding(int fd, const Finding& f);
void stream_report(int fd, const Report& r);

}  // namespace wort::crashsim
