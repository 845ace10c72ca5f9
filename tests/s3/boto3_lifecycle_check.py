#!/usr/bin/env python3
"""boto3_lifecycle_check.py: S3's bucket lifecycle subresource
through boto3: PutBucketLifecycleConfiguration with every filter
form and every action, GetBucketLifecycleConfiguration giving back what was
put, the JSON API showing the same rules (the ones the lifecycle worker
uses), an S3-configured rule expiring an object, DeleteBucketLifecycle; and
S3's refusals of bad input sent raw (signed with the bucket owner's key,
tests/s3/s3raw.py), each with its exact code. Run by test_s3_lifecycle:

    boto3_lifecycle_check.py S3_URL JSON_URL BUCKET

The objlogd runs its lifecycle worker every 200 ms with a clock two days
ahead (--test-lifecycle-clock-offset-ms), so a 1-day rule is due at once.
Exit 0 with "boto3 lifecycle: N checks passed" on stdout."""
import base64
import datetime
import hashlib
import json
import os
import sys
import time
import urllib.error
import urllib.request

import boto3
import botocore
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3raw  # noqa: E402

S3_URL, JSON_URL, BUCKET = sys.argv[1], sys.argv[2], sys.argv[3]
UTC = datetime.timezone.utc
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def json_call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(JSON_URL + path, data=data, method=method)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


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


s3 = boto3.client("s3", endpoint_url=S3_URL, aws_access_key_id="objlogtest",
                  aws_secret_access_key="objlogtest-secret", region_name="us-east-1",
                  config=Config(retries={"max_attempts": 0}))
s3.create_bucket(Bucket=BUCKET)
LC = "/%s?lifecycle" % BUCKET

check(error_code(lambda: s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)) ==
      "NoSuchLifecycleConfiguration", "no configuration yet")
check(error_code(lambda: s3.get_bucket_lifecycle_configuration(Bucket="no-such-lc-bucket")) ==
      "NoSuchBucket", "GET on a missing bucket")
check(error_code(lambda: s3.put_bucket_lifecycle_configuration(
    Bucket="no-such-lc-bucket", LifecycleConfiguration={"Rules": [
        {"ID": "x", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 1}}]})) ==
      "NoSuchBucket", "PUT on a missing bucket")

