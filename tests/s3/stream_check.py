#!/usr/bin/env python3
"""stream_check.py: PUT bodies over 1 MiB stream into the blob store
(objlogd dispatches them at their head): the bytes read back, objlogd's
peak memory does not grow by the body's size, and a body that does not
arrive whole, or whose digests do not match, writes nothing and leaves no
blob. On the wire: 100 Continue, an early refusal that closes the
connection, a request after a streamed body on the same connection, 5 GiB
refused from the head, a too-large body for an operation that takes none.
Run by test_s3_bytes:

    stream_check.py S3_URL BLOB_DIR PID memory-check|no-memory-check

Exit 0 with "stream: N checks passed"."""
import base64
import hashlib
import os
import socket
import sys
import time
import urllib.parse

S3_URL, BLOB_DIR, PID = sys.argv[1], sys.argv[2], int(sys.argv[3])
MEMORY = sys.argv[4] == "memory-check"  # not under AddressSanitizer's quarantine
U = urllib.parse.urlparse(S3_URL)
BUCKET = "stream-bucket"  # made unsigned: anonymous requests own it
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def hwm_kib():
    for line in open("/proc/%d/status" % PID):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return -1


def blobs():
    found = set()
    for sub in os.listdir(BLOB_DIR):
        if len(sub) == 2:
            found |= set(os.listdir(os.path.join(BLOB_DIR, sub)))
    return found, os.listdir(os.path.join(BLOB_DIR, ".pending")), \
        os.listdir(os.path.join(BLOB_DIR, ".tmp"))


def connect():
    s = socket.create_connection((U.hostname, U.port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_answer(s):
    """(status, headers dict, body) of one answer on s."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(65536)
        if not got:
            return None, {}, data
        data += got
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    h = {}
    for l in lines[1:]:
        k, v = l.split(":", 1)
        h[k.strip().lower()] = v.strip()
    n = int(h.get("content-length", "0"))
    body = bytearray(rest)
    while len(body) < n:
        got = s.recv(1 << 20)
        if not got:
            break
        body += got
    return status, h, bytes(body[:n])


def head_of(method, path, length, extra=None):
    h = ["%s %s HTTP/1.1" % (method, path), "Host: %s:%d" % (U.hostname, U.port),
         "Content-Length: %d" % length]
    h += ["%s: %s" % kv for kv in (extra or {}).items()]
    return ("\r\n".join(h) + "\r\n\r\n").encode()


def put(path, body, extra=None, sock=None):
    s = sock or connect()
    s.sendall(head_of("PUT", path, len(body), extra))
    for i in range(0, len(body), 1 << 20):
        s.sendall(body[i:i + (1 << 20)])
    r = read_answer(s)
    if not sock:
        s.close()
    return r


def get(path):
    s = connect()
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
    r = read_answer(s)
    s.close()
    return r


st, _, _ = put("/" + BUCKET, b"")
check(st == 200, "bucket: %d" % st)

# a 256 MiB body, streamed: read back whole, memory flat
before = hwm_kib()
body = os.urandom(256 << 20)
st, h, text = put("/%s/big" % BUCKET, body)
check(st == 200 and h.get("etag") == '"%s"' % hashlib.md5(body).hexdigest(),
      "256 MiB PUT: %d %r %s" % (st, h, text))
grew = hwm_kib() - before
check(not MEMORY or grew < 96 * 1024, "objlogd's peak memory grew by %d KiB for a 256 MiB body" % grew)
st, h, got = get("/%s/big" % BUCKET)
check(st == 200 and got == body, "256 MiB read back: %d, %d bytes" % (st, len(got)))
check(not MEMORY or hwm_kib() - before < 96 * 1024, "and sent back without reading it into memory")
print("peak memory: %d KiB before, +%d KiB after a 256 MiB PUT and GET" %
      (before, hwm_kib() - before))
del body, got

# 100 Continue: the client waits for it, then sends
body = os.urandom(3 << 20)
s = connect()
s.sendall(head_of("PUT", "/%s/expect" % BUCKET, len(body), {"Expect": "100-continue"}))
first = s.recv(64)
check(first.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), "100 Continue first: %r" % first)
s.sendall(body)
st, _, _ = read_answer(s)
check(st == 200, "after 100 Continue: %d" % st)
# the same connection takes the next request
st, _, _ = put("/%s/next" % BUCKET, os.urandom(2 << 20), sock=s)
check(st == 200, "a streamed PUT after a streamed PUT on one connection: %d" % st)
s.sendall(b"GET /%s/next HTTP/1.1\r\nHost: x\r\n\r\n" % BUCKET.encode())
st, _, got = read_answer(s)
check(st == 200 and len(got) == 2 << 20, "then a GET on it: %d %d" % (st, len(got)))
s.close()

# refused bodies leave nothing
kept = blobs()
body = os.urandom(2 << 20)
st, _, text = put("/%s/md5" % BUCKET, body, {"Content-MD5": base64.b64encode(b"0" * 16).decode()})
check(st == 400 and "<Code>BadDigest</Code>" in text.decode(), "a wrong Content-MD5: %d" % st)
st, _, text = put("/%s/sha" % BUCKET, body, {"x-amz-checksum-sha256": base64.b64encode(
    hashlib.sha256(b"other").digest()).decode()})
check(st == 400 and "<Code>BadDigest</Code>" in text.decode(), "a wrong checksum: %d" % st)
st, _, text = put("/%s/payload" % BUCKET, body,
                  {"x-amz-content-sha256": hashlib.sha256(b"other").hexdigest()})
check(st == 400 and "<Code>XAmzContentSHA256Mismatch</Code>" in text.decode(),
      "a payload hash that does not match: %d" % st)
st, _, _ = put("/%s/payload-ok" % BUCKET, body,
               {"x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
check(st == 200, "the right payload hash: %d" % st)
# a body cut short: the client goes before its last byte
s = connect()
s.sendall(head_of("PUT", "/%s/cut" % BUCKET, 4 << 20))
s.sendall(os.urandom(3 << 20))
time.sleep(0.3)
s.close()
time.sleep(0.5)
for key in ("md5", "sha", "payload", "cut"):
    check(get("/%s/%s" % (BUCKET, key))[0] == 404, "%s: nothing written" % key)
check(blobs()[0] == kept[0] | {hashlib.sha256(body).hexdigest()} and blobs()[1:] == ([], []),
      "no blob left of them: %r" % (blobs(),))

# refused from the head: no body is read, the connection closes after
s = connect()
s.sendall(head_of("PUT", "/no-such-bucket-x/k", 8 << 20))
st, h, text = read_answer(s)
check(st == 404 and "<Code>NoSuchBucket</Code>" in text.decode() and h.get("connection") == "close",
      "a body for a bucket that is not there: %d %r" % (st, h))
s.close()
s = connect()
s.sendall(head_of("PUT", "/%s/huge" % BUCKET, (5 << 30) + 1))
st, _, text = read_answer(s)
check(st == 400 and "<Code>EntityTooLarge</Code>" in text.decode(), "5 GiB + 1: %d" % st)
s.close()
s = connect()
s.sendall(head_of("PUT", "/%s?lifecycle" % BUCKET, 2 << 20))
st, _, text = read_answer(s)
s.close()
check(st == 400 and "<Code>MaxMessageLengthExceeded</Code>" in text.decode(),
      "2 MiB for PutBucketLifecycle: %d %s" % (st, text[:200]))
check(get("/%s/big" % BUCKET)[0] == 200, "objlogd serves on")
print("stream: %d checks passed" % checks)
