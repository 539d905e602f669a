#!/usr/bin/env python3
"""Refuses development history in the reference text: `session N`, `issue N` (any case) and
bare commit hashes in src/, include/, tests/, README.md and docs/DESIGN.md (the index and
folder READMEs live under src/). History belongs in docs/experiments/ (dated records) and
CHANGES.md, which are not checked.

A word of 7 to 40 hex digits with at least one letter and one digit counts as a commit hash
only if `git cat-file` resolves it to a commit of this repository, so hex constants in code
(0x..., masks, test vectors) pass; in a clone without the history nothing is flagged.

usage: tools/lint-docs.py [FILE...]   (default: every tracked file under the paths above)
Exit 0 when clean, 1 with one `file:line: what` per hit.
"""
import os
import re
import subprocess
import sys

ROOTS = ("src", "include", "tests", "README.md", "docs/DESIGN.md")
HISTORY = re.compile(r"\b(session|issue) [0-9]", re.IGNORECASE)
HEXWORD = re.compile(r"(?<![0-9A-Za-z_])([0-9a-f]{7,40})(?![0-9A-Za-z_])")


def tracked(repo):
    out = subprocess.run(["git", "-C", repo, "ls-files", "-z", "--", *ROOTS],
                         capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def commits(repo, words):
    """The subset of `words` that name a commit object here (one git process for all)."""
    if not words:
        return set()
    words = sorted(words)
    req = "".join(f"{w}^{{commit}}\n" for w in words)
    proc = subprocess.run(["git", "-C", repo, "cat-file", "--batch-check=%(objecttype)"],
                          input=req.encode(), capture_output=True)
    if proc.returncode != 0:
        return set()
    answers = proc.stdout.decode().splitlines()
    return {w for w, a in zip(words, answers) if a.strip() == "commit"}


def main():
    repo = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                          text=True, check=True).stdout.strip()
    files = sys.argv[1:] or tracked(repo)
    hits, candidates = [], []
    for rel in files:
        path = os.path.join(repo, rel) if not os.path.isabs(rel) else rel
        try:
            text = open(path, encoding="utf-8", errors="replace").read()
        except (IsADirectoryError, FileNotFoundError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            m = HISTORY.search(line)
            if m:
                hits.append((rel, n, f"history: '{m.group(0)}'"))
            for h in HEXWORD.finditer(line):
                w = h.group(1)
                if re.search(r"[a-f]", w) and re.search(r"[0-9]", w):
                    candidates.append((rel, n, w))
    named = commits(repo, {w for _, _, w in candidates})
    hits += [(rel, n, f"commit hash: '{w}'") for rel, n, w in candidates if w in named]
    for rel, n, what in sorted(hits):
        print(f"{rel}:{n}: {what}")
    if hits:
        print(f"lint-docs: {len(hits)} hit(s). Reference text describes main as it is; history "
              "goes to docs/experiments/<date>-<topic>.md or CHANGES.md.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
