"""The `wort` Python package (python/): every operation of the API over wort::Store, errors
mapped to exceptions, the GIL released, a kill -9 losing no acknowledged put, and the
README's Python example. tests/python/run.sh installs the package into a venv and runs this."""
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading

import pytest

import wort

SRC = pathlib.Path(__file__).resolve().parents[2]
# Every kind the store accepts: the registered ones but the volatile `art` (checked below).
PERSISTENT = [k for k in wort.kinds() if k != "art"]
SIZE = 16 << 20


@pytest.fixture
def pool(tmp_path):
    return str(tmp_path / "test.pool")


def run_python(code, *args, **kw):
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, **kw)


def test_kinds():
    kinds = wort.kinds()
    assert kinds == sorted(kinds)
    assert {"wort", "woart", "art", "fptree"} <= set(kinds)


def test_volatile_art_is_refused(pool):
    with pytest.raises(wort.InvalidArgumentError) as e:
        wort.open(pool, kind="art", size=SIZE)
    assert e.value.status == "invalid_argument"
    assert str(e.value)  # the library's message


@pytest.mark.parametrize("kind", PERSISTENT)
def test_basics(pool, kind):
    db = wort.open(pool, kind=kind, size=SIZE)
    assert db.kind == kind and len(db) == 0 and not db.closed
    db.put(b"k", b"v")
    assert db.get(b"k") == b"v"
    assert db.get(b"absent") is None
    assert db.get(b"absent", b"dflt") == b"dflt"
    db[b"k2"] = b"v2"
    assert db[b"k2"] == b"v2"
    db[b"k2"] = b"replaced"
    assert db[b"k2"] == b"replaced"
    assert b"k" in db and b"absent" not in db
    assert len(db) == 2
    del db[b"k"]
    assert b"k" not in db and len(db) == 1
    assert db.delete(b"k2") is True
    assert db.delete(b"k2") is False
    assert len(db) == 0
    for i in range(100):
        db.put(b"key%03d" % i, b"value%d" % i)
    assert list(db.items()) == [(b"key%03d" % i, b"value%d" % i) for i in range(100)]
    db.close()
    assert db.closed
    with wort.open(pool) as db:  # kind "" accepts the pool's own kind
        assert db.kind == kind and len(db) == 100
        assert db[b"key042"] == b"value42"
        db.verify()


def test_value_sizes_and_zeros(pool):
    big = bytes(range(256)) * 4096  # 1 MiB
    with wort.open(pool, kind="wort", size=SIZE) as db:
        db.put(b"empty", b"")
        db.put(b"big", big)
        db.put(b"a\x00b", b"\x00\x01\x00\x02\x00")
        db.put(b"", b"empty key")
        assert db.get(b"empty") == b"" and b"empty" in db
        assert db.get(b"big") == big
        assert db.get(b"a\x00b") == b"\x00\x01\x00\x02\x00"
        assert db.get(b"a") is None  # the zero is part of the key
        assert db.get(b"") == b"empty key"
    with wort.open(pool) as db:
        assert db.get(b"empty") == b"" and db.get(b"big") == big
        assert db.get(b"a\x00b") == b"\x00\x01\x00\x02\x00"


def test_bytes_like_accepted(pool):
    with wort.open(pool, kind="wort", size=SIZE) as db:
        db.put(bytearray(b"ba"), memoryview(b"mv-value"))
        assert db.get(memoryview(b"ba")) == b"mv-value"
        assert bytearray(b"ba") in db
        assert db.delete(bytearray(b"ba"))


def test_str_and_other_types_refused(pool):
    with wort.open(pool, kind="wort", size=SIZE) as db:
        for call in (lambda: db.put("k", b"v"), lambda: db.put(b"k", "v"), lambda: db.get("k"),
                     lambda: db.__setitem__("k", b"v"), lambda: db["k"], lambda: "k" in db,
                     lambda: db.delete("k"), lambda: db.items("a"), lambda: db.items(None, "b"),
                     lambda: db.put(1, b"v"), lambda: db.put(b"k", None)):
            with pytest.raises(TypeError):
                call()
        with pytest.raises(TypeError):
            with db.batch() as b:
                b.put("x", b"1")
        assert len(db) == 0


def test_key_error(pool):
    with wort.open(pool, kind="wort", size=SIZE) as db:
        with pytest.raises(KeyError):
            db[b"nope"]
        with pytest.raises(KeyError):
            del db[b"nope"]


