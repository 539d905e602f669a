# roart_util.sed: the minimal patch of madsys-dev/ROART nvm_mgr/util.h (c313e0f) for
# tools/compare/authors_roart.cc, applied with `sed -f` to a copy outside this repository
# (the timed build; the callgrind and count builds add roart_cg.sed / roart_count.sed).
# 1. PM_FENCE() calls getenv("NVM_LATENCY") on every fence (an emulated latency, unset here):
#    a environment scan per fence that their benchmark does not mean to measure. Its body goes.
/^#define PM_FENCE()/,/} while (0)$/c #define PM_FENCE() do { } while (0)
# 2. flush_data() ends its write-backs with asm_mfence(); ours end with sfence, which orders
#    the clwb write-backs as well: asm_mfence() becomes asm_sfence() there (the only use).
s/^    asm_mfence();$/    asm_sfence();/
