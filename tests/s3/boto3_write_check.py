#!/usr/bin/env python3
"""boto3_write_check.py: S3's writes beyond PutObject/DeleteObject through
boto3 (PutBucketVersioning, multipart, CopyObject, DeleteObjects), each
result compared with the JSON API, and S3's refusals of bad input sent raw
(signed with the bucket owner's key, tests/s3/s3raw.py). Run by test_s3_clients:

    boto3_write_check.py S3_URL JSON_URL BUCKET

Exit 0 with "boto3 writes: N checks passed" on stdout."""
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3raw  # noqa: E402

S3_URL, JSON_URL, BUCKET = sys.argv[1], sys.argv[2], sys.argv[3]
MIB = 1024 * 1024
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def json_get(path):
    with urllib.request.urlopen(JSON_URL + path) as r:
        return json.loads(r.read())


def json_object(key, version_id=None):
    q = "?version_id=" + version_id if version_id else ""
    return json_get("/v1/buckets/%s/objects/%s%s" % (BUCKET, urllib.parse.quote(key, safe=""), q))


def json_versions(key):
    got = json_get("/v1/buckets/%s/versions?prefix=%s" % (BUCKET, urllib.parse.quote(key, safe="")))
    return [v for v in got["versions"] if v["key"] == key]


def raw(method, path, body=b"", headers=None):
    """A request boto3 would not send, signed with the bucket owner's key:
    (status, body text)."""
    st, text, _ = s3raw.signed(S3_URL, method, path, body, headers, "objlogtest",
                               "objlogtest-secret")
    return st, text


def error_code(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return None


def md5_etag_of(parts):
    return "%s-%d" % (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest(),
                      len(parts))


s3 = boto3.client("s3", endpoint_url=S3_URL, aws_access_key_id="objlogtest",
                  aws_secret_access_key="objlogtest-secret", region_name="us-east-1",
                  config=Config(retries={"max_attempts": 0}))
s3.create_bucket(Bucket=BUCKET)

# --- PutBucketVersioning
check(s3.get_bucket_versioning(Bucket=BUCKET).get("Status") is None, "new bucket unversioned")
s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
check(s3.get_bucket_versioning(Bucket=BUCKET)["Status"] == "Enabled", "Enabled")
check(json_get("/v1/buckets/" + BUCKET)["versioning"] == "Enabled", "JSON says Enabled")
s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Suspended"})
check(json_get("/v1/buckets/" + BUCKET)["versioning"] == "Suspended", "JSON says Suspended")
s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
for body, why in [(b"<VersioningConfiguration><Status>On</Status></VersioningConfiguration>", "bad status"),
                  (b"<VersioningConfiguration><Status>Enabled</Status>", "unclosed"),
                  (b"", "empty"),
                  (b"<Other><Status>Enabled</Status></Other>", "wrong root"),
                  (b'<!DOCTYPE x [<!ENTITY a "Enabled">]><VersioningConfiguration><Status>&a;'
                   b"</Status></VersioningConfiguration>", "a DTD")]:
    st, text = raw("PUT", "/%s?versioning" % BUCKET, body)
    check(st == 400 and "<Code>MalformedXML</Code>" in text, "versioning %s: %d %s" % (why, st, text))
check(json_get("/v1/buckets/" + BUCKET)["versioning"] == "Enabled", "refusals changed nothing")

# --- multipart: 5 MiB, 5 MiB, 1 KiB
parts_data = [b"a" * (5 * MIB), b"b" * (5 * MIB), b"c" * 1024]
up = s3.create_multipart_upload(Bucket=BUCKET, Key="mp/obj", ContentType="text/mp",
                                Metadata={"Owner": "me"})
check(up["Bucket"] == BUCKET and up["Key"] == "mp/obj" and len(up["UploadId"]) == 16,
      "InitiateMultipartUploadResult %r" % up)
uid = up["UploadId"]
etags = []
for i, d in enumerate(parts_data):
    r = s3.upload_part(Bucket=BUCKET, Key="mp/obj", UploadId=uid, PartNumber=i + 1, Body=d)
    check(r["ETag"] == '"%s"' % hashlib.md5(d).hexdigest(), "part %d ETag %s" % (i + 1, r["ETag"]))
    etags.append(r["ETag"])
listed = json_get("/v1/buckets/%s/uploads/%s/parts?key=mp/obj" % (BUCKET, uid))
check([(p["part_number"], p["size"]) for p in listed["parts"]] ==
      [(1, 5 * MIB), (2, 5 * MIB), (3, 1024)], "JSON parts %r" % listed)
# the state machine's refusals
check(error_code(lambda: s3.complete_multipart_upload(
    Bucket=BUCKET, Key="mp/obj", UploadId=uid,
    MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": etags[1]},
                               {"PartNumber": 1, "ETag": etags[0]}]})) == "InvalidPartOrder",
      "InvalidPartOrder")
