#include "index/fptree/fptree_inner.h"

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "pm/check.h"

namespace wort::fptree_index {

namespace {

using Node = InnerTree::Node;

//! Moves `count` words of a node array from a[src..] to a[dst..], |dst - src| == 1 (a
//! shift by one slot), inside the node's writer section (begin_write .. end_write). A
//! reader racing it reads each word whole — 8-byte aligned, written by one store, plain or
//! vector — and throws what it read away at validation; every value it can read points to
//! something live (the pin) that was published before the section began. A split's parent
//! update shifts ~1000 words of each of three arrays of a 4096-wide node: word-by-word
//! acquire/release copies (each atomic a compiler barrier, the array pointers reloaded
//! every word) were 29% of an insert's instructions at 1M keys (README "Where an insert's
//! time goes"). Under ThreadSanitizer, which judges every racing access, acquire/release
//! atomics one by one.
template <class T>
void slide(std::atomic<T>* a, std::size_t dst, std::size_t src, std::size_t count) noexcept {
  static_assert(sizeof(std::atomic<T>) == 8 && std::atomic<T>::is_always_lock_free);
  WORT_DCHECK(dst == src + 1 || src == dst + 1);
#if defined(__SANITIZE_THREAD__)
  // Release stores: a reader's acquire load of a slid separator pointer must see the
  // string it names, which this thread (or one it synchronised with) built; a relaxed copy
  // would end that chain in the C++ model (TSan reported the string's bytes as a race in
  // FPTreeConcurrencyBroken.ValidatedReadersMissNothing). On x86 every store is a release
  // store: the branch below is the same ordering.
  if (dst > src)
    for (std::size_t j = count; j-- > 0;)
      a[dst + j].store(a[src + j].load(std::memory_order_acquire), std::memory_order_release);
  else
    for (std::size_t j = 0; j < count; ++j)
      a[dst + j].store(a[src + j].load(std::memory_order_acquire), std::memory_order_release);
#elif defined(__SSE2__)
  // Two words a 16-byte load and store (each word lies whole in one store: the arrays are
  // 8-aligned), walking away from the overlap, so every pair is read before it is written.
  // Written out rather than left to memmove, whose string instructions promise nothing
  // about how a word is split between stores.
  auto* w = reinterpret_cast<std::uint64_t*>(a);
  auto move2 = [&](std::size_t j) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(w + dst + j),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + src + j)));
  };
  if (dst > src) {  // from the top down, eight words an iteration, then pairs
    std::size_t j = count;
    for (; j >= 8; j -= 8) {
      move2(j - 2);
      move2(j - 4);
      move2(j - 6);
      move2(j - 8);
    }
    for (; j >= 2; j -= 2) move2(j - 2);
    if (j == 1) w[dst] = w[src];
  } else {  // from the bottom up
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8) {
      move2(j);
      move2(j + 2);
      move2(j + 4);
      move2(j + 6);
    }
    for (; j + 2 <= count; j += 2) move2(j);
    if (j < count) w[dst + j] = w[src + j];
  }
#else
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t at = dst > src ? count - 1 - j : j;
    a[dst + at].store(a[src + at].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
#endif
}

std::uint64_t head(const std::string& s) noexcept { return key_head(as_key(s)); }

}  // namespace

InnerTree::Node::Node(bool leaf, std::uint32_t c)
    : leaf_level(leaf),
      cap(c),
      keys(std::make_unique<std::atomic<const std::string*>[]>(c)),
      heads(std::make_unique<std::atomic<std::uint64_t>[]>(c)),
      kids(std::make_unique<std::atomic<std::uint64_t>[]>(c)) {}

void InnerTree::free_tagged(std::uint64_t tagged) noexcept {
  if ((tagged & 3) == kTagNode)
    delete reinterpret_cast<Node*>(tagged & ~std::uint64_t{3});
  else
    delete reinterpret_cast<const std::string*>(tagged & ~std::uint64_t{3});
}

void InnerTree::destroy(Node* n) noexcept {
  if (n == nullptr) return;
  const std::size_t c = n->count();
  for (std::size_t i = 0; i + 1 < c; ++i) delete n->keys[i].load(std::memory_order_acquire);
  if (!n->leaf_level)
    for (std::size_t i = 0; i < c; ++i) destroy(n->kid(i));
  delete n;
}

InnerTree::~InnerTree() { destroy(root_.load(std::memory_order_relaxed)); }

void InnerTree::begin_write(Node* n) noexcept {
  n->version.fetch_add(kWriting, std::memory_order_relaxed);
  seq_release_fence();
}

void InnerTree::end_write(Node* n) noexcept {
  n->version.fetch_add(kVersionStep - kWriting, std::memory_order_release);
}

