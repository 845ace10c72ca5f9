#!/usr/bin/env python3
"""boto3_attrs_check.py: tags and canned ACLs, as S3 documents them, on an
endpoint with --s3-credentials and without --s3-anonymous (an unsigned
request owns nothing: it gets only what an ACL grants everyone).

Object tagging: PutObject's x-amz-tagging read back by GetObjectTagging,
replaced whole by PutObjectTagging, removed by DeleteObjectTagging, per
version (versionId), InvalidTag (11 tags, a key given twice, a key over 128
bytes), MalformedXML, NoSuchKey, MethodNotAllowed on a delete marker, and
the JSON API showing the same tags. Bucket tagging: NoSuchTagSet, Put,
Get, Delete, at most 50. Canned ACLs on buckets (CreateBucket's x-amz-acl,
PutBucketAcl by header or AccessControlPolicy body) and objects
(PutObject's x-amz-acl, PutObjectAcl): GetBucketAcl/GetObjectAcl answer
the owner and the grants; anonymous and other tenants' requests allowed
exactly where a grant allows them; x-amz-grant-* and grants no canned ACL
makes are 501 NotImplemented. Run by test_s3_clients:

    boto3_attrs_check.py S3_URL JSON_URL

Keys: objlogtest (tenant-a), otherkey (tenant-b). Exit 0 with "boto3
attrs: N checks passed" on stdout."""
import json
import sys
import urllib.request

import boto3
import botocore
from botocore import UNSIGNED
from botocore.config import Config

S3_URL, JSON_URL = sys.argv[1], sys.argv[2]
checks = 0
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def client(key=None, secret=None):
    cfg = {"s3": {"addressing_style": "path"}, "retries": {"max_attempts": 1}}
    if key is None:
        cfg["signature_version"] = UNSIGNED
        return boto3.client("s3", endpoint_url=S3_URL, region_name="us-east-1",
                            config=Config(**cfg))
    return boto3.client("s3", endpoint_url=S3_URL, region_name="us-east-1",
                        aws_access_key_id=key, aws_secret_access_key=secret,
                        config=Config(signature_version="s3v4", **cfg))


def error_of(call):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None, 200


def tagset(d):
    return sorted((t["Key"], t["Value"]) for t in d.get("TagSet", []))


def grants(acl):
    out = []
    for g in acl["Grants"]:
        who = g["Grantee"].get("URI") or g["Grantee"].get("ID")
        out.append((g["Grantee"]["Type"], who, g["Permission"]))
    return sorted(out)


def json_get(path):
    with urllib.request.urlopen(JSON_URL + path) as r:
        return json.loads(r.read())


s3 = client("objlogtest", "objlogtest-secret")
other = client("otherkey", "other-secret")
anon = client()

# ---- object tagging
B = "attrs-tags"
s3.create_bucket(Bucket=B)
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
v1 = s3.put_object(Bucket=B, Key="k", Body=b"one", Tagging="a=1&b=two%20words")["VersionId"]
check(tagset(s3.get_object_tagging(Bucket=B, Key="k")) == [("a", "1"), ("b", "two words")],
      "PutObject's tags")
r = s3.put_object_tagging(Bucket=B, Key="k", Tagging={"TagSet": [{"Key": "x", "Value": "y"}]})
check(r["VersionId"] == v1, "PutObjectTagging names the version: %s" % r)
check(tagset(s3.get_object_tagging(Bucket=B, Key="k")) == [("x", "y")], "replaced whole")
check(s3.get_object(Bucket=B, Key="k")["TagCount"] == 1, "x-amz-tagging-count")
v2 = s3.put_object(Bucket=B, Key="k", Body=b"two")["VersionId"]
check(tagset(s3.get_object_tagging(Bucket=B, Key="k")) == [], "a new version has its own tags")
s3.put_object_tagging(Bucket=B, Key="k", VersionId=v1,
                      Tagging={"TagSet": [{"Key": "old", "Value": "v"}]})
check(tagset(s3.get_object_tagging(Bucket=B, Key="k", VersionId=v1)) == [("old", "v")],
      "an older version's tags")
check(tagset(s3.get_object_tagging(Bucket=B, Key="k")) == [], "the current one's unchanged")
s3.put_object_tagging(Bucket=B, Key="k", Tagging={"TagSet": [{"Key": "cur", "Value": ""}]})
j = json_get("/v1/buckets/%s/objects/k" % B)
check(j["tags"] == {"cur": ""}, "the JSON API's tags: %s" % j.get("tags"))
r = s3.delete_object_tagging(Bucket=B, Key="k")
check(r["ResponseMetadata"]["HTTPStatusCode"] == 204 and r["VersionId"] == v2, "delete tagging")
check(tagset(s3.get_object_tagging(Bucket=B, Key="k")) == [], "tags gone")
check(tagset(s3.get_object_tagging(Bucket=B, Key="k", VersionId=v1)) == [("old", "v")],
      "the other version keeps its tags")
