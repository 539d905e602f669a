# roart_n.sed: ART/N.cpp of madsys-dev/ROART (c313e0f).
# 1. Leaf::getFingerPrint hashes the stored key through GetKey()'s `char *` (signed here), while
#    a search key is hashed through Key::fkey's `uint8_t *`: for any key with a byte >= 0x80
#    the two fingerprints differ, LeafArray::lookup skips the leaf, and the key is never found
#    again (inserts report success). The measurement hashes the leaf's bytes unsigned too.
s/^        re = re \* 131 + k\[i\];$/        re = re * 131 + (uint8_t)k[i];/
