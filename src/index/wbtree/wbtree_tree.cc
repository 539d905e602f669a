#include "index/wbtree/wbtree_tree.h"

#include <cassert>
#include <cstring>
#include <string>

#include "index/kit/anchor.h"
#include "index/registry.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace wbtree;

WbTree::WbTree(Pool& pool, Anchor* anchor) noexcept : pool_(pool), anchor_(anchor) {}

unsigned WbTree::capacity_for(std::uint32_t level) const noexcept {
  return level == 0 ? anchor_->leaf_capacity : anchor_->inner_capacity;
}

namespace {
Result<std::uint32_t> capacity_option(std::uint64_t w, unsigned dflt, const char* what) {
  if (w == 0) return dflt;
  if (w < kMinCapacity || w > kMaxCapacity)
    return Error{Status::invalid_argument, std::string("wbtree: ") + what + " capacity " +
                                               std::to_string(w) + " is not in 4..63"};
  return static_cast<std::uint32_t>(w);
}
}  // namespace

Result<std::unique_ptr<WbTree>> WbTree::create(Pool& pool, const IndexOptions& opts) {
  auto leaf = capacity_option(opts.words[0], kDefaultLeafCapacity, "leaf");
  if (!leaf) return leaf.error();
  auto inner = capacity_option(opts.words[1], kDefaultInnerCapacity, "inner");
  if (!inner) return inner.error();
  Anchor image{};
  image.magic = kAnchorMagic;
  image.leaf_capacity = *leaf;
  image.inner_capacity = *inner;
  auto anchor = kit::create_anchor(pool, kKind, image);  // the create commit: the pool root
  if (!anchor) return anchor.error();
  return std::unique_ptr<WbTree>(new WbTree(pool, *anchor));
}

Result<std::unique_ptr<WbTree>> WbTree::open(Pool& pool) {
  auto opened = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!opened) return opened.error();
  Anchor* a = *opened;
  if (a->leaf_capacity < kMinCapacity || a->leaf_capacity > kMaxCapacity ||
      a->inner_capacity < kMinCapacity || a->inner_capacity > kMaxCapacity)
    return Error{Status::corrupt, "wbtree: anchor capacities out of range"};
  std::unique_ptr<WbTree> tree(new WbTree(pool, a));
  // The checked walk (which also knows the micro-log's in-flight split), then the trace.
  if (auto r = kit::recover(pool, *tree); !r) return r.error();
  if (Status s = tree->redo_logged_split(); s != Status::ok)
    return Error{s, "wbtree: no space to finish the split the micro-log names"};
  return tree;
}

Status WbTree::insert(Key k, Value v) { return put(k, v, PutMode::insert); }
Status WbTree::upsert(Key k, Value v) { return put(k, v, PutMode::upsert); }
Status WbTree::update(Key k, Value v) { return put(k, v, PutMode::update); }

void WbTree::descend(const Probe& p, Path& path) const {
  std::uint64_t off = anchor_->root;
  path.depth = 0;
  for (;;) {
    path.node[path.depth++] = off;
    const Node* n = node(off);
    if (n->level == 0) return;
    const View v = sorted_view(base(), n);
    off = n->entries()[v.pos[route(base(), n, v, p)]].value;
  }
}

std::optional<Value> WbTree::lookup(Key k) const {
  if (anchor_->root == 0 || k.size() > kMaxKeyLength) return std::nullopt;
  const Probe p(k);
  std::uint64_t off = anchor_->root;
  for (;;) {
    const Node* n = node(off);
    const View v = sorted_view(base(), n);
    if (n->level == 0) {
      const unsigned j = lower_bound(base(), n, v, p);
      if (j == v.n) return std::nullopt;
      const Entry& e = n->entries()[v.pos[j]];
      if (compare(base(), e, p) != 0) return std::nullopt;
      return e.value;
    }
    off = n->entries()[v.pos[route(base(), n, v, p)]].value;
  }
}

