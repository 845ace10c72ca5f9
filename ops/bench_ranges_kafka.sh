#!/usr/bin/env bash
# ops/bench_ranges_kafka.sh: `objlog bench --ranges` against a cluster of
# two objlogd nodes (8 partitions, no standbys) on a real single-node
# Kafka, so that a split moves a range between partitions applied by
# different nodes: the target's node imports it over the network. It
# starts the Kafka (ops/kafka.sh) and the nodes in a temp dir, runs the
# bench through the second node (its handoffs go on to the coordinator),
# prints its tables and stops everything.
#
#   ops/bench_ranges_kafka.sh [--count N] [more objlog bench flags]
#
# Needs a build (ops/setup.sh build) and the Kafka jars (ops/kafka.sh
# fetch). Every process binds 127.0.0.1 and is stopped on exit, even on
# failure.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${OBJLOG_BUILD_DIR:-$root/build}
count=12000
if [ "${1:-}" = --count ]; then
  count=${2:?--count needs a value}
  shift 2
fi
# shellcheck source=ops/bench_lib.sh
. "$root/ops/bench_lib.sh"
bench_need_build bench_ranges_kafka

work=$(mktemp -d /tmp/objlog-bench-ranges-kafka.XXXXXX)
daemon=""
nodes=()
trap bench_nodes_stop EXIT

boot=$(bench_kafka_start "$work/kafka" 1)
[ -n "$boot" ] || { echo "bench_ranges_kafka: Kafka did not start" >&2; exit 1; }
head -c 32 /dev/urandom >"$work/secret"
urls=()
for i in 1 2; do
  "$bin/query/objlogd" --listen 127.0.0.1:0 --data "$work/node-$i" --brokers "$boot" \
    --cluster bench-ranges --partitions 8 --token-secret-file "$work/secret" \
    >"$work/node-$i.out" 2>"$work/node-$i.err" &
  daemon=$!
  nodes+=("$daemon")
  bench_wait_ready "$work/node-$i.out" "$work/node-$i.err"
  urls+=("$url")
done

# Until the group gave every partition to one of the two nodes.
for _ in $(seq 1 300); do
  n=$(curl -fsS "${urls[1]}/v1/cluster" 2>/dev/null |
        grep -o '"active":"http[^"]*"' | sort -u | wc -l || true)
  [ "$n" = 2 ] && break
  sleep 0.2
done
[ "$n" = 2 ] || { echo "bench_ranges_kafka: the two nodes did not share the partitions" >&2; exit 1; }
echo "bench_ranges_kafka: nodes ${urls[*]} on Kafka $boot" >&2
"$bin/ops/objlog" bench --ranges --url "${urls[1]}" --brokers "$boot" --keep \
  --count "$count" "$@" || { tail -n 50 "$work"/node-*.err; exit 1; }
# What crossed between the nodes: each node's range imports (a split whose
# target partition the other node applies is copied over the network).
for u in "${urls[@]}"; do
  echo "node $u:"
  curl -fsS "$u/metrics" | grep -E '^objlog_range_(imports_total|import_rows_total|import_bytes_total|import_seconds_total|handoffs_total\{kind="split",result="ok"\})' |
    sed 's/^/  /'
done
