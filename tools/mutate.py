#!/usr/bin/env python3
"""make mutate — measure the crash tests by injecting persistence bugs.

Reads the catalogue tools/mutations/*.txt: one mutation per line,

    <file> :: <function> :: <operator> [args...] [:: harmless: <why>]

described by pattern (a function name and the N-th call of a persistence primitive inside
its body), so entries survive code changes that do not remove the site. Each mutation
replaces whole statements of that body (one, or two for a swap). Everything happens in a
scratch copy of the tree (never in the worktree) and runs the crash-test binaries that cover
the mutated file (COVER below). Verdicts: KILLED (a covering test failed), SURVIVED, TIMEOUT
(a test process ran past its limit, twice: not a finding, so not counted as killed — a
recovery that hangs is the simulator's own RECOVERY_HUNG finding, a failed test), or N/A (the
pattern is not in the code, or the mutant does not compile). Prints the score and every
survivor; an entry marked `harmless:` that survives is listed as harmless with its reason
(not counted against the score); one marked harmless that is killed is reported too (the
reason is then wrong). Exit status 1 if a mutation not declared harmless survived or timed out.

Schema mode (the default): mutant schemata. All mutants are compiled into one build, each
mutated statement guarded by a selector read once from the environment,
    { if (::wort_mutant_id() == K) { <mutant K> } else { <original> } }
(mutants of the same statement chain as else-ifs; wort_mutant_id() is an inline function in a
header generated in the scratch directory, included only by the guarded copies). Mutants whose
statements overlap without being the same go into a further batch; a batch that does not
compile is split (the files named in the errors first, else in halves), and a mutant whose
guarded form alone does not compile is built one at a time, unguarded. Per batch: one
incremental build of the covering binaries, a baseline run with no mutant selected (must pass,
and times every test), then each mutant's covering tests with WORT_MUTANT=K, --jobs mutants at
a time. A mutant's tests stop at the first failure (--gtest_fail_fast) and run
cheapest-most-killing first: up to two tests that killed mutants before (of the same function
first; counts kept in the scratch directory across runs), each alone, then the rest, one process
per binary, cheapest binary first. Together they are exactly the tests the covering filters
select. A test process's limit is max(--timeout, --timeout-factor x its tests' baseline time);
one that runs past it is re-run alone with three times the limit before it is a TIMEOUT.
The fallback path has its own catalogue: --catalogue tools/mutate_selftest (one N/A, three killed).
--one-at-a-time is the old mode: apply, rebuild (incremental ninja) and test each mutant alone,
with the covering filters as given and --timeout per binary.

Operators (N counts from 1, in source order inside the function body):
  drop <prim> N            delete the N-th pm::<prim>(...) statement (flush, fence, persist,
                           store_persist, copy) or any call <prim>(...) given with its name
  persist-to-flush N       pm::persist -> pm::flush (the fence is gone)
  store-persist-to-store N pm::store_persist -> pm::store (neither write-back nor fence)
  publish-to-commit N      pm::publish -> pm::commit, pm::publish_nt -> pm::commit_nt (the
                           ordering fence before it is gone)
  commit-unfenced N        the N-th commit primitive (commit/publish/commit_sharing_fence,
                           and the non-temporal commit_nt/publish_nt/commit_nt_sharing_fence)
                           -> store + flush, no fence after it
  commit-unflushed N       ... -> store only (never written back by the operation)
  split-commit N           ... -> two 4-byte stores (low half, then high half) + persist
                           (a publish keeps its leading fence)
  swap-commit-flush N      swap the N-th commit primitive with the nearest pm::flush /
                           pm::persist statement before it (the data written back after
                           the commit)
  swap <primA> NA <primB> NB   swap two statements (e.g. the two store_persist of a split)
  hoist <primB> NB <primA> NA  move the statement `primB(...);` up to just before the
                           statement holding the NA-th call of primA (e.g. a free before the
                           unlink whose result an `if` tests)
Mutated commit sites keep the tracer's on_commit hook, so the commit oracle does not catch
them for free: what the score measures is the crash images and the lints.

Usage: tools/mutate.py [--only SUBSTRING]... [--list] [--scratch DIR] [--jobs N] [--timeout S]
                      [--timeout-factor F] [--one-at-a-time] [--results FILE.tsv] [--catalogue DIR]
"""
import argparse
import hashlib
import os
import re
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOGUE_DIR = os.path.join(ROOT, "tools", "mutations")
TREE_PARTS = ["CMakeLists.txt", "src", "include", "tests", "tools", "examples", "cmake"]

