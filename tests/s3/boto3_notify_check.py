#!/usr/bin/env python3
"""boto3_notify_check.py: S3's ?notification bucket subresource
(query/s3/s3notify.c) with boto3: a TopicConfiguration (a Kafka topic's
ARN, two events one of them a wildcard, a prefix and a suffix rule) and a
QueueConfiguration (a webhook's ARN, its http URL URL-encoded) put and read
back equal; the JSON API's view of the same configurations; a
configuration without Id gets one; each refusal with S3's exact code,
nothing changed by it (an unknown event, overlapping configurations, an ARN
objlog does not take, a Topic with a webhook's ARN, a filter rule name, two
prefix rules, CloudFunctionConfiguration 501, malformed XML sent raw,
another tenant's key); an
empty configuration deletes them all; a bucket without any answers an empty
one; a missing bucket is NoSuchBucket. Run by test_s3_clients:

    boto3_notify_check.py S3_URL JSON_URL BLOB_DIR

Exit 0 with "boto3 notify: N checks passed" on stdout."""
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

S3_URL, JSON_URL = sys.argv[1], sys.argv[2]
B = "boto3-notify"
KAFKA = "arn:objlog:kafka:::photos.created"
HOOK_URL = "http://127.0.0.1:9/hooks/s3?token=abc&x=1"
HOOK = "arn:objlog:webhook:::" + urllib.parse.quote(HOOK_URL, safe="")
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def json_get(path):
    try:
        with urllib.request.urlopen(JSON_URL + path) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def error_of(call):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None, 200


def raw(method, path, body=b""):
    """A request boto3 would not send, signed with the bucket owner's key."""
    st, text, _ = s3raw.signed(S3_URL, method, path, body, None, "objlogtest",
                               "objlogtest-secret")
    return st, text


def configs(r):
    """The configurations of a GetBucketNotificationConfiguration answer,
    without its metadata."""
    return {k: v for k, v in r.items() if k != "ResponseMetadata"}


s3 = boto3.client("s3", endpoint_url=S3_URL, aws_access_key_id="objlogtest",
                  aws_secret_access_key="objlogtest-secret", region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"},
                                retries={"max_attempts": 1}))
s3.create_bucket(Bucket=B)

# ---- none yet: an empty configuration, 200, never 404
r = s3.get_bucket_notification_configuration(Bucket=B)
check(r["ResponseMetadata"]["HTTPStatusCode"] == 200 and configs(r) == {},
      "no configuration yet: %s" % r)
st, text = raw("GET", "/%s?notification" % B)
check(st == 200 and "<NotificationConfiguration" in text and "Configuration>" in text and
      "TopicConfiguration" not in text, "the raw empty answer: %d %s" % (st, text))

# ---- put and read back
TOPIC = {"Id": "photos", "TopicArn": KAFKA,
         "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:Delete"],
         "Filter": {"Key": {"FilterRules": [{"Name": "Prefix", "Value": "photos/"},
                                            {"Name": "Suffix", "Value": ".jpg"}]}}}
QUEUE = {"Id": "hook", "QueueArn": HOOK, "Events": ["s3:ObjectCreated:Put"],
         "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "docs/"}]}}}
r = s3.put_bucket_notification_configuration(
    Bucket=B, NotificationConfiguration={"TopicConfigurations": [TOPIC],
                                         "QueueConfigurations": [QUEUE]})
check(r["ResponseMetadata"]["HTTPStatusCode"] == 200, "put: %s" % r)
got = configs(s3.get_bucket_notification_configuration(Bucket=B))
want_queue = dict(QUEUE)
want_queue["Filter"] = {"Key": {"FilterRules": [{"Name": "Prefix", "Value": "docs/"}]}}
check(got == {"TopicConfigurations": [TOPIC], "QueueConfigurations": [want_queue]},
      "read back: %s" % got)

# the JSON API shows the same configurations
st, j = json_get("/v1/buckets/%s/notifications" % B)
check(st == 200, "JSON GET: %d %s" % (st, j))
check(j["bucket"] == B and len(j["seq"]) == 16 and j["seq"] != "0" * 16, "JSON: %s" % j)
check(j["configurations"] == [
    {"id": "photos", "arn": KAFKA, "events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:Delete"],
     "prefix": "photos/", "suffix": ".jpg", "target": "kafka",
     "destination": "photos.created"},
    {"id": "hook", "arn": HOOK, "events": ["s3:ObjectCreated:Put"], "prefix": "docs/",
     "target": "webhook", "destination": HOOK_URL}], "JSON configurations: %s" % j)
seq = j["seq"]

# ---- a configuration without Id gets one (generated once, at the edge)
s3.put_bucket_notification_configuration(
    Bucket=B, NotificationConfiguration={"TopicConfigurations": [
        {"TopicArn": KAFKA, "Events": ["s3:ObjectRemoved:*"]}]})
got = s3.get_bucket_notification_configuration(Bucket=B)["TopicConfigurations"]
check(len(got) == 1 and len(got[0]["Id"]) == 32 and
      all(ch in "0123456789abcdef" for ch in got[0]["Id"]), "a generated Id: %s" % got)
