#!/usr/bin/env bash
# ops/bench_s3_cluster.sh: `objlog bench --s3-forward` against a cluster of
# two objlogd nodes (4 partitions, no standbys, S3 listeners, one shared
# blob directory) on a real single-node Kafka: S3 reads through the node
# that applies the bench's bucket and through the one that forwards them.
# It starts the Kafka (ops/kafka.sh) and the nodes in a temp dir, runs the
# bench, prints its table and stops everything.
#
#   ops/bench_s3_cluster.sh
#
# Needs a build (ops/setup.sh build) and the Kafka jars (ops/kafka.sh
# fetch). Every process binds 127.0.0.1 and is stopped on exit, even on
# failure.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${OBJLOG_BUILD_DIR:-$root/build}
# shellcheck source=ops/bench_lib.sh
. "$root/ops/bench_lib.sh"
bench_need_build bench_s3_cluster

work=$(mktemp -d /tmp/objlog-bench-s3-cluster.XXXXXX)
daemon=""
nodes=()
trap bench_nodes_stop EXIT

boot=$(bench_kafka_start "$work/kafka" 1)
[ -n "$boot" ] || { echo "bench_s3_cluster: Kafka did not start" >&2; exit 1; }
head -c 32 /dev/urandom >"$work/secret"
urls=()
s3=()
for i in 1 2; do
  "$bin/query/objlogd" --listen 127.0.0.1:0 --data "$work/node-$i" --brokers "$boot" \
    --cluster bench-s3 --partitions 4 --token-secret-file "$work/secret" \
    --s3-listen 127.0.0.1:0 --s3-anonymous --blob-dir "$work/blobs" \
    >"$work/node-$i.out" 2>"$work/node-$i.err" &
  daemon=$!
  nodes+=("$daemon")
  bench_wait_ready "$work/node-$i.out" "$work/node-$i.err"
  urls+=("$url")
  s3+=("http://$(sed -n 's/^OBJLOG_S3_LISTEN=//p' "$work/node-$i.out")")
done

# Until the group gave every partition to one of the two nodes and each
# knows the other's S3 listener.
for _ in $(seq 1 300); do
  c=$(curl -fsS "${urls[0]}/v1/cluster" 2>/dev/null || true)
  n=$(grep -o '"active":"http[^"]*"' <<<"$c" | sort -u | wc -l || true)
  l=$(grep -o '"s3":"http[^"]*"' <<<"$c" | sort -u | wc -l || true)
  [ "$n" = 2 ] && [ "$l" = 2 ] && break
  sleep 0.2
done
[ "$n" = 2 ] && [ "$l" = 2 ] ||
  { echo "bench_s3_cluster: the two nodes did not share the partitions" >&2; exit 1; }
echo "bench_s3_cluster: nodes ${urls[*]} (S3 ${s3[*]}) on Kafka $boot" >&2
"$bin/ops/objlog" bench --s3-forward "${s3[0]},${s3[1]}" --url "${urls[0]}" --brokers "$boot" ||
  { tail -n 50 "$work"/node-*.err; exit 1; }
