#!/usr/bin/env bash
# tests/test_status_page.sh BUILD_DIR: objlogd's status page (query/ui/),
# in a real browser. Starts `objlogd --embedded` (3 partitions, loopback,
# a free port), checks the page's routes with curl (the bytes compiled in
# equal query/ui/page/, content types, Cache-Control, ETag and 304, HEAD,
# 404, 405), creates a bucket and puts an object through the JSON API,
# then loads / in Debian's headless Chromium: the DOM its script built has
# exactly 3 partition rows and the bucket with 1 object, no error banner;
# a screenshot is a 1280x900 PNG of plausible size. What it leaves
# (screenshot, DOM, objlogd's stderr) is in BUILD_DIR/tests/test_status_page/.
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
setsid "$build/query/objlogd" --embedded --partitions 3 --listen 127.0.0.1:0 \
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
python3 - "$out/dom.html" "$bucket" <<'EOF' || fail "the page's DOM (in $out/dom.html)"
import html.parser, sys
dom, bucket = open(sys.argv[1], encoding='utf-8').read(), sys.argv[2]

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
