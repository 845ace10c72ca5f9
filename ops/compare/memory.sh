#!/usr/bin/env bash
# ops/compare/memory.sh: objlogd's resident memory, at its
# default memory flags (--block-cache-mb 32, --memtable-mb 32). In one run:
#
#   kafka     a 1-node Kafka (ops/kafka.sh) in the run's temp dir and one
#             objlogd --brokers on it, which every phase measures:
#     idle      5 s after OBJLOG_READY, nothing written yet;
#     loaded    right after N objects are applied: `objlog bench --count N
#               --keep --gets 0` produces N PUTs of distinct keys in one
#               bucket straight to the log (ack=logged, 4 threads) and waits
#               until objlogd has applied the last one; then the run checks
#               that every partition has applied == end on /v1/lag and that
#               /v1/stats counts exactly N objects;
#     quiet     after --quiet S (30) more seconds without a request;
#     conns     C concurrent keep-alive connections: wrk -t2 -cC for
#               --duration S (20), each a GET of one existing key (strong
#               reads unless --consistency eventual); RSS sampled every
#               second while it runs: the peak, and 5 s after wrk ends;
#   embedded  objlogd --embedded (in-memory log: no 1M load there): idle,
#             then one bucket and one object, then the same C connections.
#
#   ops/compare/memory.sh [--objects N] [--conns C] [--duration S]
#                         [--quiet S] [--consistency strong|eventual]
#                         [--no-kafka] [--no-embedded] [--out FILE]
#
# Figures: RSS and HWM are VmRSS and VmHWM (the peak RSS so far) of
# objlogd's /proc/PID/status; memtables is the sum over the column families
# of objlog_rocksdb_memtable_bytes on /metrics; block cache is
# objlog_rocksdb_block_cache_bytes there when objlogd exports it (the
# cache is one LRU shared by every column family), "-" when it does not.
# Notes: the load time, wrk's requests/s, socket errors and non-2xx
# answers, the most connections objlogd counted open at once
# (objlog_http_connections, sampled with the RSS). --out FILE.json writes
# JSON, any other name CSV.
#
# Every server binds 127.0.0.1 on a free port; objlogd runs in a process
# group of its own (setsid) and is killed by group, Kafka is stopped by
# ops/kafka.sh stop, on any exit (error, Ctrl-C, SIGTERM) by the EXIT trap.
# objlogd gets --max-connections C+100 (the only flag besides --listen and
# --data); the script raises its own open-file limit (wrk's) to C+1024.
#
# Needs: a build (OBJLOG_BUILD_DIR, default build/), wrk, curl, and for the
# kafka rows java and ops/kafka.sh's jars (OBJLOG_CACHE).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${OBJLOG_BUILD_DIR:-$root/build}" 2>/dev/null && pwd || echo "${OBJLOG_BUILD_DIR:-$root/build}")
nobj=1000000 conns=2000 duration=20 quiet=30 consistency=strong out="" kafka=1 embedded=1

usage() {
  echo "usage: ops/compare/memory.sh [--objects N] [--conns C] [--duration S] [--quiet S]" >&2
  echo "                             [--consistency strong|eventual] [--no-kafka] [--no-embedded]" >&2
  echo "                             [--out FILE]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --objects) nobj=${2:?--objects needs a count}; shift 2 ;;
    --conns) conns=${2:?--conns needs a count}; shift 2 ;;
    --duration) duration=${2:?--duration needs seconds}; shift 2 ;;
    --quiet) quiet=${2:?--quiet needs seconds}; shift 2 ;;
    --consistency) consistency=${2:?--consistency needs strong or eventual}; shift 2 ;;
    --no-kafka) kafka=0; shift ;;
    --no-embedded) embedded=0; shift ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    -h|--help) sed -n '2,43p' "$0" >&2; exit 0 ;;
    *) usage ;;
  esac
done
for v in "$nobj" "$conns" "$duration"; do
  case "$v" in ''|*[!0-9]*|0) echo "memory: --objects, --conns and --duration take whole numbers > 0" >&2; exit 2 ;; esac
done
case "$quiet" in ''|*[!0-9]*) echo "memory: --quiet takes whole seconds" >&2; exit 2 ;; esac
case "$consistency" in strong|eventual) ;; *) usage ;; esac

