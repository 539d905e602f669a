#include "index/fptree/fptree_inner.h"

#include <algorithm>

#include "pm/check.h"

namespace wort::fptree_index {

namespace {

//! First 8 bytes of k as a big-endian integer, zero-padded. If head(a) < head(b) then
//! a < b in byte-string order (the first differing byte decides, and a zero pad in a
//! against a real byte in b means a is a prefix of b); equal heads decide nothing.
std::uint64_t head(std::string_view k) noexcept {
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < 8; ++i)
    h = (h << 8) | (i < k.size() ? static_cast<std::uint8_t>(k[i]) : 0u);
  return h;
}

//! Child index whose range holds k: the number of separators <= k.
std::size_t route(const InnerTree::Node& n, Key k) noexcept {
  const std::string_view kv = as_string(k);
  const std::uint64_t kh = head(kv);
  std::size_t lo = 0, hi = n.keys.size();
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    const std::uint64_t h = n.heads[mid];
    const bool less = kh != h ? kh < h : kv < std::string_view(n.keys[mid]);
    if (less)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace

void InnerTree::sync_heads(Node* n) {
  n->heads.resize(n->keys.size());
  for (std::size_t i = 0; i < n->keys.size(); ++i) n->heads[i] = head(n->keys[i]);
}

void InnerTree::reset_to(std::uint64_t leaf) {
  root_ = std::make_unique<Node>();
  root_->leaves.push_back(leaf);
  height_ = 1;
}

void InnerTree::build(std::vector<std::pair<std::uint64_t, std::string>> leaves) {
  root_.reset();
  height_ = 0;
  if (leaves.empty()) return;
  // One level at a time: groups of `fanout_` children, the group's first smallest key goes
  // up as the separator in front of it.
  std::vector<std::pair<std::unique_ptr<Node>, std::string>> level;
  for (std::size_t i = 0; i < leaves.size(); i += fanout_) {
    auto n = std::make_unique<Node>();
    const std::size_t end = std::min<std::size_t>(leaves.size(), i + fanout_);
    for (std::size_t j = i; j < end; ++j) {
      if (j > i) n->keys.push_back(std::move(leaves[j].second));
      n->leaves.push_back(leaves[j].first);
    }
    sync_heads(n.get());
    level.emplace_back(std::move(n), std::move(leaves[i].second));
  }
  height_ = 1;
  while (level.size() > 1) {
    std::vector<std::pair<std::unique_ptr<Node>, std::string>> up;
    for (std::size_t i = 0; i < level.size(); i += fanout_) {
      auto n = std::make_unique<Node>();
      n->leaf_level = false;
      const std::size_t end = std::min<std::size_t>(level.size(), i + fanout_);
      for (std::size_t j = i; j < end; ++j) {
        if (j > i) n->keys.push_back(std::move(level[j].second));
        n->kids.push_back(std::move(level[j].first));
      }
      sync_heads(n.get());
      up.emplace_back(std::move(n), std::move(level[i].second));
    }
    level = std::move(up);
    ++height_;
  }
  root_ = std::move(level.front().first);
}

std::uint64_t InnerTree::find(Key k) const noexcept {
  const Node* n = root_.get();
  while (!n->leaf_level) n = n->kids[route(*n, k)].get();
  return n->leaves[route(*n, k)];
}

std::uint64_t InnerTree::find(Key k, Path* path) const {
  path->clear();
  Node* n = root_.get();
  for (;;) {
    const std::size_t i = route(*n, k);
    path->emplace_back(n, i);
    if (n->leaf_level) return n->leaves[i];
    n = n->kids[i].get();
  }
}

std::uint64_t InnerTree::previous_leaf(const Path& path) const noexcept {
  for (std::size_t lvl = path.size(); lvl-- > 0;) {
    const auto [n, i] = path[lvl];
    if (i == 0) continue;
    if (n->leaf_level) return n->leaves[i - 1];
    const Node* m = n->kids[i - 1].get();
    while (!m->leaf_level) m = m->kids.back().get();
    return m->leaves.back();
  }
  return 0;
}

void InnerTree::insert_after(const Path& path, std::string sep, std::uint64_t right) {
  WORT_DCHECK(!path.empty() && path.back().first->leaf_level);
  auto [n, i] = path.back();
  WORT_DCHECK(i < n->leaves.size() && right != 0);
  // The split leaf's median lies strictly inside the leaf's range [keys[i-1], keys[i]).
  WORT_DCHECK((i == 0 || n->keys[i - 1] < sep) && (i == n->keys.size() || sep < n->keys[i]));
  n->keys.insert(n->keys.begin() + static_cast<std::ptrdiff_t>(i), std::move(sep));
  n->leaves.insert(n->leaves.begin() + static_cast<std::ptrdiff_t>(i) + 1, right);
  sync_heads(n);
  if (n->count() > fanout_) split_up(path);
}

// Splits overfull nodes from the bottom of `path` up, growing a new root if needed.
void InnerTree::split_up(Path path) {
  while (!path.empty() && path.back().first->count() > fanout_) {
    Node* n = path.back().first;
    path.pop_back();
    auto right = std::make_unique<Node>();
    right->leaf_level = n->leaf_level;
    const std::size_t h = n->count() / 2;  // children kept on the left
    std::string up = std::move(n->keys[h - 1]);
    right->keys.assign(std::make_move_iterator(n->keys.begin() + static_cast<std::ptrdiff_t>(h)),
                       std::make_move_iterator(n->keys.end()));
    n->keys.resize(h - 1);
    if (n->leaf_level) {
      right->leaves.assign(n->leaves.begin() + static_cast<std::ptrdiff_t>(h), n->leaves.end());
      n->leaves.resize(h);
    } else {
      right->kids.assign(std::make_move_iterator(n->kids.begin() + static_cast<std::ptrdiff_t>(h)),
                         std::make_move_iterator(n->kids.end()));
      n->kids.resize(h);
    }
    sync_heads(n);
    sync_heads(right.get());
    if (path.empty()) {  // n is the root
      auto root = std::make_unique<Node>();
      root->leaf_level = false;
      root->keys.push_back(std::move(up));
      root->kids.push_back(std::move(root_));
      root->kids.push_back(std::move(right));
      sync_heads(root.get());
      root_ = std::move(root);
      ++height_;
      return;
    }
    auto [p, i] = path.back();
    p->keys.insert(p->keys.begin() + static_cast<std::ptrdiff_t>(i), std::move(up));
    p->kids.insert(p->kids.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(right));
    sync_heads(p);
  }
}

void InnerTree::erase(const Path& path) {
  WORT_DCHECK(!path.empty() && path.back().first->leaf_level &&
              path.back().second < path.back().first->leaves.size());
  Path p = path;
  erase_at(p);
}

// Removes child i of the node at the bottom of `path` and the separator next to it; a node
// left with no child is removed from its parent the same way; a root with one inner child
// collapses into it.
void InnerTree::erase_at(Path& path) {
  while (!path.empty()) {
    auto [n, i] = path.back();
    path.pop_back();
    if (!n->keys.empty()) {
      const std::size_t k = i == 0 ? 0 : i - 1;
      n->keys.erase(n->keys.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (n->leaf_level)
      n->leaves.erase(n->leaves.begin() + static_cast<std::ptrdiff_t>(i));
    else
      n->kids.erase(n->kids.begin() + static_cast<std::ptrdiff_t>(i));
    sync_heads(n);
    if (n->count() > 0) break;
    if (path.empty()) {  // the root is empty: so is the tree
      root_.reset();
      height_ = 0;
      return;
    }
  }
  while (root_ && !root_->leaf_level && root_->count() == 1) {
    std::unique_ptr<Node> only = std::move(root_->kids.front());
    root_ = std::move(only);
    --height_;
  }
}

Result<void> InnerTree::for_each_leaf(
    const std::function<void(std::uint64_t, const std::string*, const std::string*)>& f) const {
  if (!root_) return {};
  struct Item {
    const Node* n;
    const std::string* lo;
    const std::string* hi;
    std::uint32_t depth;
  };
  std::vector<Item> stack{{root_.get(), nullptr, nullptr, 1}};
  auto bad = [](const std::string& why) { return Error{Status::corrupt, "fptree inner: " + why}; };
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const Node* n = it.n;
    if (n->count() == 0 || n->count() > fanout_) return bad("node with " + std::to_string(n->count()) + " children");
    if (n->keys.size() + 1 != n->count()) return bad("separator count != children - 1");
    if (n->heads.size() != n->keys.size()) return bad("separator heads out of step");
    for (std::size_t i = 0; i < n->keys.size(); ++i)
      if (n->heads[i] != head(n->keys[i])) return bad("separator head differs from its key");
    for (std::size_t i = 0; i < n->keys.size(); ++i) {
      if (i > 0 && !(n->keys[i - 1] < n->keys[i])) return bad("separators out of order");
      if (it.lo && n->keys[i] < *it.lo) return bad("separator below the node's range");
      if (it.hi && !(n->keys[i] < *it.hi)) return bad("separator above the node's range");
    }
    if (n->leaf_level != (it.depth == height_)) return bad("leaves at different depths");
    for (std::size_t i = n->count(); i-- > 0;) {
      const std::string* lo = i == 0 ? it.lo : &n->keys[i - 1];
      const std::string* hi = i + 1 == n->count() ? it.hi : &n->keys[i];
      if (n->leaf_level) continue;
      stack.push_back({n->kids[i].get(), lo, hi, it.depth + 1});
    }
    if (n->leaf_level) {
      for (std::size_t i = 0; i < n->count(); ++i)
        f(n->leaves[i], i == 0 ? it.lo : &n->keys[i - 1], i + 1 == n->count() ? it.hi : &n->keys[i]);
    }
  }
  return {};
}

std::uint64_t InnerTree::node_count() const noexcept {
  std::uint64_t c = 0;
  std::vector<const Node*> stack;
  if (root_) stack.push_back(root_.get());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    ++c;
    for (const auto& k : n->kids) stack.push_back(k.get());
  }
  return c;
}

std::uint64_t InnerTree::dram_bytes() const noexcept {
  std::uint64_t b = 0;
  std::vector<const Node*> stack;
  if (root_) stack.push_back(root_.get());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    b += sizeof(Node) + n->keys.capacity() * sizeof(std::string) +
         n->leaves.capacity() * sizeof(std::uint64_t) +
         n->heads.capacity() * sizeof(std::uint64_t) +
         n->kids.capacity() * sizeof(std::unique_ptr<Node>);
    for (const auto& k : n->keys)
      if (k.capacity() > 15) b += k.capacity() + 1;  // beyond the small-string buffer
    for (const auto& k : n->kids) stack.push_back(k.get());
  }
  return b;
}

}  // namespace wort::fptree_index
