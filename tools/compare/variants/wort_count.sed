# wort_count.sed: counts their write-backs and fences (applied after wort.sed, for
# authors_wort's `count` mode only; never timed).
# 1. The two counters, defined by the driver.
/^static inline void cpu_pause()$/i extern unsigned long authors_line_cnt, authors_fence_cnt;
# 2. Every clflush in flush_buffer() counts a line ...
s/asm volatile ("clflush %0\\n" : "+m" (\*(char \*)(buf+i)));/&\n\t\t\t++authors_line_cnt;/
# 3. ... and every call of their mfence() helper a fence.
s/^    asm volatile("mfence" ::: "memory");$/    ++authors_fence_cnt;\n&/
