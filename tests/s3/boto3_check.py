#!/usr/bin/env python3
"""boto3_check.py: boto3 against objlog's S3 endpoint, compared with the
JSON API for the same data. Run by test_s3_clients:

    boto3_check.py S3_URL JSON_URL BUCKET

Exit 0 with "boto3: N checks passed" on stdout; any difference is an
AssertionError naming what boto3 saw and what the JSON API says."""
import hashlib
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

import boto3
import botocore
from botocore.config import Config

S3_URL, JSON_URL, BUCKET = sys.argv[1], sys.argv[2], sys.argv[3]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def json_get(path):
    with urllib.request.urlopen(JSON_URL + path) as r:
        return json.loads(r.read())


def json_list(bucket, prefix=""):
    """Every key the JSON API lists under prefix (all pages)."""
    keys, token = [], None
    while True:
        q = {"prefix": prefix, "max_keys": "1000"}
        if token:
            q["continuation_token"] = token
        page = json_get("/v1/buckets/%s/objects?%s" % (bucket, urllib.parse.urlencode(q)))
        keys += [(o["key"], o["etag"], o["size"]) for o in page["objects"]]
        if not page["is_truncated"]:
            return keys
        token = page["next_continuation_token"]


s3 = boto3.client(
    "s3", endpoint_url=S3_URL, region_name="us-east-1",
    aws_access_key_id="objlogtest", aws_secret_access_key="objlogtest-secret",
    config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                  signature_version="s3v4"))  # presigned URLs too (else SigV2)

# create, head, location, versioning, list buckets
s3.create_bucket(Bucket=BUCKET)
check(s3.head_bucket(Bucket=BUCKET)["ResponseMetadata"]["HTTPStatusCode"] == 200, "head_bucket")
loc = s3.get_bucket_location(Bucket=BUCKET)
check(loc.get("LocationConstraint") in (None, ""), "location of us-east-1 is empty: %r" % loc)
check("Status" not in s3.get_bucket_versioning(Bucket=BUCKET), "new bucket unversioned")
names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
check(BUCKET in names, "list_buckets has %s: %r" % (BUCKET, names))
json_names = [b["name"] for b in json_get("/v1/buckets?max_buckets=1000")["buckets"]]
check(sorted(names) == sorted(json_names), "list_buckets %r == JSON %r" % (names, json_names))

# objects with keys that need encoding
keys = ["a.txt", "dir/b c.txt", "dir/sub/plus+sign", "dir/ünïcödé.bin", "dir/pct%20x",
        "z/" + "k" * 200] + ["many/%03d" % i for i in range(25)]