# Which crash-test binaries (and gtest filters) cover a source file.
# (Index creation goes through the shared kit, src/index/kit, which the catalogue does not
# mutate: the index folders are covered by their own crash tests, which also recompile fewer
# translation units than pool_crash_test, which instantiates every tree.)
COVER = [
    # wort_tree.cc holds the readers' help of fresh leaves: the dirty-read oracle checks it
    ("src/index/wort/wort_tree.cc", [("crash_wort_crash_test", "-*Kill9*"),
                                     ("crash_dirty_read_test", "*NoneInWort*")]),
    ("src/index/wort/", [("crash_wort_crash_test", "-*Kill9*")]),
    ("src/index/woart/", [("crash_art_engine_crash_test", "*woart*:-*Kill9*")]),
    ("src/index/artcow/", [("crash_art_engine_crash_test", "*artcow*:-*Kill9*")]),
    # art_tree_read.h holds the ART engine readers' help of fresh leaves (as wort_tree.cc)
    ("src/index/art_engine/art_tree_read.h", [("crash_art_engine_crash_test", "-*Kill9*"),
                                            ("crash_dirty_read_test",
                                             "*NoneInTheArtEngineTrees*")]),
    ("src/index/art_engine/", [("crash_art_engine_crash_test", "-*Kill9*")]),
    ("src/index/fastfair/", [("crash_fastfair_crash_test", "-*Kill9*")]),
    ("src/index/wbtree/", [("crash_wbtree_crash_test", "-*Kill9*")]),
    ("src/index/nvtree/", [("crash_nvtree_crash_test", "-*Kill9*")]),
    ("src/index/fptree/", [("crash_fptree_crash_test", "-*Kill9*")]),
    ("src/pm/allocator.cc", [("crash_allocator_crash_test", "*"), ("crash_pool_crash_test", "*"),
                             ("crash_toy_crash_test", "*CorrectTable*:*Drain*"),
                             ("crash_wort_crash_test", "*Sampled*"),
                             # evacuate / free_apart: the server's eviction evacuates chunks
                             ("server_store_crash_test", "*Evict*")]),
    ("src/pm/persist.cc", [("crash_copy_changed_test", "*"), ("crash_wort_crash_test", "-*Kill9*"),
                           ("crash_art_engine_crash_test", "-*Kill9*")]),
    ("src/pm/pool.cc", [("crash_pool_crash_test", "*"), ("crash_toy_crash_test", "*CorrectTable*")]),
    ("src/index/roart/", [("crash_roart_crash_test", "-*Kill9*")]),
    # the server's pool words (tools/mutations/server.txt): its Store under the simulator,
    # and the item write with each index's commit
    ("src/server/", [("server_store_crash_test", "*"), ("server_item_crash_test", "*")]),
    # wort::Store (tools/mutations/store.txt): put, replace, remove and a batch under the
    # simulator for every persistent kind, and a store's first open (not the broken variants)
    ("src/store/", [("store_store_crash_test", "Kinds/*")]),
    # the kit's value commits (tools/mutations/kit.txt): every index that calls them
    ("src/index/kit/anchor.h", [("crash_wort_crash_test", "-*Kill9*"),
                                   ("crash_art_engine_crash_test", "-*Kill9*"),
                                   ("crash_fastfair_crash_test", "-*Kill9*"),
                                   ("crash_roart_crash_test", "-*Kill9*"),
                                   ("crash_wbtree_crash_test", "-*Kill9*")]),
]

COMMIT_PRIMS = ("commit_sharing_fence", "publish", "commit",
                "commit_nt_sharing_fence", "publish_nt", "commit_nt",  # _nt: ROWEX (movnti)
                "commit_word")  # the server's one-word commit (src/server/store.cc): pm::commit
PUBLISH_PRIMS = ("publish", "publish_nt")  # a leading fence, kept by the commit mutations
HOOK = ("if (auto* mut_t_ = ::wort::pm::tracer()) "
        "mut_t_->on_commit((void*)({d}), sizeof(*({d})), {shares});")


def covering(path):
    for prefix, tests in COVER:
        if path.startswith(prefix):
            return tests
    return []


# --- source surgery -----------------------------------------------------------------------

