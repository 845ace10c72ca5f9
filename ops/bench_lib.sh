# ops/bench_lib.sh: sourced (not run) by the benches that drive objlogd on a
# real Kafka (ops/bench_kafka.sh, ops/bench_lifecycle_kafka.sh): checking
# for a build, starting a Kafka, waiting for an objlogd to be ready, and
# stopping both. The sourcing script sets root, bin and work, and keeps the
# objlogd it started in $daemon.
# Invariant: nothing here leaves a process behind: every start has a stop
# that the script's EXIT trap calls, and a stop never fails the script.

# Exits 1 unless $bin holds objlogd and objlog; name prefixes the message.
bench_need_build() { # name
  [ -x "$bin/query/objlogd" ] && [ -x "$bin/ops/objlog" ] ||
    { echo "$1: no build in $bin (ops/setup.sh build)" >&2; exit 1; }
}

# Starts a Kafka of n nodes in dir (ops/kafka.sh); prints its bootstrap.
bench_kafka_start() { # dir, nodes
  KAFKA_HEAP_OPTS="-Xms256m -Xmx1g" "$root/ops/kafka.sh" start --dir "$1" --nodes "$2" |
    sed -n 's/^KAFKA_BOOTSTRAP=//p'
}

# Stops the Kafka in dir, if there is one; never fails.
bench_kafka_stop() { # dir
  [ -d "$1" ] && "$root/ops/kafka.sh" stop --dir "$1" --timeout 20 >/dev/null 2>&1 || true
}

# Waits up to 60 s for $daemon's OBJLOG_READY in its stdout file out; if it
# died first, its stderr file err goes to stderr and the script exits 1.
# Sets url from its OBJLOG_LISTEN line.
bench_wait_ready() { # out, err
  for _ in $(seq 1 600); do
    grep -q '^OBJLOG_READY' "$1" 2>/dev/null && break
    kill -0 "$daemon" 2>/dev/null || { cat "$2" >&2; exit 1; }
    sleep 0.1
  done
  url="http://$(sed -n 's/^OBJLOG_LISTEN=//p' "$1")"
}

# Stops $daemon, if any (SIGTERM, then reaps it); never fails.
bench_daemon_stop() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
}

# Stops every objlogd node in the nodes array (SIGTERM, reaped), the Kafka
# in $work/kafka and removes $work: the EXIT trap of the benches that run
# a cluster of nodes. Never fails.
bench_nodes_stop() {
  for pid in "${nodes[@]}"; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  bench_kafka_stop "$work/kafka"
  rm -rf "$work"
}
