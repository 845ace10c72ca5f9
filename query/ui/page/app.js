// app.js: objlogd's status page. It reads only the JSON API of the node
// that served it (so it works through any node, with the API's tokens)
// every 2 s and draws what it read. The lag history lives in this page's
// memory only. No framework, no build step.
'use strict';

const REFRESH_MS = 2000;
const HISTORY_MS = 5 * 60 * 1000;   // the lag chart's window
const MAX_BUCKETS = 50;             // buckets listed (and their stats read) per refresh
const MAX_RANGES = 200;
const LOG_LINES = 50;               // the newest warnings and errors shown (the node keeps 200)
const TOKEN_KEY = 'objlog.token';   // sessionStorage: gone with the tab

const $ = (id) => document.getElementById(id);
const lagHistory = [];              // {t: ms, lag: events}, oldest first
let timer = null;
let running = false, again = false;  // one refresh at a time

// ------------------------------------------------------------ the API

// {status, body} of GET path; status 0 when nothing answered. Never throws.
async function get(path, asText) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = 'Bearer ' + token;
  try {
    const r = await fetch(path, {headers, cache: 'no-store'});
    const text = await r.text();
    let body = text;
    if (!asText) {
      try { body = JSON.parse(text); } catch (e) { body = null; }
    }
    return {status: r.status, body};
  } catch (e) {
    return {status: 0, body: null, error: String(e && e.message || e)};
  }
}

function describe(res) {
  if (res.status === 0) return 'no answer (' + res.error + ')';
  const err = res.body && res.body.error;
  return res.status + (err ? ' ' + err.code + ': ' + err.message : '');
}

// true for a 200; a 401/403 is noted as denied (the token field shows),
// anything else as a failure (the error banner shows).
function ok(res, what, seen) {
  if (res.status === 200) return true;
  if (res.status === 401 || res.status === 403) seen.denied.push(what + ' (' + res.status + ')');
  else seen.failures.push(what + ': ' + describe(res));
  return false;
}

// Prometheus text -> [{name, labels, value}]. Enough of the format for
// objlogd's own /metrics: no timestamps, label values without newlines.
function parseMetrics(text) {
  const out = [];
  const line = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
  const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const l of text.split('\n')) {
    const m = l.startsWith('#') ? null : line.exec(l);
    if (!m) continue;
    const labels = {};
    for (const a of (m[2] || '').matchAll(label)) labels[a[1]] = a[2].replace(/\\(.)/g, '$1');
    out.push({name: m[1], labels, value: Number(m[3])});
  }
  return out;
}

const series = (ms, name) => ms.filter((m) => m.name === name);
const sum = (xs) => xs.reduce((a, m) => a + m.value, 0);
const max = (xs) => xs.reduce((a, m) => Math.max(a, m.value), 0);

// ------------------------------------------------------------ drawing

const fmtInt = (n) => (n == null || Number.isNaN(n) ? '-' : Number(n).toLocaleString('en-US'));

function fmtBytes(n) {
  if (n == null) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? String(v) : v.toFixed(1)) + ' ' + units[i];
}

const fmtSeconds = (s) => (s == null ? '-' : s < 10 ? s.toFixed(1) : Math.round(s).toString());

// <tr class=cls data-*=data> of cells: a string, or [text, class].
function row(cls, data, cells) {
  const tr = document.createElement('tr');
  tr.className = cls;
  for (const [k, v] of Object.entries(data || {})) tr.dataset[k] = v;
  for (const c of cells) {
    const td = document.createElement('td');
    const [text, tdClass] = Array.isArray(c) ? c : [c, ''];
    td.textContent = text;
    if (tdClass) td.className = tdClass;
    tr.appendChild(td);
  }
  return tr;
}

function fill(tableId, rows) {
  $(tableId).tBodies[0].replaceChildren(...rows);
}

function setText(id, text) { $(id).textContent = text; }

function svgEl(name, attrs, text) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}

