# roart_count.sed: counts their write-backs and fences (after roart_util.sed, for
# authors_roart's `count` mode only; never timed).
# 1. The counters, defined by the driver.
/^#define CPU_FREQUENCY/i extern unsigned long authors_line_cnt, authors_fence_cnt;
# 2. Each write-back in flush_data() counts a line ...
s/^        asm_clwb(ptr);$/        { asm_clwb(ptr); ++authors_line_cnt; }/
# 3. ... and its closing fence a fence.
s/^    asm_sfence();$/    ++authors_fence_cnt; asm_sfence();/
