#!/usr/bin/env python3
"""put_storm.py: N concurrent PutObjects of random bytes, each key's SHA-256
written to ACKS (one "key sha256" line, flushed) as soon as its 200 arrives;
a PUT that fails (the endpoint killed under it) is counted, not retried.
Run by test_s3_bytes, which SIGKILLs objlogd while this runs:

    put_storm.py S3_URL BUCKET ACKS N SIZE

Prints "storm: A acknowledged, F failed" and exits 0."""
import hashlib
import os
import sys
import threading

import boto3
from botocore.config import Config

S3_URL, BUCKET, ACKS, N, SIZE = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
s3 = boto3.client("s3", endpoint_url=S3_URL, region_name="us-east-1",
                  aws_access_key_id="objlogtest", aws_secret_access_key="objlogtest-secret",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                max_pool_connections=N, connect_timeout=5, read_timeout=30))
lock = threading.Lock()
acks = open(ACKS, "w")
counts = {"ok": 0, "failed": 0}
go = threading.Event()


def one(i):
    body = os.urandom(SIZE)
    key = "storm/%03d" % i
    go.wait()
    try:
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    except Exception:
        with lock:
            counts["failed"] += 1
        return
    with lock:
        acks.write("%s %s\n" % (key, hashlib.sha256(body).hexdigest()))
        acks.flush()
        counts["ok"] += 1


threads = [threading.Thread(target=one, args=(i,)) for i in range(N)]
for t in threads:
    t.start()
go.set()
for t in threads:
    t.join()
acks.close()
print("storm: %d acknowledged, %d failed" % (counts["ok"], counts["failed"]))