// Total lag over the last HISTORY_MS, as this page sampled it.
function drawLagChart() {
  const svg = $('lag-chart');
  const W = 640, H = 120, left = 56, right = 8, top = 8, bottom = 18;
  const now = Date.now();
  while (lagHistory.length && now - lagHistory[0].t > HISTORY_MS) lagHistory.shift();
  const peak = Math.max(1, ...lagHistory.map((h) => h.lag));
  const x = (t) => left + (W - left - right) * (1 - (now - t) / HISTORY_MS);
  const y = (v) => top + (H - top - bottom) * (1 - v / peak);
  const parts = [
    svgEl('line', {x1: left, y1: y(0), x2: W - right, y2: y(0), class: 'axis'}),
    svgEl('line', {x1: left, y1: top, x2: left, y2: y(0), class: 'axis'}),
    svgEl('text', {x: left - 4, y: top + 8, class: 'tick', 'text-anchor': 'end'}, fmtInt(peak)),
    svgEl('text', {x: left - 4, y: y(0), class: 'tick', 'text-anchor': 'end'}, '0'),
    svgEl('text', {x: left, y: H - 4, class: 'tick'}, '-5 min'),
    svgEl('text', {x: W - right, y: H - 4, class: 'tick', 'text-anchor': 'end'}, 'now'),
  ];
  const pts = lagHistory.map((h) => x(h.t).toFixed(1) + ',' + y(h.lag).toFixed(1)).join(' ');
  if (lagHistory.length > 1) parts.push(svgEl('polyline', {points: pts, class: 'lag-line'}));
  const last = lagHistory[lagHistory.length - 1];
  if (last) parts.push(svgEl('circle', {cx: x(last.t), cy: y(last.lag), r: 3, class: 'lag-dot'}));
  svg.replaceChildren(...parts);
}

// ------------------------------------------------------------ sections

function showReady(res, seen) {
  const pill = $('ready');
  if (res.status === 200 || (res.status === 503 && res.body && 'ready' in res.body)) {
    const ready = res.status === 200;
    pill.textContent = ready ? 'ready' : 'not ready';
    pill.className = 'pill ' + (ready ? 'good' : 'bad');
    if (!ready) seen.problems.push(['error', 'not ready: ' + res.body.reason]);
  } else {
    ok(res, '/readyz', seen);
    pill.textContent = '?';
    pill.className = 'pill';
  }
}

// The cluster's view, or null on a single node (or one this token may not see).
function showCluster(res, seen) {
  if (res.status === 404 && res.body && res.body.error && res.body.error.code === 'NotACluster') {
    setText('mode', 'single node');
    setText('cluster-note', 'single node: this objlogd applies every partition.');
    fill('nodes', [row('node', {self: 'true'}, [location.host + ' (this node)', 'up', 'all', '-'])]);
    return null;
  }
  if (!ok(res, '/v1/cluster', seen)) {
    setText('cluster-note', res.status === 403 || res.status === 401
      ? 'the cluster view needs an admin token.' : 'the cluster view could not be read.');
    fill('nodes', []);
    return null;
  }
  const c = res.body;
  setText('mode', 'cluster ' + c.cluster + ', ' + c.nodes.length + ' nodes');
  setText('cluster-note', 'group ' + c.group + '; this node is ' + c.self + '.');
  const label = (n) => (n.name ? n.name + ' ' : '') + n.url;
  const members = c.nodes.map((n) => {
    if (!n.reachable) seen.problems.push(['error', 'node ' + label(n) + ' did not answer']);
    const state = n.reachable ? 'up'
      : 'unreachable' + (n.unreachable_since ? ' since ' + n.unreachable_since : '');
    return row('node' + (n.reachable ? '' : ' bad'), {self: String(!!n.self)},
      [label(n) + (n.self ? ' (this node)' : ''), state,
       n.partitions.join(', ') || '-', n.standbys.join(', ') || '-']);
  });
  // Nodes that left, for ten minutes: what they had, and when they went.
  const gone = (c.departed || []).map((n) => {
    seen.problems.push(['warn', 'node ' + label(n) + ' left the cluster at ' + n.gone_at]);
    return row('node gone', {self: 'false'},
      [label(n), 'gone ' + n.gone_seconds_ago + ' s ago (' + n.gone_at + ')',
       n.partitions.join(', ') || '-', '-']);
  });
  fill('nodes', members.concat(gone));
  return c;
}

function showPartitions(res, cluster, seen) {
  if (!ok(res, '/v1/lag', seen)) return;
  const byPart = new Map(((cluster && cluster.partitions) || []).map((p) => [p.partition, p]));
  let total = 0;
  fill('partitions', res.body.partitions.map((p) => {
    // In a cluster, the active node's offsets (it applies the partition).
    const cp = byPart.get(p.partition);
    const applied = cp && cp.applied != null ? cp.applied : p.applied;
    const end = cp && cp.end != null ? cp.end : p.end;
    const lag = cp && cp.lag != null ? cp.lag : p.lag_messages;
    total += lag;
    const stopped = p.state === 'stopped';
    if (stopped) seen.problems.push(['error', 'partition ' + p.partition + ' stopped: ' + p.error]);
    return row('partition' + (stopped ? ' bad' : ''), {partition: p.partition},
      [String(p.partition), cluster ? (p.role || '-') + (cp ? ' (' + cp.active + ')' : '') : 'active',
       [fmtInt(applied), 'num'], [fmtInt(end), 'num'], [fmtInt(lag), 'num lag'],
       [fmtSeconds(p.lag_seconds), 'num'], p.state]);
  }));
  setText('total-lag', fmtInt(total));
  setText('events-applied', fmtInt(res.body.events_applied));
  setText('dlq-events', fmtInt(res.body.dlq_events));
  if (res.body.dlq_events > 0)
    seen.problems.push(['warn', fmtInt(res.body.dlq_events) + ' events went to the dead-letter topic']);
  lagHistory.push({t: Date.now(), lag: total});
  drawLagChart();
}

