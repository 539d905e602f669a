# fast_fair_count.sed: counts their write-backs and fences (applied after fast_fair.sed, for
# authors_fastfair's `count` mode only; never timed).
# 1. Their own per-line counter, commented out in their clflush(), counts again.
s|//++clflush_cnt;|++clflush_cnt;|
# 2. mfence() counts its fences in a counter the driver defines.
/^inline void mfence()/i extern unsigned long authors_fence_cnt;
s/^inline void mfence() { asm/inline void mfence() { ++authors_fence_cnt; asm/
