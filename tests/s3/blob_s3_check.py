#!/usr/bin/env python3
"""blob_s3_check.py: objlogd --blob-s3 keeps the bytes in another S3 store
(here a second objlogd's S3 endpoint, bucket "upstream"). Through the
front: PutObject small and streamed (3 MiB), a multipart upload, GetObject
whole and ranged, a copy; every object read back byte for byte; the
upstream holds each blob under the SHA-256 of its bytes; the front's spool
keeps nothing once the writes are answered; a refused write (NoSuchBucket)
leaves nothing readable under the front. Run by test_s3_clients:

    blob_s3_check.py FRONT_S3_URL UPSTREAM_S3_URL SPOOL_DIR [--upstream-down]

With --upstream-down (the upstream stopped after a first run): a PUT is
answered 5xx, never 200, and leaves nothing in the spool; a GET of an
object whose bytes are upstream is 5xx, never other bytes. Exit 0 with "blob s3: N checks passed" on stdout."""
import hashlib
import os
import sys

import boto3
import botocore
from botocore.config import Config

FRONT, UP, SPOOL = sys.argv[1], sys.argv[2], sys.argv[3]
DOWN = sys.argv[4:] == ["--upstream-down"]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def client(url, key, secret):
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id=key, aws_secret_access_key=secret,
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}, signature_version="s3v4"))


front = client(FRONT, "objlogtest", "objlogtest-secret")
up = client(UP, "up", "upsecret")


def status_of(call):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"]
    return 200


def spool_left():
    return [f for d in (".tmp", ".pending") for f in os.listdir(os.path.join(SPOOL, d))]


if DOWN:
    st = status_of(lambda: front.put_object(Bucket="via", Key="lost", Body=b"x" * 100))
    check(st >= 500, "a PUT with the store down: %d" % st)
    st = status_of(lambda: front.put_object(Bucket="via", Key="lost2", Body=os.urandom(2 << 20)))
    check(st >= 500, "a streamed PUT with the store down: %d" % st)
    check(spool_left() == [], "nothing left in the spool: %s" % spool_left())
    st = status_of(lambda: front.get_object(Bucket="via", Key="small")["Body"].read())
    check(st >= 500, "a GET with the store down: %d" % st)
    print("blob s3: %d checks passed" % checks)
    sys.exit(0)
up.create_bucket(Bucket="upstream")
front.create_bucket(Bucket="via")

bodies = {"small": b"hello blob store " * 10, "streamed": os.urandom(3 << 20)}
for k, body in bodies.items():
    front.put_object(Bucket="via", Key=k, Body=body)
for k, body in bodies.items():
    got = front.get_object(Bucket="via", Key=k)["Body"].read()
    check(got == body, "%s read back through the front (%d bytes)" % (k, len(got)))
    sha = hashlib.sha256(body).hexdigest()
    check(up.get_object(Bucket="upstream", Key=sha)["Body"].read() == body,
          "%s kept upstream under its SHA-256" % k)
r = front.get_object(Bucket="via", Key="streamed", Range="bytes=1000-2999")
check(r["ResponseMetadata"]["HTTPStatusCode"] == 206 and
      r["Body"].read() == bodies["streamed"][1000:3000], "a range through the front")

# multipart: two parts, each a blob upstream; read across the boundary
p1, p2 = os.urandom(5 << 20), os.urandom(123457)
mpu = front.create_multipart_upload(Bucket="via", Key="mp")
e1 = front.upload_part(Bucket="via", Key="mp", UploadId=mpu["UploadId"], PartNumber=1,
                       Body=p1)["ETag"]
e2 = front.upload_part(Bucket="via", Key="mp", UploadId=mpu["UploadId"], PartNumber=2,
                       Body=p2)["ETag"]
front.complete_multipart_upload(Bucket="via", Key="mp", UploadId=mpu["UploadId"],
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                                           {"PartNumber": 2, "ETag": e2}]})
check(front.get_object(Bucket="via", Key="mp")["Body"].read() == p1 + p2, "multipart whole")
r = front.get_object(Bucket="via", Key="mp", Range="bytes=%d-%d" % ((5 << 20) - 10, (5 << 20) + 9))
check(r["Body"].read() == (p1 + p2)[(5 << 20) - 10:(5 << 20) + 10], "across the parts")
upkeys = {o["Key"] for o in up.list_objects_v2(Bucket="upstream")["Contents"]}
check({hashlib.sha256(p1).hexdigest(), hashlib.sha256(p2).hexdigest()} <= upkeys,
      "each part a blob upstream")

# a copy shares the blob: nothing new upstream
before = len(upkeys)
front.copy_object(Bucket="via", Key="copy", CopySource={"Bucket": "via", "Key": "streamed"})
check(front.get_object(Bucket="via", Key="copy")["Body"].read() == bodies["streamed"],
      "a copy reads back")
check(len(up.list_objects_v2(Bucket="upstream")["Contents"]) == before, "a copy uploads nothing")

# nothing left in the spool once the writes were answered
check(spool_left() == [], "the spool is empty: %s" % spool_left())

# a refused write: NoSuchBucket, nothing under the front
try:
    front.put_object(Bucket="nobucket", Key="x", Body=b"refused")
    check(False, "a write to a missing bucket succeeded")
except botocore.exceptions.ClientError as e:
    check(e.response["Error"]["Code"] == "NoSuchBucket", "NoSuchBucket")
print("blob s3: %d checks passed" % checks)
