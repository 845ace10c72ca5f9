#!/usr/bin/env python3
"""boto3_headers_check.py: Signature V4 covers every header a handler
reads, however many there are. A presigned PutObject URL sent with 64
filler headers and an unsigned x-amz-meta-*, x-amz-copy-source or
x-objlog-blob-id is refused (403) and stores nothing (a signed one too,
400: the endpoint names its blobs); an honest signed PUT
with 70 x-amz-meta-* headers is accepted with all 70; more headers than the
endpoint takes is 400 RequestHeaderSectionTooLarge before any handler.
Run by test_s3_clients:

    boto3_headers_check.py S3_URL JSON_URL

Exit 0 with "boto3 headers: N checks passed" on stdout."""
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3raw  # noqa: E402

S3_URL, JSON_URL = sys.argv[1], sys.argv[2]
BUCKET = "hdr-bucket"
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


s3 = boto3.client("s3", endpoint_url=S3_URL, aws_access_key_id="objlogtest",
                  aws_secret_access_key="objlogtest-secret", region_name="us-east-1",
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
s3.create_bucket(Bucket=BUCKET)
s3.put_object(Bucket=BUCKET, Key="source.txt", Body=b"the source")

fillers = {"x-filler-%02d" % i: "f" for i in range(64)}
for extra, what in [({"x-amz-meta-x": "smuggled"}, "user metadata"),
                    ({"x-amz-copy-source": "/%s/source.txt" % BUCKET}, "a copy source"),
                    ({"x-objlog-blob-id": "someone-elses-blob"}, "a blob id")]:
    url = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "p.txt"},
                                    ExpiresIn=300)
    for n in (0, 64):
        h = dict(list(fillers.items())[:n])
        h.update(extra)
        st, text, _ = s3raw.signed(S3_URL, "PUT", url[len(S3_URL):], b"body", h)
        check(st == 403 and "<Code>AccessDenied</Code>" in text and "not signed" in text,
              "presigned PUT with %d fillers and unsigned %s: %d %s" % (n, what, st, text))
        check(json_object("p.txt") == {"status": 404}, "nothing stored (%s, %d)" % (what, n))

# an honest client: 70 signed metadata headers, Authorization the 70-somethingth
meta = {"k%02d" % i: "v%d" % i for i in range(70)}
s3.put_object(Bucket=BUCKET, Key="many.txt", Body=b"m", Metadata=meta)
got = json_object("many.txt").get("user_metadata", {})
check(got == meta, "70 metadata headers kept: %d of them" % len(got))
check(s3.head_object(Bucket=BUCKET, Key="many.txt")["Metadata"] == meta, "HEAD gives all 70")

# signed with x-objlog-blob-id: this endpoint keeps the bytes and names
# its blobs itself, so a client's blob id is refused however it is signed
st, text, _ = s3raw.signed(S3_URL, "PUT", "/%s/blob.txt" % BUCKET, b"b",
                           {"x-objlog-blob-id": "blob-1"}, "objlogtest", "objlogtest-secret")
check(st == 400 and "<Code>InvalidArgument</Code>" in text and "x-objlog-blob-id" in text and "blob id" in text,
      "signed x-objlog-blob-id: %d %s" % (st, text))
check(json_object("blob.txt") == {"status": 404}, "nothing stored with a client's blob id")
st, text, _ = s3raw.signed(S3_URL, "PUT", "/%s/blob.txt" % BUCKET, b"b", {}, "objlogtest",
                           "objlogtest-secret")
blob = json_object("blob.txt").get("blob_id")
check(st == 200 and blob == "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d",
      "the store names the blob by the SHA-256 of its bytes: %d %r" % (st, blob))

# more headers than the endpoint takes: refused before anything reads them
h = {"x-filler-%03d" % i: "f" for i in range(201)}
st, text, _ = s3raw.signed(S3_URL, "PUT", "/%s/too-many.txt" % BUCKET, b"t", h, "objlogtest",
                           "objlogtest-secret")
check(st == 400 and "<Code>RequestHeaderSectionTooLarge</Code>" in text,
      "201 extra headers: %d %s" % (st, text))
check(json_object("too-many.txt") == {"status": 404}, "nothing stored past the header cap")

print("boto3 headers: %d checks passed" % checks)