check(error_code(lambda: s3.complete_multipart_upload(
    Bucket=BUCKET, Key="mp/obj", UploadId=uid,
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etags[1]}]})) == "InvalidPart",
      "InvalidPart (etag of another part)")
check(error_code(lambda: s3.complete_multipart_upload(
    Bucket=BUCKET, Key="mp/obj", UploadId=uid,
    MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": etags[1]},
                               {"PartNumber": 4, "ETag": etags[2]}]})) == "InvalidPart",
      "InvalidPart (a part never uploaded)")
small = s3.create_multipart_upload(Bucket=BUCKET, Key="mp/small")["UploadId"]
e1 = s3.upload_part(Bucket=BUCKET, Key="mp/small", UploadId=small, PartNumber=1, Body=b"x")["ETag"]
e2 = s3.upload_part(Bucket=BUCKET, Key="mp/small", UploadId=small, PartNumber=2, Body=b"y")["ETag"]
check(error_code(lambda: s3.complete_multipart_upload(
    Bucket=BUCKET, Key="mp/small", UploadId=small,
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                               {"PartNumber": 2, "ETag": e2}]})) == "EntityTooSmall",
      "EntityTooSmall")
# complete
done = s3.complete_multipart_upload(
    Bucket=BUCKET, Key="mp/obj", UploadId=uid,
    MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
want_etag = md5_etag_of(parts_data)
check(done["ETag"] == '"%s"' % want_etag, "multipart ETag %s, want %s" % (done["ETag"], want_etag))
check(done["Bucket"] == BUCKET and done["Key"] == "mp/obj", "Complete names %r" % done)
check(done["Location"].endswith("/%s/mp/obj" % BUCKET), "Location %s" % done["Location"])
obj = json_object("mp/obj")
check(obj["etag"] == want_etag and obj["size"] == 10 * MIB + 1024, "JSON object %r" % obj)
check(obj["version_id"] == done["VersionId"], "version %s vs JSON %s" % (done["VersionId"], obj["version_id"]))
check(obj["content_type"] == "text/mp" and obj["user_metadata"] == {"owner": "me"}, "meta %r" % obj)
head = s3.head_object(Bucket=BUCKET, Key="mp/obj")
check(head["ETag"] == '"%s"' % want_etag and head["ContentLength"] == 10 * MIB + 1024, "HEAD %r" % head)
check(error_code(lambda: s3.complete_multipart_upload(
    Bucket=BUCKET, Key="mp/obj", UploadId=uid,
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etags[0]}]})) == "NoSuchUpload",
      "a completed upload is gone")
# If-Match / If-None-Match on Complete (raw: Debian's boto3 predates them)
up2 = s3.create_multipart_upload(Bucket=BUCKET, Key="mp/obj")["UploadId"]
p1 = s3.upload_part(Bucket=BUCKET, Key="mp/obj", UploadId=up2, PartNumber=1, Body=b"z")["ETag"]
complete_xml = ("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
                "</CompleteMultipartUpload>" % p1.replace('"', "&quot;")).encode()
for hdr in [{"If-Match": '"%s"' % ("0" * 32)}, {"If-None-Match": "*"}]:
    st, text = raw("POST", "/%s/mp/obj?uploadId=%s" % (BUCKET, up2), complete_xml, hdr)
    check(st == 412 and "<Code>PreconditionFailed</Code>" in text, "Complete %r: %d %s" % (hdr, st, text))
st, text = raw("POST", "/%s/mp/obj?uploadId=%s" % (BUCKET, up2), complete_xml,
               {"If-Match": '"%s"' % want_etag})
check(st == 200 and "<ETag>&quot;%s&quot;</ETag>" % md5_etag_of([b"z"]) in text,
      "If-Match current: %d %s" % (st, text))
