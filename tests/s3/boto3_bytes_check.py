#!/usr/bin/env python3
"""boto3_bytes_check.py: the S3 endpoint keeps the bytes (objlogd
--blob-dir). Every object written reads back byte for byte: empty, small,
1 MiB, a multipart upload of three parts (read whole and across a part
boundary), copies (which share their source's blob); single ranges (206
with Content-Range, suffix and open ranges, 416 past the end, the whole
object for what S3 ignores); conditional GETs in S3's order (304, 412);
response-* overrides on a presigned GET; system metadata kept and
returned. A write that is refused (a failed precondition, a quota) leaves
no blob of its own; the same bytes twice are one file. Run by
test_s3_clients:

    boto3_bytes_check.py S3_URL JSON_URL BLOB_DIR

Exit 0 with "boto3 bytes: N checks passed" on stdout."""
import datetime
import hashlib
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

import boto3
import botocore
from botocore.config import Config

import s3raw

S3_URL, JSON_URL, BLOB_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
BUCKET = "bytes-bucket"
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def json_object(key):
    try:
        with urllib.request.urlopen("%s/v1/buckets/%s/objects/%s" %
                                    (JSON_URL, BUCKET, urllib.parse.quote(key, safe=""))) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return {"status": e.code}


def json_put(path, body):
    req = urllib.request.Request(JSON_URL + path, data=json.dumps(body).encode(), method="PUT")
    with urllib.request.urlopen(req) as r:
        return r.status


def blobs():
    """The readable blobs of the store (DIR/ab/<sha256>), and what is pending."""
    found = set()
    for sub in os.listdir(BLOB_DIR):
        if len(sub) == 2:
            found |= set(os.listdir(os.path.join(BLOB_DIR, sub)))
    return found, os.listdir(os.path.join(BLOB_DIR, ".pending"))


def error_code(call):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return None


s3 = boto3.client(
    "s3", endpoint_url=S3_URL, region_name="us-east-1",
    aws_access_key_id="objlogtest", aws_secret_access_key="objlogtest-secret",
    config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                  signature_version="s3v4"))
s3.create_bucket(Bucket=BUCKET)

# round trips of every size, each blob named by its bytes' SHA-256
data = {}
for n in (0, 1, 1000, 1 << 20):
    body = os.urandom(n)
    key = "size/%d" % n
    data[key] = body
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    got = s3.get_object(Bucket=BUCKET, Key=key)
    check(got["Body"].read() == body, "%d bytes read back" % n)
    check(got["ContentLength"] == n, "Content-Length %d: %r" % (n, got["ContentLength"]))
    blob = json_object(key).get("blob_id")
    if n:
        check(blob == hashlib.sha256(body).hexdigest(), "blob id of %d bytes: %r" % (n, blob))
        check(blob in blobs()[0], "blob of %d bytes in the store" % n)
    else:
        check(blob == "", "an empty object has no blob: %r" % blob)
check(blobs()[1] == [], "nothing left pending: %r" % blobs()[1])

# ranges: 206 with Content-Range; what S3 ignores gives the whole object
big = data["size/%d" % (1 << 20)]
size = len(big)
for rng, lo, hi in [("bytes=0-9", 0, 9), ("bytes=100-", 100, size - 1),
                    ("bytes=-10", size - 10, size - 1), ("bytes=1048570-2000000", 1048570, size - 1),
                    ("bytes=-2000000", 0, size - 1)]:
    got = s3.get_object(Bucket=BUCKET, Key="size/%d" % size, Range=rng)
    check(got["ResponseMetadata"]["HTTPStatusCode"] == 206, "%s: 206" % rng)
    check(got["ContentRange"] == "bytes %d-%d/%d" % (lo, hi, size),
          "%s: Content-Range %r" % (rng, got["ContentRange"]))
    check(got["Body"].read() == big[lo:hi + 1], "%s: the bytes" % rng)
for rng in ("bytes=5-2", "bytes=0-1,5-6", "items=0-1", "bytes=x-"):
    got = s3.get_object(Bucket=BUCKET, Key="size/%d" % size, Range=rng)
    check(got["ResponseMetadata"]["HTTPStatusCode"] == 200 and got["Body"].read() == big,
          "%s is ignored: the whole object" % rng)
try:
    s3.get_object(Bucket=BUCKET, Key="size/%d" % size, Range="bytes=%d-" % size)
    check(False, "a range past the end served")
except botocore.exceptions.ClientError as e:
    check(e.response["Error"]["Code"] == "InvalidRange", "past the end: %r" % e.response["Error"])
    check(e.response["ResponseMetadata"]["HTTPStatusCode"] == 416, "416")
    check(e.response["ResponseMetadata"]["HTTPHeaders"].get("content-range") == "bytes */%d" % size,
          "416 names the size")

# conditional GETs, as S3 orders them
etag = s3.head_object(Bucket=BUCKET, Key="size/1")["ETag"]
mod = s3.head_object(Bucket=BUCKET, Key="size/1")["LastModified"]
past, future = mod - datetime.timedelta(days=1), mod + datetime.timedelta(days=1)
for kw, want in [({"IfMatch": '"0123"'}, "PreconditionFailed"),
                 ({"IfNoneMatch": etag}, "304"),
                 ({"IfModifiedSince": future}, "304"),
                 ({"IfUnmodifiedSince": past}, "PreconditionFailed"),
                 ({"IfNoneMatch": etag, "IfModifiedSince": past}, "304"),
                 ({"IfMatch": etag, "IfUnmodifiedSince": past}, None),
                 ({"IfNoneMatch": '"0123"', "IfModifiedSince": future}, None),
                 ({"IfModifiedSince": past}, None)]:
    got = error_code(lambda: s3.get_object(Bucket=BUCKET, Key="size/1", **kw)["Body"].read())
    check(got == want, "conditional GET %r: %r, want %r" % (kw, got, want))

