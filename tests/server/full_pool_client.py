#!/usr/bin/python3
"""The full-pool sequence against a wort serve or a memcached on 127.0.0.1:PORT:
FILL sets of 32-byte keys and FILL_SIZE values (default 100 B; pipelined 100 at a time),
then NEW sets of NEW_SIZE bytes on new keys, one at a time. Prints, per phase, the failed
sets, the time, and the server's evictions and curr_items before and after; then one line
of key=value pairs for scripts (tools/serve-load.sh MODE=full-pool).
Usage: full_pool_client.py PORT FILL NEW NEW_SIZE [FILL_SIZE]"""
import socket, sys, time

port, fill, new, new_size = (int(a) for a in sys.argv[1:5])
fill_size = int(sys.argv[5]) if len(sys.argv) > 5 else 100
s = socket.create_connection(('127.0.0.1', port))
f = s.makefile('rb')


def key(prefix, i):
    return (prefix + '%030d' % i).encode()  # 32 bytes


def stats():
    s.sendall(b'stats\r\n')
    st = {}
    while True:
        l = f.readline()
        if l.startswith(b'END'):
            return st
        p = l.split()
        st[p[1].decode()] = int(p[2]) if p[2].isdigit() else p[2].decode()


def run(prefix, n, size, pipeline):
    v = b'x' * size
    bad = 0
    t0 = time.time()
    for b in range(0, n, pipeline):
        m = min(pipeline, n - b)
        s.sendall(b''.join(b'set %s 0 0 %d\r\n%s\r\n' % (key(prefix, i), size, v)
                           for i in range(b, b + m)))
        for _ in range(m):
            if f.readline() != b'STORED\r\n':
                bad += 1
    return bad, time.time() - t0


kv = {}
for phase, prefix, n, size, pipe in (('fill', 'f:', fill, fill_size, 100),
                                     ('new', 'n:', new, new_size, 1)):
    a = stats()
    bad, dt = run(prefix, n, size, pipe)
    b = stats()
    print(f"{n} sets of {size} B: {bad} failed, {dt:.2f} s ({n / dt:.0f}/s); "
          f"evictions {a['evictions']} -> {b['evictions']}, "
          f"curr_items {a['curr_items']} -> {b['curr_items']}")
    kv[phase + '_failed'] = bad
    kv[phase + '_evictions'] = b['evictions'] - a['evictions']
    kv[phase + '_items_after'] = b['curr_items']
print(' '.join(f'{k}={v}' for k, v in kv.items()))