function showRanges(res, seen) {
  if (res.status === 404) { setText('ranges-note', 'this objlogd has no range map route.'); return; }
  if (!ok(res, '/v1/ranges', seen)) return;
  const rs = res.body.ranges;
  setText('ranges-note', 'epoch ' + res.body.epoch + ', ' + rs.length + ' ranges' +
    (rs.length > MAX_RANGES ? ' (the first ' + MAX_RANGES + ' shown)' : ''));
  fill('ranges', rs.slice(0, MAX_RANGES).map((r) => {
    const at = r.bucket != null ? r.bucket + (r.key != null ? ' / ' + r.key : '')
      : r.start ? '0x' + r.start : '(the first key)';
    return row('range' + (r.state === 'moving' ? ' moving' : ''), {partition: r.partition},
      [at, [String(r.partition), 'num'], r.state]);
  }));
}

async function showBuckets(res, metrics, seen) {
  if (!ok(res, '/v1/buckets', seen)) return;
  const list = res.body.buckets;
  const stats = await Promise.all(list.map((b) =>
    get('/v1/buckets/' + encodeURIComponent(b.name) + '/stats')));
  const due = new Map(series(metrics, 'objlog_lifecycle_due').map((m) => [m.labels.bucket, m.value]));
  setText('buckets-note', list.length === 0 ? 'no buckets yet.'
    : res.body.next_continuation_token ? 'the first ' + list.length + ' buckets by name.'
      : list.length + (list.length === 1 ? ' bucket.' : ' buckets.'));
  fill('buckets', list.map((b, i) => {
    const s = stats[i].status === 200 ? stats[i].body : null;
    if (!s) ok(stats[i], 'stats of ' + b.name, seen);
    return row('bucket', {name: b.name, objects: s ? s.objects : ''},
      [[b.name, 'name'], b.tenant || '-', b.versioning || '-',
       [s ? fmtInt(s.objects) : '?', 'num objects'], [s ? fmtBytes(s.bytes) : '?', 'num bytes'],
       [due.has(b.name) ? fmtInt(due.get(b.name)) : '-', 'num']]);
  }));
}

function showBacklogs(res, seen) {
  if (!ok(res, '/metrics', seen)) {
    setText('backlogs-note', res.status === 401 || res.status === 403
      ? '/metrics needs an admin token.' : '/metrics could not be read.');
    fill('backlogs', []);
    for (const id of ['lifecycle-backlog', 'admission-rejections', 'feed-backlog']) setText(id, '-');
    return [];
  }
  const ms = parseMetrics(res.body);
  const lcDue = sum(series(ms, 'objlog_lifecycle_due'));
  const rejected = series(ms, 'objlog_admission_rejected_total');
  const feed = sum(series(ms, 'objlog_notify_backlog_records'));
  const byReason = new Map();
  for (const m of rejected) byReason.set(m.labels.reason, (byReason.get(m.labels.reason) || 0) + m.value);
  const outcome = (o) => sum(series(ms, 'objlog_lifecycle_outcomes_total').filter((m) => m.labels.outcome === o));
  setText('lifecycle-backlog', fmtInt(lcDue));
  setText('admission-rejections', fmtInt(sum(rejected)));
  setText('feed-backlog', fmtInt(feed));
  setText('backlogs-note', 'counters count since objlogd started.');
  const rows = [
    ['lifecycle: items due', fmtInt(lcDue)],
    ['lifecycle: oldest due for (s)', fmtSeconds(max(series(ms, 'objlog_lifecycle_oldest_due_age_seconds')))],
    ['lifecycle: expirations failed', fmtInt(outcome('failed'))],
    ['admission: rejections', fmtInt(sum(rejected))],
    ...[...byReason].map(([reason, n]) => ['admission: rejected for ' + reason, fmtInt(n)]),
    ['change feed: records not yet delivered', fmtInt(feed)],
    ['change feed: oldest undelivered (s)', fmtSeconds(max(series(ms, 'objlog_notify_backlog_oldest_seconds')))],
    ['change feed: failed deliveries (retried)', fmtInt(sum(series(ms, 'objlog_notify_failures_total')))],
  ];
  fill('backlogs', rows.map(([what, v]) => row('backlog', {}, [what, [v, 'num']])));
  const counters = [
    ['objlog_store_write_errors_total', 'error', 'store writes failed'],
    ['objlog_store_flush_errors_total', 'error', 'store flushes failed'],
    ['objlog_notify_trimmed_total', 'error', 'change-feed partitions trimmed before delivery (records may be lost)'],
    ['objlog_notify_failures_total', 'warn', 'change-feed deliveries failed and were retried'],
    ['objlog_blobgc_errors_total', 'warn', 'blob collection errors'],
  ];
  for (const [name, level, what] of counters) {
    const n = sum(series(ms, name));
    if (n > 0) seen.problems.push([level, fmtInt(n) + ' ' + what + ' since start']);
  }
  if (outcome('failed') > 0) seen.problems.push(['warn', fmtInt(outcome('failed')) + ' lifecycle expirations failed since start']);
  return ms;
}