check(len(json_versions("mp/obj")) == 2, "two versions of mp/obj")
# abort
up3 = s3.create_multipart_upload(Bucket=BUCKET, Key="mp/aborted")["UploadId"]
r = s3.abort_multipart_upload(Bucket=BUCKET, Key="mp/aborted", UploadId=up3)
check(r["ResponseMetadata"]["HTTPStatusCode"] == 204, "abort 204")
check(error_code(lambda: s3.upload_part(Bucket=BUCKET, Key="mp/aborted", UploadId=up3,
                                        PartNumber=1, Body=b"q")) == "NoSuchUpload",
      "part of an aborted upload")
check(error_code(lambda: s3.abort_multipart_upload(Bucket=BUCKET, Key="mp/aborted",
                                                   UploadId="nonsense")) == "NoSuchUpload",
      "abort of an id never given")
# bad part numbers and Complete bodies, raw
up4 = s3.create_multipart_upload(Bucket=BUCKET, Key="mp/raw")["UploadId"]
for pn in ["0", "10001", "-1", "x", "1.5"]:
    st, text = raw("PUT", "/%s/mp/raw?partNumber=%s&uploadId=%s" % (BUCKET, pn, up4), b"d")
    check(st == 400 and "<Code>InvalidArgument</Code>" in text, "partNumber %s: %d %s" % (pn, st, text))
st, _ = raw("PUT", "/%s/mp/raw?partNumber=10000&uploadId=%s" % (BUCKET, up4), b"d")
check(st == 200, "partNumber 10000 accepted")
for body, code, why in [
        (b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>",
         "MalformedXML", "a Part without ETag"),
        (b"<CompleteMultipartUpload></CompleteMultipartUpload>", "MalformedXML", "no Part"),
        (b"<CompleteMultipartUpload><Part>", "MalformedXML", "unclosed"),
        (b"<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>x</ETag></Part>"
         b"</CompleteMultipartUpload>", "MalformedXML", "part number 0"),
        (b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>notanmd5</ETag></Part>"
         b"</CompleteMultipartUpload>", "InvalidPart", "an etag that is no MD5")]:
    st, text = raw("POST", "/%s/mp/raw?uploadId=%s" % (BUCKET, up4), body)
    check(st == 400 and "<Code>%s</Code>" % code in text, "Complete %s: %d %s" % (why, st, text))

# --- CopyObject
src = s3.put_object(Bucket=BUCKET, Key="src/a b+c.txt", Body=b"copy me", ContentType="text/src",
                    Metadata={"colour": "blue"}, StorageClass="STANDARD_IA")
src_md5 = hashlib.md5(b"copy me").hexdigest()
c = s3.copy_object(Bucket=BUCKET, Key="dst/one", CopySource={"Bucket": BUCKET, "Key": "src/a b+c.txt"})
check(c["CopyObjectResult"]["ETag"] == '"%s"' % src_md5, "copy ETag %r" % c)
check(c["CopySourceVersionId"] == src["VersionId"], "CopySourceVersionId")
d = json_object("dst/one")
check(d["version_id"] == c["VersionId"] and d["etag"] == src_md5 and d["size"] == 7, "JSON copy %r" % d)
check(d["content_type"] == "text/src" and d["user_metadata"] == {"colour": "blue"} and
      d["storage_class"] == "STANDARD_IA", "COPY keeps metadata %r" % d)
check(int(c["CopyObjectResult"]["LastModified"].timestamp()) ==
      int(s3.head_object(Bucket=BUCKET, Key="dst/one")["LastModified"].timestamp()), "LastModified")
# REPLACE, an older version by id, another bucket as source
s3.put_object(Bucket=BUCKET, Key="src/a b+c.txt", Body=b"newer")
s3.create_bucket(Bucket=BUCKET + "-other")
c2 = s3.copy_object(Bucket=BUCKET + "-other", Key="x", MetadataDirective="REPLACE",
                    ContentType="text/new", Metadata={"k": "v"},
                    CopySource={"Bucket": BUCKET, "Key": "src/a b+c.txt", "VersionId": src["VersionId"]})
x = json_get("/v1/buckets/%s-other/objects/x" % BUCKET)
check(x["etag"] == src_md5 and x["content_type"] == "text/new" and x["user_metadata"] == {"k": "v"},
      "REPLACE from an old version in another bucket %r" % x)
