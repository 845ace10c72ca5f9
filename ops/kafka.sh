#!/usr/bin/env bash
# ops/kafka.sh: a real Apache Kafka (KRaft) for objlog's durable default, its
# tests and its benches. Jars come from Maven Central (ops/kafka/pom.xml)
# into an ignored cache; nothing here is committed but this script and the
# pom. A cluster is N combined broker+controller nodes on 127.0.0.1, all of
# whose state lives under one directory:
#
#   DIR/cluster.id        the KRaft cluster id (formatted once)
#   DIR/ports             "broker_port controller_port" per node, one a line:
#                         kept, so a restart serves the same bootstrap list
#   DIR/node-I/           server.properties, data/ (the log), server.log,
#                         pid (while started by `start`)
#   DIR/sasl, DIR/sasl_ports  with --sasl: the one SASL/PLAIN user
#                         ("USER:PASSWORD", mode 0600) and each node's
#                         SASL_PLAINTEXT port, beside its PLAINTEXT one
#
# Invariant: every node binds only 127.0.0.1; `stop` (or the test that owns
# the nodes) ends every JVM it started, by process group.
#
#   ops/kafka.sh fetch                          jars into the cache; prints the dir
#   ops/kafka.sh init  --dir D [--nodes N] [--ports P,..] [--set K=V]...
#                      [--sasl USER:PASSWORD]   configs + format (once); --sasl
#                                               adds a SASL/PLAIN listener per node
#   ops/kafka.sh node  --dir D --id I           one node in the foreground (exec java)
#   ops/kafka.sh start --dir D [--nodes N] [--set K=V]...
#                                               init if needed, start every node in
#                                               the background, wait for metadata
#   ops/kafka.sh wait  --dir D [--timeout S]    until every node serves metadata
#   ops/kafka.sh stop  --dir D [--timeout S]    SIGTERM, then SIGKILL after S (30)
#   ops/kafka.sh bootstrap --dir D              prints the bootstrap list
#   ops/kafka.sh sasl-bootstrap --dir D         prints the SASL listeners' list
#   ops/kafka.sh groups --dir D ARGS...         Kafka's consumer-group tool
#   ops/kafka.sh topics --dir D ARGS...         Kafka's topics tool
#
# Environment: OBJLOG_CACHE (default <repo>/.cache), KAFKA_HEAP_OPTS
# (default -Xms256m -Xmx1g), KAFKA_JVM_OPTS (extra JVM flags).
set -euo pipefail

KAFKA_VERSION=4.3.1
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${OBJLOG_CACHE:-$root/.cache}
libs="$cache/kafka-$KAFKA_VERSION/libs"

die() { echo "kafka.sh: $*" >&2; exit 1; }

fetch() {
  [ -f "$libs/.complete" ] && return 0
  command -v mvn >/dev/null || die "mvn not found (ops/setup.sh installs maven)"
  echo "kafka.sh: fetching Apache Kafka $KAFKA_VERSION from Maven Central into $libs" >&2
  local tmp="$libs.tmp"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  cp "$root/ops/kafka/pom.xml" "$tmp/pom.xml"
  # Maven 3.8's -q still writes colour resets (ESC[0m) whatever
  # style.color says: strip them, so a log or terminal gets plain text.
  (cd "$tmp" && mvn -q -B -Dstyle.color=never dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$tmp/jars") 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2 ||
    die "mvn could not fetch the Kafka jars"
  rm -rf "$libs"
  mv "$tmp/jars" "$libs"
  rm -rf "$tmp"
  touch "$libs/.complete"
}

java_cmd() { # main class, args...
  local heap=${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}
  # Small-box defaults: two GC threads, two JIT threads, no GUI.
  # shellcheck disable=SC2086
  exec java $heap -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:ParallelGCThreads=2 \
    -XX:ConcGCThreads=1 -XX:CICompilerCount=2 -Djava.awt.headless=true \
    ${KAFKA_JVM_OPTS:-} -cp "$libs/*" "$@"
}

# A port nobody listens on, outside Linux's ephemeral range (32768-60999),
# so client sockets cannot take it between now and the broker's bind.
free_port() {
  local taken=" $* " p
  for _ in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 12000 ))
    case "$taken" in *" $p "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  die "no free port found in 20000..31999"
}

dir= nodes= ports= id= timeout= sasl=
sets=()
parse() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) dir=${2:?--dir needs a directory}; shift 2 ;;
      --dir=*) dir=${1#--dir=}; shift ;;
      --nodes) nodes=${2:?--nodes needs 1 or 3}; shift 2 ;;
      --nodes=*) nodes=${1#--nodes=}; shift ;;
      --ports) ports=${2:?--ports needs a list}; shift 2 ;;
      --ports=*) ports=${1#--ports=}; shift ;;
      --id) id=${2:?--id needs a node number}; shift 2 ;;
      --id=*) id=${1#--id=}; shift ;;
      --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
      --timeout=*) timeout=${1#--timeout=}; shift ;;
      --sasl) sasl=${2:?--sasl needs USER:PASSWORD}; shift 2 ;;
      --sasl=*) sasl=${1#--sasl=}; shift ;;
      --set) sets+=("${2:?--set needs KEY=VALUE}"); shift 2 ;;
      --set=*) sets+=("${1#--set=}"); shift ;;
      --) shift; rest=("$@"); return 0 ;;
      *) rest=("$@"); return 0 ;;
    esac
  done
  rest=()
}

