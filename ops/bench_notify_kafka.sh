#!/usr/bin/env bash
# ops/bench_notify_kafka.sh: `objlog bench --notify` on a real Kafka, where
# the change feed is exactly once (transactions with markers, which the
# embedded log does not write). Starts a single-node Kafka (ops/kafka.sh)
# in a temp dir and an `objlogd --brokers` on it, runs the bench against
# them and stops everything, also on failure.
#
#   ops/bench_notify_kafka.sh [--count N (default 20000)] [--threads T]
#                             [--rates R,R (default 1000,10000)] [--seconds S]
#
# Needs a build (ops/setup.sh build) and the Kafka jars (ops/kafka.sh fetch).
# Every process binds 127.0.0.1.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${OBJLOG_BUILD_DIR:-$root/build}
count=20000 threads=4 rates=1000,10000 seconds=10
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count=${2:?--count needs a value}; shift 2 ;;
    --threads) threads=${2:?--threads needs a value}; shift 2 ;;
    --rates) rates=${2:?--rates needs a value}; shift 2 ;;
    --seconds) seconds=${2:?--seconds needs a value}; shift 2 ;;
    *) echo "usage: ops/bench_notify_kafka.sh [--count N] [--threads T] [--rates R,R] [--seconds S]" >&2
       exit 2 ;;
  esac
done
# shellcheck source=ops/bench_lib.sh
. "$root/ops/bench_lib.sh"
bench_need_build bench_notify_kafka

work=$(mktemp -d /tmp/objlog-bench-notify.XXXXXX)
daemon=""
cleanup() {
  bench_daemon_stop
  bench_kafka_stop "$work/kafka"
  rm -rf "$work"
}
trap cleanup EXIT

echo "bench_notify_kafka: starting a 1-node Kafka in $work" >&2
boot=$(bench_kafka_start "$work/kafka" 1)
"$bin/query/objlogd" --listen 127.0.0.1:0 --data "$work/view" --brokers "$boot" \
  >"$work/objlogd.out" 2>"$work/objlogd.err" &
daemon=$!
bench_wait_ready "$work/objlogd.out" "$work/objlogd.err"
echo "bench_notify_kafka: objlogd at $url on $boot" >&2
"$bin/ops/objlog" bench --notify --url "$url" --brokers "$boot" --keep \
  --count "$count" --threads "$threads" --rates "$rates" --seconds "$seconds"