# system metadata, kept and returned (HEAD, GET, the JSON API)
sysmeta = {"CacheControl": "max-age=60", "ContentDisposition": 'attachment; filename="a.txt"',
           "ContentEncoding": "identity", "ContentLanguage": "fr-CA",
           "Expires": datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)}
s3.put_object(Bucket=BUCKET, Key="sys.txt", Body=b"system metadata", ContentType="text/plain",
              **sysmeta)
for how, r in [("HEAD", s3.head_object(Bucket=BUCKET, Key="sys.txt")),
               ("GET", s3.get_object(Bucket=BUCKET, Key="sys.txt"))]:
    for k, v in sysmeta.items():
        check(r.get(k) == v, "%s %s: %r, want %r" % (how, k, r.get(k), v))
    check(r["ContentType"] == "text/plain", "%s Content-Type" % how)
j = json_object("sys.txt")
check(j.get("cache_control") == "max-age=60" and j.get("content_language") == "fr-CA" and
      j.get("expires") == "Wed, 02 Jan 2030 03:04:05 GMT",
      "the JSON API shows the system metadata: %r" % j)

# response-* overrides on a presigned GET
url = s3.generate_presigned_url("get_object", ExpiresIn=300, Params={
    "Bucket": BUCKET, "Key": "sys.txt", "ResponseContentType": "application/x-over",
    "ResponseCacheControl": "no-store", "ResponseContentDisposition": "inline",
    "ResponseContentLanguage": "de", "ResponseExpires": "Thu, 01 Jan 2032 00:00:00 GMT",
    "ResponseContentEncoding": "gzip"})
with urllib.request.urlopen(url) as r:
    check(r.read() == b"system metadata", "presigned GET with overrides: the bytes")
    h = r.headers
    check((h["Content-Type"], h["Cache-Control"], h["Content-Disposition"],
           h["Content-Language"], h["Expires"], h["Content-Encoding"]) ==
          ("application/x-over", "no-store", "inline", "de", "Thu, 01 Jan 2032 00:00:00 GMT",
           "gzip"), "the overrides: %r" % dict(h.items()))

# a multipart upload: three parts, read whole and across a boundary
parts_data = [os.urandom(5 << 20), os.urandom(5 << 20), os.urandom(1 << 20)]
up = s3.create_multipart_upload(Bucket=BUCKET, Key="mpu.bin", CacheControl="max-age=5")
done = []
for i, p in enumerate(parts_data):
    r = s3.upload_part(Bucket=BUCKET, Key="mpu.bin", UploadId=up["UploadId"], PartNumber=i + 1,
                       Body=p)
    done.append({"PartNumber": i + 1, "ETag": r["ETag"]})
s3.complete_multipart_upload(Bucket=BUCKET, Key="mpu.bin", UploadId=up["UploadId"],
                             MultipartUpload={"Parts": done})
whole = b"".join(parts_data)
got = s3.get_object(Bucket=BUCKET, Key="mpu.bin")
check(got["Body"].read() == whole, "the multipart object reads back whole")
check(got["CacheControl"] == "max-age=5", "CreateMultipartUpload's metadata kept")
b = 5 << 20
got = s3.get_object(Bucket=BUCKET, Key="mpu.bin", Range="bytes=%d-%d" % (b - 10, 2 * b + 9))
check(got["Body"].read() == whole[b - 10:2 * b + 10], "a range across three parts")
for p in parts_data:
    check(hashlib.sha256(p).hexdigest() in blobs()[0], "each part is a blob of its own")

# copies share their source's bytes
s3.copy_object(Bucket=BUCKET, Key="mpu-copy.bin", CopySource={"Bucket": BUCKET, "Key": "mpu.bin"})
check(s3.get_object(Bucket=BUCKET, Key="mpu-copy.bin")["Body"].read() == whole,
      "a copy of the multipart object")
s3.copy_object(Bucket=BUCKET, Key="copy-1k", CopySource={"Bucket": BUCKET, "Key": "size/1000"})
check(json_object("copy-1k")["blob_id"] == json_object("size/1000")["blob_id"],
      "a copy names the source's blob")
check(s3.get_object(Bucket=BUCKET, Key="copy-1k")["Body"].read() == data["size/1000"],
      "the copy reads back")

# the same bytes twice are one file
before = blobs()[0]
s3.put_object(Bucket=BUCKET, Key="again", Body=data["size/1000"])
check(blobs()[0] == before, "the same bytes again: no new blob")

# a refused write leaves no blob of its own
before = blobs()[0]
st, text, _ = s3raw.signed(S3_URL, "PUT", "/%s/again" % BUCKET, os.urandom(3000),
                           {"If-None-Match": "*"}, "objlogtest", "objlogtest-secret")
check(st == 412 and "<Code>PreconditionFailed</Code>" in text,
      "If-None-Match: * on a key that exists: %d %s" % (st, text))
check(json_put("/v1/buckets/%s/quota" % BUCKET, {"max_bytes": 1}) == 200, "quota set")
code = error_code(lambda: s3.put_object(Bucket=BUCKET, Key="over", Body=os.urandom(5000)))
check(code == "QuotaExceeded", "over the quota: %r" % code)
check(blobs() == (before, []), "refused writes left no blob: %r" % ((blobs()[0] - before),))
check(json_put("/v1/buckets/%s/quota" % BUCKET, {"max_bytes": 0}) == 200, "quota lifted")

print("boto3 bytes: %d checks passed" % checks)
