# roart_config.sed: benchmark/config.h of madsys-dev/ROART (c313e0f).
# 1. Their NVM file lives in nvm_dir (/mnt/pmem0/jzc/, a DAX mount there): here in /dev/shm,
#    as our pools, with a prefix of its own (the file is <nvm_dir>part.data).
s|^inline const char \*nvm_dir = "/mnt/pmem0/jzc/";|inline const char *nvm_dir = "/dev/shm/cmp-roart-";|
