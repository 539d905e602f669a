// FPTree leaf groups: GetLeaf, FreeLeaf and the release of an emptied group (fptree_groups.h
// has the design and why the paper's two group micro-logs are not needed here).
#include "index/fptree/fptree_groups.h"

#include <algorithm>
#include <unordered_set>

#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort::fptree_index {

Status LeafGroups::get_leaf(std::uint64_t* leaf) {
  WORT_DCHECK(enabled());
  std::lock_guard<std::mutex> g(mu_);
  release_empty_groups();
  if (free_.empty()) {
    std::uint64_t grp = 0;
    if (Status s = pool_.allocator().allocate(g_.bytes, &grp); s != Status::ok) return s;
    WORT_DCHECK(grp % 64 == 0);
    const LeafGroupHeader head{anchor_->groups};
    pm::copy(pool_.at<LeafGroupHeader>(grp), &head, sizeof head);
    pm::persist(pool_.at<LeafGroupHeader>(grp), sizeof head);  // the header before the link
    pm::store_persist(&anchor_->groups, grp);  // Alg. 10:4-7, one store (at the head)
    for (std::uint32_t i = g_.leaves; i-- > 1;) free_.push_back(g_.leaf(grp, i));
    used_[grp] = 1;
    *leaf = g_.leaf(grp, 0);
    return Status::ok;
  }
  *leaf = free_.back();
  free_.pop_back();
  ++used_[group_of_locked(*leaf)];
  return Status::ok;
}

void LeafGroups::free_leaf(std::uint64_t leaf) {
  std::lock_guard<std::mutex> g(mu_);
  const std::uint64_t grp = group_of_locked(leaf);
  WORT_DCHECK(grp != 0 && used_[grp] > 0);
  free_.push_back(leaf);
  if (--used_[grp] == 0) empty_.push_back(grp);
}

void LeafGroups::release_empty_groups() {
  for (std::uint64_t grp : empty_) {
    auto it = used_.find(grp);
    if (it != used_.end() && it->second == 0) release(grp);  // else a leaf was got since
  }
  empty_.clear();
}

// Alg. 12:4-18 without its log: the group leaves the list with one persisted store (the
// anchor's word or the previous group's next), then goes back to the allocator.
void LeafGroups::release(std::uint64_t grp) {
  std::uint64_t* link = &anchor_->groups;
  while (*link != grp) {
    WORT_DCHECK(*link != 0);  // a group in used_ is in the list
    link = &pool_.at<LeafGroupHeader>(*link)->next;
  }
  pm::store_persist(link, pool_.at<LeafGroupHeader>(grp)->next);
  const std::uint64_t end = grp + g_.bytes;
  free_.erase(std::remove_if(free_.begin(), free_.end(),
                             [&](std::uint64_t l) { return l >= grp && l < end; }),
              free_.end());
  used_.erase(grp);
  pool_.allocator().free(grp);
}

void LeafGroups::rebuild(const std::vector<std::uint64_t>& in_tree) {
  std::lock_guard<std::mutex> g(mu_);
  free_.clear();
  used_.clear();
  empty_.clear();
  for (std::uint64_t grp = anchor_->groups; grp != 0; grp = pool_.at<LeafGroupHeader>(grp)->next)
    used_[grp] = 0;
  std::unordered_set<std::uint64_t> tree(in_tree.begin(), in_tree.end());
  for (auto& [grp, n] : used_)
    for (std::uint32_t i = g_.leaves; i-- > 0;) {
      if (tree.count(g_.leaf(grp, i)) != 0)
        ++n;
      else
        free_.push_back(g_.leaf(grp, i));
    }
  for (const auto& [grp, n] : used_)
    if (n == 0) empty_.push_back(grp);
  release_empty_groups();
}

std::uint64_t LeafGroups::group_of_locked(std::uint64_t leaf) const {
  auto it = used_.upper_bound(leaf);
  if (it == used_.begin()) return 0;
  --it;
  const std::uint64_t grp = it->first;
  if (leaf < grp + GroupGeometry::kLeavesOff || leaf >= grp + g_.bytes) return 0;
  if ((leaf - grp - GroupGeometry::kLeavesOff) % g_.stride != 0) return 0;
  return grp;
}

std::uint64_t LeafGroups::group_of(std::uint64_t leaf) const {
  std::lock_guard<std::mutex> g(mu_);
  return group_of_locked(leaf);
}

std::string LeafGroups::check(const std::vector<std::uint64_t>& in_tree) const {
  std::lock_guard<std::mutex> g(mu_);
  std::map<std::uint64_t, std::uint32_t> count;
  for (std::uint64_t grp = anchor_->groups; grp != 0; grp = pool_.at<LeafGroupHeader>(grp)->next) {
    if (count.count(grp) != 0) return "leaf group list has a cycle";
    count[grp] = 0;
  }
  if (count.size() != used_.size()) return "DRAM knows " + std::to_string(used_.size()) +
                                           " leaf groups, the list has " + std::to_string(count.size());
  std::unordered_set<std::uint64_t> seen;
  auto owner = [&](std::uint64_t leaf) -> std::uint64_t {
    auto it = count.upper_bound(leaf);
    if (it == count.begin()) return 0;
    --it;
    const std::uint64_t off = leaf - it->first;
    if (off < GroupGeometry::kLeavesOff || off >= g_.bytes) return 0;
    return (off - GroupGeometry::kLeavesOff) % g_.stride == 0 ? it->first : 0;
  };
  for (std::uint64_t l : in_tree) {
    const std::uint64_t grp = owner(l);
    if (grp == 0) return "tree leaf " + std::to_string(l) + " is in no listed leaf group";
    if (!seen.insert(l).second) return "tree leaf " + std::to_string(l) + " listed twice";
    ++count[grp];
  }
  for (std::uint64_t l : free_) {
    if (owner(l) == 0) return "free leaf " + std::to_string(l) + " is in no listed leaf group";
    if (!seen.insert(l).second)
      return "leaf " + std::to_string(l) + " is both free and in the tree (or free twice)";
  }
  if (seen.size() != count.size() * g_.leaves)
    return std::to_string(seen.size()) + " leaves in the tree or free, the groups hold " +
           std::to_string(count.size() * g_.leaves);
  for (const auto& [grp, n] : count) {
    auto it = used_.find(grp);
    if (it == used_.end() || it->second != n)
      return "leaf group " + std::to_string(grp) + " has " + std::to_string(n) +
             " leaves in the tree, DRAM counts " + (it == used_.end() ? std::string("none") : std::to_string(it->second));
  }
  return {};
}

std::uint64_t LeafGroups::group_count() const {
  std::lock_guard<std::mutex> g(mu_);
  return used_.size();
}

std::uint64_t LeafGroups::free_count() const {
  std::lock_guard<std::mutex> g(mu_);
  return free_.size();
}

}  // namespace wort::fptree_index
