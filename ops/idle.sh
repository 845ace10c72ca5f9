#!/usr/bin/env bash
# ops/idle.sh: what an idle objlogd costs, measured from
# /proc/PID/stat (user + system CPU time) over SECONDS (default 5) after a
# 6 s settle, for `objlogd --embedded` and for a view `objlogd --brokers`
# of a real 1-node Kafka (ops/kafka.sh; skipped without Java). Prints one
# line per mode with the share of one core, and exits 1 if any is 1% or
# more. Everything it starts binds 127.0.0.1 and is stopped on exit.
#
#   ops/idle.sh [SECONDS]      (build first: ops/setup.sh build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
objlogd=${OBJLOG_BUILD_DIR:-$root/build}/query/objlogd
[ -x "$objlogd" ] || { echo "idle.sh: $objlogd not built (ops/setup.sh build)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/objlog-idle-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -d "$tmp/kafka" ] && "$root/ops/kafka.sh" stop --dir "$tmp/kafka" --timeout 0 >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
fail=0
measure() { # label pid
  sleep 6
  local a b
  a=$(ticks "$2"); sleep "$secs"; b=$(ticks "$2")
  local permille=$(( (b - a) * 1000 / (hz * secs) ))
  printf 'idle %-22s %d.%d%% of a core (%d ticks in %d s)\n' "$1" $((permille / 10)) \
    $((permille % 10)) $((b - a)) "$secs"
  [ "$permille" -lt 10 ] || fail=1
}
start() { # out-file args...
  local out=$1; shift
  "$objlogd" "$@" >"$out" 2>"$out.err" &
  pids+=($!)
  for _ in $(seq 1 600); do grep -q OBJLOG_READY "$out" && return 0; sleep 0.1; done
  echo "idle.sh: objlogd $* did not start: $(tail -3 "$out.err")" >&2; exit 1
}

start "$tmp/emb.out" --embedded --data "$tmp/emb" --listen 127.0.0.1:0
measure "objlogd --embedded" "${pids[-1]}"
if command -v java >/dev/null && "$root/ops/kafka.sh" fetch >/dev/null 2>&1; then
  boot=$("$root/ops/kafka.sh" start --dir "$tmp/kafka" --nodes 1 2>/dev/null |
         sed -n 's/^KAFKA_BOOTSTRAP=//p')
  start "$tmp/view.out" --brokers "$boot" --data "$tmp/view" --listen 127.0.0.1:0
  measure "objlogd --brokers" "${pids[-1]}"
else
  echo "idle objlogd --brokers: skipped (no Java or Kafka jars)"
fi
exit "$fail"
