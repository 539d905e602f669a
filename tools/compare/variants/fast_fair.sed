# fast_fair.sed: the minimal patch of DICL/FAST_FAIR single/src/btree.h (0f047e8) for
# tools/compare/authors_fastfair.cc. Applied with `sed -f` to a copy outside this repository;
# the callgrind build uses this file alone (clflush + mfence: valgrind 3.19 has no clwb, and
# the instruction count is the same), the timed build this file and then fast_fair_clwb.sed.
#
# 1. The emulated write latency goes: their clflush() reads the TSC twice per line to wait
#    write_latency_in_ns (0 by default, so it only costs two rdtsc per line written back).
#    Drop the deadline's two lines ...
/unsigned long etsc =$/,/read_tsc() + (unsigned long)(write_latency_in_ns/d
#    ... and the wait loop's two lines.
/while (read_tsc() < etsc)$/,/cpu_pause();$/d
# 2. Their nodes come from the driver's arena in /dev/shm, as ours come from a pool file in
#    /dev/shm: page::operator new calls authors_pm_alloc (a 64-byte aligned bump allocation,
#    cheaper than their posix_memalign) instead of posix_memalign, declared before the class.
s/posix_memalign(&ret, 64, size);/ret = authors_pm_alloc(size);/
/^class page;$/i void *authors_pm_alloc(size_t size);
