#!/usr/bin/env python3
"""s3auth_botocore.py: requests botocore signs for test_s3auth, at a fixed
time (2023-11-14T22:13:20Z) with the key AKIDRT / secret-rt, region
us-east-1, printed as one JSON array: name, method, path and query as they
would go on the wire, every header, the body. Exits 77 when botocore is not
importable (the test skips)."""
import datetime
import json
import sys
from urllib.parse import quote, urlsplit

try:
    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError:
    sys.exit(77)

NOW = datetime.datetime(2023, 11, 14, 22, 13, 20)


class FixedDatetime(datetime.datetime):
    @classmethod
    def utcnow(cls):
        return NOW

    @classmethod
    def now(cls, tz=None):
        return NOW.replace(tzinfo=tz) if tz else NOW


# Newer botocore asks get_current_datetime(), older datetime.datetime.utcnow().
if hasattr(botocore.auth, "get_current_datetime"):
    botocore.auth.get_current_datetime = lambda remove_tzinfo=True: NOW
botocore.auth.datetime.datetime = FixedDatetime

CREDS = Credentials("AKIDRT", "secret-rt")
HOST = "objlog.example:9000"


def url(key, query=""):
    u = "http://" + HOST + "/bucket/" + quote(key, safe="/~")
    return u + ("?" + query if query else "")


def signed(name, method, u, headers=None, body=b"", presign=0):
    req = AWSRequest(method=method, url=u, headers=headers or {}, data=body)
    if presign:
        botocore.auth.S3SigV4QueryAuth(CREDS, "s3", "us-east-1", expires=presign).add_auth(req)
    else:
        botocore.auth.S3SigV4Auth(CREDS, "s3", "us-east-1").add_auth(req)
    parts = urlsplit(req.url)
    hdrs = [["Host", HOST]] + [[k, v] for k, v in req.headers.items()]
    return {"name": name, "method": method, "path": parts.path, "query": parts.query,
            "headers": hdrs, "body": body.decode("latin-1")}


out = [
    signed("get", "GET", url("plain.txt")),
    signed("get, key with spaces, unicode, ~ and +", "GET",
           url("dir/a b/\u00fcber~x+y.txt", "versionId=3&partNumber=1")),
    signed("list", "GET", "http://" + HOST + "/bucket?" +
           "list-type=2&prefix=" + quote("a/b c", safe="-_.~") + "&delimiter=%2F&encoding-type=url"),
    signed("put with metadata", "PUT", url("obj"),
           {"Content-Type": "text/plain", "x-amz-meta-color": "  blue   green ",
            "x-amz-storage-class": "STANDARD"}, b"hello, world"),
    signed("delete-objects", "POST", "http://" + HOST + "/bucket?delete",
           {"Content-Type": "application/xml"}, b"<Delete><Object><Key>k</Key></Object></Delete>"),
    signed("presigned get", "GET", url("shared/file one.bin"), presign=300),
    signed("presigned put with query", "PUT", url("up.bin", "uploadId=u-1&partNumber=7"), presign=3600),
]
json.dump(out, sys.stdout)