check(c2["CopySourceVersionId"] == src["VersionId"], "copy source version named")
# copy-source conditions
for kw in [{"CopySourceIfMatch": '"%s"' % ("0" * 32)}, {"CopySourceIfNoneMatch": '"%s"' % hashlib.md5(b"newer").hexdigest()},
           {"CopySourceIfModifiedSince": "2999-01-01T00:00:00Z"},
           {"CopySourceIfUnmodifiedSince": "2000-01-01T00:00:00Z"}]:
    check(error_code(lambda: s3.copy_object(Bucket=BUCKET, Key="dst/two",
                                            CopySource={"Bucket": BUCKET, "Key": "src/a b+c.txt"},
                                            **kw)) == "PreconditionFailed", "412 for %r" % kw)
c3 = s3.copy_object(Bucket=BUCKET, Key="dst/two", CopySource={"Bucket": BUCKET, "Key": "src/a b+c.txt"},
                    CopySourceIfMatch='"%s"' % hashlib.md5(b"newer").hexdigest())
check(json_object("dst/two")["etag"] == hashlib.md5(b"newer").hexdigest(), "if-match holds: copied")
check(error_code(lambda: s3.copy_object(Bucket=BUCKET, Key="dst/three",
                                        CopySource={"Bucket": BUCKET, "Key": "no/such"})) == "NoSuchKey",
      "copy of a missing key")
check(error_code(lambda: s3.copy_object(Bucket=BUCKET, Key="dst/one",
                                        CopySource={"Bucket": BUCKET, "Key": "dst/one"})) == "InvalidRequest",
      "copy onto itself without a change")

# --- Object tags (x-amz-tagging): PutObject, CopyObject (COPY and REPLACE),
# CreateMultipartUpload; GetObject's TagCount; the JSON API shows them
s3.put_object(Bucket=BUCKET, Key="tag/a", Body=b"t", Tagging="team=blue%20sky&cost=&x%2By=1")
check(json_object("tag/a")["tags"] == {"team": "blue sky", "cost": "", "x+y": "1"},
      "tags through x-amz-tagging %r" % json_object("tag/a")["tags"])
st, _, hdrs = s3raw.signed(S3_URL, "HEAD", "/%s/tag/a" % BUCKET, b"", None, "objlogtest",
                           "objlogtest-secret")
check(st == 200 and hdrs.get("x-amz-tagging-count") == "3", "x-amz-tagging-count %r" % hdrs)
s3.copy_object(Bucket=BUCKET, Key="tag/b", CopySource={"Bucket": BUCKET, "Key": "tag/a"})
check(json_object("tag/b")["tags"] == {"team": "blue sky", "cost": "", "x+y": "1"}, "COPY keeps tags")
s3.copy_object(Bucket=BUCKET, Key="tag/c", CopySource={"Bucket": BUCKET, "Key": "tag/a"},
               TaggingDirective="REPLACE", Tagging="only=one")
check(json_object("tag/c")["tags"] == {"only": "one"}, "REPLACE sets tags")
up = s3.create_multipart_upload(Bucket=BUCKET, Key="tag/mp", Tagging="m=1")["UploadId"]
part = s3.upload_part(Bucket=BUCKET, Key="tag/mp", UploadId=up, PartNumber=1, Body=b"p")
s3.complete_multipart_upload(Bucket=BUCKET, Key="tag/mp", UploadId=up, MultipartUpload={
    "Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
check(json_object("tag/mp")["tags"] == {"m": "1"}, "multipart keeps the upload's tags")
too_many = "&".join("k%d=v" % i for i in range(11))
for tagging, code in [(too_many, "BadRequest"), ("a=1&a=2", "InvalidTag"), ("=v", "InvalidTag"),
                      ("k" * 129 + "=v", "InvalidArgument")]:
    st, text = raw("PUT", "/%s/tag/bad" % BUCKET, b"x", {"x-amz-tagging": tagging})
    check(st == 400 and "<Code>%s</Code>" % code in text, "tagging %r: %d %s" % (tagging[:20], st, text))
check(error_code(lambda: s3.get_object(Bucket=BUCKET, Key="tag/bad")) == "NoSuchKey", "bad tags write nothing")

# --- subresources objlog does not serve: 501, never the method's plain
# operation (DeleteBucketPolicy must not delete the bucket, PutObjectRetention
# must not overwrite the object)
s3.create_bucket(Bucket=BUCKET + "-empty")
for method, path in [("DELETE", "/%s-empty?policy" % BUCKET), ("GET", "/%s?cors" % BUCKET),
                     ("PUT", "/%s?cors" % BUCKET), ("PUT", "/%s/tag/a?retention" % BUCKET),
                     ("PUT", "/%s/tag/a?legal-hold" % BUCKET),
                     ("GET", "/%s/tag/a?attributes" % BUCKET)]:
    st, text = raw(method, path, b"<Retention/>" if method == "PUT" else b"")
    check(st == 501 and "<Code>NotImplemented</Code>" in text, "%s %s: %d %s" % (method, path, st, text))
check(s3.head_bucket(Bucket=BUCKET + "-empty")["ResponseMetadata"]["HTTPStatusCode"] == 200,
      "DELETE ?policy left the bucket")
check(json_object("tag/a")["tags"] == {"team": "blue sky", "cost": "", "x+y": "1"},
      "PUT ?retention left the object")
check(error_code(lambda: s3.delete_bucket_policy(Bucket=BUCKET + "-empty")) == "NotImplemented",
      "boto3 delete_bucket_policy")
check(error_code(lambda: s3.get_bucket_cors(Bucket=BUCKET)) == "NotImplemented",
      "boto3 get_bucket_cors")
s3.delete_bucket(Bucket=BUCKET + "-empty")

# --- DeleteObjects
for k in ["del/a", "del/b", "del/c"]:
    s3.put_object(Bucket=BUCKET, Key=k, Body=b"d")
va = json_object("del/a")["version_id"]
r = s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [
    {"Key": "del/a", "VersionId": va}, {"Key": "del/b"}, {"Key": "del/none"},
    {"Key": "del/c", "VersionId": "zzzz"}]})