const plural = (n, what) => fmtInt(n) + ' ' + what + (n === 1 ? '' : 's');

// The node's recent warnings and errors (GET /v1/log, newest last), drawn
// newest first.
function showLog(res, seen) {
  if (!ok(res, '/v1/log', seen)) {
    setText('log-note', res.status === 401 || res.status === 403
      ? 'the log lines need an admin token.' : 'the log lines could not be read.');
    fill('log-lines', []);
    return;
  }
  const {lines, counts} = res.body;
  const total = counts.warn + counts.error;
  setText('log-note', total === 0 ? 'no warnings or errors since objlogd started.'
    : plural(counts.warn, 'warning') + ' and ' + plural(counts.error, 'error') + ' since start' +
      (total > lines.length ? '; the newest ' + lines.length + ' shown.' : '.'));
  if (counts.error > 0) seen.problems.push(['error', plural(counts.error, 'error') + ' logged since start']);
  if (counts.warn > 0) seen.problems.push(['warn', plural(counts.warn, 'warning') + ' logged since start']);
  fill('log-lines', lines.slice().reverse().map((l) =>
    row('logline ' + l.level, {seq: l.seq, level: l.level},
      [[l.ts, 'time'], [l.level === 'error' ? 'ERROR' : 'WARN', 'level'], [l.component, 'component'],
       [l.msg, 'msg']])));
}

function showProblems(seen) {
  const list = $('problems');
  const items = seen.problems.map(([level, text]) => {
    const li = document.createElement('li');
    li.className = 'problem ' + level;
    li.textContent = (level === 'error' ? 'ERROR ' : 'WARN ') + text;
    return li;
  });
  if (!items.length) {
    const li = document.createElement('li');
    li.className = 'muted';
    li.textContent = 'none';
    items.push(li);
  }
  list.replaceChildren(...items);
}

function showAuth(seen) {
  const form = $('auth');
  form.hidden = seen.denied.length === 0;
  const has = !!sessionStorage.getItem(TOKEN_KEY);
  setText('auth-why', (has ? 'This token may not read ' : 'The API asks for a token: ') +
    seen.denied.join(', ') + '. An admin token shows everything.');
}

function showBanner(failures) {
  const b = $('banner');
  b.hidden = failures.length === 0;
  b.className = failures.length ? 'error' : '';
  b.textContent = failures.length ? 'Could not read ' + failures.join('; ') : '';
}

// ------------------------------------------------------------ the loop

async function refresh() {
  const seen = {problems: [], denied: [], failures: []};
  const [ready, cluster, lag, ranges, buckets, metrics, log] = await Promise.all([
    get('/readyz'), get('/v1/cluster'), get('/v1/lag'), get('/v1/ranges'),
    get('/v1/buckets?max_buckets=' + MAX_BUCKETS), get('/metrics', true),
    get('/v1/log?limit=' + LOG_LINES)]);
  showReady(ready, seen);
  const c = showCluster(cluster, seen);
  showPartitions(lag, c, seen);
  showRanges(ranges, seen);
  const ms = showBacklogs(metrics, seen);
  await showBuckets(buckets, ms, seen);
  showLog(log, seen);
  showProblems(seen);
  showAuth(seen);
  showBanner(seen.failures);
  setText('updated', 'updated ' + new Date().toISOString().slice(11, 19) + ' UTC');
  document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes) + 1);
}

// Refreshes now, then every REFRESH_MS; asked while a refresh runs, it
// runs once more right after (a new token is used at once).
async function loop() {
  clearTimeout(timer);
  if (running) { again = true; return; }
  running = true;
  try {
    await refresh();
  } catch (e) {
    showBanner(['the page: ' + (e && e.message || e)]);
  }
  running = false;
  if (again) { again = false; loop(); return; }
  timer = setTimeout(loop, REFRESH_MS);
}

$('auth').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const t = $('token').value.trim();
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  $('token').value = '';
  loop();
});
$('forget').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  loop();
});
loop();