Status WbTree::make_entry(const Probe& p, Value v, Entry* e) {
  WORT_DCHECK(p.key.size() <= kMaxKeyLength);  // put() rejects longer keys
  e->prefix = p.prefix;
  e->value = v;
  if (p.key.size() <= kMaxInline) {
    e->meta = p.key.size();
    return Status::ok;
  }
  std::uint64_t off = 0;
  if (Status s = pool_.allocator().allocate(sizeof(KeyBlock) + p.key.size(), &off); s != Status::ok)
    return s;
  auto* kb = pool_.at<KeyBlock>(off);
  const std::uint64_t len = p.key.size();
  pm::copy(&kb->len, &len, sizeof(len));
  pm::copy(kb + 1, p.key.data(), p.key.size());
  pm::flush(kb, sizeof(KeyBlock) + p.key.size());  // fenced by the insert's protocol
  e->meta = off;
  return Status::ok;
}

void WbTree::free_entry_key(const Entry& e) {
  if (e.meta > kMaxInline) pool_.allocator().free(e.meta);
}

Status WbTree::insert_into_empty_tree(const Probe& p, Value v) {
  WORT_DCHECK(anchor_->root == 0);
  std::uint64_t off = 0;
  if (Status s = pool_.allocator().allocate(node_bytes(anchor_->leaf_capacity), &off); s != Status::ok)
    return s;
  Entry e;
  if (Status s = make_entry(p, v, &e); s != Status::ok) {
    pool_.allocator().free(off);
    return s;
  }
  init_node(node(off), 0, anchor_->leaf_capacity, &e, 1);
  pm::publish(&anchor_->root, off);  // the commit: the new root leaf
  return Status::ok;
}

// A root with a single child (left by removes) is replaced by that child before a write:
// a structural store, not a commit.
void WbTree::collapse_root() {
  for (;;) {
    if (anchor_->root == 0) return;
    Node* r = node(anchor_->root);
    if (r->level == 0 || count_of(r) != 1) return;
    const View v = sorted_view(base(), r);
    const Entry only = r->entries()[v.pos[0]];
    const std::uint64_t old = anchor_->root;
    pm::store_persist(&anchor_->root, only.value);
    free_entry_key(only);
    pool_.allocator().free(old);
  }
}

Status WbTree::put(Key k, Value v, PutMode mode) {
  if (k.size() > kMaxKeyLength) return Status::invalid_argument;
  const Probe p(k);
  if (anchor_->root == 0)
    return mode == PutMode::update ? Status::not_found : insert_into_empty_tree(p, v);
  collapse_root();
  for (;;) {
    Path path;
    descend(p, path);
    Node* leaf = node(path.node[path.depth - 1]);
    const View view = sorted_view(base(), leaf);
    const unsigned j = lower_bound(base(), leaf, view, p);
    Entry* hit = j < view.n ? &leaf->entries()[view.pos[j]] : nullptr;
    if (hit && compare(base(), *hit, p) == 0) {
      if (mode == PutMode::insert) return Status::exists;
      kit::commit_value(pool_, &hit->value, v);  // the commit: the value word
      return Status::ok;
    }
    if (mode == PutMode::update) return Status::not_found;
    if (view.n < leaf->capacity) {
      Entry e;
      if (Status s = make_entry(p, v, &e); s != Status::ok) return s;
      insert_entry(leaf, view, j, e, Finish::commit);  // the commit: the leaf's bitmap
      return Status::ok;
    }
    // The leaf is full: split the highest node of the run of full nodes above it (its
    // parent has room, or it is the root and the tree grows), then descend again.
    unsigned top = path.depth - 1;
    while (top > 0 && count_of(node(path.node[top - 1])) == node(path.node[top - 1])->capacity) --top;
    const Status s = top == 0 ? grow_root() : split(path.node[top], path.node[top - 1]);
    if (s != Status::ok) return s;
  }
}

}  // namespace wort

WORT_REGISTER_INDEX(wort::WbTree);