eleven = {"TagSet": [{"Key": "k%d" % i, "Value": "v"} for i in range(11)]}
check(error_of(lambda: s3.put_object_tagging(Bucket=B, Key="k", Tagging=eleven)) ==
      ("InvalidTag", 400), "11 tags")
twice = {"TagSet": [{"Key": "d", "Value": "1"}, {"Key": "d", "Value": "2"}]}
check(error_of(lambda: s3.put_object_tagging(Bucket=B, Key="k", Tagging=twice)) ==
      ("InvalidTag", 400), "a key twice")
long_key = {"TagSet": [{"Key": "k" * 129, "Value": "v"}]}
check(error_of(lambda: s3.put_object_tagging(Bucket=B, Key="k", Tagging=long_key))[1] == 400,
      "a 129-byte key")
check(error_of(lambda: s3.get_object_tagging(Bucket=B, Key="nope")) == ("NoSuchKey", 404),
      "NoSuchKey")
marker = s3.delete_object(Bucket=B, Key="k")["VersionId"]
check(error_of(lambda: s3.get_object_tagging(Bucket=B, Key="k", VersionId=marker)) ==
      ("MethodNotAllowed", 405), "a delete marker's tags")
check(error_of(lambda: s3.put_object_tagging(Bucket=B, Key="k", VersionId=marker,
                                             Tagging={"TagSet": []})) ==
      ("MethodNotAllowed", 405), "tagging a delete marker")
check(error_of(lambda: other.get_object_tagging(Bucket=B, Key="k", VersionId=v1)) ==
      ("AccessDenied", 403), "another tenant's GetObjectTagging")
check(error_of(lambda: other.put_object_tagging(Bucket=B, Key="k", VersionId=v1,
                                                Tagging={"TagSet": []})) ==
      ("AccessDenied", 403), "another tenant's PutObjectTagging")

# ---- bucket tagging
check(error_of(lambda: s3.get_bucket_tagging(Bucket=B)) == ("NoSuchTagSet", 404),
      "no bucket tags yet")
s3.put_bucket_tagging(Bucket=B, Tagging={"TagSet": [{"Key": "team", "Value": "core"},
                                                    {"Key": "cost", "Value": "42"}]})
check(tagset(s3.get_bucket_tagging(Bucket=B)) == [("cost", "42"), ("team", "core")],
      "bucket tags")
check(json_get("/v1/buckets/%s" % B)["tags"] == {"team": "core", "cost": "42"},
      "the JSON API's bucket tags")
fifty_one = {"TagSet": [{"Key": "k%d" % i, "Value": "v"} for i in range(51)]}
check(error_of(lambda: s3.put_bucket_tagging(Bucket=B, Tagging=fifty_one)) ==
      ("InvalidTag", 400), "51 bucket tags")
check(error_of(lambda: other.get_bucket_tagging(Bucket=B)) == ("AccessDenied", 403),
      "another tenant's GetBucketTagging")
r = s3.delete_bucket_tagging(Bucket=B)
check(r["ResponseMetadata"]["HTTPStatusCode"] == 204, "delete bucket tagging")
check(error_of(lambda: s3.get_bucket_tagging(Bucket=B)) == ("NoSuchTagSet", 404),
      "bucket tags gone")

# ---- ACLs
P = "attrs-private"
s3.create_bucket(Bucket=P)
s3.put_object(Bucket=P, Key="secret", Body=b"s")
acl = s3.get_bucket_acl(Bucket=P)
check(acl["Owner"]["ID"] == "tenant-a", "the owner: %s" % acl["Owner"])
check(grants(acl) == [("CanonicalUser", "tenant-a", "FULL_CONTROL")], "private: %s" % acl)
check(grants(s3.get_object_acl(Bucket=P, Key="secret")) ==
      [("CanonicalUser", "tenant-a", "FULL_CONTROL")], "a private object")
check(error_of(lambda: anon.list_objects_v2(Bucket=P)) == ("AccessDenied", 403),
      "anonymous lists a private bucket")
check(error_of(lambda: anon.get_object(Bucket=P, Key="secret")) == ("AccessDenied", 403),
      "anonymous reads a private object")
check(error_of(lambda: anon.get_object(Bucket=P, Key="nope")) == ("AccessDenied", 403),
      "anonymous learns nothing of missing keys")
check(error_of(lambda: anon.put_object(Bucket=P, Key="x", Body=b"x")) == ("AccessDenied", 403),
      "anonymous writes a private bucket")
check(error_of(lambda: anon.list_buckets()) == ("AccessDenied", 403), "anonymous ListBuckets")
check(error_of(lambda: anon.create_bucket(Bucket="attrs-anon")) == ("AccessDenied", 403),
      "anonymous CreateBucket")
check(error_of(lambda: other.get_bucket_acl(Bucket=P)) == ("AccessDenied", 403),
      "another tenant's GetBucketAcl")

# an object made public-read in a private bucket: anyone reads it, nobody lists
s3.put_object(Bucket=P, Key="pub", Body=b"public bytes", ACL="public-read")
check(anon.get_object(Bucket=P, Key="pub")["Body"].read() == b"public bytes",
      "anonymous reads a public-read object")
