// tests/support/work_scale.h — how much work a concurrency test does in this build.
#pragma once

#include <cstdlib>
#include <cstring>

namespace wort::test {

//! Work multiplier: 1 under ThreadSanitizer (~10x slower), `small` with
//! WORT_TEST_SCALE=small (make test), `full` otherwise.
inline unsigned work_scale(unsigned small, unsigned full) {
#if defined(__SANITIZE_THREAD__)
  (void)small, (void)full;
  return 1;
#else
  const char* s = std::getenv("WORT_TEST_SCALE");
  return (s != nullptr && std::strcmp(s, "small") == 0) ? small : full;
#endif
}

}  // namespace wort::test