need_dir() {
  [ -n "$dir" ] || die "--dir is required"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
}

node_count() { wc -l < "$dir/ports" | tr -d ' '; }
bootstrap() { awk '{printf "%s127.0.0.1:%s", (NR>1?",":""), $1} END {print ""}' "$dir/ports"; }
sasl_bootstrap() {
  [ -f "$dir/sasl_ports" ] || die "$dir has no SASL listener (init --sasl USER:PASSWORD)"
  awk '{printf "%s127.0.0.1:%s", (NR>1?",":""), $1} END {print ""}' "$dir/sasl_ports"
}

# --sasl USER:PASSWORD: the user file and one more port per node.
write_sasl() { # node count
  [ -n "$sasl" ] || return 0
  [[ "$sasl" == ?*:?* && "$sasl" != *[[:space:]\\\"]* ]] ||
    die "--sasl needs USER:PASSWORD without spaces, quotes or backslashes"
  (umask 077; echo "$sasl" > "$dir/sasl")
  local taken p
  # shellcheck disable=SC2046 # the ports taken, as words
  taken=$(cat "$dir/ports")
  : > "$dir/sasl_ports"
  for _ in $(seq 1 "$1"); do
    # shellcheck disable=SC2086
    p=$(free_port $taken)
    taken="$taken $p"
    echo "$p" >> "$dir/sasl_ports"
  done
}

write_ports() {
  local n=$1 list=() p all=()
  if [ -n "$ports" ]; then
    IFS=, read -r -a list <<< "$ports"
    [ ${#list[@]} -eq $((2 * n)) ] || die "--ports needs $((2 * n)) ports (brokers, then controllers)"
  else
    for _ in $(seq 1 $((2 * n))); do
      p=$(free_port "${all[@]}")
      all+=("$p")
    done
    list=("${all[@]}")
  fi
  : > "$dir/ports"
  for i in $(seq 0 $((n - 1))); do
    echo "${list[$i]} ${list[$((n + i))]}" >> "$dir/ports"
  done
}

write_log4j() {
  cat > "$dir/log4j2.properties" <<'EOF'
# Every node logs to DIR/node-I/server.log (10 MB x 3); only errors reach
# the terminal.
status = error
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.filePattern = ${sys:kafka.logs.dir}/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 10MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = kafka: [%d] %p %m (%c)%n
appender.err.filter.threshold.type = ThresholdFilter
appender.err.filter.threshold.level = error
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
rootLogger.appenderRef.err.ref = err
EOF
}

# Replication settings follow the cluster size: 3 nodes give RF 3 with
# min.insync.replicas 2 (one node may fail without losing an ack), 1 node
# gives 1/1.
write_config() { # node number (1-based), node count
  local i=$1 n=$2 rf=$(( $2 < 3 ? $2 : 3 )) isr=$(( $2 < 2 ? 1 : 2 ))
  local voters bport cport
  voters=$(awk '{printf "%s%d@127.0.0.1:%s", (NR>1?",":""), NR, $2}' "$dir/ports")
  read -r bport cport < <(sed -n "${i}p" "$dir/ports")
  local sasl_listener="" sasl_map="" user pass
  if [ -f "$dir/sasl" ]; then
    sasl_listener=",SASL_PLAINTEXT://127.0.0.1:$(sed -n "${i}p" "$dir/sasl_ports")"
    sasl_map=",SASL_PLAINTEXT:SASL_PLAINTEXT"
    IFS=: read -r user pass < "$dir/sasl"
  fi
  mkdir -p "$dir/node-$i/data"
  cat > "$dir/node-$i/server.properties" <<EOF
# Written by ops/kafka.sh init; node $i of $n.
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$bport,CONTROLLER://127.0.0.1:$cport$sasl_listener
advertised.listeners=PLAINTEXT://127.0.0.1:$bport$sasl_listener
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT$sasl_map
log.dirs=$dir/node-$i/data
# objlog creates its topics itself, with the configs it needs.
auto.create.topics.enable=false
default.replication.factor=$rf
min.insync.replicas=$isr
unclean.leader.election.enable=false
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
group.initial.rebalance.delay.ms=0
EOF
  if [ -f "$dir/sasl" ]; then
    chmod 600 "$dir/node-$i/server.properties"
    cat >> "$dir/node-$i/server.properties" <<EOF
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$user="$pass";
EOF
  fi
  local kv
  for kv in "${sets[@]}"; do
    [[ "$kv" == *=* ]] || die "--set needs KEY=VALUE (got '$kv')"
    echo "$kv" >> "$dir/node-$i/server.properties"
  done
}

init() {
  need_dir
  if [ -f "$dir/cluster.id" ]; then
    [ -z "$nodes" ] || [ "$nodes" = "$(node_count)" ] ||
      die "$dir holds a $(node_count)-node cluster; --nodes $nodes does not match"
    return 0
  fi
  local n=${nodes:-1}
  case "$n" in 1|3) ;; *) die "--nodes must be 1 or 3 (got '$n')" ;; esac
  fetch
  write_ports "$n"
  write_sasl "$n"
  write_log4j
  for i in $(seq 1 "$n"); do write_config "$i" "$n"; done
  local cid
  cid=$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
  [ -n "$cid" ] || die "kafka.tools.StorageTool random-uuid failed"
  for i in $(seq 1 "$n"); do
    java -cp "$libs/*" -Dlog4j2.configurationFile="$dir/log4j2.properties" \
      -Dkafka.logs.dir="$dir/node-$i" kafka.tools.StorageTool format \
      -t "$cid" -c "$dir/node-$i/server.properties" >/dev/null ||
      die "formatting node $i failed"
  done
  echo "$cid" > "$dir/cluster.id"
}

node() {
  need_dir
  [ -f "$dir/cluster.id" ] || die "$dir is not initialised (ops/kafka.sh init --dir $dir)"
  [ -n "$id" ] && [ -f "$dir/node-$id/server.properties" ] || die "no node '$id' in $dir"
  fetch
  # stdout to a file: a parent that never reads it must not stall the JVM.
  java_cmd -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -Dkafka.logs.dir="$dir/node-$id" kafka.Kafka "$dir/node-$id/server.properties" \
    >>"$dir/node-$id/console.log"
}

# Every node registered and answering metadata: kcat lists N brokers.
wait_ready() { # timeout seconds
  local b n deadline
  b=$(bootstrap)
  n=$(node_count)
  deadline=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if kcat -L -b "$b" -m 2 2>/dev/null | grep -q "^ $n brokers:"; then
      return 0
    fi
    for i in $(seq 1 "$n"); do
      if [ -f "$dir/node-$i/pid" ] && ! kill -0 "$(cat "$dir/node-$i/pid")" 2>/dev/null; then
        die "node $i exited; see $dir/node-$i/server.log"
      fi
    done
    sleep 0.2
  done
  die "the cluster at $b did not serve metadata within $1 s; see $dir/node-*/server.log"
}

start() {
  init
  local t0 n
  t0=$(date +%s%N)
  n=$(node_count)
  for i in $(seq 1 "$n"); do
    if [ -f "$dir/node-$i/pid" ] && kill -0 "$(cat "$dir/node-$i/pid")" 2>/dev/null; then
      die "node $i already runs (pid $(cat "$dir/node-$i/pid")); ops/kafka.sh stop --dir $dir"
    fi
    # Own session and process group, so that a terminal's Ctrl-C reaches
    # objlogd first and `stop` can end the whole JVM.
    setsid "$0" node --dir "$dir" --id "$i" </dev/null >>"$dir/node-$i/console.log" 2>&1 &
    echo $! > "$dir/node-$i/pid"
  done
  wait_ready "${timeout:-120}"
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "kafka.sh: $n-node Kafka $KAFKA_VERSION ready in ${ms} ms at $(bootstrap) (data under $dir)" >&2
  echo "KAFKA_BOOTSTRAP=$(bootstrap)"
}

stop() {
  need_dir
  local pids=() p
  for f in "$dir"/node-*/pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    kill -0 "$p" 2>/dev/null && { kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p"; pids+=("$p"); }
  done
  local deadline=$(( $(date +%s) + ${timeout:-30} ))
  for p in "${pids[@]}"; do
    while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
    if kill -0 "$p" 2>/dev/null; then
      echo "kafka.sh: node pid $p did not stop in time; SIGKILL" >&2
      kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
    fi
  done
  rm -f "$dir"/node-*/pid
}

tool() { # main class, args...
  need_dir
  fetch
  local main=$1; shift
  KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx256m} java_cmd -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -Dkafka.logs.dir="$dir" "$main" --bootstrap-server "$(bootstrap)" "$@"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
rest=()
parse "$@"
case "$cmd" in
  fetch) fetch; echo "$libs" ;;
  init) init; echo "KAFKA_BOOTSTRAP=$(bootstrap)" ;;
  node) node ;;
  start) start ;;
  wait) need_dir; wait_ready "${timeout:-120}"; echo "KAFKA_BOOTSTRAP=$(bootstrap)" ;;
  stop) stop ;;
  bootstrap) need_dir; bootstrap ;;
  sasl-bootstrap) need_dir; sasl_bootstrap ;;
  groups) tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "${rest[@]}" ;;
  topics) tool org.apache.kafka.tools.TopicCommand "${rest[@]}" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