deleted = {d["Key"]: d for d in r.get("Deleted", [])}
errors = {e["Key"]: e for e in r.get("Errors", [])}
check(sorted(deleted) == ["del/a", "del/b", "del/none"], "Deleted %r" % r)
check(deleted["del/a"].get("VersionId") == va and not deleted["del/a"].get("DeleteMarker"),
      "a version deleted %r" % deleted["del/a"])
vb = json_versions("del/b")
check(len(vb) == 2 and vb[0]["delete_marker"] and deleted["del/b"]["DeleteMarker"] and
      deleted["del/b"]["DeleteMarkerVersionId"] == vb[0]["version_id"], "marker %r vs %r" % (deleted["del/b"], vb))
check(json_versions("del/a") == [], "del/a has no versions left")
check(list(errors) == ["del/c"] and errors["del/c"]["Code"] == "InvalidArgument", "Errors %r" % errors)
check(len(json_versions("del/c")) == 1, "del/c untouched")
# quiet: only errors
r = s3.delete_objects(Bucket=BUCKET, Delete={"Quiet": True, "Objects": [
    {"Key": "del/c"}, {"Key": "del/x", "VersionId": "bad"}]})
check("Deleted" not in r and [e["Key"] for e in r["Errors"]] == ["del/x"], "quiet %r" % r)
check(json_versions("del/c")[0]["delete_marker"], "quiet delete did delete")
# 1000 keys are one request; 1001 are MalformedXML
many = [{"Key": "many/%04d" % i} for i in range(1000)]
r = s3.delete_objects(Bucket=BUCKET, Delete={"Objects": many})
check(len(r["Deleted"]) == 1000 and "Errors" not in r, "1000 deletes")
check(error_code(lambda: s3.delete_objects(Bucket=BUCKET, Delete={"Objects": many + [{"Key": "one-more"}]}))
      == "MalformedXML", "1001 keys")
for body, why in [(b"<Delete></Delete>", "no Object"), (b"<Delete><Object></Object></Delete>", "no Key"),
                  (b"<Delete><Object><Key>a</Key>", "unclosed"), (b"not xml", "not XML")]:
    st, text = raw("POST", "/%s?delete" % BUCKET, body)
    check(st == 400 and "<Code>MalformedXML</Code>" in text, "Delete %s: %d %s" % (why, st, text))
st, text = raw("POST", "/%s?delete" % BUCKET, b"<Delete><Object><Key>a</Key></Object></Delete>",
               {"Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="})
check(st == 400 and "<Code>BadDigest</Code>" in text, "Content-MD5 checked: %d %s" % (st, text))
st, text = raw("POST", "/no-such-bucket-w?delete", b"<Delete><Object><Key>a</Key></Object></Delete>")
check(st == 200 and "<Code>NoSuchBucket</Code>" in text, "per-key NoSuchBucket: %d %s" % (st, text))

print("boto3 writes: %d checks passed" % checks)
