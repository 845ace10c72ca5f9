-- ops/compare/objlog.lua: the wrk script of compare.sh, for objlogd and the
-- ceiling alike. The environment picks the workload:
--   CMP_OP           get | put | list | delete | mix
--   CMP_BUCKET       bucket (bench); CMP_KEYS: keys k00000.. (20000)
--   CMP_CONSISTENCY  "eventual" adds ?consistency=eventual to GET and LIST
--   CMP_ACK          "logged" adds ?ack=logged to PUT and DELETE
-- mix = 70% GET, 20% PUT, 5% LIST (100 keys), 5% DELETE, keys uniform.
-- done() prints one line: CMP_RESULT {json} (latencies in microseconds).
local op = os.getenv("CMP_OP") or "get"
local bucket = os.getenv("CMP_BUCKET") or "bench"
local nkeys = tonumber(os.getenv("CMP_KEYS") or "20000")
local rq = os.getenv("CMP_CONSISTENCY") == "eventual" and "consistency=eventual" or nil
local wq = os.getenv("CMP_ACK") == "logged" and "ack=logged" or nil
local body = '{"size":1024,"etag":"0123456789abcdef0123456789abcdef",' ..
             '"content_type":"application/octet-stream"}'
local base = "/v1/buckets/" .. bucket .. "/objects"
local jhdr = { ["Content-Type"] = "application/json" }

local function key(i) return string.format("k%05d", i) end
local function q(path, p) return p and (path .. "?" .. p) or path end

local function get(i) return wrk.format("GET", q(base .. "/" .. key(i), rq)) end
local function put(i) return wrk.format("PUT", q(base .. "/" .. key(i), wq), jhdr, body) end
local function del(i) return wrk.format("DELETE", q(base .. "/" .. key(i), wq)) end
local function list(i)
  local p = "max_keys=100&start_after=" .. key(i)
  return wrk.format("GET", base .. "?" .. (rq and (p .. "&" .. rq) or p))
end

-- Each thread its own random sequence: setup() numbers them.
local nthreads = 0
function setup(thread)
  nthreads = nthreads + 1
  thread:set("tid", nthreads)
end

function init(args)
  math.randomseed(os.time() + 7919 * (tid or 0))
end

function request()
  local i = math.random(0, nkeys - 1)
  if op == "get" then return get(i)
  elseif op == "put" then return put(i)
  elseif op == "list" then return list(i)
  elseif op == "delete" then return del(i) end
  local r = math.random(1, 100)
  if r <= 70 then return get(i)
  elseif r <= 90 then return put(i)
  elseif r <= 95 then return list(i)
  else return del(i) end
end

-- No response() callback: it costs wrk about a third of its rate (measured
-- on the ceiling). compare.sh counts the mix's 404s (GETs of deleted keys,
-- PostgreSQL's zero rows) from objlogd's /metrics instead.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'CMP_RESULT {"requests":%d,"duration_us":%d,"ops":%.1f,"p50_us":%d,"p99_us":%d,' ..
    '"non2xx":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\n',
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), e.status,
    e.connect, e.read, e.write, e.timeout))
end
