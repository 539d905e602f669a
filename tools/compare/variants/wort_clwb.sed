# wort_clwb.sed: write-backs and fences as ours (applied after wort.sed for the timed build).
# flush_buffer() keeps its shape: a fence, one write-back per line, a fence.
# 1. clflush -> clwb: the line is written back and stays cached, as our pm::flush does here.
s/asm volatile ("clflush %0\\n"/asm volatile ("clwb %0\\n"/
# 2. mfence -> sfence (their mfence() helper): orders the write-backs, as our pm::fence does.
s/asm volatile("mfence"/asm volatile("sfence"/