die() { echo "memory: $*" >&2; exit 1; }
for t in "$bin/query/objlogd" "$bin/ops/objlog"; do
  [ -x "$t" ] || die "no $t (build first: ops/setup.sh build)"
done
for t in wrk curl; do
  command -v "$t" >/dev/null || die "$t not found (ops/setup.sh compare installs it)"
done

# wrk holds one descriptor per connection.
need_fd=$((conns + 1024))
if [ "$(ulimit -Sn)" != unlimited ] && [ "$(ulimit -Sn)" -lt "$need_fd" ]; then
  if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$need_fd" ]; then
    ulimit -Hn "$need_fd" 2>/dev/null || die "the open-file hard limit $(ulimit -Hn) is below $need_fd (C + 1024) and cannot be raised"
  fi
  ulimit -Sn "$need_fd"
fi

t_start=$(date +%s)
work=$(mktemp -d /tmp/objlog-memory.XXXXXX)

# What is running (procs.sh); the cleanup stops it.
. "$root/ops/compare/procs.sh"

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  procs_stop
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "memory: interrupted, stopping everything" >&2; exit 130' INT TERM

# objlogd's own pid (setsid without a fork), for /proc/PID/status.
start_objlogd() { # name, command...
  start_server "$@"
  [ "$(cat "/proc/$server_pid/comm" 2>/dev/null)" = objlogd ] || die "pid $server_pid is not objlogd"
}

# --- the figures -----------------------------------------------------------

