#!/usr/bin/env python3
"""boto3_tenants_check.py: a bucket belongs to the tenant that created it.
Two keys of different tenants (tenant-a: objlogtest, tenant-b: otherkey)
and an admin key (adminkey); tenant-b owns a bucket with an object, a
versioning setting and a multipart upload in progress. Every S3 operation
tenant-a tries on it is 403 AccessDenied, and changes nothing; the same
operations by tenant-b on its own bucket succeed; the admin crosses
tenants. Run by test_s3_clients:

    boto3_tenants_check.py S3_URL JSON_URL

Exit 0 with "boto3 tenants: N checks passed" on stdout."""
import json
import os
import sys
import urllib.request

import boto3
import botocore
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3raw  # noqa: E402

S3_URL, JSON_URL = sys.argv[1], sys.argv[2]
BETA, ALPHA = "beta-bucket", "alpha-bucket"
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def client(key, secret):
    return boto3.client("s3", endpoint_url=S3_URL, aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name="us-east-1",
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def json_get(path):
    with urllib.request.urlopen(JSON_URL + path) as r:
        return json.loads(r.read())


def outcome(fn):
    """(HTTP status, S3 code or None)."""
    try:
        r = fn()
        return r["ResponseMetadata"]["HTTPStatusCode"], None
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]


a = client("objlogtest", "objlogtest-secret")
b = client("otherkey", "other-secret")
admin = client("adminkey", "admin-secret")

b.create_bucket(Bucket=BETA)
b.put_object(Bucket=BETA, Key="secret.txt", Body=b"tenant-b only")
b.put_bucket_versioning(Bucket=BETA, VersioningConfiguration={"Status": "Enabled"})
up = b.create_multipart_upload(Bucket=BETA, Key="big.bin")["UploadId"]
part = b.upload_part(Bucket=BETA, Key="big.bin", UploadId=up, PartNumber=1, Body=b"p" * 10)
a.create_bucket(Bucket=ALPHA)
a.put_object(Bucket=ALPHA, Key="mine.txt", Body=b"tenant-a")
before = json_get("/v1/buckets/%s/versions" % BETA)["versions"]
check(json_get("/v1/buckets/" + BETA)["tenant"] == "tenant-b", "owner is tenant-b")

LC = {"Rules": [{"ID": "x", "Filter": {"Prefix": ""}, "Status": "Enabled",
                 "Expiration": {"Days": 1}}]}
# (name, call given a client) for every operation on the bucket or its objects
ops = [
    ("ListObjectsV2", lambda c: c.list_objects_v2(Bucket=BETA)),
    ("ListObjects", lambda c: c.list_objects(Bucket=BETA)),
    ("ListObjectVersions", lambda c: c.list_object_versions(Bucket=BETA)),
    ("ListMultipartUploads", lambda c: c.list_multipart_uploads(Bucket=BETA)),
    ("ListParts", lambda c: c.list_parts(Bucket=BETA, Key="big.bin", UploadId=up)),
    ("HeadBucket", lambda c: c.head_bucket(Bucket=BETA)),
    ("GetBucketLocation", lambda c: c.get_bucket_location(Bucket=BETA)),
    ("GetBucketVersioning", lambda c: c.get_bucket_versioning(Bucket=BETA)),
    ("GetObject", lambda c: c.get_object(Bucket=BETA, Key="secret.txt")),
    ("HeadObject", lambda c: c.head_object(Bucket=BETA, Key="secret.txt")),
    ("CopyObject from it", lambda c: c.copy_object(
        Bucket=ALPHA if c is a else BETA, Key="copied.txt",
        CopySource={"Bucket": BETA, "Key": "secret.txt"})),
    ("CopyObject into it", lambda c: c.copy_object(
        Bucket=BETA, Key="copied-in.txt",
        CopySource={"Bucket": ALPHA if c is a else BETA, "Key": "mine.txt" if c is a else "secret.txt"})),
    ("PutObject", lambda c: c.put_object(Bucket=BETA, Key="secret.txt", Body=b"overwritten")),
    ("PutBucketVersioning", lambda c: c.put_bucket_versioning(
        Bucket=BETA, VersioningConfiguration={"Status": "Enabled"})),
    ("PutBucketLifecycleConfiguration", lambda c: c.put_bucket_lifecycle_configuration(
        Bucket=BETA, LifecycleConfiguration=LC)),
    ("GetBucketLifecycleConfiguration", lambda c: c.get_bucket_lifecycle_configuration(Bucket=BETA)),
    ("DeleteBucketLifecycle", lambda c: c.delete_bucket_lifecycle(Bucket=BETA)),
    ("UploadPart", lambda c: c.upload_part(Bucket=BETA, Key="big.bin", UploadId=up, PartNumber=2,
                                           Body=b"q" * 10)),
    ("CreateMultipartUpload", lambda c: c.create_multipart_upload(Bucket=BETA, Key="other.bin")),
    ("DeleteObject", lambda c: c.delete_object(Bucket=BETA, Key="copied-in.txt")),
    ("DeleteObjects", lambda c: c.delete_objects(
        Bucket=BETA, Delete={"Objects": [{"Key": "copied-in.txt"}]})),
]
for name, op in ops:
    st, code = outcome(lambda: op(a))
    check(st == 403 and code in ("AccessDenied", "403"),
          "tenant-a %s on tenant-b's bucket: %d %s" % (name, st, code))
