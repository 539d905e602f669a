// index/kit/hot_load.h — the load of a child-pointer word on a lock-free lookup's hot path.
//
// Such a word is read with acquire ordering (a writer may change it under the reader), but
// GCC gives `__atomic_load_n` of an indexed array element an address add of its own — one
// instruction per tree level. This asm load takes the word's address as a memory operand,
// as a plain read would. It is one aligned 8-byte mov, which x86 never tears and never
// reorders with the reader's later loads (TSO: an acquire load), and everything read after
// it through the word it returns depends on it. Under ThreadSanitizer, which does not see
// asm, and off x86-64, it is the atomic acquire load. Used by WORT's and the ART engine's
// lookups (their READMEs, "Single-thread cost" / "Concurrency", measure what it saves).
#pragma once

#include <cstdint>

namespace wort::kit {

inline std::uint64_t hot_load(const std::uint64_t* p) noexcept {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
  std::uint64_t v;
  asm("movq %1, %0" : "=r"(v) : "m"(*p));
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

}  // namespace wort::kit
