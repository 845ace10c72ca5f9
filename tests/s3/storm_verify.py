#!/usr/bin/env python3
"""storm_verify.py: every object put_storm.py saw acknowledged reads back
byte for byte (its SHA-256), and its blob is in the blob directory.

    storm_verify.py S3_URL ACKS BLOB_DIR

Prints "verify: N acknowledged objects read back" and exits 0, or raises."""
import hashlib
import os
import sys

import boto3
from botocore.config import Config

S3_URL, ACKS, BLOB_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
s3 = boto3.client("s3", endpoint_url=S3_URL, region_name="us-east-1",
                  aws_access_key_id="objlogtest", aws_secret_access_key="objlogtest-secret",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}))
n = 0
for line in open(ACKS):
    key, sha = line.split()
    if not os.path.exists(os.path.join(BLOB_DIR, sha[:2], sha)):
        raise AssertionError("the blob of acknowledged %s (%s) is missing" % (key, sha))
    got = hashlib.sha256(s3.get_object(Bucket="storm-bucket", Key=key)["Body"].read()).hexdigest()
    if got != sha:
        raise AssertionError("%s reads back as %s, acknowledged as %s" % (key, got, sha))
    n += 1
print("verify: %d acknowledged objects read back" % n)
