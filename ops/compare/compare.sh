#!/usr/bin/env bash
# ops/compare/compare.sh: one side-by-side benchmark. In
# one run it drives the same HTTP load (wrk -t2, ops/compare/objlog.lua)
# against the HTTP ceiling (objlog-ceiling, a constant-body evhttp server),
# objlogd --embedded and objlogd on a real single-node Kafka, and the same
# statements (pgbench -j2, ops/compare/pg/*.sql) against a throw-away
# PostgreSQL 15 cluster with synchronous_commit on and off; then prints one
# table: ops/s, p50, p99, each ops/s as a ratio to the ceiling and to
# PostgreSQL (synchronous_commit=off) for the same workload.
#
#   ops/compare/compare.sh [--duration S] [--rows REGEX] [--out FILE]
#                          [--no-kafka] [--keys N]
#
# Workload: N keys (20,000) in one bucket, preloaded; GET one key, PUT one
# key (PostgreSQL: insert version + upsert object), LIST 100 keys after a
# random start, mix 70/20/5/5 = 70% GET, 20% PUT, 5% LIST, 5% DELETE. Row
# ids are target/workload/conns (e.g. embedded/put-logged/256); --rows
# keeps those matching an extended regex. --out FILE.json writes JSON, any
# other name CSV. OBJLOG_COMPARE_KEEP=DIR copies the run's directory (each
# server's stdout and stderr, the load generators' output) there at exit.
#
# Every server binds 127.0.0.1 on a free port (PostgreSQL: only a Unix
# socket in the run's temp dir), is started fresh per target and stopped
# after it, and on any exit (error, Ctrl-C, SIGTERM) by the EXIT trap:
# objlogd and the ceiling run in process groups of their own (setsid) and
# are killed by group; PostgreSQL by pg_ctl stop -m immediate; Kafka by
# ops/kafka.sh stop. The load generators run in the background so that a
# signal is handled at once.
#
# Needs: a build (OBJLOG_BUILD_DIR, default build/), wrk, curl, PostgreSQL
# 15 (PG_BIN, default /usr/lib/postgresql/15/bin; pgbench and psql on PATH),
# for the Kafka rows java and ops/kafka.sh's jars. As root the PostgreSQL
# server runs as OBJLOG_PG_USER (default postgres) through runuser.
# ops/setup.sh compare installs all of it, builds and runs this.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/ops/compare
bin=$(cd "${OBJLOG_BUILD_DIR:-$root/build}" 2>/dev/null && pwd || echo "${OBJLOG_BUILD_DIR:-$root/build}")
pgbin=${PG_BIN:-/usr/lib/postgresql/15/bin}
duration=10 rows_re="" out="" kafka=1 nkeys=20000

usage() {
  echo "usage: ops/compare/compare.sh [--duration S] [--rows REGEX] [--out FILE] [--no-kafka] [--keys N]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=${2:?--duration needs seconds}; shift 2 ;;
    --rows) rows_re=${2:?--rows needs a pattern}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --no-kafka) kafka=0; shift ;;
    --keys) nkeys=${2:?--keys needs a count}; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0" >&2; exit 0 ;;
    *) usage ;;
  esac
done
case "$duration" in ''|*[!0-9]*|0) echo "compare: --duration takes whole seconds > 0" >&2; exit 2 ;; esac
warm=$(( duration >= 10 ? 2 : 1 ))

die() { echo "compare: $*" >&2; exit 1; }
for t in "$bin/query/objlogd" "$bin/ops/objlog" "$bin/ops/compare/objlog-ceiling"; do
  [ -x "$t" ] || die "no $t (build first: ops/setup.sh build)"
done
for t in wrk curl pgbench psql "$pgbin/initdb" "$pgbin/pg_ctl" "$pgbin/postgres"; do
  command -v "$t" >/dev/null || die "$t not found (ops/setup.sh compare installs it)"
done

t_start=$(date +%s)
work=$(mktemp -d /tmp/objlog-compare.XXXXXX)
chmod 755 "$work"

# What is running now (procs.sh has the rest); the cleanup stops it.
pg_data=""      # the PostgreSQL cluster's data dir while it runs
. "$here/procs.sh"

pg_user=""
pg_as() { # runs a PostgreSQL server tool as the unprivileged user
  if [ -n "$pg_user" ]; then runuser -u "$pg_user" -- "$@"; else "$@"; fi
}

