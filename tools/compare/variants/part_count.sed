# part_count.sed: counts their write-backs and fences (after part.sed, for authors_part's
# `count` mode only; never timed).
# 1. The counters, defined by the driver.
/^namespace ART_ROWEX {$/i extern unsigned long authors_line_cnt, authors_fence_cnt;
# 2. N::mfence() (their sfence, also the fences around N::movnt64) counts a fence ...
s/^        asm volatile("sfence":::"memory");$/        ++authors_fence_cnt;\n&/
# 3. ... each line of N::clflush() a line written back (counted at the loop's step) ...
s/^        for (; ptr < data+len; ptr += cache_line_size){$/        for (; ptr < data+len; ptr += cache_line_size, ++authors_line_cnt){/
# 4. ... and each N::movnt64 a line too (a non-temporal 8-byte store, written back directly).
s/^        _mm_stream_si64(/        ++authors_line_cnt; &/