# --- every filter form, every action
DATE = datetime.datetime(2030, 1, 1, tzinfo=UTC)
RULES = [
    {"ID": "prefix-days", "Filter": {"Prefix": "logs/"}, "Status": "Enabled",
     "Expiration": {"Days": 30}},
    {"ID": "tag-date", "Filter": {"Tag": {"Key": "class", "Value": "tmp"}}, "Status": "Enabled",
     "Expiration": {"Date": DATE},
     "NoncurrentVersionExpiration": {"NoncurrentDays": 7, "NewerNoncurrentVersions": 2}},
    {"ID": "bigger", "Filter": {"ObjectSizeGreaterThan": 1048576}, "Status": "Enabled",
     "Expiration": {"Days": 10}},
    {"ID": "smaller", "Filter": {"ObjectSizeLessThan": 100}, "Status": "Disabled",
     "NoncurrentVersionExpiration": {"NoncurrentDays": 3}},
    {"ID": "and-all", "Filter": {"And": {"Prefix": "a/", "Tags": [
        {"Key": "t1", "Value": "x"}, {"Key": "t2", "Value": ""}],
        "ObjectSizeGreaterThan": 5, "ObjectSizeLessThan": 500}},
     "Status": "Enabled", "Expiration": {"Days": 1}},
    {"ID": "and-tags", "Filter": {"And": {"Tags": [
        {"Key": "t1", "Value": "y"}, {"Key": "t3", "Value": "z"}]}},
     "Status": "Enabled", "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
    {"ID": "legacy-prefix", "Prefix": "tmp/", "Status": "Enabled",
     "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}},
    {"ID": "markers", "Filter": {}, "Status": "Enabled",
     "Expiration": {"ExpiredObjectDeleteMarker": True}},
    {"ID": "all-uploads", "Filter": {"Prefix": ""}, "Status": "Enabled",
     "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}},
    {"Filter": {"Prefix": "noid/"}, "Status": "Enabled", "Expiration": {"Days": 2}},
]
s3.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration={"Rules": RULES})
got = s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"]
check(len(got) == len(RULES), "rule count %d" % len(got))
gen_id = got[-1]["ID"]
check(len(gen_id) == 32 and all(ch in "0123456789abcdef" for ch in gen_id),
      "a rule without ID got one: %r" % gen_id)
want = [dict(r) for r in RULES]
want[-1]["ID"] = gen_id
for w, g in zip(want, got):
    check(w == g, "rule round trip:\n put %r\n got %r" % (w, g))

# the JSON API (what the lifecycle worker reads) has the same rules
st, js = json_call("GET", "/v1/buckets/%s/lifecycle" % BUCKET)
check(st == 200, "JSON GET %d" % st)
check(js["rules"] == [
    {"id": "prefix-days", "status": "Enabled", "filter": {"prefix": "logs/"},
     "expiration": {"days": 30}},
    {"id": "tag-date", "status": "Enabled", "filter": {"tags": {"class": "tmp"}},
     "expiration": {"date": "2030-01-01"},
     "noncurrent_version_expiration": {"noncurrent_days": 7, "newer_noncurrent_versions": 2}},
    {"id": "bigger", "status": "Enabled", "filter": {"size_greater_than": 1048576},
     "expiration": {"days": 10}},
    {"id": "smaller", "status": "Disabled", "filter": {"size_less_than": 100},
     "noncurrent_version_expiration": {"noncurrent_days": 3, "newer_noncurrent_versions": 0}},
    {"id": "and-all", "status": "Enabled", "filter": {
        "prefix": "a/", "tags": {"t1": "x", "t2": ""}, "size_greater_than": 5,
        "size_less_than": 500}, "expiration": {"days": 1}},
    {"id": "and-tags", "status": "Enabled", "filter": {"tags": {"t1": "y", "t3": "z"}},
     "noncurrent_version_expiration": {"noncurrent_days": 1, "newer_noncurrent_versions": 0}},
    {"id": "legacy-prefix", "status": "Enabled", "filter": {"prefix": "tmp/"},
     "abort_incomplete_multipart_upload": {"days_after_initiation": 2}},
    {"id": "markers", "status": "Enabled", "filter": {},
     "expiration": {"expired_object_delete_marker": True}},
    {"id": "all-uploads", "status": "Enabled", "filter": {},
     "abort_incomplete_multipart_upload": {"days_after_initiation": 7}},
    {"id": gen_id, "status": "Enabled", "filter": {"prefix": "noid/"},
     "expiration": {"days": 2}},
], "JSON rules %r" % js["rules"])

# a JSON-written configuration reads back through S3 (one condition alone,
# several in And); a user-metadata filter has no S3 form: 501, not a
# wider filter
st, _ = json_call("PUT", "/v1/buckets/%s/lifecycle" % BUCKET, {"rules": [
    {"id": "j1", "status": "Enabled", "filter": {"prefix": "p/", "size_less_than": 9},
     "expiration": {"days": 4}},
    {"id": "j2", "status": "Enabled", "expiration": {"days": 5}}]})
check(st == 200, "JSON PUT %d" % st)
check(s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"] == [
    {"ID": "j1", "Filter": {"And": {"Prefix": "p/", "ObjectSizeLessThan": 9}},
     "Status": "Enabled", "Expiration": {"Days": 4}},
    {"ID": "j2", "Filter": {"Prefix": ""}, "Status": "Enabled", "Expiration": {"Days": 5}}],
      "JSON rules through S3")
st, _ = json_call("PUT", "/v1/buckets/%s/lifecycle" % BUCKET, {"rules": [
    {"id": "meta", "status": "Enabled", "filter": {"user_metadata": {"owner": "me"}},
     "expiration": {"days": 4}}]})
check(st == 200, "JSON PUT with metadata %d" % st)
st, text = raw("GET", LC)
check(st == 501 and "<Code>NotImplemented</Code>" in text and "user metadata" in text,
      "metadata filter through S3: %d %s" % (st, text))

# --- refusals, raw, each with S3's code; none changes the configuration
s3.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration={"Rules": RULES[:2]})


def doc(*rules):
    return ("<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">%s"
            "</LifecycleConfiguration>" % "".join(rules)).encode()


def rule(body, rid="r", filt="<Filter></Filter>", status="Enabled"):
    return "<Rule><ID>%s</ID>%s<Status>%s</Status>%s</Rule>" % (rid, filt, status, body)


