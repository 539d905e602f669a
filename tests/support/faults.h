// tests/support/faults.h — what tests use to switch a test fault on (src/pm/faults.h).
// Everything here exists only in a build with WORT_FAULTS, as the faults themselves do: a
// test that switches one on sits inside `#if WORT_FAULTS` (or in a file that CMake builds
// only with the option, FAULTS in tests/CMakeLists.txt).
#pragma once

#include <atomic>

#include "pm/faults.h"

//! Sets the fault `flag` (a std::atomic<bool>) to `on`; without WORT_FAULTS there is no
//! flag, and a scenario runs only its correct variant (kVariants), so `on` is false.
#if WORT_FAULTS
#define WORT_SET_FAULT(flag, on) (flag).store(on)
#else
#define WORT_SET_FAULT(flag, on) ((void)(on))
#endif

namespace wort::test {

//! The variants a scenario that can run broken loops over: the correct one (false) and, in
//! a build with the faults, the broken one (true).
#if WORT_FAULTS
inline constexpr bool kVariants[] = {false, true};
#else
inline constexpr bool kVariants[] = {false};
#endif

#if WORT_FAULTS
//! Switches a broken variant (a std::atomic<bool> fault) on for the life of a scope.
class FaultSwitch {
 public:
  explicit FaultSwitch(std::atomic<bool>& fault) : fault_(fault) { fault_.store(true); }
  ~FaultSwitch() { fault_.store(false); }
  FaultSwitch(const FaultSwitch&) = delete;
  FaultSwitch& operator=(const FaultSwitch&) = delete;

 private:
  std::atomic<bool>& fault_;
};
#endif

}  // namespace wort::test
