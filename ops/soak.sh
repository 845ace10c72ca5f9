#!/usr/bin/env bash
# ops/soak.sh: the full kill -9 soak of the view on a real Kafka.
# Owns one command: build what the soak needs (if needed), then run
# tests/test_soak with OBJLOG_SOAK_CYCLES (default 50) against a fresh
# 3-node KRaft cluster the test starts and removes itself (ops/kafka.sh).
# It checks that no acknowledged write is lost or applied twice and that the
# view equals a rebuild from the topic; exit status 0 only if so.
#
#   ops/soak.sh [--wal on|off|both] [CYCLES]   CYCLES >= 1 (default 50)
#
# --wal: the views' RocksDB WAL (objlogd --wal); both (the default) runs
# the soak once with it off (objlogd's default) and once with it on.
#
# Environment: OBJLOG_BUILD_DIR (default <repo>/build), OBJLOG_TEST_SEED
# (replays a run's kill timing). The terminal shows one line per cycle
# (cycle n/N, writes acked so far, time) and the SOAK_SUMMARY line; the
# whole output (client and broker logs too) goes to a log file it names.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: ops/soak.sh [--wal on|off|both] [CYCLES]   (CYCLES a positive integer)" >&2; exit 2; }
modes="off on"
if [ "${1:-}" = "--wal" ]; then
  case "${2:-}" in
    on|off) modes=$2 ;;
    both) modes="off on" ;;
    *) echo "soak.sh: --wal needs on, off or both (got '${2:-}')" >&2; usage ;;
  esac
  shift 2
fi
cycles=${1:-50}
case "$cycles" in
  ''|*[!0-9]*) usage ;;
esac
[ "$cycles" -ge 1 ] || { echo "soak.sh: CYCLES must be at least 1" >&2; exit 2; }
build=${OBJLOG_BUILD_DIR:-$root/build}

"$root/ops/kafka.sh" fetch >/dev/null
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOBJLOG_TEST_KAFKA=ON
fi
cmake --build "$build" -j"$(nproc)" --target test_soak objlogd objlog

rc=0
for wal in $modes; do
  log="$build/soak-wal$wal-$(date +%Y%m%d-%H%M%S).log"
  echo "soak.sh: $cycles cycles, views' WAL $wal; full output in $log" >&2
  start=$(date +%s)
  set +e
  OBJLOG_BIN_DIR=$build OBJLOG_SRC_DIR=$root OBJLOG_TEST_LOG=kafka OBJLOG_FETCH_WAIT_MS=100 \
    OBJLOG_WAL=$wal OBJLOG_SOAK_CYCLES=$cycles "$build/tests/test_soak" 2>&1 | tee "$log" |
    grep --line-buffered -E '^(soak \[|SOAK_SUMMARY|first problem|\[  (FAILED|ERROR|  OK)|ERROR:)'
  mrc=${PIPESTATUS[0]}
  set -e
  echo "soak.sh: WAL $wal: exit $mrc after $(( $(date +%s) - start )) s; full output in $log" >&2
  [ "$mrc" -eq 0 ] || rc=$mrc
done
exit "$rc"
