// tests/support/solo_probe.h — does a write run solo here (kit::EpochReclaimer::SoloWrite)?
// The solo tests skip where it never does (membarrier refused, or ThreadSanitizer).
#pragma once

#include <thread>

#include "index/kit/epoch.h"
#include "pm/tracer.h"

namespace wort::test {

//! One write on a thread of its own, pinned in `e`, under tracer `t` (nullptr: none): was
//! it solo? The calling thread must hold no epoch id (else nobody is ever alone).
inline bool a_new_threads_write_is_solo(kit::EpochReclaimer& e, pm::Tracer* t = nullptr) {
  bool solo = false;
  std::thread th([&] {
    pm::set_tracer(t);
    {
      kit::EpochReclaimer::NestablePin pin(e);
      kit::EpochReclaimer::SoloWrite w;
      solo = kit::EpochReclaimer::SoloWrite::active();
    }
    pm::set_tracer(nullptr);
  });
  th.join();
  return solo;
}

}  // namespace wort::test
