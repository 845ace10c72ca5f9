#!/usr/bin/env bash
# setup_run.sh: the README's run command as a user meets it. Owns the claims
# that `ops/setup.sh run` shows one line per stage and then a banner (the
# JSON API, status page and S3 URLs, the data directory, how to stop), that
# the URLs it names answer, and that a second run on the same data
# directory says where objlog already runs and exits 1 without touching
# it. Runs on the embedded log, ports chosen by the kernel, loopback only;
# every process it starts (its own process group) is killed on the way out.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
home=$(mktemp -d /tmp/objlog-test-setup-run.XXXXXX)
first=""
fail() { echo "setup_run: $*" >&2; exit 1; }
cleanup() {
  if [ -n "$first" ]; then
    kill -TERM -- "-$first" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 -- "-$first" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$first" 2>/dev/null || true
  fi
  rm -rf "$home"
}
trap cleanup EXIT

export OBJLOG_HOME=$home
flags=(--embedded --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 --s3-anonymous)

# The first run, in a process group of its own.
setsid "$root/ops/setup.sh" run "${flags[@]}" >"$home/out" 2>"$home/err" </dev/null &
first=$!
for _ in $(seq 1 1200); do
  grep -q "is ready" "$home/err" && break
  kill -0 "$first" 2>/dev/null || fail "the run command exited: $(tail -n 20 "$home/err")"
  sleep 0.1
done
grep -q "is ready" "$home/err" || fail "no banner in 120 s: $(tail -n 20 "$home/err")"
before=$(awk '/is ready/ {exit} {n++} END {print n+0}' "$home/err")
echo "setup_run: $before lines before the banner:" >&2
sed -n "1,${before}p" "$home/err" | sed 's/^/  | /' >&2
[ "$before" -le 15 ] || fail "$before lines before the banner (at most 15)"
grep -q "^setup: building objlogd and objlog in build/ ... done" "$home/err" ||
  fail "no build stage line"

api=$(sed -n 's|^  JSON API *\(http://[0-9.:]*\)/v1/.*|\1|p' "$home/err")
s3=$(sed -n 's|^  S3 endpoint *\(http://[0-9.:]*\) .*|\1|p' "$home/err")
pid=$(sed -n 's/^objlogd (pid \([0-9]*\)) is ready$/\1/p' "$home/err")
[ -n "$api" ] && [ -n "$s3" ] && [ -n "$pid" ] || fail "banner without URLs or pid: $(cat "$home/err")"
grep -q "^  data *$home " "$home/err" || fail "banner does not name the data directory"
[ -d "$home/view" ] || fail "objlogd's view is not in $home/view"
grep -q "^  stop *Ctrl-C here, or kill $pid" "$home/err" || fail "banner does not say how to stop"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$api/healthz")" = 200 ] || fail "$api/healthz"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$s3/")" = 200 ] || fail "$s3/ (ListBuckets)"
cmp -s <(sed -n '/is ready/,$p' "$home/err" | head -n 7) "$home/run.info" ||
  fail "run.info differs from the banner"

# A second run on the same directory: where the first runs, exit 1, and the
# first untouched.
set +e
"$root/ops/setup.sh" run "${flags[@]}" >"$home/out2" 2>"$home/err2" </dev/null
rc=$?
set -e
[ $rc = 1 ] || fail "second run exited $rc: $(cat "$home/err2")"
grep -q "objlog already runs on $home" "$home/err2" || fail "second run: $(cat "$home/err2")"
grep -q "objlogd (pid $pid) is ready" "$home/err2" || fail "second run does not name pid $pid"
grep -q "$api" "$home/err2" || fail "second run does not name $api"
kill -0 "$pid" 2>/dev/null || fail "the first objlogd is gone"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$api/healthz")" = 200 ] || fail "first run hurt"
echo "setup_run: banner and second run as expected; $before lines before the banner" >&2