after = json_get("/v1/buckets/%s/versions" % BETA)["versions"]
check(after == before, "tenant-a's attempts changed nothing:\n%r\n%r" % (before, after))
check(json_get("/v1/buckets/%s/objects" % ALPHA)["key_count"] == 1,
      "nothing was copied out into tenant-a's bucket")
# the owner does each of them
for name, op in ops:
    st, code = outcome(lambda: op(b))
    ok = st in (200, 204) or (name == "GetBucketLifecycleConfiguration" and
                             code == "NoSuchLifecycleConfiguration") or (
        name == "GetObject" and code == "NotImplemented")  # no blob store here
    check(ok, "tenant-b %s on its own bucket: %d %s" % (name, st, code))

# CompleteMultipartUpload and AbortMultipartUpload of tenant-b's upload
parts = {"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]}
check(outcome(lambda: a.complete_multipart_upload(Bucket=BETA, Key="big.bin", UploadId=up,
                                                  MultipartUpload=parts))[0] == 403,
      "tenant-a completes tenant-b's upload")
check(outcome(lambda: a.abort_multipart_upload(Bucket=BETA, Key="big.bin", UploadId=up))[0] == 403,
      "tenant-a aborts tenant-b's upload")
check(outcome(lambda: b.abort_multipart_upload(Bucket=BETA, Key="big.bin", UploadId=up))[0] == 204,
      "tenant-b aborts its upload")

# presigned requests carry the signer's tenant too
url = a.generate_presigned_url("put_object", Params={"Bucket": BETA, "Key": "presigned.txt"},
                               ExpiresIn=300)
check(url.startswith(S3_URL + "/"), "presigned URL %s" % url)
st, text, _ = s3raw.signed(S3_URL, "PUT", url[len(S3_URL):], b"through a presigned URL")
check(st == 403 and "<Code>AccessDenied</Code>" in text, "presigned PUT by tenant-a: %d %s" % (st, text))
url = a.generate_presigned_url("get_object", Params={"Bucket": BETA, "Key": "secret.txt"},
                               ExpiresIn=300)
st, text, _ = s3raw.signed(S3_URL, "GET", url[len(S3_URL):])
check(st == 403 and "<Code>AccessDenied</Code>" in text, "presigned GET by tenant-a: %d" % st)

# ListBuckets: each key its own tenant's; the admin every bucket
names = [x["Name"] for x in a.list_buckets()["Buckets"]]
check(ALPHA in names and BETA not in names, "tenant-a lists %r" % names)
names = [x["Name"] for x in admin.list_buckets()["Buckets"]]
check(ALPHA in names and BETA in names, "admin lists %r" % names)

# the admin role crosses tenants
check(admin.head_object(Bucket=BETA, Key="secret.txt")["ContentLength"] == len(b"overwritten"),
      "admin reads tenant-b's object")
check(outcome(lambda: admin.head_bucket(Bucket=BETA))[0] == 200, "admin heads tenant-b's bucket")

# an empty bucket of tenant-b: tenant-a can neither delete it nor take its name
b.create_bucket(Bucket=BETA + "-empty")
st, code = outcome(lambda: a.delete_bucket(Bucket=BETA + "-empty"))
check(st == 403 and code == "AccessDenied", "tenant-a deletes tenant-b's empty bucket: %d %s" % (st, code))
st, code = outcome(lambda: a.create_bucket(Bucket=BETA + "-empty"))
check(st == 409 and code == "BucketAlreadyExists", "tenant-a re-creates it: %d %s" % (st, code))
check(json_get("/v1/buckets/%s-empty" % BETA)["tenant"] == "tenant-b", "still tenant-b's")
st, code = outcome(lambda: b.create_bucket(Bucket=BETA + "-empty"))
check(st == 200, "tenant-b re-creates its own (us-east-1): %d %s" % (st, code))
check(outcome(lambda: b.delete_bucket(Bucket=BETA + "-empty"))[0] == 204, "tenant-b deletes it")

print("boto3 tenants: %d checks passed" % checks)