def match_paren(s, i):
    """s[i] == '(' ; index of the matching ')'."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        elif c in "\"'":
            q = c
            i += 1
            while i < len(s) and s[i] != q:
                i += 2 if s[i] == "\\" else 1
        i += 1
    return -1


def function_body(src, name):
    """(start, end) of the body (inside the braces) of the first definition of `name`."""
    pat = re.compile(r"(?<![\w:])" + re.escape(name) + r"\s*\(")
    for m in pat.finditer(src):
        close = match_paren(src, m.end() - 1)
        if close < 0:
            continue
        j = close + 1
        while j < len(src) and src[j] not in "{;":
            j += 1
        if j >= len(src) or src[j] == ";":
            continue
        depth = 0
        for k in range(j, len(src)):
            if src[k] == "{":
                depth += 1
            elif src[k] == "}":
                depth -= 1
                if depth == 0:
                    return j + 1, k
    return None


def calls(body, prim):
    """Statements calling `prim` in body: list of (start, end_after_semicolon, args_text).
    prim 'flush' means pm::flush; a name with '::' or not in the pm set is taken literally."""
    pm_prims = {"flush", "fence", "persist", "store_persist", "copy", "fill", "store",
                "commit", "publish", "commit_sharing_fence",
                "commit_nt", "publish_nt", "commit_nt_sharing_fence"}
    # pm primitives with or without the pm:: qualifier (code inside namespace pm omits it);
    # never a member call (x.store(), p->store()).
    pat = (r"(?<![\w:.>])(?:(?:::wort::|wort::)?pm::)?" + re.escape(prim) if prim in pm_prims
           else r"(?<![\w:.>])" + re.escape(prim))
    out = []
    for m in re.finditer(pat + r"\s*\(", body):
        close = match_paren(body, m.end() - 1)
        if close < 0:
            continue
        k = close + 1
        while k < len(body) and body[k] in " \t\n":
            k += 1
        if k >= len(body) or body[k] != ";":
            continue  # not a whole statement (an argument, a condition)
        out.append((m.start(), k + 1, body[m.end():close]))
    return out


def commit_calls(body):
    found = []
    for p in COMMIT_PRIMS:
        for c in calls(body, p):
            if not any(c[0] == f[1][0] for f in found):
                found.append((p, c))
    # commit_sharing_fence contains no 'commit(' overlap issue thanks to the lookbehind
    found.sort(key=lambda f: f[1][0])
    return found


def split_args(args):
    depth = 0
    for i, c in enumerate(args):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            return args[:i].strip(), args[i + 1:].strip()
    return None


def nth(lst, n):
    return lst[n - 1] if 1 <= n <= len(lst) else None


def mutation_edits(body, op, args):
    """The mutation as statement replacements: a list of (start, end, new_text), start/end in
    body coordinates and each span one whole statement of the original body (a swap is two:
    each statement's text put in the other's place). None if the pattern is not there.
    One-at-a-time mode applies them (apply_edits); schema mode guards each span."""
    if op == "drop":
        c = nth(calls(body, args[0]), int(args[1]))
        return None if c is None else [(c[0], c[1], "(void)0;")]
    if op == "publish-to-commit":  # publish -> commit, publish_nt -> commit_nt (in order)
        cs = sorted([(c, "pm::commit") for c in calls(body, "publish")] +
                    [(c, "pm::commit_nt") for c in calls(body, "publish_nt")],
                    key=lambda x: x[0][0])
        f = nth(cs, int(args[0]))
        if f is None:
            return None
        c, dst = f
        return [(c[0], c[1], dst + "(" + c[2] + ");")]
    if op in ("persist-to-flush", "store-persist-to-store"):
        src, dst = {"persist-to-flush": ("persist", "pm::flush"),
                    "store-persist-to-store": ("store_persist", "pm::store")}[op]
        c = nth(calls(body, src), int(args[0]))
        if c is None:
            return None
        return [(c[0], c[1], dst + "(" + c[2] + ");")]
    if op in ("commit-unfenced", "commit-unflushed", "split-commit"):
        f = nth(commit_calls(body), int(args[0]))
        if f is None:
            return None
        prim, (s, e, a) = f
        da = split_args(a)
        if da is None:
            return None
        d, v = da
        pre = "::wort::pm::fence(); " if prim in PUBLISH_PRIMS else ""
        hook = HOOK.format(d=d, shares="true" if prim == "commit_nt_sharing_fence" else "false")
        if op == "commit-unfenced":
            new = f"{{ {pre}{hook} ::wort::pm::store({d}, {v}); ::wort::pm::flush({d}, sizeof(*({d}))); }}"
        elif op == "commit-unflushed":
            new = f"{{ {pre}{hook} ::wort::pm::store({d}, {v}); }}"
        else:
            new = (f"{{ {pre}{hook} auto* mut_d_ = ({d}); static_assert(sizeof(*mut_d_) == 8); "
                   f"std::uint64_t mut_v_; {{ const auto mut_x_ = ({v}); static_assert(sizeof(mut_x_) == 8); "
                   f"std::memcpy(&mut_v_, &mut_x_, 8); }} "
                   f"::wort::pm::store(reinterpret_cast<std::uint32_t*>(mut_d_), static_cast<std::uint32_t>(mut_v_)); "
                   f"::wort::pm::store(reinterpret_cast<std::uint32_t*>(mut_d_) + 1, static_cast<std::uint32_t>(mut_v_ >> 32)); "
                   f"::wort::pm::persist(mut_d_, 8); }}")
        return [(s, e, new)]
    if op == "swap-commit-flush":
        f = nth(commit_calls(body), int(args[0]))
        if f is None:
            return None
        s, e = f[1][0], f[1][1]
        before = [c for p in ("flush", "persist") for c in calls(body, p) if c[1] <= s]
        if not before:
            return None
        b = max(before, key=lambda c: c[0])
        return [(b[0], b[1], body[s:e]), (s, e, body[b[0]:b[1]])]
    if op == "swap":
        a = nth(calls(body, args[0]), int(args[1]))
        b = nth(calls(body, args[2]), int(args[3]))
        if a is None or b is None or a == b:
            return None
        if a[0] > b[0]:
            a, b = b, a
        if a[1] > b[0]:
            return None  # one statement inside the other: not a swap
        return [(a[0], a[1], body[b[0]:b[1]]), (b[0], b[1], body[a[0]:a[1]])]
    if op == "hoist":
        b = nth(calls(body, args[0]), int(args[1]))
        a = nth(any_calls(body, args[2]), int(args[3]))
        if a is None or b is None:
            return None
        a_start, a_end = enclosing_statement(body, a)
        if a_end < 0 or b[0] < a_end:
            return None  # not a statement before B
        return [(a_start, a_end, body[b[0]:b[1]] + " " + body[a_start:a_end]),
                (b[0], b[1], "(void)0;")]
    raise SystemExit(f"unknown operator {op}")


def any_calls(body, prim):
    """Start offsets of every call of `prim` in body (a statement or not; no member call)."""
    return [m.start() for m in re.finditer(r"(?<![\w:.>])" + re.escape(prim) + r"\s*\(", body)]


def enclosing_statement(body, pos):
    """(start, end) of the simple statement holding the call at pos: from after the previous
    ';', '{' or '}' (comment lines skipped) to the first ';' outside parentheses after it."""
    i = pos
    while i > 0 and body[i - 1] not in ";{}":
        i -= 1
    while True:
        while i < pos and body[i] in " \t\n":
            i += 1
        if body.startswith("//", i):
            i = body.index("\n", i) + 1
            continue
        break
    depth = 0
    for k in range(i, len(body)):
        c = body[k]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == ";" and depth == 0:
            return i, k + 1
    return i, -1


def apply_edits(text, edits):
    out, pos = [], 0
    for s, e, new in sorted(edits):
        out.append(text[pos:s])
        out.append(new)
        pos = e
    out.append(text[pos:])
    return "".join(out)


def mutate_body(body, op, args):
    """Returns the mutated body, or None if the pattern is not there."""
    edits = mutation_edits(body, op, args)
    return None if edits is None else apply_edits(body, edits)


def locate(original, m):
    """The mutation's edits in file coordinates, or None (pattern not found, or no change)."""
    rng = function_body(original, m.func)
    if rng is None:
        return None
    edits = mutation_edits(original[rng[0]:rng[1]], m.op, m.args)
    if edits is None:
        return None
    edits = sorted(whole_statement(original, s + rng[0], e + rng[0], t) for s, e, t in edits)
    if apply_edits(original, edits) == original:
        return None
    return edits


