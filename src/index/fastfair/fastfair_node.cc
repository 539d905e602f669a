#include "index/fastfair/fastfair_node.h"

#include "pm/check.h"

namespace wort::fastfair {

void fast_insert(NodeRef nr, unsigned end, unsigned pos, std::uint64_t key, std::uint64_t ptr,
                 bool unfenced) {
  WORT_DCHECK(end == nr.end() && end < nr.slots && pos <= end);  // room for one more record
  WORT_DCHECK(key != kEmpty);  // kEmpty would end the node at pos
  // A second dead slot would break "at most one" (only the Witcher bug 4 fault keeps one).
  WORT_DCHECK((faults::active & faults::skip_dead_repair) || nr.find_dead(end) < 0);
  Record* r = nr.rec();
  // Readers read left to right from now. The counter's write-back, if any, is another
  // line's unless the commit lands in line 0.
  const bool counter =
      set_direction(nr, true) && !same_line(&nr.n->h.switch_counter, &r[pos].key);
  LineWriter lw;
  // The slot after the new end must read kEmpty before the end moves onto it.
  if (end + 1 < nr.slots && r[end + 1].key != kEmpty) {
    lw.touch(&r[end + 1]);
    pm::store(&r[end + 1].key, kEmpty);
  }
  // Right to left: slot i+1 becomes a copy of slot i (pointer first: slot i+1 stays dead
  // until its key store, which makes slot i the dead one).
  pm::store_run([&](auto st) {
    for (unsigned i = end; i-- > pos;) {
      lw.touch(&r[i + 1]);
      st.release(&r[i + 1].ptr, r[i].ptr);
      st.release(&r[i + 1].key, r[i].key);
    }
  });
  lw.touch(&r[pos]);
  pm::store_release(&r[pos].ptr, ptr);  // slot pos is still dead (or past the end)
  // The commit is non-temporal (no reader sees the key before it is durable) and goes into
  // the line written last: the new pointer and the records shifted into that line persist
  // no later than it, with no write-back of their own. Write-backs of other lines issued
  // before the shift (key block, value block, switch counter) need a fence before it,
  // which a line change of the shift already made.
  if ((unfenced || counter) && !lw.fenced())
    pm::publish_nt(&r[pos].key, key);  // commit: the new key becomes live
  else
    pm::commit_nt(&r[pos].key, key);  // commit: the new key becomes live
}

namespace {
// Left shift over slots (dead, end): slot i-1 (dead) takes slot i's pointer, then slot i
// takes slot i+1's key word (kEmpty for the last), which moves the dead mark right.
void shift_left_buggy(Record* r, unsigned dead, unsigned end);

void shift_left(Record* r, unsigned dead, unsigned end, LineWriter& lw) {
  if (faults::active & faults::left_shift_flush_at_line_start) [[unlikely]] {
    shift_left_buggy(r, dead, end);
    return;
  }
  pm::store_run([&](auto st) {
    for (unsigned i = dead + 1; i < end; ++i) {
      lw.touch(&r[i - 1]);
      st.release(&r[i - 1].ptr, r[i].ptr);
      lw.touch(&r[i]);  // a new line: the previous one is written back first
      st.release(&r[i].key, i + 1 < end ? r[i + 1].key : kEmpty);
    }
  });
  lw.finish();
}

// The authors' remove_key: writes a line back when the DESTINATION record starts a line,
// i.e. after the next line has already been dirtied (Witcher bug 3). Tests only.
void shift_left_buggy(Record* r, unsigned dead, unsigned end) {
  for (unsigned i = dead + 1; i < end; ++i) {
    pm::store_release(&r[i - 1].ptr, r[i].ptr);
    pm::store_release(&r[i].key, i + 1 < end ? r[i + 1].key : kEmpty);
    if (reinterpret_cast<std::uintptr_t>(&r[i - 1]) % 64 == 0) pm::persist(&r[i - 1], 64);
  }
  pm::flush(&r[dead], (end - dead) * sizeof(Record));
  pm::fence();
}
}  // namespace

void fast_remove(NodeRef nr, unsigned end, unsigned pos) {
  WORT_DCHECK(end == nr.end() && pos < end && !nr.dead(pos, end));  // a live record
  WORT_DCHECK((faults::active & faults::skip_dead_repair) || nr.find_dead(end) < 0);
  Record* r = nr.rec();
  const std::uint64_t next = pos + 1 < end ? r[pos + 1].key : kEmpty;
  // The switch counter's write-back needs a fence first unless it shares the commit's line.
  if (set_direction(nr, false) && !same_line(&nr.n->h.switch_counter, &r[pos].key))
    pm::publish_nt(&r[pos].key, next);  // orders the switch counter's write-back too
  else
    pm::commit_nt(&r[pos].key, next);  // commit: slot pos is dead, and that is all
  // No shift here: the dead slot is compacted by the next writer of this node
  // (repair_dead), before that writer's own commit.
}

bool repair_dead(NodeRef nr) {
  const auto [end, dead] = nr.end_and_dead();
  return repair_dead(nr, end, dead);
}

bool repair_dead(NodeRef nr, unsigned end, int d) {
  WORT_DCHECK(end == nr.end() && d == nr.find_dead(end));
  if (d < 0) return false;
  // The left shift moves records left: lock-free readers must read this node right to
  // left. A delete left the counter odd already; a crashed insert's dead slot may sit
  // under an even one (the write-back is ordered by the shift's fences).
  set_direction(nr, false);
  LineWriter lw;
  shift_left(nr.rec(), static_cast<unsigned>(d), end, lw);
  return true;
}

bool set_direction(NodeRef nr, bool inserting) {
  const SwitchCount c = nr.n->h.switch_counter;
  if (((c & 1u) == 0) == inserting) return false;
  pm::store(&nr.n->h.switch_counter, static_cast<SwitchCount>(c + 1));
  pm::flush(&nr.n->h.switch_counter, sizeof c);
  return true;
}

void bump_after_append(NodeRef nr) {
  const SwitchCount c = nr.n->h.switch_counter;
  pm::store_volatile(&nr.n->h.switch_counter, static_cast<SwitchCount>(c + 2));
}

}  // namespace wort::fastfair
