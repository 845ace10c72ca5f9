#!/usr/bin/env bash
# test_monitoring.sh: ops/monitoring/ against a real objlogd.
#
#   tests/test_monitoring.sh BUILD_DIR
#
# promtool accepts both rule files, the dashboard is JSON, and every metric
# name and label the dashboard and the rules read is one objlogd exports:
# an `objlogd --embedded` with the S3 endpoint, a blob directory and the
# blob-release topic, after JSON and S3 requests of every kind the panels
# show (writes, reads, a 304, a 404, admission rejections, a lifecycle
# rule, a webhook that cannot be reached, a deleted blob), and a
# `--cluster` node on the first one's log, for the cluster families. Both
# scrapes must pass `promtool check metrics` and carry the api label and
# honest codes (no code="other"; a third objlogd's S3 redirect is counted
# as code="307"). The name check must fail on a rule file with a misspelt
# name and on one with a label no series has. Each objlogd runs in its
# own process group, killed on exit, pass or fail.
# promtool: $PROMTOOL (ops/setup.sh test exports it), else $PATH.
set -euo pipefail

build=$(cd "${1:?usage: test_monitoring.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
mon=$src/ops/monitoring
check=$src/tests/test_monitoring.py
objlogd=$build/query/objlogd
export OBJLOG_APPLY_THREADS=${OBJLOG_APPLY_THREADS:-2}

fail() { echo "test_monitoring: FAIL: $*" >&2; exit 1; }
say() { echo "test_monitoring: $*"; }

promtool=${PROMTOOL:-$(command -v promtool || true)}
[ -n "$promtool" ] && [ -x "$promtool" ] ||
  fail "promtool not found (\$PROMTOOL, \$PATH): ops/setup.sh test takes it out of Debian's prometheus package"
[ -x "$objlogd" ] || fail "no $objlogd: build first"

work=$(mktemp -d)
pgids=()
# The last started first: the cluster node before the objlogd whose
# embedded log it uses. SIGTERM, then SIGKILL after 10 s (a --cluster node
# on the mock cluster does not finish a SIGTERM: it gets the SIGKILL).
cleanup() {
  local rc=$? g i k
  for ((k = ${#pgids[@]} - 1; k >= 0; k--)); do
    g=${pgids[k]}
    kill -TERM -- "-$g" 2>/dev/null || continue
    for i in $(seq 1 100); do kill -0 -- "-$g" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$g" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    for f in "$work"/*.err; do
      [ -f "$f" ] && { echo "--- last lines of $(basename "$f")"; tail -n 20 "$f"; } >&2
    done
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# start NAME ARGS...: objlogd in a process group of its own (setsid);
# stdout in $work/NAME.out, stderr in $work/NAME.err.
start() {
  local name=$1; shift
  setsid "$objlogd" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null &
  pgids+=("$!")
  disown "$!" # cleanup() ends it; no "Killed" notice from bash
}

# line NAME PREFIX SECONDS: the value of objlogd's "PREFIXvalue" stdout line.
line() {
  local i
  for i in $(seq 1 $(($3 * 10))); do
    if grep -q "^$2" "$work/$1.out" 2>/dev/null; then
      grep -m1 "^$2" "$work/$1.out" | cut -d= -f2-
      return 0
    fi
    sleep 0.1
  done
  fail "objlogd $1 printed no $2 line within $3 s"
}

# want STATUS METHOD URL [curl args...]: the request answers STATUS.
want() {
  local code=$1 method=$2 url=$3 got; shift 3
  got=$(curl -s -o "$work/body" -w '%{http_code}' -X "$method" "$@" "$url") || true
  [ "$got" = "$code" ] || fail "$method $url: HTTP $got, want $code: $(head -c 300 "$work/body")"
}

say "promtool check rules"
"$promtool" check rules "$mon/objlog-rules.yml" "$mon/objlog-alerts.yml" ||
  fail "promtool check rules"
say "the dashboard parses as JSON"
python3 -m json.tool "$mon/objlog-dashboard.json" >/dev/null || fail "objlog-dashboard.json is not JSON"

# ---- a standalone objlogd with the S3 endpoint and blobs
mkdir -p "$work/blobs"
start solo --embedded --partitions 4 --listen 127.0.0.1:0 --data "$work/data" \
  --s3-listen 127.0.0.1:0 --s3-anonymous --blob-dir "$work/blobs" \
  --blob-release-topic objlog.blob-releases --lifecycle-interval-ms 200
json=http://$(line solo OBJLOG_LISTEN= 60)
s3=http://$(line solo OBJLOG_S3_LISTEN= 60)
boot=$(line solo OBJLOG_BOOTSTRAP= 60)
line solo OBJLOG_READY 60 >/dev/null
say "objlogd: JSON $json, S3 $s3, log $boot"

etag=0123456789abcdef0123456789abcdef
want 200 PUT "$json/v1/buckets/mon" -d '{}'
want 200 PUT "$json/v1/buckets/mon/objects/a" -d "{\"size\":1,\"etag\":\"$etag\"}"
want 200 GET "$json/v1/buckets/mon/objects/a"
want 404 GET "$json/v1/buckets/mon/objects/nope"
want 200 GET "$json/v1/buckets/mon/objects?prefix=a"
want 200 DELETE "$json/v1/buckets/mon/objects/a"
# a lifecycle rule (the worker's per-bucket series) and a webhook nobody
# answers (its backlog and failures)
want 200 PUT "$json/v1/buckets/mon/lifecycle" \
  -d '{"rules":[{"id":"old","status":"Enabled","filter":{"prefix":"old/"},"expiration":{"days":1}}]}'
want 200 PUT "$json/v1/buckets/mon/notifications" \
  -d '{"configurations":[{"id":"hook","arn":"arn:objlog:webhook:::http%3A%2F%2F127.0.0.1%3A1%2Fhook","events":["s3:ObjectCreated:*"]}]}'
want 200 PUT "$json/v1/buckets/mon/objects/b" -d "{\"size\":2,\"etag\":\"$etag\"}"
# admission control: 1 request/s on bucket slow, then a burst
want 200 PUT "$json/v1/buckets/slow" -d '{}'
want 200 PUT "$json/v1/buckets/slow/ratelimit" -d '{"rps":1,"burst":1}'
rejected=0
for _ in 1 2 3 4 5 6; do
  code=$(curl -s -o /dev/null -w '%{http_code}' "$json/v1/buckets/slow/objects/x") || true
  [ "$code" = 503 ] && rejected=$((rejected + 1))
done
[ "$rejected" -gt 0 ] || fail "admission control refused none of 6 requests at 1/s"

# S3: a bucket, an object's bytes, a read, a conditional read (304), a
# missing key, a delete (its blob released)
printf 'hello, monitoring\n' >"$work/obj"
want 200 PUT "$s3/s3mon"
want 200 PUT "$s3/s3mon/k1" --data-binary @"$work/obj"
want 200 GET "$s3/s3mon/k1"
s3etag=$(curl -sI "$s3/s3mon/k1" | tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')
[ -n "$s3etag" ] || fail "HEAD $s3/s3mon/k1: no ETag"
want 304 GET "$s3/s3mon/k1" -H "If-None-Match: $s3etag"
want 404 HEAD "$s3/s3mon/nope" -I
want 204 DELETE "$s3/s3mon/k1"

# Scrape once the lifecycle worker has scanned bucket mon.
for i in $(seq 1 100); do
  curl -sf "$json/metrics" >"$work/solo.prom" || fail "GET $json/metrics"
  grep -q '^objlog_lifecycle_due{bucket="mon"}' "$work/solo.prom" && break
  [ "$i" -lt 100 ] || fail "no objlog_lifecycle_due{bucket=\"mon\"} after 10 s"
  sleep 0.1
done

# ---- a redirect (--s3-blob-url) is a 3xx of its own, code="307"
start redir --embedded --partitions 1 --listen 127.0.0.1:0 --data "$work/data3" \
  --s3-listen 127.0.0.1:0 --s3-anonymous --s3-blob-url 'http://blobs.invalid/{bucket}/{key}'
rjson=http://$(line redir OBJLOG_LISTEN= 60)
rs3=http://$(line redir OBJLOG_S3_LISTEN= 60)
line redir OBJLOG_READY 60 >/dev/null
want 200 PUT "$rjson/v1/buckets/redir" -d '{}'
want 200 PUT "$rjson/v1/buckets/redir/objects/k" -d "{\"size\":3,\"etag\":\"$etag\"}"
want 307 GET "$rs3/redir/k"
curl -sf "$rjson/metrics" >"$work/redir.prom" || fail "GET $rjson/metrics"
grep -q -F 'objlog_http_requests_total{api="s3",endpoint="get_object",method="GET",code="307"} 1' \
  "$work/redir.prom" || fail "the 307 is not counted as code=\"307\": $(grep http_requests "$work/redir.prom")"

# ---- a cluster node on the same log, for the objlog_cluster_* families:
# declared, with few series (the mock cluster answers no DescribeGroups,
# so the node never learns its peers; a real Kafka's node does)
printf 'monitoring-test-secret-0123456789\n' >"$work/secret"
chmod 600 "$work/secret"
# (objlogd refuses --cluster on the embedded log unless told this is a test)
OBJLOG_TEST_MOCK_CLUSTER=1 start node --brokers "$boot" --cluster mon --listen 127.0.0.1:0 \
  --data "$work/data2" --token-secret-file "$work/secret"
node=http://$(line node OBJLOG_LISTEN= 60)
line node OBJLOG_READY 60 >/dev/null
for i in $(seq 1 100); do
  curl -sf "$node/metrics" >"$work/node.prom" || fail "GET $node/metrics"
  grep -q '^# TYPE objlog_cluster_partition_applied gauge' "$work/node.prom" && break
  [ "$i" -lt 100 ] || fail "the cluster node declares no objlog_cluster_partition_applied"
  sleep 0.1
done
say "cluster node $node"

# ---- the scrapes themselves
for s in solo node; do
  out=$("$promtool" check metrics <"$work/$s.prom" 2>&1) ||
    fail "promtool check metrics ($s): $out"
  [ -z "$out" ] || fail "promtool check metrics ($s) is not clean: $out"
done
series() { grep -c -F "$1" "$work/solo.prom" || true; }
for s in 'objlog_http_requests_total{api="json",endpoint="put_object",method="PUT",code="200"}' \
         'objlog_http_requests_total{api="json",endpoint="get_object",method="GET",code="404"}' \
         'objlog_http_requests_total{api="s3",endpoint="put_object",method="PUT",code="200"}' \
         'objlog_http_requests_total{api="s3",endpoint="get_object",method="GET",code="304"}' \
         'objlog_http_requests_total{api="s3",endpoint="delete_object",method="DELETE",code="204"}' \
         'objlog_http_request_duration_seconds_count{api="s3",endpoint="get_object",method="GET"}' \
         'objlog_http_request_duration_seconds_count{api="json",endpoint="get_object",method="GET"}' \
         'objlog_admission_rejected_total{bucket="slow",' \
         'objlog_ready 1'; do
  [ "$(series "$s")" -ge 1 ] || fail "no $s in /metrics"
done
[ "$(series 'code="other"')" -eq 0 ] || fail "/metrics still files answers as code=\"other\""

# ---- every name the dashboard and the rules read, in the scrapes
names() {
  python3 "$check" --scrape "$work/solo.prom" --scrape "$work/node.prom" --dashboard "$1" \
    "${@:2}"
}
names "$mon/objlog-dashboard.json" "$mon/objlog-rules.yml" "$mon/objlog-alerts.yml" ||
  fail "ops/monitoring/ reads names or labels objlogd does not export (above)"

# ... and the check can fail: a misspelt name, a label no series has.
sed 's/objlog_store_stalled == 1/objlog_store_stalld == 1/' "$mon/objlog-alerts.yml" \
  >"$work/bad-name.yml"
sed 's/{code=~"5.."}/{status=~"5.."}/' "$mon/objlog-rules.yml" >"$work/bad-label.yml"
for bad in bad-name:objlog_store_stalld bad-label:'has no label status'; do
  file=${bad%%:*} why=${bad#*:}
  if out=$(names "$mon/objlog-dashboard.json" "$mon/objlog-rules.yml" "$work/$file.yml"); then
    fail "the name check passed $file.yml"
  fi
  grep -q -F "$why" <<<"$out" || fail "the name check failed $file.yml without naming \"$why\": $out"
  say "the name check fails $file.yml as it should: $(grep -F "$why" <<<"$out" | head -n1 | sed 's/^ *//')"
done
say "ok"