def whole_statement(text, s, e, new):
    """A call whose result is cast away, `(void)f(x);`, is matched at `f`: the edit starts at
    the cast, kept in front of the new text (the same mutated source), so that the span is a
    whole statement that the schema can guard."""
    m = re.search(r"\(\s*void\s*\)\s*$", text[max(0, s - 40):s])
    if m:
        cut = s - (len(text[max(0, s - 40):s]) - m.start())
        return cut, e, text[cut:s] + new
    return s, e, new


# --- catalogue ------------------------------------------------------------------------------

class Mutation:
    def __init__(self, where, file, func, op, args, harmless):
        self.where, self.file, self.func, self.op, self.args = where, file, func, op, args
        self.harmless = harmless

    def name(self):
        return f"{self.file} :: {self.func} :: {self.op} {' '.join(self.args)}".rstrip()


def load_catalogue(folder=CATALOGUE_DIR):
    muts = []
    for fn in sorted(os.listdir(folder)):
        if not fn.endswith(".txt"):
            continue
        with open(os.path.join(folder, fn)) as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                parts = [p.strip() for p in line.split("::") if True]
                # function names contain '::' too: rejoin. Fields are separated by ' :: '.
                parts = [p.strip() for p in line.split(" :: ")]
                if len(parts) < 3:
                    raise SystemExit(f"{fn}:{lineno}: want <file> :: <function> :: <op>")
                harmless = None
                if len(parts) > 3 and parts[3].startswith("harmless:"):
                    harmless = parts[3][len("harmless:"):].strip()
                op, *args = parts[2].split()
                muts.append(Mutation(f"{fn}:{lineno}", parts[0], parts[1], op, args, harmless))
    return muts


# --- scratch tree, build, run ---------------------------------------------------------------

def sync_tree(scratch):
    """Copies the tree into scratch/src, rewriting only files whose content changed."""
    dst_root = os.path.join(scratch, "src")
    for part in TREE_PARTS:
        src = os.path.join(ROOT, part)
        if not os.path.exists(src):
            continue
        if os.path.isfile(src):
            copy_if_changed(src, os.path.join(dst_root, part))
            continue
        for dirpath, dirnames, filenames in os.walk(src):
            dirnames[:] = [d for d in dirnames if not d.startswith("build") and d != "__pycache__"]
            for fn in filenames:
                s = os.path.join(dirpath, fn)
                copy_if_changed(s, os.path.join(dst_root, os.path.relpath(s, ROOT)))
    return dst_root


def copy_if_changed(src, dst):
    with open(src, "rb") as f:
        data = f.read()
    if os.path.exists(dst):
        with open(dst, "rb") as f:
            if f.read() == data:
                return
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "wb") as f:
        f.write(data)
    shutil.copymode(src, dst)