void InnerTree::retire_node(Node* n) noexcept {
  const std::uint64_t v = n->version.load(std::memory_order_relaxed);
  n->version.store(((v | kObsolete) & ~kWriting) + kVersionStep, std::memory_order_release);
  if (retire_ != nullptr)
    retire_(retire_ctx_, reinterpret_cast<std::uint64_t>(n) | kTagNode);
  else
    delete n;
}

void InnerTree::retire_sep(const std::string* s) noexcept {
  if (retire_ != nullptr)
    retire_(retire_ctx_, reinterpret_cast<std::uint64_t>(s) | kTagSep);
  else
    delete s;
}

void InnerTree::set_key(Node* n, std::size_t i, const std::string* s) noexcept {
  n->heads[i].store(head(*s), std::memory_order_relaxed);
  n->keys[i].store(s, std::memory_order_release);
}

void InnerTree::reset_to(std::uint64_t leaf) {
  WORT_DCHECK(empty());
  Node* n = new_node(true);
  n->kids[0].store(leaf, std::memory_order_release);
  n->n.store(1, std::memory_order_relaxed);
  height_.store(1, std::memory_order_relaxed);
  root_.store(n, std::memory_order_release);
}

void InnerTree::build(std::vector<std::pair<std::uint64_t, std::string>> leaves) {
  destroy(root_.exchange(nullptr));
  height_.store(0, std::memory_order_relaxed);
  if (leaves.empty()) return;
  // One level at a time: groups of `fanout_` children, the group's first smallest key goes
  // up as the separator in front of it.
  std::vector<std::pair<Node*, std::string>> level;
  for (std::size_t i = 0; i < leaves.size(); i += fanout_) {
    Node* n = new_node(true);
    const std::size_t end = std::min<std::size_t>(leaves.size(), i + fanout_);
    for (std::size_t j = i; j < end; ++j) {
      if (j > i) set_key(n, j - i - 1, new std::string(std::move(leaves[j].second)));
      n->kids[j - i].store(leaves[j].first, std::memory_order_release);
    }
    n->n.store(static_cast<std::uint32_t>(end - i), std::memory_order_relaxed);
    level.emplace_back(n, std::move(leaves[i].second));
  }
  std::uint32_t height = 1;
  while (level.size() > 1) {
    std::vector<std::pair<Node*, std::string>> up;
    for (std::size_t i = 0; i < level.size(); i += fanout_) {
      Node* n = new_node(false);
      const std::size_t end = std::min<std::size_t>(level.size(), i + fanout_);
      for (std::size_t j = i; j < end; ++j) {
        if (j > i) set_key(n, j - i - 1, new std::string(std::move(level[j].second)));
        n->kids[j - i].store(reinterpret_cast<std::uint64_t>(level[j].first),
                             std::memory_order_release);
      }
      n->n.store(static_cast<std::uint32_t>(end - i), std::memory_order_relaxed);
      up.emplace_back(n, std::move(level[i].second));
    }
    level = std::move(up);
    ++height;
  }
  height_.store(height, std::memory_order_relaxed);
  root_.store(level.front().first, std::memory_order_release);
}

std::size_t InnerTree::route_ties(const Node& n, std::size_t lo, std::size_t seps, Key k,
                                  std::uint64_t kh) noexcept {
  const std::string_view kv = as_string(k);
  const std::atomic<const std::string*>* keys = n.keys.get();
  for (; lo < seps && n.heads[lo].load(std::memory_order_relaxed) == kh; ++lo) {
    const std::string* s = keys[lo].load(std::memory_order_acquire);
    if (s == nullptr) return lo;  // torn by a writer: the validation fails
    if (kv < std::string_view(*s)) return lo;
  }
  return lo;
}

std::uint64_t InnerTree::find(Key k, Path* path) const {
  path->clear();
  const std::uint64_t kh = key_head(k);
  Node* n = root_.load(std::memory_order_acquire);
  for (;;) {
    const std::size_t i = route(*n, k, kh);
    path->emplace_back(n, i);
    if (n->leaf_level) return n->leaf(i);
    n = n->kid(i);
  }
}

std::uint64_t InnerTree::previous_leaf(const Path& path) const noexcept {
  for (std::size_t lvl = path.size(); lvl-- > 0;) {
    const auto [n, i] = path[lvl];
    if (i == 0) continue;
    if (n->leaf_level) return n->leaf(i - 1);
    const Node* m = n->kid(i - 1);
    while (!m->leaf_level) m = m->kid(m->count() - 1);
    return m->leaf(m->count() - 1);
  }
  return 0;
}

