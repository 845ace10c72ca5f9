# ops/compare/procs.sh: the processes a benchmark script starts and how it
# stops them; sourced by compare.sh and memory.sh after they set `work`
# (their temp dir), `root` and a `die` function.
#
# Invariant: the variables below name exactly what is running; procs_stop
# (the scripts' EXIT trap) stops all of it: the server by process group
# (it runs under setsid), the load generator, the Kafka cluster, then
# removes the temp dir. Load generators run in the background (run_lg) so
# that a trapped signal is handled at once.

server_pid=""   # objlogd or the ceiling: leader of its own process group
lg_pid=""       # the load generator (wrk, pgbench, objlog bench) in flight
kafka_dir=""    # the Kafka cluster's dir while it runs
url=""          # the server's base URL once it is ready

stop_server() {
  [ -n "$server_pid" ] || return 0
  kill -TERM -- "-$server_pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

stop_kafka() {
  [ -n "$kafka_dir" ] || return 0
  "$root/ops/kafka.sh" stop --dir "$kafka_dir" --timeout 20 >/dev/null 2>&1 || true
  kafka_dir=""
}

# Stops everything; extra stop functions (the caller's own servers) run
# between the server and Kafka.
procs_stop() { # stop functions...
  if [ -n "$lg_pid" ]; then
    kill -TERM "$lg_pid" 2>/dev/null || true
    wait "$lg_pid" 2>/dev/null || true
  fi
  stop_server
  local f
  for f in "$@"; do "$f"; done
  stop_kafka
  [ -n "${OBJLOG_COMPARE_KEEP:-}" ] && cp -r "$work" "$OBJLOG_COMPARE_KEEP" 2>/dev/null; rm -rf "$work"
}

# Runs a load generator in the background and waits for it (a trapped
# signal interrupts `wait`, not a foreground child). Output to $1, errors
# to $1.err.
run_lg() { # outfile, command...
  local outf=$1 rc=0; shift
  "$@" >"$outf" 2>"$outf.err" &
  lg_pid=$!
  wait "$lg_pid" || rc=$?
  lg_pid=""
  return "$rc"
}

# Starts a server that prints OBJLOG_LISTEN= and OBJLOG_READY (objlogd, the
# ceiling) in a process group of its own; sets url.
start_server() { # name, command...
  local name=$1; shift
  setsid "$@" >"$work/$name.out" 2>"$work/$name.err" &
  server_pid=$!
  for _ in $(seq 1 600); do
    grep -q '^OBJLOG_READY' "$work/$name.out" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || { tail -20 "$work/$name.err" >&2; die "$name did not start"; }
    sleep 0.1
  done
  grep -q '^OBJLOG_READY' "$work/$name.out" || die "$name not ready after 60 s"
  url="http://$(sed -n 's/^OBJLOG_LISTEN=//p' "$work/$name.out")"
}

# A single-node Kafka in $work/kafka (ops/kafka.sh): 0 with kafka_boot set
# to its bootstrap list, or 1 with kafka_why saying why not (no java, the
# jars cannot be fetched, it did not start); the caller skips or dies.
kafka_boot="" kafka_why=""
start_kafka() { # who (for the progress line)
  if ! command -v java >/dev/null; then
    kafka_why="no java; ops/setup.sh installs openjdk-17-jre-headless"
    return 1
  fi
  if ! "$root/ops/kafka.sh" fetch >/dev/null 2>"$work/fetch.err"; then
    kafka_why="ops/kafka.sh fetch failed: $(tail -1 "$work/fetch.err")"
    return 1
  fi
  echo "$1: starting a 1-node Kafka" >&2
  kafka_dir="$work/kafka"
  kafka_boot=$(KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:-"-Xms256m -Xmx1g"} \
                 "$root/ops/kafka.sh" start --dir "$kafka_dir" --nodes 1 2>"$work/kafka.err" |
                 sed -n 's/^KAFKA_BOOTSTRAP=//p') || true
  if [ -z "$kafka_boot" ]; then
    kafka_why="Kafka did not start: $(tail -1 "$work/kafka.err")"
    stop_kafka
    return 1
  fi
}