def build(build_dir, targets, jobs):
    r = subprocess.run(["ninja", "-C", build_dir, "-j", str(jobs)] + sorted(targets),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    return r.returncode == 0, r.stdout


def run_process(cmd, timeout, env=None):
    """(returncode or None on timeout, output). The test runs in its own process group, so a
    timeout also ends the children it forked (the simulator's isolated runs)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", env=env, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = p.communicate()
        return None, out


def failure_detail(binary, rc, out):
    failed = re.findall(r"^\[  FAILED  \] (\S+)", out, re.M)
    kinds = sorted(set(re.findall(r"\[([A-Z_]+x\d+(?: [A-Z_]+x\d+)*)\]", out)))
    detail = ", ".join(dict.fromkeys(failed)) or f"exit {rc}"
    return f"{binary}: {detail}" + (f" {kinds[0]}" if kinds else ""), (failed[0] if failed else None)


def run_tests(build_dir, tests, timeout):
    """(verdict, what): verdict KILLED (a test failed), TIMEOUT, or None (all passed)."""
    for binary, filt in tests:
        cmd = [os.path.join(build_dir, binary), "--gtest_filter=" + filt, "--gtest_brief=1",
               "--gtest_fail_fast=1"]
        rc, out = run_process(cmd, timeout)
        if rc is None:
            return "TIMEOUT", f"{binary} did not finish in {timeout} s"
        if rc != 0:
            return "KILLED", failure_detail(binary, rc, out)[0]
    return None, ""


# --- mutant schemata ------------------------------------------------------------------------
#
# Every mutant of a batch is compiled into one build: each mutated statement span becomes
#     { if (::wort_mutant_id() == K1) { <mutant K1> } else if (...) { ... } else { <original> } }
# and the tests run once per mutant with WORT_MUTANT=K. The selector lives in a header
# generated in the scratch directory (outside the copied tree), included by each guarded file.

SCHEMA_HEADER = """// Generated by tools/mutate.py in its scratch directory, never part of the project's tree:
// the selector of the mutant schemata. WORT_MUTANT=K runs mutant K at every guarded site;
// unset or 0 runs the original statements. Read once per process.
#pragma once
#include <cstdlib>
inline int wort_mutant_id() noexcept {
  static const int id = [] {
    const char* s = std::getenv("WORT_MUTANT");
    return s != nullptr ? std::atoi(s) : 0;
  }();
  return id;
}
"""


def guarded_source(original, entries, header):
    """original with every (id, edits) of entries guarded by the selector. Spans of different
    mutants must be identical (one if/else-if chain) or disjoint."""
    spans = {}
    for k, edits in entries:
        for s, e, t in edits:
            spans.setdefault((s, e), []).append((k, t))
    out, pos = [], 0
    for s, e in sorted(spans):
        if s < pos:
            raise ValueError("overlapping mutation spans in one schema")
        chain = " else ".join(f"if (::wort_mutant_id() == {k}) {{ {t} }}" for k, t in spans[(s, e)])
        out += [original[pos:s], f"{{ {chain} else {{ {original[s:e]} }} }}"]
        pos = e
    out.append(original[pos:])
    text = "".join(out)
    inc = f'#include "{header}"  // tools/mutate.py: mutant schema selector\n'
    m = re.search(r"^#pragma once[^\n]*\n", text, re.M)
    at = m.end() if m else 0
    return text[:at] + inc + text[at:]


class Batch:
    """Mutants built together: per file, their spans are identical or disjoint."""

    def __init__(self):
        self.members = []  # (id, Mutation, edits)
        self.spans = {}

    def fits(self, m, edits):
        have = self.spans.get(m.file, set())
        return all((s, e) == (s2, e2) or e <= s2 or e2 <= s for s, e, _ in edits for s2, e2 in have)

    def add(self, k, m, edits):
        self.members.append((k, m, edits))
        self.spans.setdefault(m.file, set()).update((s, e) for s, e, _ in edits)


class Stats:
    """Which test killed which mutants: per test, and per mutated function. Kept across runs
    in the scratch directory, so the next run tries the likeliest killers first."""

    def __init__(self, path):
        self.path, self.lock = path, threading.Lock()
        self.all, self.func = {}, {}
        try:
            with open(path) as f:
                d = json.load(f)
            self.all, self.func = d.get("all", {}), d.get("func", {})
        except (OSError, ValueError):
            pass

    def kills(self, m, test):
        with self.lock:
            return (self.func.get(m.file + " :: " + m.func, {}).get(test, 0), self.all.get(test, 0))

    def record(self, m, test):
        with self.lock:
            self.all[test] = self.all.get(test, 0) + 1
            f = self.func.setdefault(m.file + " :: " + m.func, {})
            f[test] = f.get(test, 0) + 1

    def save(self):
        with self.lock, open(self.path, "w") as f:
            json.dump({"all": self.all, "func": self.func}, f, indent=0, sort_keys=True)


def baseline(build_dir, pairs, jobs, timeout):
    """Runs each (binary, filter) with no mutant selected; returns {(binary, filter): [(test,
    seconds)]} in gtest order, or raises SystemExit naming the first that fails."""
    def one(pair):
        binary, filt = pair
        t = time.time()
        rc, out = run_process([os.path.join(build_dir, binary), "--gtest_filter=" + filt], timeout,
                              env={k: v for k, v in os.environ.items() if k != "WORT_MUTANT"})
        if rc != 0:
            what = "timed out" if rc is None else failure_detail(binary, rc, out)[0]
            raise SystemExit(f"[mutate] the unmutated schema fails its crash tests: {binary} {filt}: {what}")
        tests = [(n, int(ms) / 1000.0) for n, ms in re.findall(r"^\[       OK \] (\S+) \((\d+) ms\)", out, re.M)]
        return pair, tests, time.time() - t
    out = {}
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        for pair, tests, secs in ex.map(one, sorted(pairs)):
            out[pair] = tests
            print(f"[mutate]   baseline {pair[0]} {pair[1]}: {len(tests)} tests, {secs:.1f} s", flush=True)
    return out


def plan(m, base, stats, probes=2):
    """The test processes for one mutant, cheapest-most-killing first: up to `probes` tests that
    killed mutants before (in this function first, then anywhere), each alone; then the rest,
    one process per binary (cheapest binary first, gtest order inside). Together they run
    exactly the tests the covering filters select."""
    units, seen = [], set()
    for binary, filt in covering(m.file):
        for name, secs in base[(binary, filt)]:
            if (binary, name) not in seen:
                seen.add((binary, name))
                units.append((binary, name, secs))

    def key(u):
        fk, ak = stats.kills(m, u[0] + " " + u[1])
        return (-fk, -ak, u[2])
    first = [u for u in sorted(units, key=key) if key(u)[:2] != (0, 0)][:probes]
    rest = {}
    for u in units:
        if u not in first:
            rest.setdefault(u[0], []).append(u)
    inv = [(u[0], [u[1]], u[2]) for u in first]
    for binary, us in sorted(rest.items(), key=lambda kv: sum(u[2] for u in kv[1])):
        inv.append((binary, [u[1] for u in us], sum(u[2] for u in us)))
    return inv


def run_mutant(build_dir, k, m, invocations, stats, limit):
    """(verdict, what) with WORT_MUTANT=k: KILLED at the first failing process, TIMEOUT, or
    SURVIVED. limit(seconds of the tests at baseline) is a process's time limit."""
    env = dict(os.environ, WORT_MUTANT=str(k))
    for binary, names, secs in invocations:
        if any("-" in n for n in names):
            raise SystemExit(f"[mutate] a test name with '-' cannot go into a gtest filter: {names}")
        cmd = [os.path.join(build_dir, binary), "--gtest_filter=" + ":".join(names), "--gtest_brief=1",
               "--gtest_fail_fast=1"]
        lim = limit(secs)
        rc, out = run_process(cmd, lim, env)
        if rc is None:
            return "TIMEOUT", f"{binary} ({len(names)} tests, {secs:.1f} s at baseline) did not finish in {lim:.0f} s"
        if rc != 0:
            what, first = failure_detail(binary, rc, out)
            if first:
                stats.record(m, binary + " " + first)
            return "KILLED", what
    return "SURVIVED", ""


def run_schemata(a, muts, src, build_dir):
    """Schema mode: returns {Mutation: (status, what)}."""
    results, originals, current = {}, {}, {}
    header = os.path.join(a.scratch, "wort_mutant_schema.h")
    copy_text(header, SCHEMA_HEADER)
    ids = {m: i + 1 for i, m in enumerate(muts)}
    batches = []
    for m in muts:
        if m.file not in originals:
            with open(os.path.join(src, m.file)) as f:
                originals[m.file] = current[m.file] = f.read()
        edits = locate(originals[m.file], m)
        if edits is None:
            results[m] = ("N/A", "pattern not found")
            continue
        b = next((b for b in batches if b.fits(m, edits)), None)
        if b is None:
            b = Batch()
            batches.append(b)
        b.add(ids[m], m, edits)
    print(f"[mutate] schema mode: {sum(len(b.members) for b in batches)} mutants in {len(batches)} "
          f"batch(es), {len(results)} not applicable", flush=True)

    def write(members):
        want = dict(originals)
        per_file = {}
        for k, m, edits in members:
            per_file.setdefault(m.file, []).append((k, edits))
        for file, entries in per_file.items():
            want[file] = guarded_source(originals[file], entries, header)
        for file, text in want.items():
            if current[file] != text:
                with open(os.path.join(src, file), "w") as f:
                    f.write(text)
                current[file] = text

    stats = Stats(os.path.join(a.scratch, "test-stats.json"))
    limit = lambda secs: max(a.timeout, a.timeout_factor * secs)
    queue = [b.members for b in batches]
    fallback, original_builds = [], None
    try:
        while queue:
            members = queue.pop(0)
            targets = {b for _, m, _ in members for b, _ in covering(m.file)}
            write(members)
            t = time.time()
            ok, out = build(build_dir, targets, a.jobs)
            print(f"[mutate] schema of {len(members)} mutants in {len({m.file for _, m, _ in members})} files: "
                  f"built {'' if ok else 'with errors '}in {time.time() - t:.0f} s", flush=True)
            if not ok:
                if original_builds is None:
                    write([])
                    original_builds, o2 = build(build_dir, targets, a.jobs)
                    if not original_builds:
                        print(o2[-4000:])
                        raise SystemExit("[mutate] the unmutated tree does not build")
                if len(members) == 1:
                    fallback.append(members[0])
                    continue
                bad = {f for f in re.findall(r"^(?:\S*/)?src/((?:src|include)/\S+?):\d+:\d+: error", out, re.M)}
                suspects = [x for x in members if x[1].file in bad]
                if suspects and len(suspects) < len(members):
                    parts = [[x for x in members if x not in suspects], suspects]
                else:
                    parts = [members[:len(members) // 2], members[len(members) // 2:]]
                queue[0:0] = parts
                continue
            t = time.time()
            pairs = {p for _, m, _ in members for p in covering(m.file)}
            base = baseline(build_dir, pairs, a.jobs, limit(60))
            print(f"[mutate] baseline (no mutant selected) green in {time.time() - t:.0f} s", flush=True)
            t = time.time()
            timed_out = []
            lock = threading.Lock()

            def one(member):
                k, m, _ = member
                t1 = time.time()
                r = run_mutant(build_dir, k, m, plan(m, base, stats), stats, limit)
                with lock:
                    if r[0] == "TIMEOUT":
                        timed_out.append(member)
                        print(f"[mutate] (timeout, will re-run alone) {m.name()}: {r[1]}", flush=True)
                    else:
                        results[m] = r
                        print(f"[mutate] {r[0]:8} {m.name()}  ({time.time() - t1:.0f} s) {r[1]}", flush=True)
            with ThreadPoolExecutor(max_workers=a.jobs) as ex:
                list(ex.map(one, members))
            for k, m, _ in timed_out:  # alone, with three times the limit
                t1 = time.time()
                r = run_mutant(build_dir, k, m, plan(m, base, stats), stats, lambda s: 3 * limit(s))
                results[m] = r
                print(f"[mutate] {r[0]:8} {m.name()}  ({time.time() - t1:.0f} s, re-run alone) {r[1]}", flush=True)
            print(f"[mutate] {len(members)} mutants' tests in {time.time() - t:.0f} s", flush=True)
        for k, m, edits in fallback:  # the guarded form does not compile: one at a time
            write([])
            results[m] = one_at_a_time(a, m, apply_edits(originals[m.file], edits), src, build_dir)
    finally:
        write([])
        stats.save()
    return results


def copy_text(path, text):
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return
    with open(path, "w") as f:
        f.write(text)


def one_at_a_time(a, m, mutated, src, build_dir):
    """Builds the tree with this one mutation (unguarded) and runs its covering tests."""
    path = os.path.join(src, m.file)
    with open(path) as f:
        original = f.read()
    t = time.time()
    try:
        with open(path, "w") as f:
            f.write(mutated)
        tests = covering(m.file)
        ok, out = build(build_dir, {b for b, _ in tests}, a.jobs)
        if not ok:
            err = re.search(r"error: (.*)", out)
            r = ("N/A", "does not compile: " + (err.group(1)[:120] if err else "?"))
        else:
            verdict, what = run_tests(build_dir, tests, a.timeout)
            r = (verdict or "SURVIVED", what)
    finally:
        with open(path, "w") as f:
            f.write(original)
    print(f"[mutate] {r[0]:8} {m.name()}  ({time.time() - t:.0f} s, one at a time) {r[1]}", flush=True)
    return r


def run_one_at_a_time(a, muts, src, build_dir):
    """The old mode: one rebuild per mutant. Returns {Mutation: (status, what)}."""
    results = {}
    for m in muts:
        path = os.path.join(src, m.file)
        with open(path) as f:
            original = f.read()
        edits = locate(original, m)
        if edits is None:
            results[m] = ("N/A", "pattern not found")
            print(f"[mutate] N/A      {m.name()}  (0 s) pattern not found", flush=True)
        else:
            results[m] = one_at_a_time(a, m, apply_edits(original, edits), src, build_dir)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append",
                    help="run only mutations whose name contains this (repeatable: any)")
    ap.add_argument("--list", action="store_true", help="list the catalogue and exit")
    ap.add_argument("--scratch", default=os.environ.get(
        "WORT_MUTATE_DIR", "/tmp/wort-mutate-" + hashlib.sha1(ROOT.encode()).hexdigest()[:8]))
    ap.add_argument("--jobs", type=int, default=2,
                    help="ninja -j, and mutants whose tests run at the same time (schema mode)")
    ap.add_argument("--timeout", type=float, default=240,
                    help="least time limit of one test process, seconds (one-at-a-time: the limit)")
    ap.add_argument("--timeout-factor", type=float, default=10,
                    help="schema mode: a test process's limit is at least this many times the "
                         "baseline time of the tests it runs")
    ap.add_argument("--one-at-a-time", action="store_true",
                    help="the old mode: apply, rebuild and test each mutant alone")
    ap.add_argument("--results", help="write one line per mutation: name, verdict, detail (TSV)")
    ap.add_argument("--json", help="write the score per catalogue, the survivors and the run's "
                    "revision, date and command (JSON; docs/RESULTS.md renders results/mutate.json)")
    ap.add_argument("--catalogue", default=CATALOGUE_DIR,
                    help="folder of catalogue files (default tools/mutations)")
    a = ap.parse_args()

    muts = load_catalogue(a.catalogue)
    if a.only:
        muts = [m for m in muts if any(o in m.name() for o in a.only)]
    if a.list:
        for m in muts:
            print(m.name() + (f"   [harmless: {m.harmless}]" if m.harmless else ""))
        return 0

    t0 = time.time()
    a.revision = revision()  # the tree sync_tree copies now, not HEAD when the run ends
    src = sync_tree(a.scratch)
    build_dir = os.path.join(a.scratch, "build")
    # WORT_FAULTS: the crash tests that switch on a fault (a merge stopped after its detach,
    # a race hook) reach repair paths no plain run reaches; the catalogue counts on them.
    subprocess.run(["cmake", "-S", src, "-B", build_dir, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", "-DWORT_FAULTS=ON"],
                   check=True, stdout=subprocess.DEVNULL)
    all_tests = {t for m in muts for t in covering(m.file)}
    targets = {b for b, _ in all_tests}
    if a.one_at_a_time:
        print(f"[mutate] scratch tree {a.scratch}; building {len(targets)} crash-test binaries", flush=True)
        ok, out = build(build_dir, targets, a.jobs)
        if not ok:
            print(out[-4000:])
            raise SystemExit("[mutate] the unmutated tree does not build")
        for m in sorted({m.file for m in muts}):
            verdict, what = run_tests(build_dir, covering(m), a.timeout)
            if verdict:
                raise SystemExit(f"[mutate] the unmutated tree fails its crash tests: {what}")
        print(f"[mutate] baseline built and green in {time.time() - t0:.0f} s; "
              f"{len(muts)} mutations", flush=True)
        res = run_one_at_a_time(a, muts, src, build_dir)
        # leave the scratch build matching the tree
        build(build_dir, targets, a.jobs)
    else:
        print(f"[mutate] scratch tree {a.scratch}; {len(muts)} mutations, "
              f"{len(targets)} crash-test binaries", flush=True)
        res = run_schemata(a, muts, src, build_dir)
    results = [(m,) + res[m] for m in muts]
    if a.results:
        with open(a.results, "w") as f:
            for m, status, what in results:
                f.write(f"{m.name()}\t{status}\t{what}\n")

    if a.json:
        write_json(a, results, time.time() - t0)

    killed = [r for r in results if r[1] == "KILLED"]
    surv = [r for r in results if r[1] == "SURVIVED"]
    tout = [r for r in results if r[1] == "TIMEOUT"]
    na = [r for r in results if r[1] == "N/A"]
    harmless = [r for r in surv if r[0].harmless]
    meaningful = [r for r in results if r[1] != "N/A" and not (r[1] == "SURVIVED" and r[0].harmless)]
    k_meaningful = [r for r in meaningful if r[1] == "KILLED"]
    print()
    print(f"[mutate] {len(results)} mutations: {len(killed)} killed, {len(surv)} survived "
          f"({len(harmless)} declared harmless), {len(tout)} timed out, {len(na)} not applicable; "
          f"{time.time() - t0:.0f} s ({'one at a time' if a.one_at_a_time else 'schemata'})")
    if meaningful:
        print(f"[mutate] SCORE {len(k_meaningful)}/{len(meaningful)} meaningful mutations killed "
              f"({100.0 * len(k_meaningful) / len(meaningful):.0f}%)")
    for m, status, what in surv:
        tag = "harmless" if m.harmless else "SURVIVOR"
        print(f"  {tag}: {m.name()}  [{m.where}]" + (f"\n      why harmless: {m.harmless}" if m.harmless else ""))
    for m, status, what in tout:
        print(f"  TIMEOUT (not counted as killed): {m.name()}  [{m.where}]  {what}")
    for m, status, what in killed:
        if m.harmless:
            print(f"  NOTE: declared harmless but killed: {m.name()} [{m.where}] by {what}")
    for m, status, what in na:
        print(f"  n/a: {m.name()}  ({what})")
    return 1 if tout or any(not r[0].harmless for r in surv) else 0


def revision():
    """HEAD of the worktree, with "+changes" when tracked files differ from it."""
    rev = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                         cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, cwd=ROOT).stdout.strip() != ""
    return rev + ("+changes" if dirty else "")


def write_json(a, results, seconds):
    """The score per catalogue (the file a mutation's line is in), for docs/RESULTS.md."""
    per = {}
    for m, status, what in results:
        c = per.setdefault(m.where.split(":")[0].removesuffix(".txt"),
                           {"mutations": 0, "killed": 0, "harmless": 0, "survived": 0,
                            "timeout": 0, "na": 0, "harmless_killed": 0})
        c["mutations"] += 1
        if status == "KILLED":
            c["killed"] += 1
            c["harmless_killed"] += bool(m.harmless)
        elif status == "SURVIVED":
            c["harmless" if m.harmless else "survived"] += 1
        elif status == "TIMEOUT":
            c["timeout"] += 1
        else:
            c["na"] += 1
    doc = {"command_line": "make mutate" if not a.only else
                           "tools/mutate.py " + " ".join(f"--only '{o}'" for o in a.only),
           "git_revision": a.revision,
           "date": time.strftime("%Y-%m-%d"), "seconds": round(seconds),
           "mode": "one at a time" if a.one_at_a_time else "schemata",
           "load_end": os.getloadavg()[0], "catalogues": per,
           "survivors": [m.name() for m, s_, _ in results if s_ == "SURVIVED" and not m.harmless],
           "timeouts": [m.name() for m, s_, _ in results if s_ == "TIMEOUT"]}
    with open(a.json, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