void InnerTree::insert_after(const Path& path, std::string sep, std::uint64_t right) {
  WORT_DCHECK(!path.empty() && path.back().first->leaf_level);
  auto [n, i] = path.back();
  const std::size_t cnt = n->count();
  WORT_DCHECK(i < cnt && right != 0 && cnt <= fanout_);
  // The split leaf's median lies strictly inside the leaf's range [keys[i-1], keys[i]).
  WORT_DCHECK((i == 0 || n->key(i - 1) < sep) && (i + 1 == cnt || sep < n->key(i)));
  const std::string* s = new std::string(std::move(sep));
  begin_write(n);
  if (cnt - 1 > i) {  // separators i .. cnt-2 and children i+1 .. cnt-1 move up one slot
    slide(n->keys.get(), i + 1, i, cnt - 1 - i);
    slide(n->heads.get(), i + 1, i, cnt - 1 - i);
    slide(n->kids.get(), i + 2, i + 1, cnt - 1 - i);
  }
  set_key(n, i, s);
  n->kids[i + 1].store(right, std::memory_order_release);
  n->n.store(static_cast<std::uint32_t>(cnt + 1), std::memory_order_relaxed);
  end_write(n);
  if (cnt + 1 > fanout_) split_up(path);
}

// Splits overfull nodes from the bottom of `path` up, growing a new root if needed. The
// new right node is filled before it is reachable; the node and its parent are changed
// inside begin_write/end_write (readers there restart).
void InnerTree::split_up(Path path) {
  while (!path.empty() && path.back().first->count() > fanout_) {
    Node* n = path.back().first;
    path.pop_back();
    Node* right = new_node(n->leaf_level);
    const std::size_t cnt = n->count();
    const std::size_t h = cnt / 2;  // children kept on the left
    const std::string* up = n->keys[h - 1].load(std::memory_order_acquire);
    for (std::size_t j = h; j + 1 < cnt; ++j) set_key(right, j - h, &n->key(j));
    for (std::size_t j = h; j < cnt; ++j)
      right->kids[j - h].store(n->leaf(j), std::memory_order_release);
    right->n.store(static_cast<std::uint32_t>(cnt - h), std::memory_order_relaxed);
    if (path.empty()) {  // n is the root
      Node* root = new_node(false);
      set_key(root, 0, up);
      root->kids[0].store(reinterpret_cast<std::uint64_t>(n), std::memory_order_release);
      root->kids[1].store(reinterpret_cast<std::uint64_t>(right), std::memory_order_release);
      root->n.store(2, std::memory_order_relaxed);
      begin_write(n);
      n->n.store(static_cast<std::uint32_t>(h), std::memory_order_relaxed);
      root_.store(root, std::memory_order_release);
      height_.fetch_add(1, std::memory_order_relaxed);
      end_write(n);
      return;
    }
    auto [p, i] = path.back();
    const std::size_t pc = p->count();
    begin_write(n);
    n->n.store(static_cast<std::uint32_t>(h), std::memory_order_relaxed);
    begin_write(p);
    if (pc - 1 > i) {
      slide(p->keys.get(), i + 1, i, pc - 1 - i);
      slide(p->heads.get(), i + 1, i, pc - 1 - i);
      slide(p->kids.get(), i + 2, i + 1, pc - 1 - i);
    }
    set_key(p, i, up);
    p->kids[i + 1].store(reinterpret_cast<std::uint64_t>(right), std::memory_order_release);
    p->n.store(static_cast<std::uint32_t>(pc + 1), std::memory_order_relaxed);
    end_write(p);
    end_write(n);
  }
}

void InnerTree::erase(const Path& path) {
  WORT_DCHECK(!path.empty() && path.back().first->leaf_level &&
              path.back().second < path.back().first->count());
  Path p = path;
  erase_at(p);
}

// Removes child i of the node at the bottom of `path` and the separator next to it; a node
// left with no child is removed from its parent the same way; a root with one inner child
// collapses into it. Removed nodes and separators are retired.
void InnerTree::erase_at(Path& path) {
  while (!path.empty()) {
    auto [n, i] = path.back();
    path.pop_back();
    const std::size_t cnt = n->count();
    begin_write(n);
    if (cnt > 1) {
      const std::size_t k = i == 0 ? 0 : i - 1;
      retire_sep(n->keys[k].load(std::memory_order_acquire));
      if (k + 2 < cnt) {  // separators k+1 .. cnt-2 move down one slot
        slide(n->keys.get(), k, k + 1, cnt - 2 - k);
        slide(n->heads.get(), k, k + 1, cnt - 2 - k);
      }
    }
    if (i + 1 < cnt) slide(n->kids.get(), i, i + 1, cnt - 1 - i);
    n->n.store(static_cast<std::uint32_t>(cnt - 1), std::memory_order_relaxed);
    if (cnt > 1) {
      end_write(n);
      break;
    }
    if (path.empty()) {  // the root is empty: so is the tree
      root_.store(nullptr, std::memory_order_release);
      height_.store(0, std::memory_order_relaxed);
      retire_node(n);
      return;
    }
    retire_node(n);
  }
  for (;;) {
    Node* r = root_.load(std::memory_order_relaxed);
    if (r == nullptr || r->leaf_level || r->count() != 1) break;
    begin_write(r);
    root_.store(r->kid(0), std::memory_order_release);
    height_.fetch_sub(1, std::memory_order_relaxed);
    retire_node(r);
  }
}