def test_items_bounds(pool):
    keys = [b"a", b"b", b"b\x00", b"ba", b"c", b"d", b"e"]
    with wort.open(pool, kind="wort", size=SIZE) as db:
        for k in reversed(keys):
            db[k] = k.upper()

        def ks(*a, **kw):
            return [k for k, _ in db.items(*a, **kw)]

        assert ks() == keys
        assert list(db.items(b"b", b"c")) == [(b"b", b"B"), (b"b\x00", b"B\x00"), (b"ba", b"BA")]
        assert ks(b"b\x00") == keys[2:]
        assert ks(stop=b"b\x00") == [b"a", b"b"]
        assert ks(start=b"bb", stop=b"z") == [b"c", b"d", b"e"]
        assert ks(b"c", b"c") == [] and ks(b"d", b"b") == [] and ks(b"f") == []
        assert ks(b"") == keys
        # A cursor past a batch boundary: more keys than one read of the index holds.
        for i in range(1000):
            db[b"n%04d" % i] = b"%d" % i
        assert ks(b"n", b"o") == [b"n%04d" % i for i in range(1000)]


def test_batch_applied(pool):
    with wort.open(pool, kind="wort", size=SIZE) as db:
        db[b"y"] = b"old"
        with db.batch() as b:
            b.put(b"x", b"1")
            b.delete(b"y")
            b.put(b"z", b"first")
            b.put(b"z", b"last")  # later entries of one key win
            assert len(b) == 4
            assert b"x" not in db  # nothing before the with-block ends
        assert db[b"x"] == b"1" and b"y" not in db and db[b"z"] == b"last"
        with pytest.raises(wort.ClosedError):
            b.put(b"w", b"late")  # an ended batch takes nothing more
    with wort.open(pool) as db:
        assert dict(db.items()) == {b"x": b"1", b"z": b"last"}


def test_batch_exception_applies_nothing(pool):
    with wort.open(pool, kind="wort", size=SIZE) as db:
        db[b"y"] = b"kept"
        with pytest.raises(RuntimeError, match="boom"):
            with db.batch() as b:
                b.put(b"x", b"1")
                b.delete(b"y")
                raise RuntimeError("boom")
        assert b"x" not in db and db[b"y"] == b"kept" and len(db) == 1


def test_reopen_in_a_fresh_process(pool):
    with wort.open(pool, kind="fptree", size=SIZE) as db:
        for i in range(50):
            db[b"k%d" % i] = b"v%d" % i
        with db.batch() as b:
            b.put(b"batched", b"yes")
    child = run_python("import sys, wort\n"
                       "with wort.open(sys.argv[1]) as db:\n"
                       "    print(db.kind, len(db), db[b'k7'].decode(), db[b'batched'].decode())\n"
                       "    db[b'from-child'] = b'hello'\n", pool)
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["fptree", "51", "v7", "yes"]
    with wort.open(pool) as db:
        assert db[b"from-child"] == b"hello"


def test_corrupt_value_raises_corrupt_error(pool):
    pattern = bytes((i * 37 + 11) % 251 for i in range(300))
    with wort.open(pool, kind="wort", size=SIZE) as db:
        db[b"a"] = b"first"
        db[b"damaged"] = pattern
        db[b"z"] = b"last"
    data = pathlib.Path(pool).read_bytes()
    at = data.find(pattern)
    assert at >= 0 and data.find(pattern, at + 1) < 0  # the value's one copy in the pool
    with open(pool, "r+b") as f:
        f.seek(at + 100)
        f.write(bytes([data[at + 100] ^ 0x10]))
    with wort.open(pool) as db:
        with pytest.raises(wort.CorruptError) as e:
            db.get(b"damaged")
        assert isinstance(e.value, wort.Error) and e.value.status == "corrupt"
        with pytest.raises(wort.CorruptError):
            db[b"damaged"]
        assert db[b"a"] == b"first" and db[b"z"] == b"last"
        with pytest.raises(wort.CorruptError):
            list(db.items())
        with pytest.raises(wort.CorruptError):
            db.verify()
        db[b"damaged"] = b"healed"  # rewriting the key heals it
        assert db[b"damaged"] == b"healed"


def test_open_errors(tmp_path, pool):
    other = tmp_path / "other.bin"
    other.write_bytes(b"not a pool at all\n" * 100000)
    with pytest.raises(wort.NotAPoolError) as e:
        wort.open(str(other))
    assert e.value.status == "not_a_pool" and str(e.value)
    with pytest.raises(wort.Error) as e:  # a folder that does not exist
        wort.open(str(tmp_path / "missing" / "x.pool"), kind="wort", size=SIZE)
    assert e.value.status in ("no_such_file", "io_error")
    with wort.open(pool, kind="wort", size=SIZE) as db:
        with pytest.raises(wort.InUseError):
            wort.open(pool)
    with pytest.raises(wort.WrongKindError):
        wort.open(pool, kind="fptree")
    with pytest.raises(wort.InvalidArgumentError):
        wort.open(str(tmp_path / "new.pool"), kind="no-such-kind", size=SIZE)
    with wort.open(pathlib.Path(pool)) as db:  # os.PathLike works too
        with pytest.raises(wort.InvalidArgumentError):
            db.put(b"k" * (db.max_key_size + 1), b"v")
    # Every Status has its class, all under wort.Error.
    for name in ("NotFoundError", "ExistsError", "OutOfSpaceError", "CorruptError",
                 "InvalidArgumentError", "IoError", "NoSuchFileError", "TruncatedError",
                 "NotAPoolError", "NewerVersionError", "WrongKindError", "InUseError",
                 "ClosedError"):
        assert issubclass(getattr(wort, name), wort.Error)


