# fast_fair_clwb.sed: write-backs and fences as ours (applied after fast_fair.sed for the
# timed build). Their clflush() keeps its shape: a fence, one write-back per line, a fence.
# 1. clflush -> clwb: the line is written back and stays cached, as our pm::flush does here.
s/asm volatile("clflush %0"/asm volatile("clwb %0"/
# 2. mfence -> sfence: orders the write-backs, as our pm::fence does.
s/asm volatile("mfence"/asm volatile("sfence"/
