#!/usr/bin/env python3
"""boto3_behaviour_check.py: the behaviours S3 clients rely on, each as
Amazon S3 documents it, checked on the wire (tests/s3/s3raw.py) and
through boto3:

  - encoding-type=url writes a space as %20 (a '+' as %2B), which botocore
    decodes; without encoding-type keys are XML text, never percent-encoded;
  - ListObjectsV2 gives each key's Owner with fetch-owner=true, and none
    without; ListObjects (v1) always does;
  - an empty continuation-token= is no token;
  - CreateBucket of a bucket the caller owns is 200 in us-east-1;
  - Object Lock: a bucket asked with it is 501 NotImplemented, an object
    write naming a lock 400 InvalidRequest; nothing is written;
  - DeleteBucket takes the bucket's in-progress multipart uploads with it;
  - ListBuckets pages with max-buckets, prefix and continuation-token.

Run by test_s3_clients:

    boto3_behaviour_check.py S3_URL JSON_URL BLOB_DIR

Exit 0 with "boto3 behaviour: N checks passed"."""
import sys
import urllib.parse
import xml.etree.ElementTree as ET

import boto3
import botocore
from botocore.config import Config

import s3raw

S3_URL, JSON_URL = sys.argv[1], sys.argv[2]
BUCKET = "behave-bucket"
KEY, SECRET = "objlogtest", "objlogtest-secret"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def raw(method, path, body=b"", headers=None):
    return s3raw.signed(S3_URL, method, path, body, headers, KEY, SECRET)


def error_of(call):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]
    return 200, None


s3 = boto3.client("s3", endpoint_url=S3_URL, region_name="us-east-1",
                  aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
s3.create_bucket(Bucket=BUCKET)
for k in ("quux ab/x", "plus+sign", "line\nbreak", "plain"):
    s3.put_object(Bucket=BUCKET, Key=k, Body=b"x")

# encoding-type=url: %20 for a space, %2B for a plus
st, text, _ = raw("GET", "/%s?list-type=2&encoding-type=url&delimiter=%%2F" % BUCKET)
check(st == 200 and "<Prefix>quux%20ab/</Prefix>" in text, "a space is %%20: %s" % text)
check("<Key>plus%2Bsign</Key>" in text and "<Key>line%0Abreak</Key>" in text, text)
r = s3.list_objects_v2(Bucket=BUCKET, Delimiter="/")
check([p["Prefix"] for p in r["CommonPrefixes"]] == ["quux ab/"], "botocore decodes it: %r" % r)
check(sorted(o["Key"] for o in r["Contents"]) == ["line\nbreak", "plain", "plus+sign"], r)
# without it: XML text, not percent-encoding
st, text, _ = raw("GET", "/%s?list-type=2" % BUCKET)
check("<Key>line&#xA;break</Key>" in text and "<Key>quux ab/x</Key>" in text and "%" not in text,
      "no encoding asked, none given: %s" % text)

# FetchOwner
r = s3.list_objects_v2(Bucket=BUCKET, FetchOwner=True)
check(all(o["Owner"] == {"ID": "tenant-a", "DisplayName": "tenant-a"} for o in r["Contents"]),
      "fetch-owner=true: %r" % r["Contents"])
r = s3.list_objects_v2(Bucket=BUCKET)
check(all("Owner" not in o for o in r["Contents"]), "no owner unless asked")
r = s3.list_objects(Bucket=BUCKET)
check(all(o["Owner"]["ID"] == "tenant-a" for o in r["Contents"]), "v1 names owners")
check(s3.list_buckets()["Owner"]["ID"] == "tenant-a", "ListBuckets' owner is the key's tenant")

# an empty continuation token is none
st, text, _ = raw("GET", "/%s?list-type=2&continuation-token=&max-keys=2" % BUCKET)
check(st == 200 and text.count("<Contents>") == 2 and "<ContinuationToken>" not in text,
      "empty continuation-token: %d %s" % (st, text))

# CreateBucket of an owned bucket: 200 in us-east-1
st, text, h = raw("PUT", "/%s" % BUCKET)
check(st == 200 and h.get("Location") == "/%s" % BUCKET, "owned, again: %d %s" % (st, text))
check(error_of(lambda: s3.create_bucket(Bucket=BUCKET)) == (200, None), "boto3 agrees")

# Object Lock is refused, nothing written
check(error_of(lambda: s3.create_bucket(Bucket="locked-bucket", ObjectLockEnabledForBucket=True))
      == (501, "NotImplemented"), "a bucket with Object Lock")
check(error_of(lambda: s3.head_bucket(Bucket="locked-bucket"))[0] == 404, "not created")
st, text, _ = raw("PUT", "/%s/locked" % BUCKET, b"x",
                  {"x-amz-object-lock-mode": "COMPLIANCE",
                   "x-amz-object-lock-retain-until-date": "2030-01-01T00:00:00Z"})
check(st == 400 and "<Code>InvalidRequest</Code>" in text and "Object Lock" in text,
      "an object write with a lock: %d %s" % (st, text))
check(error_of(lambda: s3.head_object(Bucket=BUCKET, Key="locked"))[0] == 404, "not written")

# DeleteBucket takes the in-progress uploads with it
s3.create_bucket(Bucket="uploads-bucket")
up = s3.create_multipart_upload(Bucket="uploads-bucket", Key="big")
s3.upload_part(Bucket="uploads-bucket", Key="big", UploadId=up["UploadId"], PartNumber=1,
               Body=b"part")
check(s3.delete_bucket(Bucket="uploads-bucket")["ResponseMetadata"]["HTTPStatusCode"] == 204,
      "a bucket with only an upload in progress is deleted")
s3.create_bucket(Bucket="uploads-bucket")
check(s3.list_multipart_uploads(Bucket="uploads-bucket").get("Uploads", []) == [],
      "the upload went with it")
check(error_of(lambda: s3.list_parts(Bucket="uploads-bucket", Key="big",
                                     UploadId=up["UploadId"]))[1] == "NoSuchUpload", "its parts too")

# ListBuckets pagination (S3's 2024 form): max-buckets, prefix,
# continuation-token; every bucket once, in name order
names = ["pg-%s" % c for c in "abcde"]
for n in names:
    s3.create_bucket(Bucket=n)
seen, tok, pages = [], None, 0
while True:
    q = "max-buckets=2&prefix=pg-" + ("&continuation-token=" +
                                      urllib.parse.quote(tok, safe="") if tok else "")
    st, text, _ = raw("GET", "/?" + q)
    check(st == 200 and "<Prefix>pg-</Prefix>" in text, "ListBuckets page: %d %s" % (st, text))
    root = ET.fromstring(text)
    seen += [b.find(NS + "Name").text for b in root.iter(NS + "Bucket")]
    pages += 1
    t = root.find(NS + "ContinuationToken")
    if t is None:
        break
    tok = t.text
check(seen == names and pages == 3, "paged ListBuckets: %r in %d pages" % (seen, pages))
st, text, _ = raw("GET", "/?max-buckets=0")
check(st == 400 and "<Code>InvalidArgument</Code>" in text, "max-buckets=0: %d" % st)
st, text, _ = raw("GET", "/?continuation-token=bm90IGEgYnVja2V0IQ%3D%3D")
check(st == 400 and "continuation token" in text, "a token objlog never gave: %d %s" % (st, text))
check(sorted(b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith("pg-")) ==
      names, "without max-buckets: every bucket")

print("boto3 behaviour: %d checks passed" % checks)