def test_out_of_space(tmp_path):
    with wort.open(str(tmp_path / "small.pool"), kind="wort", size=4 << 20) as db:
        with pytest.raises(wort.OutOfSpaceError):
            for i in range(64):
                db[b"k%d" % i] = bytes(256 << 10)
        assert len(db) > 0  # what was acknowledged stays


def test_closed_database(pool):
    db = wort.open(pool, kind="wort", size=SIZE)
    db[b"a"] = b"1"
    db[b"b"] = b"2"
    it = db.items()
    assert next(it) == (b"a", b"1")
    db.close()
    db.close()  # again: nothing
    for call in (lambda: db.put(b"k", b"v"), lambda: db.get(b"a"), lambda: db[b"a"],
                 lambda: b"a" in db, lambda: len(db), lambda: db.delete(b"a"),
                 lambda: db.items(), lambda: db.batch(), lambda: next(it)):
        with pytest.raises(wort.ClosedError, match="closed"):
            call()
    assert issubclass(wort.ClosedError, ValueError)
    with wort.open(pool) as db2:  # the pool was really closed: it reopens here
        assert db2[b"b"] == b"2"
    assert db2.closed


def test_threads_make_progress(pool):
    """Two threads putting at once both finish (the GIL is released around each put, and
    no lock order between the GIL and the store's locks deadlocks)."""
    with wort.open(pool, kind="wort", size=SIZE) as db:
        done = []

        def worker(t):
            for i in range(3000):
                db.put(b"t%d-%05d" % (t, i), b"%d" % i)
                assert db.get(b"t%d-%05d" % (t, i)) == b"%d" % i
            done.append(t)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)  # a deadlock fails the test instead of hanging it
        assert sorted(done) == [0, 1]
        assert len(db) == 6000


CHILD = r"""
import sys, wort
db = wort.open(sys.argv[1], kind="wort", size=64 << 20)
for i in range(1_000_000):
    if i % 10 == 9:
        with db.batch() as b:
            for j in range(3):
                b.put(b"batch%d-%d" % (i, j), b"B%d" % i)
        print("batch", i, flush=True)
    else:
        db.put(b"key%d" % i, b"value%d" % i * (i % 50))
        print("put", i, flush=True)
"""


def test_kill_9_loses_no_acknowledged_put(pool):
    child = subprocess.Popen([sys.executable, "-c", CHILD, pool], stdout=subprocess.PIPE, text=True)
    acked = []
    try:
        for line in child.stdout:
            acked.append(line.split())
            if len(acked) == 300:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        # What the child printed after the 300th line is acknowledged too; a last line cut
        # by the kill (no newline) is not.
        acked += [line.split() for line in child.stdout.read().split("\n")[:-1]]
    assert len(acked) >= 300 and child.returncode == -signal.SIGKILL
    with wort.open(pool) as db:
        for what, i in acked:
            i = int(i)
            if what == "put":
                assert db.get(b"key%d" % i) == b"value%d" % i * (i % 50)
            else:
                assert [db.get(b"batch%d-%d" % (i, j)) for j in range(3)] == [b"B%d" % i] * 3
        # The operation in flight, if any: a put whole or absent, a batch all or none.
        last = int(acked[-1][1])
        nxt = last + 1
        if nxt % 10 == 9:
            got = [db.get(b"batch%d-%d" % (nxt, j)) for j in range(3)]
            assert got in ([None] * 3, [b"B%d" % nxt] * 3)
        else:
            assert db.get(b"key%d" % nxt) in (None, b"value%d" % nxt * (nxt % 50))
        db.verify()


def test_readme_example(tmp_path):
    """README.md's Python block runs as it stands (its pool path swapped for a scratch one),
    twice on one pool: the second run reopens what the first made."""
    readme = (SRC / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```\n", readme, re.S)
    assert len(blocks) == 1, "README.md has one Python block"
    code = blocks[0]
    path = '"/dev/shm/example.pool"'
    assert code.count(path) == 1
    code = code.replace(path, repr(str(tmp_path / "example.pool")))
    first = run_python(code)
    assert first.returncode == 0, first.stderr
    second = run_python(code)
    assert second.returncode == 0, second.stderr
    assert "runs: 1" in first.stdout and "runs: 2" in second.stdout
