#!/usr/bin/env bash
# tests/kafka_fixture.sh: the 3-node Kafka that every *_kafka test program
# borrows (ctest fixture kafka_cluster, tests/CMakeLists.txt; testlog.h).
# Starting a cluster costs 15-40 s on two busy cores, so a ctest run starts
# one and its tests share it, one at a time, each emptying it first.
#
#   tests/kafka_fixture.sh start DIR    remove what an aborted run left in DIR,
#                                       start the cluster, and a watchdog
#   tests/kafka_fixture.sh stop DIR     SIGKILL every node, remove DIR
#
# Invariant: no JVM outlives the ctest run that started it. The cleanup test
# stops the cluster however the tests ended; if ctest itself dies first
# (killed, or its own timeout), the watchdog sees its pid go and stops the
# cluster.
set -euo pipefail
kafka=$(cd "$(dirname "$0")/.." && pwd)/ops/kafka.sh
# Each node also has a SASL/PLAIN listener with this one user (kafka.sh
# --sasl): test_kafka_sasl authenticates objlogd's clients to it.
sasl=objlog:objlog-test-sasl-password
cmd=${1:?usage: kafka_fixture.sh start|stop DIR}
dir=${2:?usage: kafka_fixture.sh start|stop DIR}

stop() {
  [ -d "$dir" ] || return 0
  [ -f "$dir/watchdog.pid" ] && kill "$(cat "$dir/watchdog.pid")" 2>/dev/null || true
  "$kafka" stop --dir "$dir" --timeout 0 || true
  rm -rf "$dir"
}

case "$cmd" in
  start)
    stop
    mkdir -p "$dir"
    # The owner to outlive: ctest, this script's parent.
    owner=$PPID
    setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done
                    "$2" stop --dir "$3" --timeout 0; rm -rf "$3"' \
      watchdog "$owner" "$kafka" "$dir" </dev/null >>"$dir/watchdog.log" 2>&1 &
    echo $! > "$dir/watchdog.pid"
    # Faster failure detection than Kafka's defaults, as testlog's own
    # clusters; C1 only, for a quick start.
    if ! KAFKA_JVM_OPTS=-XX:TieredStopAtLevel=1 KAFKA_HEAP_OPTS="-Xms64m -Xmx512m" \
        "$kafka" start --dir "$dir" --nodes 3 --timeout 180 --sasl "$sasl" \
        --set replica.lag.time.max.ms=10000 --set broker.session.timeout.ms=6000; then
      tail -n 40 "$dir"/node-*/server.log >&2 2>/dev/null || true
      stop
      exit 1
    fi
    ;;
  stop) stop ;;
  *) echo "kafka_fixture.sh: unknown command $cmd (start or stop)" >&2; exit 2 ;;
esac
