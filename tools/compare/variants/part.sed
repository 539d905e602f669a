# part.sed: the minimal patch of utsaslab/RECIPE P-ART/N.cpp (0db1260) for
# tools/compare/authors_part.cc, applied with `sed -f` to a copy outside this repository.
# The flush instruction is a compile flag of theirs: -DCLWB for the timed build (clwb, as our
# pm::flush here), -DCLFLUSH for the callgrind build (valgrind 3.19 stops at clwb; the same
# instruction count). Their fence, N::mfence(), is already an sfence, as ours.
# 1. The emulated write latency goes: N::clflush() reads the TSC twice per line to wait
#    write_latency_in_ns (0, so it only costs two rdtsc per line written back). Drop the
#    deadline's two lines ...
/unsigned long etsc = read_tsc() +$/,/(unsigned long)(write_latency_in_ns \* cpu_freq_mhz\/1000);$/d
#    ... and the wait.
/while (read_tsc() < etsc) cpu_pause();$/d
