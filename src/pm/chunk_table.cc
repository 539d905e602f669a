#include "pm/chunk_table.h"

#include <cstdio>

#include "pm/size_classes.h"

namespace wort::pm {

bool validate_chunk_table(const std::byte* base, const PoolHeader& h, std::string& why) {
  const SizeClasses classes(h.chunk_size);
  const auto* table = reinterpret_cast<const std::uint64_t*>(base + h.chunk_table_offset);
  for (std::uint64_t c = 0; c < h.chunk_hwm;) {
    const std::uint64_t e = table[c];
    const std::string where = "chunk " + std::to_string(c) + " (entry 0x";
    auto hex = [](std::uint64_t v) {
      char buf[17];
      std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
      return std::string(buf);
    };
    if (!chunk_entry_reserved_bits_clear(e)) {
      why = where + hex(e) + ") has reserved bits set";
      return false;
    }
    switch (chunk_entry_tag(e)) {
      case ChunkTag::small:
        if (chunk_entry_class(e) >= classes.count() || chunk_entry_span(e) != 0) {
          why = where + hex(e) + ") names a size class that does not exist";
          return false;
        }
        ++c;
        break;
      case ChunkTag::large:
      case ChunkTag::free: {
        const std::uint64_t span = chunk_entry_span(e);
        if (span == 0 || span > h.chunk_hwm - c || chunk_entry_class(e) != 0) {
          why = where + hex(e) + ") is a " +
                (chunk_entry_tag(e) == ChunkTag::free ? "free" : "large") +
                " span that does not fit below the high-water mark " + std::to_string(h.chunk_hwm);
          return false;
        }
        c += span;
        break;
      }
      default:
        why = where + hex(e) + ") is below the high-water mark " + std::to_string(h.chunk_hwm) +
              " but was never carved";
        return false;
    }
  }
  return true;
}

}  // namespace wort::pm
