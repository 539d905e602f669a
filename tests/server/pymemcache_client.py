#!/usr/bin/python3
"""pymemcache (Debian python3-pymemcache) against `wort serve`: usage pymemcache_client.py PORT.
Exits non-zero on the first failed check."""
import sys
from pymemcache.client.base import Client

c = Client(("127.0.0.1", int(sys.argv[1])), connect_timeout=5, timeout=5)
def check(cond, what):
    if not cond:
        print("FAILED:", what); sys.exit(1)

check(c.set("a", b"hello", expire=0, noreply=False), "set")
check(c.get("a") == b"hello", "get")
check(c.add("a", b"x", noreply=False) is False, "add existing")
check(c.add("b", b"x", noreply=False) is True, "add new")
check(c.replace("b", b"y", noreply=False) is True, "replace")
check(c.append("b", b"z", noreply=False) and c.get("b") == b"yz", "append")
check(c.prepend("b", b"w", noreply=False) and c.get("b") == b"wyz", "prepend")
val, cas = c.gets("b")
check(val == b"wyz" and cas is not None, "gets")
check(c.cas("b", b"new", cas, noreply=False) is True, "cas ok")
check(c.cas("b", b"newer", cas, noreply=False) is False, "cas stale")
check(c.cas("nokey", b"v", b"1", noreply=False) is None, "cas missing")
check(c.get_many(["a", "b", "missing"]) == {"a": b"hello", "b": b"new"}, "get_many")
check(c.set_many({"m1": b"1", "m2": b"2"}, noreply=False) == [], "set_many")
check(c.incr("m1", 41, noreply=False) == 42, "incr")
check(c.decr("m1", 50, noreply=False) == 0, "decr")
check(c.incr("missing", 1, noreply=False) is None, "incr missing")
check(c.touch("a", 100, noreply=False) is True, "touch")
check(c.touch("missing", 100, noreply=False) is False, "touch missing")
check(c.delete("a", noreply=False) is True, "delete")
check(c.delete("a", noreply=False) is False, "delete missing")
binv = bytes(range(256)) * 100 + b"\r\nEND\r\n"
check(c.set("bin", binv, noreply=False) and c.get("bin") == binv, "binary value")
c.set("nr", b"1", noreply=True)
check(c.get("nr") == b"1", "noreply set")
stats = c.stats()
check(int(stats[b"curr_items"]) >= 1, "stats")
check(c.version().startswith(b"1.6"), "version")
check(c.flush_all(noreply=False) is True, "flush_all")
check(c.get("b") is None, "after flush_all")
for i in range(500):
    c.set("k%d" % i, b"v%d" % i, noreply=False)
check(c.get_many(["k%d" % i for i in range(500)]) == {"k%d" % i: b"v%d" % i for i in range(500)},
      "500 keys")
c.quit()
print("pymemcache: all checks passed")
