# tools/serve-common.sh — sourced by tools/serve-load.sh and tools/serve-paper.sh: start and
# stop the servers they compare. Expects: $wort (the wort binary), $tmp (a scratch directory
# on /dev/shm), THREADS, POOL_MB. A server name is a wort index kind (`wort serve --index
# KIND`), KIND-global (the same with --global-lock: the index behind one reader/writer lock,
# as the WORT paper's Memcached ran its trees) or memcached (Debian's, the reference).
declare -A port pid
cleanup() {
  for s in "${!pid[@]}"; do kill "${pid[$s]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

stop_server() {  # $1 = a name start_server started; its pool stays in $tmp
  local s=$1
  kill "${pid[$s]}" 2>/dev/null || true
  wait "${pid[$s]}" 2>/dev/null || true
  unset "pid[$s]"
}

start_server() {  # $1 = a server name (above); sets port[$1] and pid[$1]
  local s=$1
  if [ "$s" = memcached ]; then
    for try in 1 2 3 4 5 6 7 8; do
      local p=$((20000 + RANDOM % 20000))
      memcached -U 0 -l 127.0.0.1 -p "$p" -t "$THREADS" -m "$POOL_MB" -c 1024 -u "$(id -un)" \
        >"$tmp/mc.log" 2>&1 &
      local id=$!
      sleep 0.3
      if kill -0 "$id" 2>/dev/null; then port[$s]=$p; pid[$s]=$id; return; fi
    done
    echo "memcached did not start" >&2; exit 1
  fi
  local kind=$s extra=()
  if [ "${s%-global}" != "$s" ]; then kind=${s%-global}; extra=(--global-lock); fi
  rm -f "$tmp/$s.port"
  "$wort" serve --pool "$tmp/$s.pool" --index "$kind" "${extra[@]}" -p 0 \
    --port-file "$tmp/$s.port" -t "$THREADS" -m "$POOL_MB" 2>"$tmp/$s.log" &
  pid[$s]=$!
  for i in $(seq 200); do [ -s "$tmp/$s.port" ] && break; sleep 0.05; done
  port[$s]=$(cat "$tmp/$s.port")
}

