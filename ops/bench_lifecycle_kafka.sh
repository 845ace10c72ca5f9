#!/usr/bin/env bash
# ops/bench_lifecycle_kafka.sh: `objlog bench --lifecycle` with a backlog too
# big for the embedded log (1M objects). Starts a real
# single-node Kafka (ops/kafka.sh) in a temp dir and an `objlogd --brokers`
# whose lifecycle worker scans every 100 ms with its clock two days ahead
# (the test-only offset `bench --lifecycle` gives its own objlogd), runs the
# bench against them and stops everything, also on failure. The events
# topic is made here with message.timestamp.type=CreateTime (objlogd then
# needs --allow-unsafe-topics): objlogd's own LogAppendTime topic stamps
# with the broker's clock, so a worker two days ahead would find nothing
# due by the log's clock (test_lifecycle_logclock), and a broker refuses
# CreateTime stamps more than an hour ahead unless the topic says otherwise
# (message.timestamp.after.max.ms, KIP-937).
#
#   ops/bench_lifecycle_kafka.sh [--count N (default 1000000)] [--threads T]
#                                [--max-rate R (objlogd --lifecycle-max-rate)]
#
# Needs a build (ops/setup.sh build) and the Kafka jars (ops/kafka.sh fetch).
# Every process binds 127.0.0.1. The run writes 3N PUTs and N Expire events
# into the temp dir's log: about 1 GB per million.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${OBJLOG_BUILD_DIR:-$root/build}
count=1000000 threads=4 max_rate=0
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count=${2:?--count needs a value}; shift 2 ;;
    --threads) threads=${2:?--threads needs a value}; shift 2 ;;
    --max-rate) max_rate=${2:?--max-rate needs a value}; shift 2 ;;
    *) echo "usage: ops/bench_lifecycle_kafka.sh [--count N] [--threads T] [--max-rate R]" >&2
       exit 2 ;;
  esac
done
# shellcheck source=ops/bench_lib.sh
. "$root/ops/bench_lib.sh"
bench_need_build bench_lifecycle_kafka

work=$(mktemp -d /tmp/objlog-bench-lc.XXXXXX)
daemon=""
cleanup() {
  bench_daemon_stop
  bench_kafka_stop "$work/kafka"
  rm -rf "$work"
}
trap cleanup EXIT

echo "bench_lifecycle_kafka: starting a 1-node Kafka in $work" >&2
boot=$(bench_kafka_start "$work/kafka" 1)
"$root/ops/kafka.sh" topics --dir "$work/kafka" --create \
  --topic objlog.events --partitions 8 --replication-factor 1 \
  --config message.timestamp.type=CreateTime --config retention.ms=-1 \
  --config retention.bytes=-1 --config message.timestamp.after.max.ms=9223372036854775807 \
  >/dev/null
OBJLOG_LIFECYCLE_INTERVAL_MS=100 OBJLOG_TEST_LIFECYCLE_CLOCK_OFFSET_MS=172800000 \
  OBJLOG_LIFECYCLE_MAX_RATE=$max_rate \
  "$bin/query/objlogd" --listen 127.0.0.1:0 --data "$work/view" --brokers "$boot" \
  --allow-unsafe-topics \
  >"$work/objlogd.out" 2>"$work/objlogd.err" &
daemon=$!
bench_wait_ready "$work/objlogd.out" "$work/objlogd.err"
echo "bench_lifecycle_kafka: objlogd at $url on $boot; $count objects, max rate $max_rate" >&2
"$bin/ops/objlog" bench --lifecycle --url "$url" --brokers "$boot" --keep \
  --count "$count" --threads "$threads"
