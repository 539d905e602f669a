// VolatileArt::verify — a full walk that re-derives every key's path from the root and checks
// it against the leaves, the per-type node invariants, the order of all keys and the count.
#include <string>

#include "baseline/art/art_tree.h"
#include "baseline/art/leaf.h"
#include "baseline/art/node.h"
#include "baseline/art/prefix.h"

namespace wort::art {
namespace {

std::string hex(std::string_view s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s.substr(0, 64)) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  if (s.size() > 64) out += "...";
  return out;
}

class Verifier {
 public:
  //! Checks the subtree at `r`, reached by the key bytes in `path`; false on the first error.
  bool subtree(Ref r, std::string& path) {
    if (r.is_leaf()) return leaf(r.leaf(), path, false);
    if (!(r == Ref::of(r.node())))
      return fail("reference tag disagrees with its node's type or prefix (ref.h)", path);
    return node(r.node(), path);
  }
  std::size_t keys() const { return keys_; }
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string msg, const std::string& path) {
    error_ = msg + " (path 0x" + hex(path) + ")";
    return false;
  }

  // A leaf must carry the path it was reached by; a terminal must equal it. Keys must
  // come strictly ascending in the walk's (terminal-first, byte-ascending) order.
  bool leaf(const Leaf* l, const std::string& path, bool terminal) {
    const std::string_view key = as_string(l->key());
    if (terminal ? key != path : key.substr(0, path.size()) != path)
      return fail(std::string(terminal ? "terminal" : "leaf") + " key 0x" + hex(key) +
                      " does not match its path", path);
    if (keys_ > 0 && !(std::string_view(last_) < key))
      return fail("keys out of order: 0x" + hex(last_) + " then 0x" + hex(key), path);
    last_.assign(key);
    ++keys_;
    return true;
  }

  bool node(const Node* n, std::string& path) {
    if (std::string e = invariant_error(n); !e.empty()) return fail(e, path);
    const std::size_t depth = path.size();
    const Leaf* any = min_leaf(n);
    if (any->key_len < depth + n->prefix_len)
      return fail("a leaf is shorter than its node's path", path);
    // The full prefix is what the (min) leaf says; the inline bytes must agree with it,
    // and every other leaf below is checked against the extended path.
    path.append(as_string(any->key()).substr(depth, n->prefix_len));
    const std::size_t inl = std::min<std::size_t>(n->prefix_len, kInlinePrefix);
    if (std::string_view(reinterpret_cast<const char*>(n->prefix.data()), inl) !=
        std::string_view(path).substr(depth, inl))
      return fail("inline prefix disagrees with the leaves", path);
    if (n->terminal != nullptr && !leaf(n->terminal, path, true)) return false;
    for (auto c = next_child(n, 0); c; c = next_child(n, c->byte + 1u)) {
      path.push_back(static_cast<char>(c->byte));
      if (!subtree(c->ref, path)) return false;
      path.pop_back();
    }
    path.resize(depth);
    return true;
  }

  std::size_t keys_ = 0;
  std::string last_;
  std::string error_;
};

}  // namespace

Result<void> VolatileArt::verify() const {
  if (root_.empty()) {
    if (count_ != 0) return Error{Status::corrupt, "art: empty tree but count " +
                                                       std::to_string(count_)};
    return {};
  }
  Verifier v;
  std::string path;
  if (!v.subtree(root_, path)) return Error{Status::corrupt, "art: " + v.error()};
  if (v.keys() != count_)
    return Error{Status::corrupt, "art: walk found " + std::to_string(v.keys()) +
                                      " keys, count says " + std::to_string(count_)};
  return {};
}

}  // namespace wort::art
