#!/usr/bin/env python3
"""cluster_check.py: every node of a cluster answers S3 for every bucket.
Buckets land on the partitions of different nodes; each is read through
every node. A node that does not apply a bucket's partition sends the
request on to the node that does (X-Objlog-Forwarded-By names the entry
node, X-Objlog-Node the one that answered): with no standbys exactly two
of three nodes forward each bucket's reads. Through every node: GET whole
and ranged (206, 416), HEAD (the object's Content-Length kept across the
hop), conditional GETs (304, 412), NoSuchKey, listings, a 64 MiB object
streamed across the hop byte for byte, writes (small and streamed, over
1 MiB) to buckets another node applies (the owner check is asked of that
node), and another tenant's key refused with AccessDenied for reads,
small writes and streamed writes alike. Run by test_s3_cluster:

    cluster_check.py S3_URL,S3_URL,S3_URL

Keys (the test's credentials file): objlogtest (tenant-a), other
(tenant-b). Exit 0 with "s3 cluster: N checks passed" on stdout."""
import hashlib
import os
import sys

import boto3
import botocore
from botocore.config import Config

NODES = sys.argv[1].split(",")
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def client(url, key, secret):
    return boto3.client(
        "s3", endpoint_url=url, region_name="us-east-1",
        aws_access_key_id=key, aws_secret_access_key=secret,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))


def error_of(call):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None, 200


def headers(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"]


owners = [client(u, "objlogtest", "objlogtest-secret") for u in NODES]
others = [client(u, "other", "other-secret") for u in NODES]
# Names that differ in their first letter: the bucket hash spreads those
# over the partitions (names that differ only at the end share one).
BUCKETS = ["%s-clu" % c for c in "afkpuz"]
small = b"objlog cluster " * 100
for i, b in enumerate(BUCKETS):
    owners[i % len(NODES)].create_bucket(Bucket=b)
    owners[(i + 1) % len(NODES)].put_object(Bucket=b, Key="k", Body=small)

# Who answers: the bucket's node answers itself; the two others forward.
spread = set()
for b in BUCKETS:
    forwarded, answered_by = 0, set()
    for i, s3 in enumerate(owners):
        r = s3.get_object(Bucket=b, Key="k")
        check(r["Body"].read() == small, "%s/k through node %d" % (b, i))
        h = headers(r)
        answered_by.add(h.get("x-objlog-node"))
        if "x-objlog-forwarded-by" in h:
            forwarded += 1
    check(forwarded == len(NODES) - 1,
          "%s: %d of %d nodes forwarded (one node applies it)" % (b, forwarded, len(NODES)))
    check(len(answered_by) == 1, "%s answered by one node: %s" % (b, answered_by))
    spread |= answered_by
check(len(spread) >= 2, "the buckets are applied by %d nodes" % len(spread))

# Reads through every node.
for i, s3 in enumerate(owners):
    for b in BUCKETS:
        r = s3.get_object(Bucket=b, Key="k", Range="bytes=7-13")
        check(r["ResponseMetadata"]["HTTPStatusCode"] == 206 and
              r["Body"].read() == small[7:14] and
              r["ContentRange"] == "bytes 7-13/%d" % len(small), "range via %d" % i)
        check(error_of(lambda: s3.get_object(Bucket=b, Key="k", Range="bytes=99999-")) ==
              ("InvalidRange", 416), "416 via %d" % i)
        h = s3.head_object(Bucket=b, Key="k")
        check(h["ContentLength"] == len(small), "HEAD length via %d: %s" %
              (i, h["ContentLength"]))
        etag = h["ETag"]
        check(error_of(lambda: s3.get_object(Bucket=b, Key="k", IfNoneMatch=etag)) ==
              ("304", 304), "304 via %d" % i)
        check(error_of(lambda: s3.get_object(Bucket=b, Key="k", IfMatch='"0"')) ==
              ("PreconditionFailed", 412), "412 via %d" % i)
        check(error_of(lambda: s3.get_object(Bucket=b, Key="nope")) == ("NoSuchKey", 404),
              "NoSuchKey via %d" % i)
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", [])]
        check(keys[:1] == ["k"], "list via %d: %s" % (i, keys))

# Writes through every node to every bucket, small and streamed (2 MiB),
# read back through the next node.
big = os.urandom(2 << 20)
for i, s3 in enumerate(owners):
    nxt = owners[(i + 1) % len(NODES)]
    for b in BUCKETS:
        key = "w-%d" % i
        s3.put_object(Bucket=b, Key=key, Body=small)
        s3.put_object(Bucket=b, Key=key + "-big", Body=big)
        check(nxt.get_object(Bucket=b, Key=key)["Body"].read() == small, "w %s" % key)
        check(nxt.get_object(Bucket=b, Key=key + "-big")["Body"].read() == big,
              "streamed %s/%s" % (b, key))

# Another tenant's key: refused through every node, nothing written.
for i, s3 in enumerate(others):
    for b in BUCKETS:
        check(error_of(lambda: s3.get_object(Bucket=b, Key="k")) == ("AccessDenied", 403),
              "other GET via %d" % i)
        check(error_of(lambda: s3.put_object(Bucket=b, Key="x", Body=b"x")) ==
              ("AccessDenied", 403), "other PUT via %d" % i)
        check(error_of(lambda: s3.put_object(Bucket=b, Key="x-big", Body=big)) ==
              ("AccessDenied", 403), "other streamed PUT via %d" % i)
    check(error_of(lambda: owners[0].head_object(Bucket=BUCKETS[0], Key="x")) ==
          ("404", 404), "nothing written by the other tenant")

# Canned ACLs across nodes: an anonymous caller (signed between nodes as
# "anon") reads a public-read object and writes a public-read-write bucket
# through every node, and nothing else.
anons = [boto3.client("s3", endpoint_url=u, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"max_attempts": 1},
                                    signature_version=botocore.UNSIGNED)) for u in NODES]
owners[0].put_object(Bucket=BUCKETS[2], Key="pub", Body=b"public", ACL="public-read")
owners[0].put_bucket_acl(Bucket=BUCKETS[3], ACL="public-read-write")
for i, a in enumerate(anons):
    check(a.get_object(Bucket=BUCKETS[2], Key="pub")["Body"].read() == b"public",
          "anonymous public-read via %d" % i)
    check(error_of(lambda: a.get_object(Bucket=BUCKETS[2], Key="k")) == ("AccessDenied", 403),
          "anonymous private via %d" % i)
    check(error_of(lambda: a.put_object(Bucket=BUCKETS[2], Key="w", Body=b"w")) ==
          ("AccessDenied", 403), "anonymous write to a private bucket via %d" % i)
    a.put_object(Bucket=BUCKETS[3], Key="anon-%d" % i, Body=big)
    check(owners[(i + 1) % len(NODES)].get_object(Bucket=BUCKETS[3], Key="anon-%d" % i)["Body"]
          .read() == big, "an anonymous streamed write to a public-read-write bucket via %d" % i)

# 64 MiB through every node: the nodes that forward stream it.
huge = os.urandom(64 << 20)
owners[0].put_object(Bucket=BUCKETS[1], Key="huge", Body=huge)
want = hashlib.sha256(huge).hexdigest()
for i, s3 in enumerate(owners):
    r = s3.get_object(Bucket=BUCKETS[1], Key="huge")
    got = hashlib.sha256()
    n = 0
    for piece in r["Body"].iter_chunks(1 << 20):
        got.update(piece)
        n += len(piece)
    check(n == len(huge) and got.hexdigest() == want, "64 MiB via %d: %d bytes" % (i, n))

print("s3 cluster: %d checks passed" % checks)