bodies = {}
for i, k in enumerate(keys):
    body = ("body of %s #%d" % (k, i)).encode()
    bodies[k] = body
    r = s3.put_object(Bucket=BUCKET, Key=k, Body=body, ContentType="text/plain",
                      Metadata={"index": str(i), "Owner": "objlog"})
    check(r["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(), "put ETag of %s" % k)

# head_object: size, etag, metadata, type; equal to the JSON API's
for k in keys:
    h = s3.head_object(Bucket=BUCKET, Key=k)
    j = json_get("/v1/buckets/%s/objects/%s" % (BUCKET, urllib.parse.quote(k, safe="")))
    check(h["ContentLength"] == len(bodies[k]) == j["size"], "size of %s" % k)
    check(h["ETag"] == '"%s"' % j["etag"], "etag of %s: %s vs %s" % (k, h["ETag"], j["etag"]))
    check(h["Metadata"] == {"index": str(keys.index(k)), "owner": "objlog"},
          "metadata of %s: %r" % (k, h["Metadata"]))
    check(h["Metadata"] == j["user_metadata"], "metadata equals JSON's for %s" % k)
    check(h["ContentType"] == "text/plain", "content type of %s" % k)
    g = s3.get_object(Bucket=BUCKET, Key=k)
    check(g["Body"].read() == bodies[k], "GET gives back the bytes of %s" % k)
    check(g["ETag"] == h["ETag"] and g["ContentLength"] == len(bodies[k]), "GET headers of %s" % k)

# flexible checksums: boto3 computes one, objlog checks and keeps it
import base64
body = b"checksummed body"
for alg, fn in [("SHA256", hashlib.sha256), ("SHA1", hashlib.sha1)]:
    r = s3.put_object(Bucket=BUCKET, Key="sum/" + alg, Body=body, ChecksumAlgorithm=alg)
    want = base64.b64encode(fn(body).digest()).decode()
    check(r.get("Checksum" + alg) == want, "put answers Checksum%s %r" % (alg, r.get("Checksum" + alg)))
    h = s3.head_object(Bucket=BUCKET, Key="sum/" + alg, ChecksumMode="ENABLED")
    check(h.get("Checksum" + alg) == want, "head Checksum%s %r" % (alg, h.get("Checksum" + alg)))
    s3.delete_object(Bucket=BUCKET, Key="sum/" + alg)

# a presigned URL works without credentials, and not once tampered with
url = s3.generate_presigned_url("head_object", Params={"Bucket": BUCKET, "Key": "a.txt"},
                                ExpiresIn=300)
check("X-Amz-Signature=" in url, "presigned: %s" % url)
with urllib.request.urlopen(urllib.request.Request(url, method="HEAD")) as r:
    check(r.status == 200 and r.headers["ETag"] == '"%s"' % hashlib.md5(bodies["a.txt"]).hexdigest(),
          "presigned HEAD")
bad = url.replace("X-Amz-Signature=", "X-Amz-Signature=0")[:len(url)]
try:
    urllib.request.urlopen(urllib.request.Request(bad, method="GET"))
    check(False, "tampered presigned URL accepted")
except urllib.error.HTTPError as e:
    check(e.code == 403 and b"<Code>SignatureDoesNotMatch</Code>" in e.read(),
          "tampered presigned URL: %d" % e.code)

# list_objects_v2 through the paginator, 7 a page, == the JSON API's listing
pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, PaginationConfig={"PageSize": 7})
listed, npages = [], 0
for p in pages:
    npages += 1
    listed += [(o["Key"], o["ETag"].strip('"'), o["Size"]) for o in p.get("Contents", [])]
check(npages == (len(keys) + 6) // 7, "pages: %d" % npages)
check(listed == json_list(BUCKET), "v2 listing == JSON listing")
check(sorted(k for k, _, _ in listed) == sorted(keys), "every key listed once")

# delimiter: common prefixes, url-encoded by botocore and decoded back
r = s3.list_objects_v2(Bucket=BUCKET, Delimiter="/")
check([c["Prefix"] for c in r.get("CommonPrefixes", [])] == ["dir/", "many/", "z/"],
      "common prefixes %r" % r.get("CommonPrefixes"))
check([o["Key"] for o in r["Contents"]] == ["a.txt"], "top-level keys")
r = s3.list_objects_v2(Bucket=BUCKET, Prefix="dir/", Delimiter="/")
check([o["Key"] for o in r["Contents"]] == ["dir/b c.txt", "dir/pct%20x", "dir/ünïcödé.bin"],
      "dir/ keys %r" % [o["Key"] for o in r["Contents"]])
check([c["Prefix"] for c in r["CommonPrefixes"]] == ["dir/sub/"], "dir/ prefixes")

# list_objects (v1, markers) through its paginator
v1 = []
for p in s3.get_paginator("list_objects").paginate(Bucket=BUCKET, PaginationConfig={"PageSize": 5}):
    v1 += [o["Key"] for o in p.get("Contents", [])]
check(v1 == [k for k, _, _ in listed], "v1 listing == v2 listing")
r = s3.list_objects(Bucket=BUCKET, Delimiter="/", MaxKeys=2)
check(r["IsTruncated"] and [c["Prefix"] for c in r["CommonPrefixes"]] == ["dir/"],
      "v1 page of 2 with a prefix: %r" % r)

# errors as S3 gives them
for call, code in [(lambda: s3.head_object(Bucket=BUCKET, Key="nope"), "404"),
                   (lambda: s3.head_bucket(Bucket="no-such-bucket-x"), "404"),
                   (lambda: s3.list_objects_v2(Bucket="no-such-bucket-x"), "NoSuchBucket"),
                   (lambda: s3.get_object(Bucket=BUCKET, Key="nope"), "NoSuchKey"),
                   (lambda: s3.create_bucket(Bucket="Bad_Name"), "InvalidBucketName")]:
    try:
        call()
        check(False, "expected %s" % code)
    except botocore.exceptions.ClientError as e:
        got = e.response["Error"]["Code"]
        check(got == code, "error %s, want %s" % (got, code))
        check(len(e.response["ResponseMetadata"].get("RequestId", "")) == 32,
              "x-amz-request-id on errors")
    except botocore.exceptions.ParamValidationError:
        check(code == "InvalidBucketName", "boto3 refused the name itself")

# conditional HEAD
etag = s3.head_object(Bucket=BUCKET, Key="a.txt")["ETag"]
for kw, code in [({"IfMatch": '"0000"'}, "412"), ({"IfNoneMatch": etag}, "304")]:
    try:
        s3.head_object(Bucket=BUCKET, Key="a.txt", **kw)
        check(False, "conditional %r" % kw)
    except botocore.exceptions.ClientError as e:
        check(e.response["Error"]["Code"] == code, "conditional %r: %s" % (kw, e.response["Error"]))
check(s3.head_object(Bucket=BUCKET, Key="a.txt", IfMatch=etag)["ETag"] == etag, "If-Match hit")

# deletes, then the bucket
for k in keys:
    check(s3.delete_object(Bucket=BUCKET, Key=k)["ResponseMetadata"]["HTTPStatusCode"] == 204,
          "delete %s" % k)
check(s3.list_objects_v2(Bucket=BUCKET)["KeyCount"] == 0, "empty after deletes")
check(json_list(BUCKET) == [], "JSON agrees: empty")
s3.delete_bucket(Bucket=BUCKET)
check(BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]], "bucket gone")
print("boto3: %d checks passed" % checks)
