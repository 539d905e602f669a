#include "baseline/art/iterator.h"

#include <algorithm>
#include <cstring>

#include "baseline/art/nodes.h"
#include "baseline/art/prefix.h"

namespace wort::art {

int Iterator::compare_prefix(const Node* n, Key from, std::size_t depth) noexcept {
  const std::size_t rest = from.size() - depth;
  const std::size_t m = std::min<std::size_t>(n->prefix_len, rest);
  if (m != 0) {
    const int c = std::memcmp(full_prefix(n, depth), from.data() + depth, m);
    if (c != 0) return c;
  }
  // Equal so far. If `from` ends inside or right at the end of the prefix, every key below
  // (all at least prefix_len bytes past depth) is >= from.
  return rest <= n->prefix_len ? 1 : 0;
}

void Iterator::seek(Key from) {
  stack_.clear();
  leaf_ = nullptr;
  Ref r = root_;
  std::size_t depth = 0;
  while (!r.empty()) {
    if (r.is_leaf()) {
      if (compare_keys(r.leaf()->key(), from) >= 0) {
        leaf_ = r.leaf();
      } else {
        advance();
      }
      return;
    }
    const Node* n = r.node();
    const int c = compare_prefix(n, from, depth);
    if (c != 0) {
      if (c > 0) stack_.push_back({n, -1});  // the whole subtree qualifies
      advance();                             // c < 0: skip it
      return;
    }
    depth += n->prefix_len;
    // from is longer than the path here: the terminal and the children below from's next
    // byte are all smaller; resume after that byte once its subtree is done.
    const std::uint8_t b = byte_at(from, depth);
    stack_.push_back({n, b + 1});
    const Ref* child = find_child(n, b);
    if (child == nullptr) {
      advance();
      return;
    }
    r = *child;
    ++depth;
  }
}

void Iterator::advance() {
  leaf_ = nullptr;
  while (!stack_.empty()) {
    Frame& f = stack_.back();
    if (f.next < 0) {
      f.next = 0;
      if (f.node->terminal != nullptr) {
        leaf_ = f.node->terminal;
        return;
      }
    }
    const auto c = next_child(f.node, static_cast<unsigned>(f.next));
    if (!c) {
      stack_.pop_back();
      continue;
    }
    f.next = c->byte + 1;
    if (c->ref.is_leaf()) {
      leaf_ = c->ref.leaf();
      return;
    }
    stack_.push_back({c->ref.node(), -1});  // may invalidate f; not used after this
  }
}

}  // namespace wort::art
