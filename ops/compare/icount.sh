#!/usr/bin/env bash
# ops/compare/icount.sh: CPU instructions per request,
# counted by callgrind, so that a regression shows without wall-clock noise
# (the same binary and inputs give the same count on a busy machine).
#
#   ops/compare/icount.sh [--requests N]       (default 2000)
#
# Rows: GET eventual and strong, PUT ack=logged and ack=applied, LIST of a
# 100-key page eventual and strong (also per listed entry), the ceiling's
# constant GET.
# Runs objlogd --embedded (one HTTP worker, 2 partitions) and the ceiling
# under valgrind --tool=callgrind with instrumentation off until the
# measured window; a client outside valgrind (curl, one keep-alive
# connection) sends N requests of each kind after N warm-up ones; the
# count covers every thread of the server (the materializer's apply and the
# watermark fetcher's ListOffsets included), divided by N.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${OBJLOG_BUILD_DIR:-$root/build}
n=2000
while [ $# -gt 0 ]; do
  case $1 in
    --requests) n=$2; shift 2 ;;
    --requests=*) n=${1#*=}; shift ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "icount.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for t in valgrind callgrind_control curl; do
  command -v $t >/dev/null || { echo "icount.sh: $t is missing (ops/setup.sh compare installs it)" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/objlog-icount.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

start() { # name cmd...
  local name=$1; shift
  valgrind --tool=callgrind --instr-atstart=no --dump-instr=no \
    --callgrind-out-file="$tmp/$name.%p" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
}

# urls FILE URL [PUT SUFFIX]: N requests of one kind for curl -K, answers
# to /dev/null ("next" only between them: a trailing one starts an empty set)
urls() {
  : >"$1"
  for i in $(seq "$n"); do
    [ "$i" -gt 1 ] && printf 'next\n' >>"$1"
    if [ "${3:-}" = PUT ]; then
      printf 'url = "%s%06d%s"\nrequest = "PUT"\ndata = "{\\"size\\":1,\\"etag\\":\\"e\\"}"\n' \
        "$2" "$i" "$4" >>"$1"
    else
      printf 'url = "%s"\n' "$2" >>"$1"
    fi
    printf 'output = "/dev/null"\n' >>"$1"
  done
}

measure() { # label urlfile warmfile [entries per request]
  curl -s -K "$3"
  callgrind_control -z "$pid" >/dev/null 2>&1
  callgrind_control -i on "$pid" >/dev/null 2>&1
  curl -s -K "$2"
  callgrind_control -i off "$pid" >/dev/null 2>&1
  callgrind_control -d "$pid" >/dev/null 2>&1
  local f total
  f=$(ls -t "$tmp"/*."$pid".* | head -1)
  total=$(sed -n 's/^totals: //p' "$f")
  # OBJLOG_ICOUNT_KEEP=DIR keeps each row's profile for callgrind_annotate
  if [ -n "${OBJLOG_ICOUNT_KEEP:-}" ]; then
    mkdir -p "$OBJLOG_ICOUNT_KEEP"
    cp "$f" "$OBJLOG_ICOUNT_KEEP/$(printf '%s' "$1" | tr -c 'A-Za-z0-9=\n' '_').callgrind"
  fi
  if [ -n "${4:-}" ]; then
    printf '%-28s %10d instructions/request %8d per entry\n' "$1" $((total / n)) \
      $((total / n / $4))
  else
    printf '%-28s %10d instructions/request\n' "$1" $((total / n))
  fi
}

start objlogd "$build/query/objlogd" --embedded --listen 127.0.0.1:0 --data "$tmp/data" \
  --threads 1 --partitions 2
for _ in $(seq 600); do grep -q OBJLOG_READY "$tmp/objlogd.out" && break; sleep 0.2; done
u=http://$(sed -n 's/^OBJLOG_LISTEN=//p' "$tmp/objlogd.out")
curl -sf -XPUT "$u/v1/buckets/bench" >/dev/null
curl -sf -XPUT "$u/v1/buckets/bench/objects/k1" -d '{"size":1024,"etag":"0123456789abcdef0123456789abcdef"}' >/dev/null
urls "$tmp/warm" "$u/v1/buckets/bench/objects/k1?consistency=eventual"
urls "$tmp/ev" "$u/v1/buckets/bench/objects/k1?consistency=eventual"
urls "$tmp/st" "$u/v1/buckets/bench/objects/k1"
urls "$tmp/pl" "$u/v1/buckets/bench/objects/l" PUT "?ack=logged"
urls "$tmp/pa" "$u/v1/buckets/bench/objects/a" PUT ""
# LIST: a bucket of 100 keys like the side-by-side's (k00000..), a page of all 100
curl -sf -XPUT "$u/v1/buckets/lbench" >/dev/null
for i in $(seq 0 99); do
  printf 'url = "%s/v1/buckets/lbench/objects/k%05d"\nrequest = "PUT"\n' "$u" "$i"
  printf 'data = "{\\"size\\":1024,\\"etag\\":\\"0123456789abcdef0123456789abcdef\\",'
  printf '\\"content_type\\":\\"application/octet-stream\\"}"\noutput = "/dev/null"\n'
  [ "$i" -lt 99 ] && printf 'next\n'
done >"$tmp/lput"
curl -s -K "$tmp/lput"
urls "$tmp/ls" "$u/v1/buckets/lbench/objects?max_keys=100&consistency=eventual"
urls "$tmp/lss" "$u/v1/buckets/lbench/objects?max_keys=100"
echo "objlogd --embedded, one worker, $n requests each (callgrind, all threads):"
measure "GET eventual" "$tmp/ev" "$tmp/warm"
measure "GET strong" "$tmp/st" "$tmp/warm"
measure "PUT ack=logged" "$tmp/pl" "$tmp/warm"
measure "PUT ack=applied" "$tmp/pa" "$tmp/warm"
measure "LIST 100 eventual" "$tmp/ls" "$tmp/ls" 100
measure "LIST 100 strong" "$tmp/lss" "$tmp/ls" 100
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

start ceiling "$build/ops/compare/objlog-ceiling" --listen 127.0.0.1:0 --threads 1
for _ in $(seq 300); do grep -q OBJLOG_READY "$tmp/ceiling.out" && break; sleep 0.2; done
u=http://$(sed -n 's/^OBJLOG_LISTEN=//p' "$tmp/ceiling.out")
urls "$tmp/c" "$u/v1/buckets/bench/objects/k1"
echo "objlog-ceiling, one worker:"
measure "GET (constant body)" "$tmp/c" "$tmp/c"
