#!/usr/bin/env python3
"""make mutate — measure the crash tests by injecting persistence bugs, one at a time.

Reads the catalogue tools/mutations/*.txt: one mutation per line,

    <file> :: <function> :: <operator> [args...] [:: harmless: <why>]

described by pattern (a function name and the N-th call of a persistence primitive inside
its body), so entries survive code changes that do not remove the site. For each entry it
applies the mutation to a scratch copy of the tree (never to the worktree), rebuilds only
the crash-test binaries that cover the file (incremental ninja), runs them with a timeout
and records: KILLED (a test failed or timed out), SURVIVED, or N/A (the pattern is not in the
code, or the mutant does not compile). Prints the score and every survivor; an entry marked
`harmless:` that survives is listed as harmless with its reason (not counted against the
score); one marked harmless that is killed is reported too (the reason is then wrong).

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
Mutated commit sites keep the tracer's on_commit hook, so the commit oracle does not catch
them for free: what the score measures is the crash images and the lints.

Usage: tools/mutate.py [--only SUBSTRING] [--list] [--scratch DIR] [--jobs N] [--timeout S]
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOGUE_DIR = os.path.join(ROOT, "tools", "mutations")
TREE_PARTS = ["CMakeLists.txt", "src", "include", "tests", "tools", "examples", "cmake"]

# Which crash-test binaries (and gtest filters) cover a source file.
# (Index creation goes through the shared kit, src/index/common, which the catalogue does not
# mutate: the index folders are covered by their own crash tests, which also recompile fewer
# translation units than pool_crash_test, which instantiates every tree.)
COVER = [
    ("src/index/wort/", [("crash_wort_crash_test", "-*Kill9*")]),
    ("src/index/woart/", [("crash_pmart_crash_test", "*woart*:-*Kill9*")]),
    ("src/index/artcow/", [("crash_pmart_crash_test", "*artcow*:-*Kill9*")]),
    ("src/index/artcommon/", [("crash_pmart_crash_test", "-*Kill9*")]),
    ("src/index/fastfair/", [("crash_fastfair_crash_test", "-*Kill9*")]),
    ("src/index/wbtree/", [("crash_wbtree_crash_test", "-*Kill9*")]),
    ("src/index/nvtree/", [("crash_nvtree_crash_test", "-*Kill9*")]),
    ("src/index/fptree/", [("crash_fptree_crash_test", "-*Kill9*")]),
    ("src/pm/allocator.cc", [("crash_allocator_crash_test", "*"), ("crash_pool_crash_test", "*"),
                             ("crash_toy_crash_test", "*CorrectTable*:*Drain*"),
                             ("crash_wort_crash_test", "*Sampled*")]),
    ("src/pm/persist.cc", [("crash_copy_changed_test", "*"), ("crash_wort_crash_test", "-*Kill9*"),
                           ("crash_pmart_crash_test", "-*Kill9*")]),
    ("src/pm/pool.cc", [("crash_pool_crash_test", "*"), ("crash_toy_crash_test", "*CorrectTable*")]),
    ("src/index/roart/", [("crash_roart_crash_test", "-*Kill9*")]),
    # the kit's value commits (tools/mutations/kit.txt): every index that calls them
    ("src/index/common/anchor.h", [("crash_wort_crash_test", "-*Kill9*"),
                                   ("crash_pmart_crash_test", "-*Kill9*"),
                                   ("crash_fastfair_crash_test", "-*Kill9*"),
                                   ("crash_roart_crash_test", "-*Kill9*"),
                                   ("crash_wbtree_crash_test", "-*Kill9*")]),
]

COMMIT_PRIMS = ("commit_sharing_fence", "publish", "commit",
                "commit_nt_sharing_fence", "publish_nt", "commit_nt")  # _nt: ROWEX (movnti)
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


def mutate_body(body, op, args):
    """Returns the mutated body, or None if the pattern is not there."""
    if op == "drop":
        c = nth(calls(body, args[0]), int(args[1]))
        return None if c is None else body[:c[0]] + "(void)0;" + body[c[1]:]
    if op == "publish-to-commit":  # publish -> commit, publish_nt -> commit_nt (in order)
        cs = sorted([(c, "pm::commit") for c in calls(body, "publish")] +
                    [(c, "pm::commit_nt") for c in calls(body, "publish_nt")],
                    key=lambda x: x[0][0])
        f = nth(cs, int(args[0]))
        if f is None:
            return None
        c, dst = f
        return body[:c[0]] + dst + "(" + c[2] + ");" + body[c[1]:]
    if op in ("persist-to-flush", "store-persist-to-store"):
        src, dst = {"persist-to-flush": ("persist", "pm::flush"),
                    "store-persist-to-store": ("store_persist", "pm::store"),
                    "publish-to-commit": ("publish", "pm::commit")}[op]
        c = nth(calls(body, src), int(args[0]))
        if c is None:
            return None
        return body[:c[0]] + dst + "(" + c[2] + ");" + body[c[1]:]
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
        return body[:s] + new + body[e:]
    if op == "swap-commit-flush":
        f = nth(commit_calls(body), int(args[0]))
        if f is None:
            return None
        s, e = f[1][0], f[1][1]
        before = [c for p in ("flush", "persist") for c in calls(body, p) if c[1] <= s]
        if not before:
            return None
        b = max(before, key=lambda c: c[0])
        return (body[:b[0]] + body[s:e] + body[b[1]:s] + body[b[0]:b[1]] + body[e:])
    if op == "swap":
        a = nth(calls(body, args[0]), int(args[1]))
        b = nth(calls(body, args[2]), int(args[3]))
        if a is None or b is None or a == b:
            return None
        if a[0] > b[0]:
            a, b = b, a
        return body[:a[0]] + body[b[0]:b[1]] + body[a[1]:b[0]] + body[a[0]:a[1]] + body[b[1]:]
    raise SystemExit(f"unknown operator {op}")


# --- catalogue ------------------------------------------------------------------------------

class Mutation:
    def __init__(self, where, file, func, op, args, harmless):
        self.where, self.file, self.func, self.op, self.args = where, file, func, op, args
        self.harmless = harmless

    def name(self):
        return f"{self.file} :: {self.func} :: {self.op} {' '.join(self.args)}".rstrip()


def load_catalogue():
    muts = []
    for fn in sorted(os.listdir(CATALOGUE_DIR)):
        if not fn.endswith(".txt"):
            continue
        with open(os.path.join(CATALOGUE_DIR, fn)) as f:
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


def run_tests(build_dir, tests, timeout):
    """(killed, what): the first failing test binary, or None."""
    for binary, filt in tests:
        cmd = [os.path.join(build_dir, binary), "--gtest_filter=" + filt, "--gtest_brief=1",
               "--gtest_fail_fast=1"]
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return True, f"{binary} timed out after {timeout} s"
        if r.returncode != 0:
            failed = re.findall(r"^\[  FAILED  \] (\S+)", r.stdout, re.M)
            kinds = sorted(set(re.findall(r"\[([A-Z_]+x\d+(?: [A-Z_]+x\d+)*)\]", r.stdout)))
            detail = ", ".join(dict.fromkeys(failed)) or f"exit {r.returncode}"
            return True, f"{binary}: {detail}" + (f" {kinds[0]}" if kinds else "")
    return False, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append",
                    help="run only mutations whose name contains this (repeatable: any)")
    ap.add_argument("--list", action="store_true", help="list the catalogue and exit")
    ap.add_argument("--scratch", default=os.environ.get(
        "WORT_MUTATE_DIR", "/tmp/wort-mutate-" + hashlib.sha1(ROOT.encode()).hexdigest()[:8]))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=240, help="seconds per test binary")
    a = ap.parse_args()

    muts = load_catalogue()
    if a.only:
        muts = [m for m in muts if any(o in m.name() for o in a.only)]
    if a.list:
        for m in muts:
            print(m.name() + (f"   [harmless: {m.harmless}]" if m.harmless else ""))
        return 0

    t0 = time.time()
    src = sync_tree(a.scratch)
    build_dir = os.path.join(a.scratch, "build")
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        subprocess.run(["cmake", "-S", src, "-B", build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
    all_tests = {t for m in muts for t in covering(m.file)}
    targets = {b for b, _ in all_tests}
    print(f"[mutate] scratch tree {a.scratch}; building {len(targets)} crash-test binaries", flush=True)
    ok, out = build(build_dir, targets, a.jobs)
    if not ok:
        print(out[-4000:])
        raise SystemExit("[mutate] the unmutated tree does not build")
    for m in sorted({m.file for m in muts}):
        killed, what = run_tests(build_dir, covering(m), a.timeout)
        if killed:
            raise SystemExit(f"[mutate] the unmutated tree fails its crash tests: {what}")
    print(f"[mutate] baseline built and green in {time.time() - t0:.0f} s; "
          f"{len(muts)} mutations", flush=True)

    results = []
    by_file = {}
    for m in muts:
        by_file.setdefault(m.file, []).append(m)
    for file, group in by_file.items():
        path = os.path.join(src, file)
        with open(path) as f:
            original = f.read()
        try:
            for m in group:
                t = time.time()
                rng = function_body(original, m.func)
                mutated = None
                if rng is not None:
                    body = mutate_body(original[rng[0]:rng[1]], m.op, m.args)
                    if body is not None:
                        mutated = original[:rng[0]] + body + original[rng[1]:]
                if mutated is None or mutated == original:
                    results.append((m, "N/A", "pattern not found"))
                else:
                    with open(path, "w") as f:
                        f.write(mutated)
                    tests = covering(file)
                    ok, out = build(build_dir, {b for b, _ in tests}, a.jobs)
                    if not ok:
                        err = re.search(r"error: (.*)", out)
                        results.append((m, "N/A", "does not compile: " + (err.group(1)[:120] if err else "?")))
                    else:
                        killed, what = run_tests(build_dir, tests, a.timeout)
                        results.append((m, "KILLED" if killed else "SURVIVED", what))
                r = results[-1]
                print(f"[mutate] {r[1]:8} {m.name()}  ({time.time() - t:.0f} s) {r[2]}", flush=True)
        finally:
            with open(path, "w") as f:
                f.write(original)
    # leave the scratch build matching the tree
    build(build_dir, targets, a.jobs)

    killed = [r for r in results if r[1] == "KILLED"]
    surv = [r for r in results if r[1] == "SURVIVED"]
    na = [r for r in results if r[1] == "N/A"]
    harmless = [r for r in surv if r[0].harmless]
    meaningful = [r for r in results if r[1] != "N/A" and not (r[1] == "SURVIVED" and r[0].harmless)]
    k_meaningful = [r for r in meaningful if r[1] == "KILLED"]
    print()
    print(f"[mutate] {len(results)} mutations: {len(killed)} killed, {len(surv)} survived "
          f"({len(harmless)} declared harmless), {len(na)} not applicable; "
          f"{time.time() - t0:.0f} s")
    if meaningful:
        print(f"[mutate] SCORE {len(k_meaningful)}/{len(meaningful)} meaningful mutations killed "
              f"({100.0 * len(k_meaningful) / len(meaningful):.0f}%)")
    for m, status, what in surv:
        tag = "harmless" if m.harmless else "SURVIVOR"
        print(f"  {tag}: {m.name()}  [{m.where}]" + (f"\n      why harmless: {m.harmless}" if m.harmless else ""))
    for m, status, what in killed:
        if m.harmless:
            print(f"  NOTE: declared harmless but killed: {m.name()} [{m.where}] by {what}")
    for m, status, what in na:
        print(f"  n/a: {m.name()}  ({what})")
    return 1 if any(not r[0].harmless for r in surv) else 0


if __name__ == "__main__":
    sys.exit(main())