made = got[0]["Id"]
again = s3.get_bucket_notification_configuration(Bucket=B)["TopicConfigurations"][0]["Id"]
check(again == made, "the Id is kept, not made again at each read")
check("Filter" not in got[0], "no filter written back when none was set: %s" % got)
st, j = json_get("/v1/buckets/%s/notifications" % B)
check([c["id"] for c in j["configurations"]] == [made] and j["seq"] > seq,
      "the JSON API has the generated Id: %s" % j)

# ---- refusals: S3's codes; none changes what is in force
before = configs(s3.get_bucket_notification_configuration(Bucket=B))

# the bucket owner's subresource: another tenant's key is refused both ways
other = boto3.client("s3", endpoint_url=S3_URL, aws_access_key_id="otherkey",
                     aws_secret_access_key="other-secret", region_name="us-east-1",
                     config=Config(s3={"addressing_style": "path"},
                                   retries={"max_attempts": 1}))
check(error_of(lambda: other.get_bucket_notification_configuration(Bucket=B)) ==
      ("AccessDenied", 403), "another tenant's GET")
check(error_of(lambda: other.put_bucket_notification_configuration(
    Bucket=B, NotificationConfiguration={})) == ("AccessDenied", 403), "another tenant's PUT")


def refused(cfg, code, status=400, what=""):
    got = error_of(lambda: s3.put_bucket_notification_configuration(
        Bucket=B, NotificationConfiguration=cfg))
    check(got == (code, status), "%s: %s" % (what, got))
    after = configs(s3.get_bucket_notification_configuration(Bucket=B))
    check(after == before, "%s changed the configuration: %s" % (what, after))


refused({"TopicConfigurations": [{"Id": "x", "TopicArn": KAFKA,
                                  "Events": ["s3:ObjectCreated:Nope"]}]},
        "InvalidArgument", what="an unknown event")
refused({"TopicConfigurations": [{"Id": "a", "TopicArn": KAFKA,
                                  "Events": ["s3:ObjectCreated:*"]}],
         "QueueConfigurations": [{"Id": "b", "QueueArn": HOOK,
                                  "Events": ["s3:ObjectCreated:Put"]}]},
        "InvalidArgument", what="overlapping configurations")
refused({"TopicConfigurations": [{"Id": "x", "TopicArn": "arn:aws:sns:us-east-1:1:t",
                                  "Events": ["s3:ObjectCreated:*"]}]},
        "InvalidArgument", what="an SNS ARN")
refused({"TopicConfigurations": [{"Id": "x", "TopicArn": "arn:objlog:kafka:::bad topic",
                                  "Events": ["s3:ObjectCreated:*"]}]},
        "InvalidArgument", what="a topic name Kafka refuses")
refused({"TopicConfigurations": [{"Id": "x", "TopicArn": HOOK,
                                  "Events": ["s3:ObjectCreated:*"]}]},
        "InvalidArgument", what="a Topic with a webhook's ARN")
refused({"QueueConfigurations": [{"Id": "x", "QueueArn": KAFKA,
                                  "Events": ["s3:ObjectCreated:*"]}]},
        "InvalidArgument", what="a Queue with a Kafka ARN")
refused({"TopicConfigurations": [{"Id": "x", "TopicArn": KAFKA,
                                  "Events": ["s3:ObjectCreated:*"],
                                  "Filter": {"Key": {"FilterRules": [
                                      {"Name": "middle", "Value": "x"}]}}}]},
        "InvalidArgument", what="a filter rule name")
refused({"TopicConfigurations": [{"Id": "x", "TopicArn": KAFKA,
                                  "Events": ["s3:ObjectCreated:*"],
                                  "Filter": {"Key": {"FilterRules": [
                                      {"Name": "prefix", "Value": "a/"},
                                      {"Name": "Prefix", "Value": "b/"}]}}}]},
        "InvalidArgument", what="two prefix rules")
refused({"LambdaFunctionConfigurations": [{"Id": "x",
                                           "LambdaFunctionArn": "arn:aws:lambda:us-east-1:1:f",
                                           "Events": ["s3:ObjectCreated:*"]}]},
        "NotImplemented", 501, what="CloudFunctionConfiguration")

# the messages say which rule, in S3's words where S3 has them
def message_of(cfg):
    try:
        s3.put_bucket_notification_configuration(Bucket=B, NotificationConfiguration=cfg)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Message"]
    return None


m = message_of({"TopicConfigurations": [{"Id": "x", "TopicArn": KAFKA,
                                         "Events": ["s3:ObjectCreated:*"],
                                         "Filter": {"Key": {"FilterRules": [
                                             {"Name": "suffix", "Value": "a"},
                                             {"Name": "SUFFIX", "Value": "b"}]}}}]})
check(m == "Cannot specify more than one suffix rule in a filter.", "two suffixes: %s" % m)
m = message_of({"TopicConfigurations": [{"Id": "x", "TopicArn": KAFKA,
                                         "Events": ["s3:ObjectCreated:*"],
                                         "Filter": {"Key": {"FilterRules": [
                                             {"Name": "middle", "Value": "x"}]}}}]})
