#!/usr/bin/env python3
"""redirect_check.py: objlogd --s3-blob-url: a frontend keeps the bytes
(here a blob server the test runs, serving WWW), objlog the metadata.
GetObject answers one 307: an empty body, one Content-Length (0), every
template field filled ({blob_id}: the body's SHA-256 when the PUT named
none); an HTTP client that follows it gets the bytes; boto3 (which follows
only S3's own region redirects) gets a clean 307 error, not a broken
message. Run by test_s3_bytes:

    redirect_check.py S3_URL WWW BLOB_URL_PREFIX

Exit 0 with "redirect: N checks passed"."""
import hashlib
import http.client
import os
import sys
import urllib.parse
import urllib.request

import boto3
import botocore
from botocore.config import Config

S3_URL, WWW, PREFIX = sys.argv[1], sys.argv[2], sys.argv[3]
BUCKET, KEY = "redir-bucket", "dir/one two.txt"
BODY = b"bytes a frontend keeps\n"
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


s3 = boto3.client("s3", endpoint_url=S3_URL, region_name="us-east-1",
                  aws_access_key_id="objlogtest", aws_secret_access_key="objlogtest-secret",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                signature_version="s3v4"))
s3.create_bucket(Bucket=BUCKET)
s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)
os.makedirs(os.path.join(WWW, BUCKET, "dir"), exist_ok=True)
with open(os.path.join(WWW, BUCKET, KEY), "wb") as f:  # what the frontend wrote
    f.write(BODY)

sha = hashlib.sha256(BODY).hexdigest()
want = "%s/%s/dir/one%%20two.txt?blob=%s&version=null" % (PREFIX, BUCKET, sha)
url = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": KEY},
                                ExpiresIn=300)
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port)
conn.request("GET", u.path + "?" + u.query)
r = conn.getresponse()
body = r.read()
lengths = [v for k, v in r.getheaders() if k.lower() == "content-length"]
check(r.status == 307, "GetObject: %d" % r.status)
check(lengths == ["0"] and body == b"", "one Content-Length, 0, no body: %r %r" % (lengths, body))
check(r.getheader("Location") == want, "Location %r, want %r" % (r.getheader("Location"), want))
check(r.getheader("ETag") == '"%s"' % hashlib.md5(BODY).hexdigest(), "the object's ETag")
conn.close()

# an HTTP client that follows redirects: the frontend's bytes
with urllib.request.urlopen(url) as f:
    check(f.read() == BODY, "followed to the blob server: the bytes")

# HEAD answers from the metadata alone
h = s3.head_object(Bucket=BUCKET, Key=KEY)
check(h["ContentLength"] == len(BODY), "HEAD: the size")

# boto3: a clean 307, named as such
try:
    s3.get_object(Bucket=BUCKET, Key=KEY)
    check(False, "boto3 followed a redirect to another host")
except botocore.exceptions.ClientError as e:
    check(e.response["ResponseMetadata"]["HTTPStatusCode"] == 307, "boto3: %r" % e.response)
print("redirect: %d checks passed" % checks)
