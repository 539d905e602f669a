#!/usr/bin/python3
"""Sets N values of SIZE bytes with distinct keys over one connection to a wort serve (or
memcached) on PORT; prints the failed sets, the rate and the eviction counters.
Usage: fill_client.py PORT N SIZE [KEY_PREFIX]"""
import socket,sys,time
port=int(sys.argv[1]); n=int(sys.argv[2]); size=int(sys.argv[3]); prefix=sys.argv[4] if len(sys.argv)>4 else 'k'
s=socket.create_connection(('127.0.0.1',port))
f=s.makefile('rb')
v=b'x'*size; bad=0; first=-1; t0=time.time()
for i in range(n):
    s.sendall(b'set %s%d 0 0 %d\r\n%s\r\n'%(prefix.encode(),i,size,v))
    r=f.readline()
    if r!=b'STORED\r\n':
        bad+=1
        if first<0: first=i
dt=time.time()-t0
s.sendall(b'stats\r\n'); st={}
while True:
    l=f.readline()
    if l.startswith(b'END'): break
    p=l.split(); st[p[1].decode()]=p[2].decode()
print(f"{n} sets of {size} B: {bad} failed (first {first}), {dt:.2f} s, {n/dt:.0f} sets/s; evictions={st.get('evictions')} total_items={st.get('total_items')} curr_items={st.get('curr_items')}")