EXP1 = "<Expiration><Days>1</Days></Expiration>"
TAG = "<Tag><Key>k</Key><Value>v</Value></Tag>"
CASES = [
    # (why, body, status, code)
    ("empty body", b"", 400, "MalformedXML"),
    ("not XML", b"<LifecycleConfiguration><Rule>", 400, "MalformedXML"),
    ("wrong root", b"<VersioningConfiguration/>", 400, "MalformedXML"),
    ("no rule", doc(), 400, "MalformedXML"),
    ("DTD", b'<!DOCTYPE x [<!ENTITY a "1">]>' + doc(rule(
        "<Expiration><Days>&a;</Days></Expiration>")), 400, "MalformedXML"),
    ("no status", doc("<Rule><ID>r</ID><Filter/>%s</Rule>" % EXP1), 400, "MalformedXML"),
    ("bad status", doc(rule(EXP1, status="On")), 400, "MalformedXML"),
    ("no filter", doc(rule(EXP1, filt="")), 400, "MalformedXML"),
    ("filter and prefix", doc(rule(EXP1, filt="<Prefix>a</Prefix><Filter/>")), 400,
     "MalformedXML"),
    ("two conditions", doc(rule(EXP1, filt="<Filter><Prefix>a</Prefix>%s</Filter>" % TAG)),
     400, "MalformedXML"),
    ("And with one", doc(rule(EXP1, filt="<Filter><And>%s</And></Filter>" % TAG)), 400,
     "MalformedXML"),
    ("Days and Date", doc(rule("<Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z"
                               "</Date></Expiration>")), 400, "MalformedXML"),
    ("empty Expiration", doc(rule("<Expiration></Expiration>")), 400, "MalformedXML"),
    ("Days not a number", doc(rule("<Expiration><Days>ten</Days></Expiration>")), 400,
     "MalformedXML"),
    ("unknown element", doc(rule(EXP1 + "<Colour>red</Colour>")), 400, "MalformedXML"),
    ("two IDs", doc("<Rule><ID>a</ID><ID>b</ID><Filter/><Status>Enabled</Status>%s</Rule>"
                    % EXP1), 400, "MalformedXML"),
    ("NoncurrentVersionExpiration without days",
     doc(rule("<NoncurrentVersionExpiration><NewerNoncurrentVersions>1"
              "</NewerNoncurrentVersions></NoncurrentVersionExpiration>")), 400, "MalformedXML"),
    ("1001 rules", doc(*[rule(EXP1, rid="r%d" % i) for i in range(1001)]), 400,
     "MalformedXML"),
    ("Transition", doc(rule("<Transition><Days>30</Days><StorageClass>GLACIER</StorageClass>"
                            "</Transition>")), 501, "NotImplemented"),
    ("NoncurrentVersionTransition", doc(rule(
        "<NoncurrentVersionTransition><NoncurrentDays>30</NoncurrentDays><StorageClass>"
        "GLACIER</StorageClass></NoncurrentVersionTransition>")), 501, "NotImplemented"),
    ("Days 0", doc(rule("<Expiration><Days>0</Days></Expiration>")), 400, "InvalidArgument"),
    ("Days -1", doc(rule("<Expiration><Days>-1</Days></Expiration>")), 400, "InvalidArgument"),
    ("NoncurrentDays 0", doc(rule("<NoncurrentVersionExpiration><NoncurrentDays>0"
                                  "</NoncurrentDays></NoncurrentVersionExpiration>")), 400,
     "InvalidArgument"),
    ("DaysAfterInitiation 0", doc(rule(
        "<AbortIncompleteMultipartUpload><DaysAfterInitiation>0</DaysAfterInitiation>"
        "</AbortIncompleteMultipartUpload>")), 400, "InvalidArgument"),
    ("Date not midnight", doc(rule("<Expiration><Date>2030-01-01T01:00:00Z</Date>"
                                   "</Expiration>")), 400, "InvalidArgument"),
    ("Date not ISO 8601", doc(rule("<Expiration><Date>01/01/2030</Date></Expiration>")), 400,
     "InvalidArgument"),
    ("duplicate IDs", doc(rule(EXP1, rid="same"), rule(EXP1, rid="same")), 400,
     "InvalidArgument"),
    ("ID of 256", doc(rule(EXP1, rid="i" * 256)), 400, "InvalidArgument"),
    ("NewerNoncurrentVersions 101", doc(rule(
        "<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>"
        "<NewerNoncurrentVersions>101</NewerNoncurrentVersions>"
        "</NoncurrentVersionExpiration>")), 400, "InvalidArgument"),
    ("sizes crossed", doc(rule(EXP1, filt="<Filter><And><ObjectSizeGreaterThan>9"
                               "</ObjectSizeGreaterThan><ObjectSizeLessThan>9"
                               "</ObjectSizeLessThan></And></Filter>")), 400,
     "InvalidArgument"),
    ("greater than 0", doc(rule(EXP1, filt="<Filter><ObjectSizeGreaterThan>0"
                                "</ObjectSizeGreaterThan></Filter>")), 400, "InvalidArgument"),
    ("no action", doc(rule("")), 400, "InvalidRequest"),
    ("marker with tags", doc(rule("<Expiration><ExpiredObjectDeleteMarker>true"
                                  "</ExpiredObjectDeleteMarker></Expiration>",
                                  filt="<Filter>%s</Filter>" % TAG)), 400, "InvalidRequest"),
    ("abort with tags", doc(rule("<AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
                                 "</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
                                 filt="<Filter><And><Prefix>a</Prefix>%s</And></Filter>" % TAG)),
     400, "InvalidRequest"),
    ("duplicate tag keys", doc(rule(EXP1, filt="<Filter><And>%s%s</And></Filter>" % (TAG, TAG))),
     400, "InvalidRequest"),
]
for why, body, want_st, want_code in CASES:
    st, text = raw("PUT", LC, body)
    check(st == want_st and "<Code>%s</Code>" % want_code in text,
          "%s: want %d %s, got %d %s" % (why, want_st, want_code, st, text[:400]))
