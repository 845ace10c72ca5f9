#!/usr/bin/env bash
# tests/test_status_page.sh BUILD_DIR: objlogd's status page (query/ui/),
# in a real browser. Starts `objlogd --embedded` (3 partitions, loopback,
# a free port) with an S3 credentials file others may read and --insecure,
# so that it warns of that file as it starts and again on SIGHUP; checks
# the page's routes with curl (the bytes compiled in equal query/ui/page/,
# content types, Cache-Control, ETag and 304, HEAD, 404, 405), GET /v1/log
# (that warning with its component and text, paging after a seq, its 400s
# and 405, /metrics' objlog_log_lines_total), creates a bucket and puts an
# object through the JSON API, then loads / in Debian's headless Chromium:
# the DOM its script built has exactly 3 partition rows, the bucket with 1
# object, the warning as a log line twice, no error banner; a screenshot
# is a 1280x900 PNG of plausible size. What it leaves (screenshot, DOM,
# objlogd's stderr) is in BUILD_DIR/tests/test_status_page/.
# Without chromium it skips (exit 77), unless CI=true: then it fails.
# objlogd and chromium each run in a process group of their own, killed on
# exit whatever happens; everything listens on 127.0.0.1 only.
set -euo pipefail
build=$(cd "${1:?usage: tests/test_status_page.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
out=$build/tests/test_status_page
rm -rf "$out"
mkdir -p "$out"
pgroups=()
cleanup() {
  local g
  for g in "${pgroups[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
  for g in "${pgroups[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 -- "-$g" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$g" 2>/dev/null || true
  done
  rm -rf "$out/data" "$out/home"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "test_status_page: FAIL: $*" >&2; exit 1; }
say() { echo "test_status_page: $*"; }

# ---- objlogd, in a group of its own (no job control: setsid does not fork)
# A credentials file group and others may read: objlogd loads it because
# of --insecure and says so at WARN, the one warning known to come.
creds=$out/s3-credentials
echo "AKSTATUSPAGE secret-of-the-status-page tenant-a" >"$creds"
chmod 644 "$creds"
warning="$creds: group or others may read it (mode bits 044) and it holds secrets; loaded because of --insecure: chmod 600 it"
setsid "$build/query/objlogd" --embedded --partitions 3 --listen 127.0.0.1:0 \
  --s3-listen 127.0.0.1:0 --s3-credentials "$creds" --insecure \
  --data "$out/data" >"$out/objlogd.out" 2>"$out/objlogd.log" &
pgroups+=($!)
for _ in $(seq 1 600); do
  grep -q '^OBJLOG_READY' "$out/objlogd.out" && break
  kill -0 "${pgroups[0]}" 2>/dev/null || fail "objlogd exited: $(tail -5 "$out/objlogd.log")"
  sleep 0.1
done
grep -q '^OBJLOG_READY' "$out/objlogd.out" || fail "objlogd not ready in 60 s"
addr=$(sed -n 's/^OBJLOG_LISTEN=//p' "$out/objlogd.out")
[[ $addr == 127.0.0.1:* ]] || fail "OBJLOG_LISTEN=$addr"
url=http://$addr
say "objlogd at $url"

# ---- the routes, with curl
# head PATH [curl args...]: status line and headers of a GET (or as asked)
head_of() { local p=$1; shift; curl -sS -o /dev/null -D - "$@" "$url$p" | tr -d '\r'; }
header() { sed -n "s/^$1: //Ip" | head -1; }
status() { head -1 | cut -d' ' -f2; }
for f in index.html:/ app.js:/ui/app.js app.css:/ui/app.css index.html:/ui/index.html; do
  name=${f%%:*} path=${f#*:}
  curl -sS -o "$out/got" "$url$path"
  cmp -s "$out/got" "$src/query/ui/page/$name" || fail "GET $path is not query/ui/page/$name"
  h=$(head_of "$path")
  [ "$(status <<<"$h")" = 200 ] || fail "GET $path: $(head -1 <<<"$h")"
  case $name in
    *.html) want="text/html; charset=utf-8" ;;
    *.js) want="text/javascript; charset=utf-8" ;;
    *.css) want="text/css; charset=utf-8" ;;
  esac
  [ "$(header Content-Type <<<"$h")" = "$want" ] || fail "GET $path: Content-Type $(header Content-Type <<<"$h")"
  [ "$(header Cache-Control <<<"$h")" = no-cache ] || fail "GET $path: no Cache-Control: no-cache"
  etag=$(header ETag <<<"$h")
  [[ $etag == \"*\" ]] || fail "GET $path: ETag '$etag'"
  [ "$(head_of "$path" -H "If-None-Match: $etag" | status)" = 304 ] || fail "GET $path with its ETag: not 304"
  [ "$(head_of "$path" -H 'If-None-Match: "other"' | status)" = 200 ] || fail "GET $path with another ETag: not 200"
  h=$(head_of "$path" -I)
  [ "$(status <<<"$h")" = 200 ] || fail "HEAD $path: $(head -1 <<<"$h")"
  [ "$(header Content-Length <<<"$h")" = "$(stat -c %s "$src/query/ui/page/$name")" ] ||
    fail "HEAD $path: Content-Length $(header Content-Length <<<"$h")"
done
head_of / | grep -qi '^Content-Security-Policy: default-src' || fail "GET /: no Content-Security-Policy"
[ "$(head_of /ui/nope.js | status)" = 404 ] || fail "GET /ui/nope.js: not 404"
h=$(head_of / -X POST -d x)
[ "$(status <<<"$h")" = 405 ] || fail "POST /: $(head -1 <<<"$h")"
[ "$(header Allow <<<"$h")" = "GET, HEAD" ] || fail "POST /: Allow $(header Allow <<<"$h")"
[ "$(head_of /ui/app.js -X DELETE | status)" = 405 ] || fail "DELETE /ui/app.js: not 405"
# The JSON API is still the JSON API.
[ "$(head_of /v1/lag | status)" = 200 ] || fail "GET /v1/lag"
[ "$(head_of /v1/nope | status)" = 404 ] || fail "GET /v1/nope: not 404"

# ---- the node's recent warnings and errors: GET /v1/log
# log_get QUERY: the answer's body into $out/log.json; its status out.
log_get() { curl -sS -o "$out/log.json" -w '%{http_code}' "$url/v1/log$1"; }
# log_check WHAT PYTHON: the answer has the route's shape, and PYTHON (over
# j, the answer, and warning, the text) holds.
log_check() {
  python3 - "$out/log.json" "$warning" "$2" <<'EOF' || fail "GET /v1/log: $1: $(cat "$out/log.json")"
import json, re, sys
j, warning = json.load(open(sys.argv[1])), sys.argv[2]
ts = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$')
def line_ok(l):
    return (set(l) == {'seq', 'ts', 'level', 'component', 'msg'} and ts.match(l['ts'])
            and l['level'] in ('warn', 'error') and isinstance(l['seq'], int))
assert set(j) == {'node', 'lines', 'counts', 'next_after'}, sorted(j)
assert j['node'] is None, j['node']  # no --node-name
assert all(line_ok(l) for l in j['lines'])
seqs = [l['seq'] for l in j['lines']]
assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs  # newest last
exec(sys.argv[3])
EOF
}
# log_count LEVEL: the count of LEVEL in $out/log.json
log_count() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counts"][sys.argv[2]])' "$out/log.json" "$1"; }
[ "$(log_get '')" = 200 ] || fail "GET /v1/log: $(cat "$out/log.json")"
log_check "the start's warning" "
ours = [l for l in j['lines'] if l['msg'] == warning]
assert len(ours) == 1, ours
assert ours[0]['component'] == 's3' and ours[0]['level'] == 'warn', ours
assert j['counts']['warn'] == sum(l['level'] == 'warn' for l in j['lines']) >= 1, j['counts']
assert j['counts']['error'] == sum(l['level'] == 'error' for l in j['lines']), j['counts']
assert j['next_after'] == j['lines'][-1]['seq'], j['next_after']
open(sys.argv[1] + '.seq', 'w').write(str(ours[0]['seq']))"
seq1=$(cat "$out/log.json.seq")
[ "$(log_get '?level=error')" = 200 ] || fail "GET /v1/log?level=error: $(cat "$out/log.json")"
log_check "level=error" "assert all(l['level'] == 'error' for l in j['lines']) and warning not in [l['msg'] for l in j['lines']]"
# SIGHUP reloads the file: the same warning again, a line past seq1
kill -HUP "$(sed -n 's/^OBJLOG_PID=//p' "$out/objlogd.out")"
for _ in $(seq 1 50); do
  [ "$(grep -cF "WARN s3: $warning" "$out/objlogd.log")" -ge 2 ] && break
  sleep 0.1
done
[ "$(log_get "?after=$seq1")" = 200 ] || fail "GET /v1/log?after=$seq1: $(cat "$out/log.json")"
log_check "after=$seq1" "
assert all(l['seq'] > $seq1 for l in j['lines']), j['lines']
ours = [l for l in j['lines'] if l['msg'] == warning and l['component'] == 's3']
assert len(ours) == 1, j['lines']
assert j['next_after'] == j['lines'][-1]['seq']
open(sys.argv[1] + '.seq', 'w').write(str(j['next_after']))"
seq2=$(cat "$out/log.json.seq")
[ "$(log_get "?after=$seq2&limit=1")" = 200 ] || fail "GET /v1/log?after=$seq2"
log_check "after=$seq2 (the end)" "assert j['lines'] == [] and j['next_after'] == $seq2, j"
[ "$(log_get "?after=$seq1&limit=1")" = 200 ] || fail "GET /v1/log?after=$seq1&limit=1"
log_check "after=$seq1&limit=1" "assert [l['seq'] for l in j['lines']] == [$seq1 + 1] and j['next_after'] == $seq1 + 1, j"
for q in '?level=info' '?level=' '?limit=0' '?limit=201' '?limit=x' '?after=x' '?after=-1' \
    '?foo=1' '?limit=1&limit=2'; do
  code=$(log_get "$q")
  [ "$code" = 400 ] || fail "GET /v1/log$q: $code, not 400"
  got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["code"])' "$out/log.json")
  [ "$got" = InvalidArgument ] || fail "GET /v1/log$q: $got, not InvalidArgument"
done
h=$(head_of /v1/log -X POST -d x)
[ "$(status <<<"$h")" = 405 ] || fail "POST /v1/log: $(head -1 <<<"$h")"
[ "$(header Allow <<<"$h")" = GET ] || fail "POST /v1/log: Allow $(header Allow <<<"$h")"
# /metrics counts the same lines: read between two /v1/log answers
log_get '' >/dev/null
before=$(log_count warn)
curl -sS -o "$out/metrics.txt" "$url/metrics"
log_get '' >/dev/null
after=$(log_count warn)
warns=$(sed -n 's/^objlog_log_lines_total{level="warn"} //p' "$out/metrics.txt")
errors=$(sed -n 's/^objlog_log_lines_total{level="error"} //p' "$out/metrics.txt")
[ "$before" -ge 2 ] && [ -n "$warns" ] && [ "$warns" -ge "$before" ] && [ "$warns" -le "$after" ] ||
  fail "/metrics: objlog_log_lines_total{level=\"warn\"} '$warns'; /v1/log said $before, then $after"
[ -n "$errors" ] || fail "/metrics: no objlog_log_lines_total{level=\"error\"}"
say "GET /v1/log: the warning at seq $seq1 and past it; $warns warnings counted"

# ---- a bucket and an object, through the JSON API
bucket=status-page-$$
code=$(curl -sS -o "$out/resp" -w '%{http_code}' -X PUT "$url/v1/buckets/$bucket" -d '{}')
[ "$code" = 200 ] || fail "PUT /v1/buckets/$bucket: $code $(cat "$out/resp")"
code=$(curl -sS -o "$out/resp" -w '%{http_code}' -X PUT "$url/v1/buckets/$bucket/objects/cats/tom.jpg" \
  -d '{"size":2048,"etag":"9b2cf535f27731c974343645a3985328"}')
[ "$code" = 200 ] || fail "PUT an object: $code $(cat "$out/resp")"
say "bucket $bucket with one object"

# ---- the page in headless Chromium
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  [ "${CI:-}" = true ] && fail "chromium is not installed (ops/setup.sh installs it); CI=true: not skipped"
  say "SKIP: chromium is not installed (apt-get install chromium, or ./ops/setup.sh test)"
  exit 77
fi
# chrome OUTFILE NAME ARGS...: one headless run in a group of its own, its
# profile and home under $out; waits for it (bounded by timeout).
chrome() {
  local to=$1 name=$2
  shift 2
  mkdir -p "$out/home/$name"
  HOME=$out/home/$name XDG_CONFIG_HOME=$out/home/$name XDG_CACHE_HOME=$out/home/$name \
    setsid timeout 120 "$chromium" --headless=new --no-sandbox --disable-gpu \
    --user-data-dir="$out/home/$name/profile" --no-first-run --no-default-browser-check \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-extensions --disable-dev-shm-usage --virtual-time-budget=8000 \
    "$@" "$url/" >"$to" 2>"$out/chromium-$name.log" &
  local pid=$!
  pgroups+=("$pid")
  wait "$pid" || fail "chromium ($name) exited $?: $(tail -3 "$out/chromium-$name.log")"
}
chrome "$out/dom.html" dom --dump-dom
python3 - "$out/dom.html" "$bucket" "$warning" <<'EOF' || fail "the page's DOM (in $out/dom.html)"
import html.parser, re, sys
dom, bucket, warning = open(sys.argv[1], encoding='utf-8').read(), sys.argv[2], sys.argv[3]

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.table, self.ids, self.rows, self.cell, self.text = None, {}, [], None, {}
        self.body, self.last_id = {}, None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if 'id' in a:
            self.ids[a['id']] = (tag, a)
        if tag == 'body':
            self.body = a
        elif tag == 'table':
            self.table = a.get('id')
        elif tag == 'tr':
            self.rows.append((self.table, a, []))
        elif tag == 'td' and self.rows:
            self.cell = (a.get('class') or '', [])
            self.rows[-1][2].append(self.cell)
        self.last_id = a.get('id')
    def handle_data(self, data):
        if self.cell:
            self.cell[1].append(data)
        if self.last_id:
            self.text[self.last_id] = self.text.get(self.last_id, '') + data
    def handle_endtag(self, tag):
        if tag == 'td':
            self.cell = None
        elif tag == 'table':
            self.table = None
        self.last_id = None

p = Page()
p.feed(dom)
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)
banner = p.ids.get('banner')
check(banner is not None, 'no #banner element')
if banner:
    check('hidden' in banner[1] and 'error' not in (banner[1].get('class') or ''),
          'the error banner shows: ' + p.text.get('banner', ''))
