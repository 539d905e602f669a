// pm/x86_64/flush.h — the x86-64 cache write-back, fence and non-temporal store
// instructions. Kept apart from the portable logic in persist.h (PMDK keeps
// x86_64/flush.h apart from persist.c the same way).
#pragma once

#include <cstdint>

#include "wort/persist.h"

namespace wort::pm::x86_64 {

inline void clwb(const void* p) noexcept {
  asm volatile(".byte 0x66; xsaveopt %0" : "+m"(*(volatile char*)p));  // clwb encoding
}
inline void clflushopt(const void* p) noexcept {
  asm volatile(".byte 0x66; clflush %0" : "+m"(*(volatile char*)p));  // clflushopt encoding
}
inline void clflush(const void* p) noexcept {
  asm volatile("clflush %0" : "+m"(*(volatile char*)p));
}
inline void sfence() noexcept { asm volatile("sfence" ::: "memory"); }
inline void movnti(std::uint64_t* dst, std::uint64_t v) noexcept {
  asm volatile("movnti %1, %0" : "=m"(*dst) : "r"(v) : "memory");
}

//! Writes back one line with the chosen instruction (insn is never `automatic` here).
inline void flush_line(FlushInsn insn, const void* p) noexcept {
  switch (insn) {
    case FlushInsn::clwb: clwb(p); break;
    case FlushInsn::clflushopt: clflushopt(p); break;
    default: clflush(p); break;
  }
}

}  // namespace wort::pm::x86_64
