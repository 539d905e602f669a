// bench/recovery.h — recovery time after a crash left by kill -9 in the middle of a load.
//
// A forked child creates a file pool, loads the keys and, half-way, tells the parent how
// many inserts it has acknowledged; the parent kills it with SIGKILL at once, then times
// Pool::open + Index::open + the first answered lookup, and then the allocator's reclaim
// (the trace of reachable blocks, if Index::open left it pending), and checks that every
// acknowledged key is there. On /dev/shm this is a process crash (the page cache
// survives), which exercises the unclean-shutdown path; a power failure is the crash
// simulator's job.
#pragma once

#include <string>

#include "bench/keygen.h"
#include "bench/runner.h"

namespace wort::bench {

//! Loads keys[0, n) in a child process killed after about n/2 inserts; measures recovery.
RecoveryResult measure_recovery(const BenchOptions& o, const IndexSpec& index,
                                const KeySet& keys, std::size_t n);

}  // namespace wort::bench
