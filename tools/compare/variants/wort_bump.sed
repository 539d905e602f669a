# wort_bump.sed: their nodes and leaves from the driver's arena in /dev/shm (a 64-byte
# aligned bump allocation, as our nodes come from a pool file in /dev/shm) instead of
# posix_memalign (applied after wort.sed, and wort_clwb.sed for the timed build): the
# issue's "theirs on a bump allocator" row, which sets our allocator against none.
# 1. Both posix_memalign calls (alloc_node, make_leaf) take the block from authors_pm_alloc.
s/posix_memalign(&ret, 64, \(sizeof([a-z_0-9]*)\));/ret = authors_pm_alloc(\1);/
# 2. Declared once, before the first function.
/^static inline void cpu_pause()$/i void *authors_pm_alloc(size_t size);
