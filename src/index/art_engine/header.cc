#include "index/art_engine/header.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "index/art_engine/node_ops.h"

namespace wort::art_engine {

void unknown_node_type(NodeType t) noexcept {
  std::fprintf(stderr,
               "wort: node type byte %u reached a reader (the checked walk at open admits only "
               "known types): a bug or memory corrupted after open\n",
               static_cast<unsigned>(t));
  std::abort();
}

NodeHeader make_header(unsigned depth, unsigned prefix_len, Key witness) noexcept {
  NodeHeader h;
  h.depth = static_cast<std::uint16_t>(depth);
  h.prefix_len = static_cast<std::uint16_t>(prefix_len);
  const unsigned stored = std::min(prefix_len, kHeaderPrefix);
  for (unsigned i = 0; i < stored; ++i) h.prefix[i] = static_cast<std::uint8_t>(witness[depth + i]);
  return h;
}

bool repaired_header(const NodeHeader& stale, unsigned expected_depth, Key witness,
                     NodeHeader* out) noexcept {
  const unsigned pos = stale.branch_pos();
  if (pos < expected_depth || witness.size() < pos) return false;
  *out = make_header(expected_depth, pos - expected_depth, witness);
  return true;
}

}  // namespace wort::art_engine