Result<void> InnerTree::for_each_leaf(
    const std::function<void(std::uint64_t, const std::string*, const std::string*)>& f) const {
  const Node* root = root_.load(std::memory_order_acquire);
  if (root == nullptr) return {};
  struct Item {
    const Node* n;
    const std::string* lo;
    const std::string* hi;
    std::uint32_t depth;
  };
  std::vector<Item> stack{{root, nullptr, nullptr, 1}};
  auto bad = [](const std::string& why) { return Error{Status::corrupt, "fptree inner: " + why}; };
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const Node* n = it.n;
    const std::size_t cnt = n->count();
    if (cnt == 0 || cnt > fanout_) return bad("node with " + std::to_string(cnt) + " children");
    if ((n->version.load() & (kWriting | kObsolete)) != 0) return bad("node locked or obsolete");
    for (std::size_t i = 0; i + 1 < cnt; ++i) {
      if (n->keys[i].load() == nullptr) return bad("separator missing");
      if (n->heads[i].load() != head(n->key(i))) return bad("separator head differs from its key");
    }
    for (std::size_t i = 0; i + 1 < cnt; ++i) {
      if (i > 0 && !(n->key(i - 1) < n->key(i))) return bad("separators out of order");
      if (it.lo && n->key(i) < *it.lo) return bad("separator below the node's range");
      if (it.hi && !(n->key(i) < *it.hi)) return bad("separator above the node's range");
    }
    if (n->leaf_level != (it.depth == height())) return bad("leaves at different depths");
    for (std::size_t i = cnt; i-- > 0;) {
      const std::string* lo = i == 0 ? it.lo : &n->key(i - 1);
      const std::string* hi = i + 1 == cnt ? it.hi : &n->key(i);
      if (n->leaf_level) continue;
      stack.push_back({n->kid(i), lo, hi, it.depth + 1});
    }
    if (n->leaf_level) {
      for (std::size_t i = 0; i < cnt; ++i)
        f(n->leaf(i), i == 0 ? it.lo : &n->key(i - 1), i + 1 == cnt ? it.hi : &n->key(i));
    }
  }
  return {};
}

std::uint64_t InnerTree::node_count() const noexcept {
  std::uint64_t c = 0;
  std::vector<const Node*> stack;
  if (const Node* r = root_.load(std::memory_order_acquire)) stack.push_back(r);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    ++c;
    if (!n->leaf_level)
      for (std::size_t i = 0; i < n->count(); ++i) stack.push_back(n->kid(i));
  }
  return c;
}

std::uint64_t InnerTree::dram_bytes() const noexcept {
  std::uint64_t b = 0;
  std::vector<const Node*> stack;
  if (const Node* r = root_.load(std::memory_order_acquire)) stack.push_back(r);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    b += sizeof(Node) + std::uint64_t{n->cap} * 3 * sizeof(std::uint64_t);
    for (std::size_t i = 0; i + 1 < n->count(); ++i) {
      const std::string& k = n->key(i);
      b += sizeof(std::string);
      if (k.capacity() > 15) b += k.capacity() + 1;  // beyond the small-string buffer
    }
    if (!n->leaf_level)
      for (std::size_t i = 0; i < n->count(); ++i) stack.push_back(n->kid(i));
  }
  return b;
}

bool InnerTree::read_version_slow(const Node* n, std::uint64_t* v) noexcept {
  for (bool waited = false;;) {
    const std::uint64_t x = n->version.load(std::memory_order_acquire);
    if ((x & (kObsolete | kWriting)) != kWriting) {
      if (waited) {
        pm::after_wait(&n->version);  // reads on in its turn (crash simulator): read again
        waited = false;
        continue;
      }
      if ((x & kObsolete) != 0) return false;
      *v = x;
      return true;
    }
    pm::waiting(&n->version);
    waited = true;
    __builtin_ia32_pause();
  }
}

}  // namespace wort::fptree_index