check(anon.head_object(Bucket=P, Key="pub")["ContentLength"] == 12, "anonymous HEAD")
check(grants(s3.get_object_acl(Bucket=P, Key="pub")) ==
      sorted([("CanonicalUser", "tenant-a", "FULL_CONTROL"), ("Group", ALL_USERS, "READ")]),
      "a public-read object's grants")
check(error_of(lambda: anon.list_objects_v2(Bucket=P)) == ("AccessDenied", 403),
      "the bucket still does not list")
check(error_of(lambda: anon.get_object_acl(Bucket=P, Key="pub")) == ("AccessDenied", 403),
      "READ_ACP is the owner's")
s3.put_object_acl(Bucket=P, Key="pub", ACL="private")
check(error_of(lambda: anon.get_object(Bucket=P, Key="pub")) == ("AccessDenied", 403),
      "back to private")
s3.put_object_acl(Bucket=P, Key="secret", ACL="authenticated-read")
check(other.get_object(Bucket=P, Key="secret")["Body"].read() == b"s",
      "authenticated-read: another tenant's key reads")
check(error_of(lambda: anon.get_object(Bucket=P, Key="secret")) == ("AccessDenied", 403),
      "authenticated-read: anonymous does not")

# a public-read bucket lists to anyone; a missing key is then 404
R = "attrs-public-read"
s3.create_bucket(Bucket=R, ACL="public-read")
s3.put_object(Bucket=R, Key="a", Body=b"a")
check(grants(s3.get_bucket_acl(Bucket=R)) ==
      sorted([("CanonicalUser", "tenant-a", "FULL_CONTROL"), ("Group", ALL_USERS, "READ")]),
      "public-read bucket grants")
check([o["Key"] for o in anon.list_objects_v2(Bucket=R)["Contents"]] == ["a"],
      "anonymous lists a public-read bucket")
check(error_of(lambda: anon.get_object(Bucket=R, Key="nope")) == ("NoSuchKey", 404),
      "a listable bucket's missing key is 404")
check(error_of(lambda: anon.get_object(Bucket=R, Key="a")) == ("AccessDenied", 403),
      "its objects are still their own ACL's")
check(error_of(lambda: anon.put_object(Bucket=R, Key="x", Body=b"x")) == ("AccessDenied", 403),
      "public-read does not write")
check(json_get("/v1/buckets/%s" % R)["acl"] == "public-read", "the JSON API's ACL")

# public-read-write: anyone writes and deletes objects, never the settings
s3.put_bucket_acl(Bucket=R, ACL="public-read-write")
anon.put_object(Bucket=R, Key="dropped", Body=b"from anyone")
check(s3.get_object(Bucket=R, Key="dropped")["Body"].read() == b"from anyone",
      "an anonymous write")
anon.delete_object(Bucket=R, Key="dropped")
check(error_of(lambda: s3.head_object(Bucket=R, Key="dropped")) == ("404", 404),
      "an anonymous delete")
check(error_of(lambda: anon.put_bucket_acl(Bucket=R, ACL="private")) == ("AccessDenied", 403),
      "WRITE_ACP is the owner's")
check(error_of(lambda: other.delete_bucket(Bucket=R)) == ("AccessDenied", 403),
      "DeleteBucket is the owner's")

# authenticated-read bucket: signed callers list, anonymous ones do not
s3.put_bucket_acl(Bucket=R, ACL="authenticated-read")
check(len(other.list_objects_v2(Bucket=R)["Contents"]) == 1, "another tenant lists")
check(error_of(lambda: anon.list_objects_v2(Bucket=R)) == ("AccessDenied", 403),
      "anonymous does not")

# an AccessControlPolicy body that is a canned ACL; and what objlog refuses
owner = {"ID": "tenant-a", "DisplayName": "tenant-a"}
policy = {"Owner": owner, "Grants": [
    {"Grantee": {"Type": "CanonicalUser", "ID": "tenant-a"}, "Permission": "FULL_CONTROL"},
    {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "READ"}]}
s3.put_bucket_acl(Bucket=R, AccessControlPolicy=policy)
check(json_get("/v1/buckets/%s" % R)["acl"] == "public-read", "a policy body as public-read")
policy["Grants"].append({"Grantee": {"Type": "CanonicalUser", "ID": "tenant-b"},
                         "Permission": "READ"})
check(error_of(lambda: s3.put_bucket_acl(Bucket=R, AccessControlPolicy=policy)) ==
      ("NotImplemented", 501), "a grant to a user")
check(error_of(lambda: s3.put_bucket_acl(Bucket=R, GrantRead='uri="%s"' % ALL_USERS)) ==
      ("NotImplemented", 501), "x-amz-grant-read")
check(error_of(lambda: s3.put_object(Bucket=R, Key="y", Body=b"y", ACL="bogus"))[1] == 400,
      "an unknown canned ACL")
check(error_of(lambda: s3.create_bucket(Bucket="attrs-bogus", ACL="bogus"))[1] == 400,
      "an unknown canned ACL at CreateBucket")

print("boto3 attrs: %d checks passed" % checks)
