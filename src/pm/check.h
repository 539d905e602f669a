// pm/check.h — WORT_DCHECK: preconditions of node and commit functions, checked in debug
// builds (CMAKE_BUILD_TYPE=Debug) and in the ASan+UBSan build that `make test` runs, compiled
// away in Release. Programmer errors only: corruption found on open or recovery is a
// Status::corrupt with a message (the checked walk), never a DCHECK. Never put a side effect
// inside one.
#pragma once

#if defined(WORT_DEBUG_CHECKS)
#include <cstdio>
#include <cstdlib>

namespace wort::detail {
[[noreturn]] inline void dcheck_failed(const char* cond, const char* file, int line) noexcept {
  std::fprintf(stderr, "%s:%d: WORT_DCHECK(%s) failed\n", file, line, cond);
  std::abort();
}
}  // namespace wort::detail

#define WORT_DCHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::wort::detail::dcheck_failed(#cond, __FILE__, __LINE__))
#else
#define WORT_DCHECK(cond) static_cast<void>(sizeof((cond) ? 1 : 0))
#endif