stop_pg() {
  [ -n "$pg_data" ] || return 0
  pg_as "$pgbin/pg_ctl" -D "$pg_data" stop -m immediate >/dev/null 2>&1 || {
    local pm
    pm=$(head -1 "$pg_data/postmaster.pid" 2>/dev/null || true)
    [ -n "$pm" ] && kill -KILL "$pm" 2>/dev/null || true
  }
  pg_data=""
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  procs_stop stop_pg
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "compare: interrupted, stopping everything" >&2; exit 130' INT TERM

# --- the rows --------------------------------------------------------------

wanted() { [ -z "$rows_re" ] || printf '%s\n' "$1" | grep -Eq -- "$rows_re"; }
any_wanted() { # target, ids...
  local t=$1; shift
  for r in "$@"; do wanted "$t/$r" && return 0; done
  return 1
}

# put-applied/1 is write -> visible: the latency of an ack=applied PUT with
# no other load.
http_rows=(get-eventual/32 get-strong/32 list/32 put-applied/1 put-applied/32
           put-applied/256 put-logged/32 put-logged/256 mix-strong/32
           mix-strong/256 mix-eventual/32 mix-eventual/256)
pg_rows=(get/32 list/32 put/32 put/256 mix/32 mix/256)
ceiling_rows=(get/32 get/256)

# Results, in run order: "target workload conns ops p50ms p99ms non2xx n404 errors note"
results=()
notes=()
record() { results+=("$*"); }

jf() { printf '%s' "$1" | sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p"; }

# --- HTTP targets: the ceiling and objlogd ---------------------------------

# objlogd: until every partition has applied all it holds (after writes).
settle() {
  local lag
  for _ in $(seq 1 600); do
    lag=$(curl -sf "$url/v1/lag" | sed -n 's/.*"max_lag_messages":\([0-9]*\).*/\1/p')
    [ "$lag" = "0" ] && return 0
    sleep 0.1
  done
  echo "compare: objlogd still lags after 60 s ($lag messages)" >&2
}

# objlogd's answers so far from its /metrics: "404s other-errors" (other:
# every code >= 400 but 404, and codes it files as "other").
count_status() {
  curl -sf "$url/metrics" | awk '/^objlog_http_requests_total\{/ {
      c = $0; sub(/.*code="/, "", c); sub(/".*/, "", c)
      if (c == "404") n404 += $NF; else if (c == "other" || c + 0 >= 400) other += $NF }
    END { print n404 + 0, other + 0 }'
}

# Creates the bucket and PUTs the keys (curl --parallel, 64 at a time).
preload_objlogd() {
  local t0 t1 bad
  curl -sf -X PUT "$url/v1/buckets/bench" -d '{"tenant":"bench"}' >/dev/null ||
    die "could not create the bucket"
  awk -v u="$url" -v n="$nkeys" 'BEGIN { for (i = 0; i < n; i++)
      printf "url = \"%s/v1/buckets/bench/objects/k%05d\"\noutput = \"/dev/null\"\n", u, i }' \
    >"$work/preload.curl"
  t0=$(date +%s.%N)
  # A PUT may be refused while the gateway is full (503 SlowDown): those
  # keys go again, up to three passes.
  for pass in 1 2 3; do
    run_lg "$work/preload.codes" curl -s --no-progress-meter --parallel --parallel-max 64 -X PUT \
      -H 'Content-Type: application/json' \
      -d '{"size":1024,"etag":"0123456789abcdef0123456789abcdef","content_type":"application/octet-stream"}' \
      -w '%{http_code} %{url}\n' -K "$work/preload.curl" || true
    bad=$(grep -cv '^200 ' "$work/preload.codes" || true)
    [ "$bad" = 0 ] && break
    echo "compare: preload pass $pass: $bad PUTs not 200 ($(grep -v '^200 ' "$work/preload.codes" |
      cut -d' ' -f1 | sort | uniq -c | tr -s ' ' | tr '\n' ';')), again" >&2
    grep -v '^200 ' "$work/preload.codes" |
      awk '{ printf "url = \"%s\"\noutput = \"/dev/null\"\n", $2 }' >"$work/preload.curl"
  done
  t1=$(date +%s.%N)
  [ "$bad" = "0" ] || die "preload: $bad of $nkeys PUTs did not answer 200"
  settle
  notes+=("$1: preloaded $nkeys keys in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (curl --parallel, 64 at a time, ack=applied)")
}

