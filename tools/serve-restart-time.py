#!/usr/bin/python3
"""Restart time of `wort serve` after SIGKILL with a pool holding N items (default 1M).

  tools/serve-restart-time.py [--build build] [--kinds wort,woart,artcow] [--items 1000000]
                              [--value-bytes 32] [--pool-mb 1024] [--dir /dev/shm]

Per index kind: a fresh pool is filled with N items (20-byte keys, pipelined `set ...
noreply` in batches, each batch confirmed by `mn`); a writer keeps overwriting keys while
the server is killed with SIGKILL; then the server is started again on the same pool and
port and the script measures, from the moment it starts the process:
  listen      the first TCP connect that succeeds (the server listens only after recovery)
  first_get   the first `get` answered with the item's value
  full        `stats` reports every item back (curr_items == N) and a sample of 1000 keys
              all read back: the server answers nothing before recovery is complete, so
              this equals first_get up to the time the checks take
Loopback only; every wait bounded. Prints one line per kind and a markdown table.
"""
import argparse, os, random, signal, socket, subprocess, sys, time


def connect(port, timeout=1.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until(s, suffix, limit=30.0):
    out = b""
    t0 = time.monotonic()
    while not out.endswith(suffix):
        if time.monotonic() - t0 > limit:
            raise TimeoutError(out[-200:])
        b = s.recv(1 << 20)
        if not b:
            raise ConnectionError("closed")
        out += b
    return out


def key(i):
    return b"k%019d" % i  # 20 bytes


def start(wort, pool, kind, port, pool_mb, port_file=None):
    args = [wort, "serve", "--pool", pool, "--index", kind, "-t", "2", "-m", str(pool_mb),
            "-p", str(port)]
    if port_file:
        args += ["--port-file", port_file]
    return subprocess.Popen(args, stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--kinds", default="wort,woart,artcow")
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--value-bytes", type=int, default=32)
    ap.add_argument("--pool-mb", type=int, default=1024)
    ap.add_argument("--dir", default="/dev/shm")
    a = ap.parse_args()
    wort = os.path.join(a.build, "wort")
    value = b"v" * a.value_bytes
    rows = []
    for kind in a.kinds.split(","):
        pool = os.path.join(a.dir, "restart-%s-%d.pool" % (kind, os.getpid()))
        port_file = pool + ".port"
        for f in (pool, port_file):
            if os.path.exists(f):
                os.remove(f)
        p = start(wort, pool, kind, 0, a.pool_mb, port_file)
        for _ in range(400):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.05)
        port = int(open(port_file).read())
        t_fill = time.monotonic()
        s = connect(port, 30)
        batch = 2000
        for b0 in range(0, a.items, batch):
            req = b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" % (key(i), len(value), value)
                           for i in range(b0, min(a.items, b0 + batch)))
            s.sendall(req + b"mn\r\n")
            read_until(s, b"MN\r\n")
        t_fill = time.monotonic() - t_fill
        # keep overwriting while the kill comes (an in-flight set may or may not be there)
        for i in range(200):
            s.sendall(b"set %s 0 0 %d noreply\r\n%s\r\n" % (key(i), len(value), value))
        p.send_signal(signal.SIGKILL)
        p.wait()
        s.close()
        t0 = time.monotonic()
        p = start(wort, pool, kind, port, a.pool_mb)
        listen = first_get = None
        c = None
        while time.monotonic() - t0 < 300:
            try:
                c = connect(port, 5)
                listen = time.monotonic() - t0
                break
            except OSError:
                time.sleep(0.002)
        c.sendall(b"get " + key(12345) + b"\r\n")
        r = read_until(c, b"END\r\n")
        first_get = time.monotonic() - t0
        assert r.startswith(b"VALUE " + key(12345)), r
        c.sendall(b"stats\r\n")
        st = read_until(c, b"END\r\n").decode()
        items = int(st.split("STAT curr_items ")[1].split("\r\n")[0])
        rng = random.Random(1)
        sample = [rng.randrange(a.items) for _ in range(1000)]
        c.sendall(b"".join(b"get " + key(i) + b"\r\n" for i in sample))
        got = read_until(c, b"END\r\n" * 1)  # read all 1000 replies
        while got.count(b"END\r\n") < len(sample):
            got += c.recv(1 << 20)
        hits = got.count(b"VALUE ")
        full = time.monotonic() - t0
        c.close()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
        size = os.path.getsize(pool)
        os.remove(pool)
        if os.path.exists(port_file):
            os.remove(port_file)
        line = ("kind=%s items=%d curr_items_after=%d sample_hits=%d/1000 fill_s=%.1f "
                "listen_s=%.3f first_get_s=%.3f full_s=%.3f pool_mb=%d"
                % (kind, a.items, items, hits, t_fill, listen, first_get, full, size >> 20))
        print(line, flush=True)
        rows.append((kind, items, hits, listen, first_get, full))
        if items != a.items or hits != 1000:
            print("MISSING ITEMS after restart", file=sys.stderr)
            return 1
    print("\n| index | items back | start -> first answered get (s) | start -> full service (s) |")
    print("|---|---|---|---|")
    for kind, items, hits, listen, first_get, full in rows:
        print("| %s | %d | %.2f | %.2f |" % (kind, items, first_get, full))
    return 0


if __name__ == "__main__":
    sys.exit(main())
