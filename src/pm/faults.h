// pm/faults.h — the fault policy: test machinery exists only in test builds.
//
// The broken variants (flags such as g_broken_reader_ignores_fresh that switch on a known
// bug so a test can show it is caught), the race hooks (a function a test sets to pause an
// operation inside a window) and the *_for_testing switches are compiled only when the
// build defines WORT_FAULTS=1 (CMake option WORT_FAULTS, on in the sanitizer builds of
// `make test`). In every other build (Release: `make run`, `wort bench`, the installed
// library, the Python package) they do not exist: their declarations sit inside
// `#if WORT_FAULTS`, and a check written
//
//     if (WORT_FAULT(g_broken_reader_ignores_fresh)) [[unlikely]] return;
//
// is `if (false)`, which compiles to nothing; so is `WORT_FAULT_HOOK(g_some_hook, ctx)`, the
// call of a hook. A copy of a function that exists only for a hook (ROART's kHooked
// instantiations) is referenced only inside `#if WORT_FAULTS`, so it is not instantiated. The tests that set
// a fault are compiled and registered only in a build with the option on.
#pragma once

#ifndef WORT_FAULTS
#define WORT_FAULTS 0
#endif

#if WORT_FAULTS
#include <atomic>
//! True when the fault `flag` (a std::atomic<bool>) is switched on by a test.
#define WORT_FAULT(flag) ((flag).load(std::memory_order_relaxed))
//! True when a test has set the hook `hook` (a std::atomic of a function pointer).
#define WORT_FAULT_HOOK_SET(hook) ((hook).load(std::memory_order_relaxed) != nullptr)
//! Calls the hook `hook` holds, if a test set one, with the arguments that follow.
#define WORT_FAULT_HOOK(hook, ...)                                                \
  do {                                                                            \
    if (auto wort_hook_ = (hook).load(std::memory_order_relaxed)) [[unlikely]]    \
      wort_hook_(__VA_ARGS__);                                                    \
  } while (0)
#else
//! Without WORT_FAULTS no fault exists: the check is the constant false.
#define WORT_FAULT(flag) false
//! No hook exists: never set.
#define WORT_FAULT_HOOK_SET(hook) false
//! No hook exists: nothing to call (the arguments are not evaluated).
#define WORT_FAULT_HOOK(hook, ...) \
  do {                             \
  } while (0)
#endif