wrk_row() { # target, workload, conns, env assignments...
  local target=$1 workload=$2 conns=$3 id res n404=0 errs; shift 3
  id="$target/$workload/$conns"
  wanted "$id" || return 0
  echo "compare: $id" >&2
  # wrk wants at least one connection per thread.
  local cmd=(env "$@" wrk -t"$((conns < 2 ? conns : 2))" -c"$conns" --timeout 10s
             -s "$here/objlog.lua")
  [ "$target" = ceiling ] || settle
  run_lg "$work/warm.out" "${cmd[@]}" -d"${warm}s" "$url/" || true
  local b404=0 bother=0 a404=0 aother=0 nother=0
  [ "$target" = ceiling ] || { settle; read -r b404 bother <<<"$(count_status)"; }
  run_lg "$work/row.out" "${cmd[@]}" -d"${duration}s" "$url/" || true
  if [ "$target" != ceiling ]; then
    # Answers still in flight when wrk stops are counted by objlogd only.
    settle
    read -r a404 aother <<<"$(count_status)"
    n404=$((a404 - b404)) nother=$((aother - bother))
  fi
  res=$(sed -n 's/^CMP_RESULT //p' "$work/row.out")
  if [ -z "$res" ]; then
    tail -5 "$work/row.out" "$work/row.out.err" >&2
    record "$target $workload $conns 0 0 0 0 0 1 wrk-failed"
    return 0
  fi
  # Errors: wrk's socket errors and timeouts, objlogd's non-404 errors; and
  # wrk's non-2xx beyond objlogd's 404s (the ceiling answers only 200).
  local non2xx
  non2xx=$(jf "$res" non2xx)
  errs=$(( $(jf "$res" connect) + $(jf "$res" read) + $(jf "$res" write) + $(jf "$res" timeout) + nother ))
  [ "$non2xx" -gt "$n404" ] && errs=$((errs + non2xx - n404))
  record "$target $workload $conns $(jf "$res" ops)" \
    "$(awk -v u="$(jf "$res" p50_us)" 'BEGIN { printf "%.3f", u / 1000 }')" \
    "$(awk -v u="$(jf "$res" p99_us)" 'BEGIN { printf "%.3f", u / 1000 }')" \
    "$(jf "$res" non2xx) $n404 $errs -"
}

objlogd_rows() { # target
  local t=$1 spec w c env
  for spec in "${http_rows[@]}"; do
    w=${spec%/*} c=${spec#*/}
    case $w in
      get-eventual) env=(CMP_OP=get CMP_CONSISTENCY=eventual) ;;
      get-strong) env=(CMP_OP=get) ;;
      list) env=(CMP_OP=list) ;;
      put-applied) env=(CMP_OP=put) ;;
      put-logged) env=(CMP_OP=put CMP_ACK=logged) ;;
      mix-strong) env=(CMP_OP=mix) ;;
      mix-eventual) env=(CMP_OP=mix CMP_CONSISTENCY=eventual) ;;
    esac
    wrk_row "$t" "$w" "$c" CMP_KEYS="$nkeys" "${env[@]}"
  done
}

run_ceiling() {
  any_wanted ceiling "${ceiling_rows[@]}" || return 0
  echo "compare: target ceiling (objlog-ceiling)" >&2
  start_server ceiling "$bin/ops/compare/objlog-ceiling" --listen 127.0.0.1:0
  for spec in "${ceiling_rows[@]}"; do
    wrk_row ceiling "${spec%/*}" "${spec#*/}" CMP_OP=get CMP_KEYS="$nkeys"
  done
  stop_server
}

run_objlogd() { # target, objlogd flags...
  local t=$1; shift
  any_wanted "$t" "${http_rows[@]}" || return 0
  echo "compare: target $t (objlogd $*)" >&2
  start_server "$t" "$bin/query/objlogd" --listen 127.0.0.1:0 --data "$work/view-$t" "$@"
  preload_objlogd "$t"
  objlogd_rows "$t"
  stop_server
}

run_kafka() {
  any_wanted kafka "${http_rows[@]}" || return 0
  if [ "$kafka" = 0 ]; then
    notes+=("kafka: skipped (--no-kafka)")
    return 0
  fi
  if ! start_kafka compare; then
    notes+=("kafka: skipped ($kafka_why)")
    return 0
  fi
  run_objlogd kafka --brokers "$kafka_boot"
  stop_kafka
}

# --- PostgreSQL ------------------------------------------------------------