refreshes = int(p.body.get('data-refreshes') or 0)
check(refreshes >= 2, f'the page refreshed {refreshes} times in 8 s, not every 2 s')
parts = [r for r in p.rows if r[0] == 'partitions' and 'partition' in (r[1].get('class') or '').split()]
check(len(parts) == 3, f'{len(parts)} partition rows, not 3')
check(sorted(r[1].get('data-partition') for r in parts) == ['0', '1', '2'], 'partitions not 0, 1, 2')
bs = [r for r in p.rows if r[0] == 'buckets' and r[1].get('data-name') == bucket]
check(len(bs) == 1, f'bucket {bucket}: {len(bs)} rows')
if bs:
    cells = {c: ''.join(t) for c, t in bs[0][2]}
    check(bs[0][1].get('data-objects') == '1', f'bucket {bucket}: data-objects {bs[0][1].get("data-objects")}')
    check(cells.get('num objects') == '1', f'bucket {bucket}: objects cell {cells.get("num objects")!r}')
    check(cells.get('num bytes') == '2.0 KiB', f'bucket {bucket}: bytes cell {cells.get("num bytes")!r}')
check(p.text.get('mode', '').strip() == 'single node', f'mode {p.text.get("mode")!r}, not "single node"')
check(p.text.get('ready', '').strip() == 'ready', f'readiness {p.text.get("ready")!r}')
check(p.ids.get('auth') and 'hidden' in p.ids['auth'][1], 'the token field shows on an open API')
check('<polyline' in dom or '<circle' in dom, 'no lag chart drawn')
logs = [r for r in p.rows if r[0] == 'log-lines' and 'logline' in (r[1].get('class') or '').split()]
seqs = [int(r[1].get('data-seq') or 0) for r in logs]
check(seqs == sorted(seqs, reverse=True) and len(set(seqs)) == len(seqs), f'log lines not newest first: {seqs}')
ours = [{c: ''.join(t) for c, t in r[2]} for r in logs if r[1].get('data-level') == 'warn']
ours = [c for c in ours if c.get('msg') == warning]
check(len(ours) == 2, f'{len(ours)} log lines of the warning, not 2 (start, SIGHUP)')
for c in ours:
    check(c.get('component') == 's3' and c.get('level') == 'WARN', f"the warning's row: {c}")
    check(re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$', c.get('time', '')),
          f'log line time {c.get("time")!r}')