status_kb() { # field (VmRSS, VmHWM): kB, 0 when gone
  awk -v f="$1:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' \
    "/proc/$server_pid/status" 2>/dev/null || echo 0
}
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# "memtable_bytes block_cache_bytes|- connections" from /metrics.
metrics_mem() {
  curl -sf --max-time 10 "$url/metrics" | awk '
    /^objlog_rocksdb_memtable_bytes[{ ]/ { mt += $NF }
    /^objlog_rocksdb_block_cache_bytes[{ ]/ { bc = 1; if ($NF + 0 > bcv) bcv = $NF + 0 }
    /^objlog_http_connections / { cn = $NF }
    END { printf "%d %s %d\n", mt, bc ? sprintf("%d", bcv) : "-", cn }' || echo "0 - 0"
}

# Results, in run order: "target phase rss_kb hwm_kb memtable_bytes block_cache_bytes|-"
# and a note each.
results=()
rnotes=()
notes=()
record() { # target, phase, note
  local mt bc _c
  read -r mt bc _c <<<"$(metrics_mem)"
  results+=("$1 $2 $(status_kb VmRSS) $(status_kb VmHWM) $mt $bc")
  rnotes+=("$3")
}

# Until every partition has applied all it holds: "ok", or what lags.
all_applied() {
  curl -sf "$url/v1/lag" | tr '{' '\n' | awk '
    /"partition":/ {
      p = $0; sub(/.*"partition":/, "", p); sub(/,.*/, "", p)
      a = $0; sub(/.*"applied":/, "", a); sub(/,.*/, "", a)
      e = $0; sub(/.*"end":/, "", e); sub(/,.*/, "", e)
      s = $0; sub(/.*"state":"/, "", s); sub(/".*/, "", s)
      n++
      if (a != e || s != "running") bad = bad sprintf(" p%s applied %s end %s %s;", p, a, e, s)
    }
    END { if (n == 0) print "no partitions"; else if (bad == "") print "ok"; else print bad }'
}

stats_objects() {
  curl -sf "$url/v1/stats" | sed -n 's/^{"objects":\([0-9]*\).*/\1/p'
}

# C connections for the run's duration, RSS and open connections sampled
# every second; records the peak and the state 5 s after wrk ends.
conns_phase() { # target, path of an existing object
  local t=$1 path=$2 q="" peak=0 cpeak=0 rss c mt bc res rps errs non2xx samples=0
  [ "$consistency" = eventual ] && q="?consistency=eventual"
  echo "memory: $t: $conns connections, ${duration} s (wrk -t2, GET $path$q)" >&2
  wrk -t2 -c"$conns" -d"${duration}s" --timeout 10s "$url$path$q" >"$work/wrk.out" 2>"$work/wrk.err" &
  lg_pid=$!
  while kill -0 "$lg_pid" 2>/dev/null; do
    rss=$(status_kb VmRSS)
    [ "$rss" -gt "$peak" ] && peak=$rss
    read -r mt bc c <<<"$(metrics_mem)"
    [ "$c" -gt "$cpeak" ] && cpeak=$c
    samples=$((samples + 1))
    sleep 1
  done
  wait "$lg_pid" || true
  lg_pid=""
  rss=$(status_kb VmRSS) # as wrk's connections close
  [ "$rss" -gt "$peak" ] && peak=$rss
  samples=$((samples + 1))
  rps=$(awk '/^Requests\/sec:/ { print $2 }' "$work/wrk.out")
  errs=$(sed -n 's/^ *Socket errors: //p' "$work/wrk.out")
  non2xx=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$work/wrk.out")
  if [ -z "$rps" ]; then
    tail -5 "$work/wrk.out" "$work/wrk.err" >&2
    res="wrk failed"
  else
    res="wrk $(printf '%.0f' "$rps") req/s, non-2xx ${non2xx:-0}, socket errors ${errs:-none}"
  fi
  read -r mt bc c <<<"$(metrics_mem)"
  results+=("$t conns-peak $peak $(status_kb VmHWM) $mt $bc")
  rnotes+=("max of $samples samples (1 s apart, the last as wrk ends); $res; at most $cpeak connections open")
  sleep 5
  record "$t" conns-after "5 s after wrk ended, $(read -r _ _ c <<<"$(metrics_mem)"; echo "$c") connections open"
}

# --- the targets -----------------------------------------------------------

run_kafka() {
  if ! start_kafka memory; then
    case $kafka_why in
      "Kafka did not start"*) tail -5 "$work/kafka.err" >&2; die "$kafka_why" ;;
      *) notes+=("kafka: skipped ($kafka_why)"); return 0 ;;
    esac
  fi
  local boot=$kafka_boot
  echo "memory: kafka: objlogd --brokers $boot" >&2
  start_objlogd kafka "$bin/query/objlogd" --brokers "$boot" --listen 127.0.0.1:0 \
    --data "$work/view-kafka" --max-connections $((conns + 100))
  sleep 5
  record kafka idle "5 s after READY, nothing written"

  echo "memory: kafka: loading $nobj objects (objlog bench --count $nobj --keep --gets 0)" >&2
  local t0 t1 took chk n bucket
  t0=$(date +%s.%N)
  run_lg "$work/bench.out" "$bin/ops/objlog" bench --url "$url" --brokers "$boot" \
    --count "$nobj" --keep --gets 0 ||
    { cat "$work/bench.out" "$work/bench.out.err" >&2; die "objlog bench failed"; }
  t1=$(date +%s.%N)
  chk=$(all_applied)
  [ "$chk" = ok ] || die "after the bench, not every event is applied:$chk"
  n=$(stats_objects)
  [ "$n" = "$nobj" ] || die "/v1/stats counts ${n:-?} objects, not $nobj"
  took=$(awk -v a="$t0" -v b="$t1" -v n="$nobj" 'BEGIN { printf "%.0f s, %.0f/s", b - a, n / (b - a) }')
  record kafka loaded "$nobj objects applied in $took; applied == end on every partition"
  notes+=("kafka: /v1/stats counts $n objects after the load; $(sed -n 's/^apply *\([0-9]*\) *\([0-9.]*\) *\([0-9.]*\).*/bench apply: \1 puts in \2 s = \3\/s/p' "$work/bench.out")")

  echo "memory: kafka: ${quiet} s quiet" >&2
  sleep "$quiet"
  record kafka quiet "${quiet} s after the load, no requests"

  bucket=$(curl -sf "$url/v1/buckets" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p')
  [ -n "$bucket" ] || die "no bucket after the bench"
  curl -sf -o /dev/null "$url/v1/buckets/$bucket/objects/obj-00000000" ||
    die "GET $bucket/obj-00000000 failed"
  conns_phase kafka "/v1/buckets/$bucket/objects/obj-00000000"
  stop_server
  stop_kafka
}

run_embedded() {
  echo "memory: embedded: objlogd --embedded" >&2
  start_objlogd embedded "$bin/query/objlogd" --embedded --listen 127.0.0.1:0 \
    --data "$work/view-embedded" --max-connections $((conns + 100))
  sleep 5
  record embedded idle "5 s after READY, nothing written"
  curl -sf -o /dev/null -X PUT "$url/v1/buckets/mem" -d '{"tenant":"mem"}' ||
    die "embedded: could not create the bucket"
  curl -sf -o /dev/null -X PUT -H 'Content-Type: application/json' \
    -d '{"size":1024,"etag":"0123456789abcdef0123456789abcdef","content_type":"application/octet-stream"}' \
    "$url/v1/buckets/mem/objects/k00000" || die "embedded: could not PUT the object"
  conns_phase embedded /v1/buckets/mem/objects/k00000
  stop_server
}

# --- the run ---------------------------------------------------------------

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
header=(
  "machine: $(nproc) CPUs, ${cpu:-unknown CPU}, $(awk '/^MemTotal:/ { printf "%.1f GB", $2 / 1048576 }' /proc/meminfo), $(uname -sr)"
  "objlog: $("$bin/ops/objlog" --version 2>&1)"
  "objlogd: default memory flags (--block-cache-mb 32 --memtable-mb 32), --max-connections $((conns + 100))"
  "load: $nobj objects (kafka only); $conns connections: wrk -t2 -c$conns -d${duration}s, GET of one key ($consistency)"
)
printf '%s\n' "${header[@]}" >&2

[ "$kafka" = 1 ] && run_kafka
[ "$embedded" = 1 ] && run_embedded

# --- the table -------------------------------------------------------------

fmt='%-9s %-12s %8s %8s %10s %12s  %s\n'
bcmb() { [ "$1" = - ] && echo - || awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
table=$(
  printf '%s\n' "${header[@]}"
  echo
  printf "$fmt" target phase "RSS MB" "HWM MB" "memtab MB" "blk cache MB" note
  for i in "${!results[@]}"; do
    read -r t p rss hwm mt bc <<<"${results[$i]}"
    printf "$fmt" "$t" "$p" "$(mb "$rss")" "$(mb "$hwm")" \
      "$(awk -v b="$mt" 'BEGIN { printf "%.1f", b / 1048576 }')" "$(bcmb "$bc")" "${rnotes[$i]}"
  done
  echo
  echo "RSS, HWM: objlogd's VmRSS and VmHWM (/proc/PID/status); memtab: objlog_rocksdb_memtable_bytes"
  echo "summed over the column families; blk cache: objlog_rocksdb_block_cache_bytes (-: not"
  echo "exported by this objlogd). MB = 2^20 bytes."
  for n in "${notes[@]}"; do echo "note: $n"; done
  echo "total run time: $(( $(date +%s) - t_start )) s"
)
printf '%s\n' "$table"

if [ -n "$out" ]; then
  jstr() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
  jnum() { [ "$1" = - ] && echo null || echo "$1"; }
  case "$out" in
    *.json)
      {
        printf '{"header":['
        sep=""
        for h in "${header[@]}"; do printf '%s%s' "$sep" "$(jstr "$h")"; sep=","; done
        printf '],"rows":['
        sep=""
        for i in "${!results[@]}"; do
          read -r t p rss hwm mt bc <<<"${results[$i]}"
          printf '%s{"target":"%s","phase":"%s","rss_kb":%s,"hwm_kb":%s,"memtable_bytes":%s,"block_cache_bytes":%s,"note":%s}' \
            "$sep" "$t" "$p" "$rss" "$hwm" "$mt" "$(jnum "$bc")" "$(jstr "${rnotes[$i]}")"
          sep=","
        done
        printf ']}\n'
      } >"$out"
      ;;
    *)
      {
        echo "target,phase,rss_kb,hwm_kb,memtable_bytes,block_cache_bytes,note"
        for i in "${!results[@]}"; do
          read -r t p rss hwm mt bc <<<"${results[$i]}"
          echo "$t,$p,$rss,$hwm,$mt,$bc,\"$(printf '%s' "${rnotes[$i]}" | sed 's/"/""/g')\""
        done
      } >"$out"
      ;;
  esac
  echo "memory: results in $out" >&2
fi