pg_sock=""
start_pg() { # target, synchronous_commit
  local dir="$work/$1"
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    pg_user=${OBJLOG_PG_USER:-postgres}
    id "$pg_user" >/dev/null 2>&1 || die "no user $pg_user to run PostgreSQL (OBJLOG_PG_USER)"
    chown "$pg_user" "$dir"
  fi
  pg_as "$pgbin/initdb" -D "$dir/data" -U bench --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
    { tail -5 "$dir/initdb.log" >&2; die "initdb failed"; }
  pg_data="$dir/data"
  # Defaults but: no TCP (the socket in $dir only), room for 256 clients,
  # synchronous_commit as the target says.
  pg_as "$pgbin/pg_ctl" -D "$pg_data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -p 5432 -c max_connections=300 -c synchronous_commit=$2" \
    start >/dev/null || { tail -5 "$dir/server.log" >&2; die "PostgreSQL did not start"; }
  pg_sock=$dir
  local t0 t1
  t0=$(date +%s.%N)
  psql -q -h "$pg_sock" -U bench -d postgres -v ON_ERROR_STOP=1 -v nkeys="$nkeys" \
    -f "$here/pg/schema.sql" >/dev/null || die "loading the schema failed"
  t1=$(date +%s.%N)
  notes+=("$1: loaded $nkeys keys in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (generate_series + VACUUM ANALYZE)")
}

# p50 and p99 in ms of the per-transaction logs (3rd field: µs).
pg_percentiles() { # log prefix
  cat "$1".* | awk '{ print $3 }' | sort -n |
    awk '{ v[NR] = $1 } END { if (NR == 0) { print "0 0"; exit }
           i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
           i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
           printf "%.3f %.3f\n", v[i50] / 1000, v[i99] / 1000 }'
}

pgbench_row() { # target, workload, conns, script args...
  local target=$1 workload=$2 conns=$3 id rc=0 ops fails pct; shift 3
  id="$target/$workload/$conns"
  wanted "$id" || return 0
  echo "compare: $id" >&2
  local cmd=(pgbench -n -h "$pg_sock" -p 5432 -U bench -M prepared -c "$conns" -j 2
             -D nkeys="$nkeys" "$@")
  run_lg "$work/warm.out" "${cmd[@]}" -T "$warm" postgres || true
  rm -f "$work/pglog".*
  run_lg "$work/row.out" "${cmd[@]}" -T "$duration" --log --log-prefix="$work/pglog" postgres || rc=$?
  ops=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/row.out")
  fails=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/row.out")
  if [ -z "$ops" ]; then
    tail -5 "$work/row.out" "$work/row.out.err" >&2
    record "$target $workload $conns 0 0 0 0 0 1 pgbench-failed"
    return 0
  fi
  pct=$(pg_percentiles "$work/pglog")
  record "$target $workload $conns $ops $pct 0 0 $((${fails:-0} + (rc != 0))) -"
}

run_pg() { # target, synchronous_commit
  local t=$1 s=$2 spec w c
  any_wanted "$t" "${pg_rows[@]}" || return 0
  echo "compare: target $t (PostgreSQL, synchronous_commit=$s)" >&2
  start_pg "$t" "$s"
  for spec in "${pg_rows[@]}"; do
    w=${spec%/*} c=${spec#*/}
    case $w in
      mix) pgbench_row "$t" mix "$c" -f "$here/pg/get.sql@70" -f "$here/pg/put.sql@20" \
             -f "$here/pg/list.sql@5" -f "$here/pg/delete.sql@5" ;;
      *) pgbench_row "$t" "$w" "$c" -f "$here/pg/$w.sql" ;;
    esac
  done
  stop_pg
}

# --- the run ---------------------------------------------------------------

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
header=(
  "machine: $(nproc) CPUs, ${cpu:-unknown CPU}, $(uname -sr)"
  "objlog: $("$bin/ops/objlog" --version 2>&1)"
  "PostgreSQL: $("$pgbin/postgres" --version) (default config but listen_addresses='', max_connections=300)"
  "wrk: $({ wrk -v 2>&1 || true; } | awk 'NR == 1 { print $2 }'); load on the same cores: wrk -t2, pgbench -j2"
  "workload: $nkeys keys in one bucket; ${duration} s per row after a ${warm} s warm-up; mix = 70% GET, 20% PUT, 5% LIST (100 keys), 5% DELETE"
)
printf '%s\n' "${header[@]}" >&2

