// VolatileArt::stats and VolatileArt::dump — walks for measuring and for reading the tree.
#include <algorithm>
#include <cstdio>
#include <string>

#include "baseline/art/art_tree.h"
#include "baseline/art/leaf.h"
#include "baseline/art/node.h"

namespace wort::art {
namespace {

struct StatsWalk {
  IndexStats s;
  std::uint64_t depth_sum = 0;

  void leaf(const Leaf* l, std::uint64_t depth) {
    ++s.keys;
    depth_sum += depth;
    s.max_leaf_depth = std::max(s.max_leaf_depth, depth);
    s.dram_bytes += l->bytes();
  }
  // `depth` = inner nodes above `r`; a leaf's depth counts the nodes on its path.
  void walk(Ref r, std::uint64_t depth) {
    if (r.is_leaf()) {
      leaf(r.leaf(), depth);
      return;
    }
    const Node* n = r.node();
    ++s.nodes[std::string(type_name(n->type))];
    s.dram_bytes += node_bytes(n);
    if (n->terminal != nullptr) leaf(n->terminal, depth + 1);
    for (auto c = next_child(n, 0); c; c = next_child(n, c->byte + 1u)) walk(c->ref, depth + 1);
  }
};

std::string printable(Key k) {
  std::string out;
  for (std::byte b : k) {
    const auto c = static_cast<unsigned char>(b);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

void dump_leaf(std::ostream& os, const Leaf* l, const std::string& indent, const char* tag) {
  os << indent << tag << "leaf \"" << printable(l->key()) << "\" = " << l->value << "\n";
}

void dump_ref(std::ostream& os, Ref r, const std::string& indent) {
  if (r.is_leaf()) {
    dump_leaf(os, r.leaf(), indent, "");
    return;
  }
  const Node* n = r.node();
  const std::size_t inl = std::min<std::size_t>(n->prefix_len, kInlinePrefix);
  os << indent << type_name(n->type) << " children=" << n->count << " prefix[" << n->prefix_len
     << "]=\"" << printable({n->prefix.data(), inl}) << (n->prefix_len > inl ? "...\"" : "\"")
     << "\n";
  const std::string inner = indent + "  ";
  if (n->terminal != nullptr) dump_leaf(os, n->terminal, inner, "(ends here) ");
  for (auto c = next_child(n, 0); c; c = next_child(n, c->byte + 1u)) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%02x: ", c->byte);
    os << inner << buf << "\n";
    dump_ref(os, c->ref, inner + "  ");
  }
}

}  // namespace

IndexStats VolatileArt::stats() const {
  StatsWalk w;
  for (auto t : {NodeType::node4, NodeType::node16, NodeType::node48, NodeType::node256})
    w.s.nodes[std::string(type_name(t))] = 0;
  if (!root_.empty()) w.walk(root_, 0);
  w.s.dram_bytes += sizeof(VolatileArt);
  w.s.avg_leaf_depth = w.s.keys == 0 ? 0.0 : static_cast<double>(w.depth_sum) /
                                                static_cast<double>(w.s.keys);
  w.s.pm_bytes = 0;
  return w.s;
}

void VolatileArt::dump(std::ostream& os) const {
  os << "art: " << count_ << " keys\n";
  if (!root_.empty()) dump_ref(os, root_, "  ");
}

}  // namespace wort::art
