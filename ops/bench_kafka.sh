#!/usr/bin/env bash
# ops/bench_kafka.sh: objlog on the mock cluster beside a real single-node
# and a real 3-node Kafka, in one run. For each log it
# starts an objlogd view (the mock: `--embedded`; real: ops/kafka.sh
# cluster in a temp dir + `objlogd --brokers`), runs `objlog bench` (produce
# and apply rates, strong-GET latency) and `objlog bench --conditional`
# (If-Match PUT latency at a fixed rate), stops everything, and prints one
# table with every figure also as a ratio to the mock cluster's.
#
#   ops/bench_kafka.sh [--count N] [--rate R] [--seconds S]
#
# Needs a build (ops/setup.sh build) and the Kafka jars (ops/kafka.sh fetch).
# Every process binds 127.0.0.1 and is stopped on exit, even on failure.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${OBJLOG_BUILD_DIR:-$root/build}
count=20000 rate=1000 seconds=5
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count=${2:?--count needs a value}; shift 2 ;;
    --rate) rate=${2:?--rate needs a value}; shift 2 ;;
    --seconds) seconds=${2:?--seconds needs a value}; shift 2 ;;
    *) echo "usage: ops/bench_kafka.sh [--count N] [--rate R] [--seconds S]" >&2; exit 2 ;;
  esac
done
# shellcheck source=ops/bench_lib.sh
. "$root/ops/bench_lib.sh"
bench_need_build bench_kafka

work=$(mktemp -d /tmp/objlog-bench-kafka.XXXXXX)
daemon=""
cleanup() {
  bench_daemon_stop
  for d in "$work"/kafka-*; do
    bench_kafka_stop "$d"
  done
  rm -rf "$work"
}
trap cleanup EXIT

# Starts objlogd with the given flags; sets url (and boot, when embedded).
start_view() { # name, flags...
  local name=$1; shift
  "$bin/query/objlogd" --listen 127.0.0.1:0 --data "$work/view-$name" "$@" \
    >"$work/$name.out" 2>"$work/$name.err" &
  daemon=$!
  bench_wait_ready "$work/$name.out" "$work/$name.err"
  local b
  b=$(sed -n 's/^OBJLOG_BOOTSTRAP=//p' "$work/$name.out")
  [ -z "$b" ] || boot=$b # embedded: its own mock cluster
}

stop_view() {
  kill -TERM "$daemon" && wait "$daemon" || true
  daemon=""
}

# One number from bench JSON: section ("" for top level) and field.
field() { # json, section, name
  local j=$1
  [ -n "$2" ] && j=$(printf '%s' "$j" | sed -n "s/.*\"$2\":{\([^}]*\)}.*/\1/p")
  printf '%s' "$j" | sed -n "s/.*\"$3\":\([0-9.e+-]*\).*/\1/p"
}

declare -A fig
run_one() { # name
  local name=$1 b c
  b=$("$bin/ops/objlog" bench --json --url "$url" --brokers "$boot" --count "$count")
  c=$("$bin/ops/objlog" bench --conditional --json --url "$url" --brokers "$boot" \
        --rates "$rate" --seconds "$seconds")
  fig[$name,produce]=$(field "$b" produce per_second)
  fig[$name,apply]=$(field "$b" apply per_second)
  fig[$name,get_p50]=$(field "$b" get p50_ms)
  fig[$name,get_p99]=$(field "$b" get p99_ms)
  fig[$name,cond_p50]=$(field "$c" "" p50_ms)
  fig[$name,cond_p99]=$(field "$c" "" p99_ms)
  fig[$name,cond_fail]=$(field "$c" "" failures)
  echo "bench_kafka: $name done" >&2
}

echo "bench_kafka: mock cluster (objlogd --embedded)" >&2
start_view mock --embedded
run_one mock
stop_view

for n in 1 3; do
  echo "bench_kafka: real Kafka, $n node(s)" >&2
  boot=$(bench_kafka_start "$work/kafka-$n" "$n")
  start_view "kafka$n" --brokers "$boot"
  run_one "kafka$n"
  stop_view
  "$root/ops/kafka.sh" stop --dir "$work/kafka-$n" >/dev/null 2>&1
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
printf '\n%-28s %12s %12s %8s %12s %8s\n' "figure ($count writes)" mock "1-node" "/mock" "3-node" "/mock"
for k in produce apply get_p50 get_p99 cond_p50 cond_p99 cond_fail; do
  case $k in
    produce) label="produce, events/s" ;;
    apply) label="apply, events/s" ;;
    get_p50) label="strong GET p50, ms" ;;
    get_p99) label="strong GET p99, ms" ;;
    cond_p50) label="If-Match PUT p50, ms @$rate/s" ;;
    cond_p99) label="If-Match PUT p99, ms @$rate/s" ;;
    cond_fail) label="If-Match PUT failures" ;;
  esac
  m=${fig[mock,$k]:-0} a=${fig[kafka1,$k]:-0} c=${fig[kafka3,$k]:-0}
  printf '%-28s %12s %12s %8s %12s %8s\n' "$label" "$m" "$a" "$(ratio "$a" "$m")" "$c" "$(ratio "$c" "$m")"
done