run_ceiling
run_objlogd embedded --embedded
run_kafka
run_pg pg-sync-on on
run_pg pg-sync-off off

# --- the table -------------------------------------------------------------

declare -A ref_ceiling ref_pg
for r in "${results[@]}"; do
  read -r t w c ops _ <<<"$r"
  [ "$t" = ceiling ] && ref_ceiling[$c]=$ops
  [ "$t" = pg-sync-off ] && ref_pg[$w/$c]=$ops
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }

fmt='%-12s %-13s %5s %10s %9s %9s %8s %8s %8s %-6s\n'
table=$(
  printf '%s\n' "${header[@]}"
  echo
  printf "$fmt" target workload conns ops/s "p50 ms" "p99 ms" /ceiling /pg-off non-2xx flag
  for r in "${results[@]}"; do
    read -r t w c ops p50 p99 non2xx n404 errs note <<<"$r"
    pw=${w%%-*}
    rc=$(ratio "$ops" "${ref_ceiling[$c]:-${ref_ceiling[32]:-0}}")
    rp=$(ratio "$ops" "${ref_pg[$pw/$c]:-0}")
    flag=""
    # A row's 404s are GETs of keys the mix deleted (PostgreSQL: zero rows);
    # any other non-2xx, socket error, timeout or failed transaction flags it.
    if [ "$errs" != 0 ] || [ "$note" != - ] ||
       awk -v o="$ops" 'BEGIN { exit !(o <= 0) }'; then
      flag="ERR"
    fi
    n2=$non2xx
    [ "$n404" != 0 ] && [ "$errs" = 0 ] && n2="$non2xx*"
    printf "$fmt" "$t" "$w" "$c" "$(printf '%.0f' "$ops")" "$p50" "$p99" "$rc" "$rp" "$n2" "$flag"
  done
  echo
  echo "ops/s: wrk requests/s, pgbench tps (one statement per transaction); p50/p99: wrk --latency"
  echo "histogram, pgbench per-transaction logs (--log). /ceiling: ops/s over the ceiling's at the"
  echo "same conns; /pg-off: over PostgreSQL synchronous_commit=off, same workload and conns."
  echo "non-2xx*: all 404 by objlogd's /metrics (GETs of keys the mix deleted; PostgreSQL returns"
  echo "zero rows there). ERR: socket errors, timeouts, other non-2xx, failed transactions."
  for n in "${notes[@]}"; do echo "note: $n"; done
  echo "total run time: $(( $(date +%s) - t_start )) s"
)
printf '%s\n' "$table"

if [ -n "$out" ]; then
  case "$out" in
    *.json)
      {
        printf '{"header":['
        local_sep=""
        for h in "${header[@]}"; do
          printf '%s"%s"' "$local_sep" "$(printf '%s' "$h" | sed 's/\\/\\\\/g; s/"/\\"/g')"
          local_sep=","
        done
        printf '],"rows":['
        local_sep=""
        for r in "${results[@]}"; do
          read -r t w c ops p50 p99 non2xx n404 errs note <<<"$r"
          pw=${w%%-*}
          printf '%s{"target":"%s","workload":"%s","conns":%s,"ops":%s,"p50_ms":%s,"p99_ms":%s,"ratio_ceiling":"%s","ratio_pg_off":"%s","non2xx":%s,"status404":%s,"errors":%s}' \
            "$local_sep" "$t" "$w" "$c" "$ops" "$p50" "$p99" \
            "$(ratio "$ops" "${ref_ceiling[$c]:-${ref_ceiling[32]:-0}}")" \
            "$(ratio "$ops" "${ref_pg[$pw/$c]:-0}")" "$non2xx" "$n404" "$errs"
          local_sep=","
        done
        printf ']}\n'
      } >"$out"
      ;;
    *)
      {
        echo "target,workload,conns,ops_per_s,p50_ms,p99_ms,ratio_ceiling,ratio_pg_off,non2xx,status404,errors"
        for r in "${results[@]}"; do
          read -r t w c ops p50 p99 non2xx n404 errs note <<<"$r"
          pw=${w%%-*}
          echo "$t,$w,$c,$ops,$p50,$p99,$(ratio "$ops" "${ref_ceiling[$c]:-${ref_ceiling[32]:-0}}"),$(ratio "$ops" "${ref_pg[$pw/$c]:-0}"),$non2xx,$n404,$errs"
        done
      } >"$out"
      ;;
  esac
  echo "compare: results in $out" >&2
fi