# Content-MD5, checked when sent
good = doc(rule(EXP1, rid="md5"))
md5 = base64.b64encode(hashlib.md5(good).digest()).decode()
st, text = raw("PUT", LC, good, {"Content-MD5": base64.b64encode(b"0" * 16).decode()})
check(st == 400 and "<Code>BadDigest</Code>" in text, "wrong Content-MD5: %d %s" % (st, text))
st, text = raw("PUT", LC, good, {"Content-MD5": "not base64"})
check(st == 400 and "<Code>InvalidDigest</Code>" in text, "bad Content-MD5: %d %s" % (st, text))
check(s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"] == RULES[:2],
      "refusals changed nothing")
st, text = raw("PUT", LC, good, {"Content-MD5": md5})
check(st == 200 and text == "", "right Content-MD5: %d %s" % (st, text))
check([r["ID"] for r in s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"]] ==
      ["md5"], "raw PUT replaced the rules")
# boto3 sees the same codes
check(error_code(lambda: s3.put_bucket_lifecycle_configuration(
    Bucket=BUCKET, LifecycleConfiguration={"Rules": [
        {"ID": "t", "Filter": {}, "Status": "Enabled",
         "Transitions": [{"Days": 30, "StorageClass": "GLACIER"}]}]})) == "NotImplemented",
      "boto3 Transition")
check(error_code(lambda: s3.put_bucket_lifecycle_configuration(
    Bucket=BUCKET, LifecycleConfiguration={"Rules": [
        {"ID": "d", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 0}}]})) ==
      "InvalidArgument", "boto3 Days 0")

# --- the worker expires by an S3-configured rule (its clock is 2 days on)
s3.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration={"Rules": [
    {"ID": "expire-old", "Filter": {"Prefix": "exp/"}, "Status": "Enabled",
     "Expiration": {"Days": 1}}]})
s3.put_object(Bucket=BUCKET, Key="exp/a", Body=b"gone soon")
s3.put_object(Bucket=BUCKET, Key="keep/b", Body=b"stays")
deadline = time.monotonic() + 60
while time.monotonic() < deadline and error_code(
        lambda: s3.head_object(Bucket=BUCKET, Key="exp/a")) is None:
    time.sleep(0.2)
check(error_code(lambda: s3.head_object(Bucket=BUCKET, Key="exp/a")) == "404",
      "exp/a expired by the S3-configured rule")
check(s3.head_object(Bucket=BUCKET, Key="keep/b")["ContentLength"] == 5, "keep/b kept")

# --- DeleteBucketLifecycle
r = s3.delete_bucket_lifecycle(Bucket=BUCKET)
check(r["ResponseMetadata"]["HTTPStatusCode"] == 204, "delete: 204")
check(error_code(lambda: s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)) ==
      "NoSuchLifecycleConfiguration", "deleted")
st, js = json_call("GET", "/v1/buckets/%s/lifecycle" % BUCKET)
check(st == 404 and js["error"]["code"] == "NoSuchLifecycleConfiguration", "JSON: deleted")
check(error_code(lambda: s3.delete_bucket_lifecycle(Bucket="no-such-lc-bucket")) ==
      "NoSuchBucket", "DELETE on a missing bucket")

print("boto3 lifecycle: %d checks passed" % checks)
