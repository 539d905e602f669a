# wort.sed: the minimal patch of SeKwonLee/WORT src/wort/wort.c (ea092d0) for
# tools/compare/authors_wort.cc. Applied with `sed -f` to a copy outside this repository;
# the callgrind build uses this file alone (clflush + mfence: valgrind 3.19 has no clwb, and
# the instruction count is the same), the timed build this file and then wort_clwb.sed.
#
# 1. The emulated write latency goes: flush_buffer() reads the TSC twice per line to wait
#    LATENCY ns (0, so it only costs two rdtsc per line written back). Drop the deadline ...
/etsc = read_tsc() + (unsigned long)(LATENCY/d
#    ... and the wait loop's two lines (both branches of flush_buffer).
/while (read_tsc() < etsc)$/,/cpu_pause();$/d
