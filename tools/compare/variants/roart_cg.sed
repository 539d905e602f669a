# roart_cg.sed: for the callgrind build, after roart_util.sed. valgrind 3.19 stops at clwb
# (written here as its encoding, 0x66 + xsaveopt): clflush instead, the same instruction count.
s/asm volatile(".byte 0x66; xsaveopt %0" : "+m"(\*(volatile char \*)addr));/asm volatile("clflush %0" : "+m"(*(volatile char *)addr));/
# 2. Their NVM manager maps its file (256 GiB, sparse) at the fixed address 0x50000000; under
#    valgrind its own code sits at 0x58000000, so the callgrind build maps 112 MiB (448 blocks
#    of 256 KiB, below valgrind; ample for the callgrind key counts, the blocks handed out the
#    same way).
s|^    static const long long filesize = 1024LL \* 1024 \* PGSIZE; // 256GB$|    static const long long filesize = 448LL * PGSIZE; // 112MB|