note = p.text.get('log-note', '').strip()
check(re.match(r'^\d+ warnings and \d+ errors? since start\.$', note), f'log note {note!r}')
check(re.search(r'WARN \d+ warnings logged since start', dom), 'no warnings counted under "Errors and warnings"')
for e in errors:
    print('  ' + e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
grep -o 'data-refreshes="[0-9]*"' "$out/dom.html" | head -1 | sed 's/^/test_status_page: page /'

chrome "$out/chromium-shot.out" shot --screenshot="$out/status.png" --window-size=1280,900
[ -f "$out/status.png" ] || fail "no screenshot written"
python3 - "$out/status.png" <<'EOF' || fail "the screenshot $out/status.png"
import struct, sys
data = open(sys.argv[1], 'rb').read()
if data[:8] != b'\x89PNG\r\n\x1a\n' or data[12:16] != b'IHDR':
    sys.exit('not a PNG')
w, h = struct.unpack('>II', data[16:24])
if (w, h) != (1280, 900):
    sys.exit(f'{w}x{h}, not 1280x900')
if not 10_000 <= len(data) <= 5_000_000:
    sys.exit(f'{len(data)} bytes: not a rendered page')
print(f'test_status_page: screenshot {w}x{h}, {len(data)} bytes')
EOF
say "PASS ($out)"