check(m == "filter rule name must be either prefix or suffix", "rule name: %s" % m)
m = message_of({"TopicConfigurations": [{"Id": "x", "TopicArn": HOOK,
                                         "Events": ["s3:ObjectCreated:*"]}]})
check(m and "arn:objlog:kafka:::TOPIC" in m and "QueueConfiguration" in m,
      "a Topic's ARN: %s" % m)
m = message_of({"TopicConfigurations": [{"Id": "x", "TopicArn": KAFKA,
                                         "Events": ["s3:ObjectCreated:Nope"]}]})
check(m == "The event is not supported for notifications: s3:ObjectCreated:Nope",
      "unknown event: %s" % m)

# malformed bodies, sent raw
NC = "/%s?notification" % B
for body, what in [
        (b"<NotificationConfiguration>", "not XML"),
        (b"<LifecycleConfiguration/>", "another root"),
        (b"<NotificationConfiguration><TopicConfiguration><Topic>" + KAFKA.encode() +
         b"</Topic><Event>s3:ObjectCreated:*</Event><Color>red</Color>"
         b"</TopicConfiguration></NotificationConfiguration>", "an unknown element"),
        (b"<NotificationConfiguration><Rule/></NotificationConfiguration>",
         "an unknown configuration"),
        (b"<NotificationConfiguration><TopicConfiguration><Event>s3:ObjectCreated:*"
         b"</Event></TopicConfiguration></NotificationConfiguration>", "no Topic"),
        (b"<NotificationConfiguration><TopicConfiguration><Topic>" + KAFKA.encode() +
         b"</Topic></TopicConfiguration></NotificationConfiguration>", "no Event"),
        (b"<NotificationConfiguration><QueueConfiguration><Topic>" + KAFKA.encode() +
         b"</Topic><Event>s3:ObjectCreated:*</Event></QueueConfiguration>"
         b"</NotificationConfiguration>", "a Topic in a QueueConfiguration"),
        (b"<NotificationConfiguration><TopicConfiguration><Id>a</Id><Id>b</Id><Topic>" +
         KAFKA.encode() + b"</Topic><Event>s3:ObjectCreated:*</Event></TopicConfiguration>"
         b"</NotificationConfiguration>", "two Ids"),
        (b"<NotificationConfiguration><TopicConfiguration><Topic>" + KAFKA.encode() +
         b"</Topic><Event>s3:ObjectCreated:*</Event><Filter><S3Key><FilterRule><Name>prefix"
         b"</Name></FilterRule></S3Key></Filter></TopicConfiguration>"
         b"</NotificationConfiguration>", "a FilterRule without Value"),
        (b"<NotificationConfiguration><TopicConfiguration><Topic>" + KAFKA.encode() +
         b"</Topic><Event>s3:ObjectCreated:*</Event><Filter><S3Key><FilterRule><Name>prefix"
         b"<b/></Name><Value>a</Value></FilterRule></S3Key></Filter></TopicConfiguration>"
         b"</NotificationConfiguration>", "an element inside a rule's Name")]:
    st, text = raw("PUT", NC, body)
    check(st == 400 and "<Code>MalformedXML</Code>" in text, "%s: %d %s" % (what, st, text))
st, text = raw("PUT", NC, b"<NotificationConfiguration><EventBridgeConfiguration/>"
                          b"</NotificationConfiguration>")
check(st == 501 and "<Code>NotImplemented</Code>" in text and "EventBridgeConfiguration" in text,
      "EventBridgeConfiguration: %d %s" % (st, text))
st, text = raw("DELETE", NC)
check(st == 405 and "<Code>MethodNotAllowed</Code>" in text, "DELETE ?notification: %d" % st)
check(s3.head_bucket(Bucket=B)["ResponseMetadata"]["HTTPStatusCode"] == 200,
      "the bucket is still there")
check(configs(s3.get_bucket_notification_configuration(Bucket=B)) == before,
      "no malformed body changed the configuration")

# ---- an empty configuration deletes them all
r = s3.put_bucket_notification_configuration(Bucket=B, NotificationConfiguration={})
check(r["ResponseMetadata"]["HTTPStatusCode"] == 200, "empty put: %s" % r)
check(configs(s3.get_bucket_notification_configuration(Bucket=B)) == {}, "all deleted")
st, j = json_get("/v1/buckets/%s/notifications" % B)
check(st == 200 and j["configurations"] == [], "JSON after the delete: %s" % j)

# ---- a missing bucket
check(error_of(lambda: s3.get_bucket_notification_configuration(Bucket="no-such-notify")) ==
      ("NoSuchBucket", 404), "GET on a missing bucket")
check(error_of(lambda: s3.put_bucket_notification_configuration(
    Bucket="no-such-notify", NotificationConfiguration={"TopicConfigurations": [TOPIC]})) ==
      ("NoSuchBucket", 404), "PUT on a missing bucket")

print("boto3 notify: %d checks passed" % checks)
