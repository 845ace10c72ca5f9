#!/usr/bin/env python3
"""boto3_list_check.py: boto3's ListObjectVersions, ListMultipartUploads
and ListParts against objlog's S3 endpoint, compared field by field with
the JSON API's /versions, /uploads and /parts for the same data.
The data is written through the JSON API. Run by
test_s3_clients:

    boto3_list_check.py S3_URL JSON_URL NAME

(buckets NAME-ver and NAME-mp). Exit 0 with "boto3 lists: N checks
passed" on stdout; any difference is an AssertionError naming what boto3
saw and what the JSON API says."""
import hashlib
import json
import os
import sys
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import boto3
import botocore
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3raw  # noqa: E402

S3_URL, JSON_URL, NAME = sys.argv[1], sys.argv[2], sys.argv[3]
VER, MP = NAME + "-ver", NAME + "-mp"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
OWNER = {"ID": "tenant-a", "DisplayName": "tenant-a"}  # the buckets' tenant
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def json_call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(JSON_URL + path, data=data, method=method)
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"{}")


def json_get(path, **q):
    return json_call("GET", path + ("?" + urllib.parse.urlencode(q) if q else ""))


def qk(key):
    return urllib.parse.quote(key, safe="")


def iso(dt):
    """boto3's datetime as the JSON API writes times (ms, Z)."""
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (dt.microsecond // 1000)


def md5(s):
    return hashlib.md5(s.encode()).hexdigest()


def raw_s3(path):
    """A GET signed with the bucket owner's key: status, root element."""
    st, text, _ = s3raw.signed(S3_URL, "GET", path, b"", None, "objlogtest", "objlogtest-secret")
    return st, ET.fromstring(text)


def client_error(call):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None, 200


s3 = boto3.client(
    "s3", endpoint_url=S3_URL, region_name="us-east-1",
    aws_access_key_id="objlogtest", aws_secret_access_key="objlogtest-secret",
    config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

# ------------------------------------------------------------ the data
# A versioned bucket: overwrites, deletes (markers), a marker overwritten,
# a version deleted by id, then null versions once versioning is suspended.
json_call("PUT", "/v1/buckets/" + VER, {"tenant": "tenant-a", "versioning": "Enabled"})
keys = ["a.txt", "dir/b c.txt", "dir/sub/plus+sign", "dir/ünï.bin", "dir/pct%20x", "z/last"]
writes = 0
for rnd in range(3):
    for i, k in enumerate(keys):
        if rnd == 2 and i % 2:
            continue
        json_call("PUT", "/v1/buckets/%s/objects/%s" % (VER, qk(k)),
                  {"size": 100 * rnd + i, "etag": md5("%s %d" % (k, rnd)),
                   "storage_class": "STANDARD_IA" if k == "z/last" else None})
        writes += 1
json_call("DELETE", "/v1/buckets/%s/objects/%s" % (VER, qk("a.txt")))
json_call("DELETE", "/v1/buckets/%s/objects/%s" % (VER, qk("dir/ünï.bin")))
json_call("PUT", "/v1/buckets/%s/objects/%s" % (VER, qk("dir/ünï.bin")),
          {"size": 77, "etag": md5("back")})
old = json_get("/v1/buckets/%s/versions" % VER, prefix="dir/pct")["versions"][1]
json_call("DELETE", "/v1/buckets/%s/objects/%s?version_id=%s" % (VER, qk(old["key"]),
                                                                   old["version_id"]))
json_call("PUT", "/v1/buckets/%s/versioning" % VER, {"status": "Suspended"})
json_call("PUT", "/v1/buckets/%s/objects/%s" % (VER, qk("dir/b c.txt")),
          {"size": 5, "etag": md5("null one")})
json_call("DELETE", "/v1/buckets/%s/objects/%s" % (VER, qk("z/last")))


def json_versions(**q):
    """Every row of the JSON API's ListObjectVersions (all pages)."""
    rows, prefixes, q = [], [], dict(q, max_keys="1000")
    while True:
        page = json_get("/v1/buckets/%s/versions" % VER, **q)
        rows += page["versions"]
        prefixes += page["common_prefixes"]
        if not page["is_truncated"]:
            return rows, prefixes
        q["key_marker"] = page["next_key_marker"]
        q["version_id_marker"] = page["next_version_id_marker"]


jrows, _ = json_versions()
check(len(jrows) == writes + 2 + 1 - 1 + 2, "JSON has every version: %d" % len(jrows))
check(sum(r["delete_marker"] for r in jrows) == 3, "3 delete markers")
check(sum(r["version_id"] == "null" for r in jrows) == 2, "2 null versions")


def version_fields(v, marker):
    want = {"Key": v["key"], "VersionId": v["version_id"], "IsLatest": v["is_latest"],
            "LastModified": v["last_modified"], "Owner": OWNER}
    if not marker:
        want.update({"ETag": '"%s"' % v["etag"], "Size": v["size"],
                     "StorageClass": v["storage_class"]})
    return want


def boto_fields(e):
    return dict(e, LastModified=iso(e["LastModified"]))


# ---------------------------------------------- ListObjectVersions, boto3
for size in (1, 3, 4, 1000):
    vers, marks, npages = [], [], 0
    for p in s3.get_paginator("list_object_versions").paginate(
            Bucket=VER, PaginationConfig={"PageSize": size}):
        npages += 1
        check(p["MaxKeys"] == size and p["Name"] == VER, "page header %r" % p["MaxKeys"])
        n = len(p.get("Versions", [])) + len(p.get("DeleteMarkers", []))
        check(n == size or not p["IsTruncated"], "a truncated page is full (%d)" % n)
        vers += p.get("Versions", [])
        marks += p.get("DeleteMarkers", [])
    check(npages == (len(jrows) + size - 1) // size, "%d pages of %d" % (npages, size))
    want_v = [version_fields(r, 0) for r in jrows if not r["delete_marker"]]
    want_m = [version_fields(r, 1) for r in jrows if r["delete_marker"]]
    check([boto_fields(v) for v in vers] == want_v,
          "versions, pages of %d:\n%r\n%r" % (size, [boto_fields(v) for v in vers], want_v))
    check([boto_fields(m) for m in marks] == want_m, "delete markers, pages of %d" % size)
check(any(v["StorageClass"] == "STANDARD_IA" for v in vers), "a storage class kept")

# the wire order: Version and DeleteMarker interleaved as the JSON API has them
status, root = raw_s3("/%s?versions" % VER)
got = [(e.tag[len(NS):], e.find(NS + "Key").text, e.find(NS + "VersionId").text)
       for e in root if e.tag in (NS + "Version", NS + "DeleteMarker")]
want = [("DeleteMarker" if r["delete_marker"] else "Version", r["key"], r["version_id"])
        for r in jrows]
check(status == 200 and got == want, "interleaved order %r" % got)
check([e.tag[len(NS):] for e in root][:7] == ["Name", "Prefix", "KeyMarker", "VersionIdMarker",
                                              "MaxKeys", "IsTruncated", "DeleteMarker"],
      "element order %r" % [e.tag for e in root][:7])
# a page that ends inside a key's versions, raw: next markers name that version
status, root = raw_s3("/%s?versions&max-keys=2" % VER)
check(root.find(NS + "NextKeyMarker").text == jrows[1]["key"] and
      root.find(NS + "NextVersionIdMarker").text == jrows[1]["version_id"] and
      root.find(NS + "IsTruncated").text == "true", "next markers of a raw page")
# encoding-type=url: keys, prefix and markers percent-encoded (space as %20)
status, root = raw_s3("/%s?versions&encoding-type=url&prefix=dir%%2Fb%%20&key-marker=dir%%2Fb"
                      % VER)
check(root.find(NS + "Prefix").text == "dir/b%20" and
      root.find(NS + "KeyMarker").text == "dir/b" and
      root.find(NS + "EncodingType").text == "url" and
      root.find(NS + "Version/" + NS + "Key").text == "dir/b%20c.txt", "url-encoded versions")

# delimiter, two at a time: prefixes and top-level rows as the JSON API's
jtop, jpre = json_versions(delimiter="/")
rows, pres = [], []
for p in s3.get_paginator("list_object_versions").paginate(
        Bucket=VER, Delimiter="/", PaginationConfig={"PageSize": 2}):
    check(p["Delimiter"] == "/", "Delimiter echoed")
    rows += [v["VersionId"] for v in p.get("Versions", []) + p.get("DeleteMarkers", [])]
    pres += [c["Prefix"] for c in p.get("CommonPrefixes", [])]
check(pres == jpre == ["dir/", "z/"], "common prefixes %r / %r" % (pres, jpre))
check(sorted(rows) == sorted(r["version_id"] for r in jtop), "top-level rows")
jsub, jsubpre = json_versions(prefix="dir/", delimiter="/")
r = s3.list_object_versions(Bucket=VER, Prefix="dir/", Delimiter="/")
check([c["Prefix"] for c in r["CommonPrefixes"]] == jsubpre == ["dir/sub/"], "dir/ prefixes")
check(sorted(v["Key"] for v in r["Versions"] + r.get("DeleteMarkers", [])) ==
      sorted(v["key"] for v in jsub), "dir/ rows")
check(r["Prefix"] == "dir/", "prefix decoded back")

# markers: key-marker alone, key-marker + version-id-marker, as the JSON API
for km, vm in [("dir/", ""), ("dir/b c.txt", ""), (jrows[3]["key"], jrows[3]["version_id"]),
               ("dir/b c.txt", "null"), ("zzz", "")]:
    kw = {"KeyMarker": km}
    if vm:
        kw["VersionIdMarker"] = vm
    r = s3.list_object_versions(Bucket=VER, **kw)
    j = json_get("/v1/buckets/%s/versions" % VER, key_marker=km, version_id_marker=vm)
    got = sorted(v["VersionId"] for v in r.get("Versions", []) + r.get("DeleteMarkers", []))
    check(got == sorted(v["version_id"] for v in j["versions"]), "markers %r %r" % (km, vm))
    check(r["KeyMarker"] == km and r.get("VersionIdMarker", "") == vm, "markers echoed")
# S3's refusals
check(client_error(lambda: s3.list_object_versions(Bucket=VER, VersionIdMarker="null")) ==
      ("InvalidArgument", 400), "version-id-marker without key-marker")
check(client_error(lambda: s3.list_object_versions(Bucket=NAME + "-none")) ==
      ("NoSuchBucket", 404), "versions of a missing bucket")
check(raw_s3("/%s?versions&max-keys=-1" % VER)[0] == 400, "negative max-keys")
status, root = raw_s3("/%s?versions&max-keys=5000" % VER)
check(root.find(NS + "MaxKeys").text == "1000", "max-keys capped at 1000")

# ------------------------------------------------------------ uploads
json_call("PUT", "/v1/buckets/" + MP, {"tenant": "tenant-a"})
up_keys = ["a/one", "a/one", "a/two", "b c/three", "top", "z/ü", "a/one", "dir/x/y"]
ups = []
for i, k in enumerate(up_keys):
    ups.append(json_call("POST", "/v1/buckets/%s/uploads" % MP,
                         {"key": k, "storage_class": "GLACIER" if k == "top" else None}))
    check(ups[-1]["key"] == k and len(ups[-1]["upload_id"]) == 16, "upload of %s" % k)
big = ups[0]  # seven parts, listed two at a time
parts_of = {big["upload_id"]: 7, ups[2]["upload_id"]: 2}
for up in ups:
    for n in range(1, parts_of.get(up["upload_id"], 0) + 1):
        json_call("PUT", "/v1/buckets/%s/uploads/%s/parts/%d?key=%s" %
                  (MP, up["upload_id"], n, qk(up["key"])),
                  {"size": 5 * 1024 * 1024 + n, "etag": md5("%s %d" % (up["upload_id"], n))})
# one aborted: gone from the listing, its parts NoSuchUpload
gone = ups.pop(1)
json_call("DELETE", "/v1/buckets/%s/uploads/%s?key=%s" % (MP, gone["upload_id"],
                                                          qk(gone["key"])))


def json_uploads(**q):
    rows, prefixes, q = [], [], dict(q, max_uploads="1000")
    while True:
        page = json_get("/v1/buckets/%s/uploads" % MP, **q)
        rows += page["uploads"]
        prefixes += page["common_prefixes"]
        if not page["is_truncated"]:
            return rows, prefixes
        q["key_marker"] = page["next_key_marker"]
        q["upload_id_marker"] = page["next_upload_id_marker"]


jups, _ = json_uploads()
check(len(jups) == len(up_keys) - 1, "JSON lists %d uploads" % len(jups))
check(sorted(u["upload_id"] for u in jups) == sorted(u["upload_id"] for u in ups),
      "the JSON API lists the uploads made")
for size in (1, 3, 1000):
    got, npages = [], 0
    for p in s3.get_paginator("list_multipart_uploads").paginate(
            Bucket=MP, PaginationConfig={"PageSize": size}):
        npages += 1
        check(p["Bucket"] == MP and p["MaxUploads"] == size, "uploads page header")
        got += p.get("Uploads", [])
    check(npages == (len(jups) + size - 1) // size, "%d upload pages of %d" % (npages, size))
    want = [{"Key": u["key"], "UploadId": u["upload_id"], "Initiated": u["initiated"],
             "StorageClass": "GLACIER" if u["key"] == "top" else "STANDARD",
             "Owner": OWNER, "Initiator": OWNER} for u in jups]
    check([dict(u, Initiated=iso(u["Initiated"])) for u in got] == want,
          "uploads, pages of %d:\n%r\n%r" % (size, got, want))
jd, jdpre = json_uploads(delimiter="/")
r = s3.list_multipart_uploads(Bucket=MP, Delimiter="/")
check([c["Prefix"] for c in r["CommonPrefixes"]] == jdpre == ["a/", "b c/", "dir/", "z/"],
      "upload prefixes %r" % r.get("CommonPrefixes"))
check([u["UploadId"] for u in r.get("Uploads", [])] == [u["upload_id"] for u in jd],
      "top-level uploads")
r = s3.list_multipart_uploads(Bucket=MP, KeyMarker="a/one", UploadIdMarker=ups[0]["upload_id"])
j = json_get("/v1/buckets/%s/uploads" % MP, key_marker="a/one",
             upload_id_marker=ups[0]["upload_id"])
check([u["UploadId"] for u in r["Uploads"]] == [u["upload_id"] for u in j["uploads"]] and
      r["Uploads"][0]["Key"] == "a/one", "upload markers")
status, root = raw_s3("/%s?uploads&max-uploads=2&encoding-type=url&prefix=b%%20" % MP)
check(root.find(NS + "Upload/" + NS + "Key").text == "b%20c/three" and
      root.find(NS + "Prefix").text == "b%20", "url-encoded uploads")
status, root = raw_s3("/%s?uploads&max-uploads=2" % MP)
check(root.find(NS + "NextKeyMarker").text == jups[1]["key"] and
      root.find(NS + "NextUploadIdMarker").text == jups[1]["upload_id"], "next upload markers")

# -------------------------------------------------------------- parts
for up in ups:
    n = parts_of.get(up["upload_id"], 0)
    jp = json_get("/v1/buckets/%s/uploads/%s/parts" % (MP, up["upload_id"]), key=up["key"])
    got, npages = [], 0
    for p in s3.get_paginator("list_parts").paginate(
            Bucket=MP, Key=up["key"], UploadId=up["upload_id"],
            PaginationConfig={"PageSize": 2}):
        npages += 1
        check(p["Bucket"] == MP and p["Key"] == up["key"] and p["UploadId"] == up["upload_id"]
              and p["MaxParts"] == 2 and p["Owner"] == OWNER and p["Initiator"] == OWNER and
              p["StorageClass"] == ("GLACIER" if up["key"] == "top" else "STANDARD"),
              "parts page header %r" % p)
        got += p.get("Parts", [])
    check(npages == max(1, (n + 1) // 2), "%d part pages for %d parts" % (npages, n))
    want = [{"PartNumber": q["part_number"], "LastModified": q["last_modified"],
             "ETag": '"%s"' % q["etag"], "Size": q["size"]} for q in jp["parts"]]
    check(len(want) == n and [dict(q, LastModified=iso(q["LastModified"])) for q in got] == want,
          "parts of %s:\n%r\n%r" % (up["key"], got, want))
r = s3.list_parts(Bucket=MP, Key=big["key"], UploadId=big["upload_id"], PartNumberMarker=3,
                  MaxParts=2)
j = json_get("/v1/buckets/%s/uploads/%s/parts" % (MP, big["upload_id"]), key=big["key"],
             part_number_marker="3", max_parts="2")
check([q["PartNumber"] for q in r["Parts"]] == [q["part_number"] for q in j["parts"]] == [4, 5],
      "part-number-marker")
check(r["PartNumberMarker"] == 3 and r["NextPartNumberMarker"] == j["next_part_number_marker"] == 5
      and r["IsTruncated"] is True, "part markers %r" % r)
r = s3.list_parts(Bucket=MP, Key=big["key"], UploadId=big["upload_id"], PartNumberMarker=6)
check([q["PartNumber"] for q in r["Parts"]] == [7] and r["NextPartNumberMarker"] == 7 and
      r["IsTruncated"] is False, "the last page names its last part")
for call in [lambda: s3.list_parts(Bucket=MP, Key=gone["key"], UploadId=gone["upload_id"]),
             lambda: s3.list_parts(Bucket=MP, Key="a/two", UploadId=big["upload_id"]),
             lambda: s3.list_parts(Bucket=MP, Key="a/one", UploadId="00000000000000ff")]:
    check(client_error(call) == ("NoSuchUpload", 404), "NoSuchUpload")
check(raw_s3("/%s/a/one?uploadId=%s&max-parts=x" % (MP, big["upload_id"]))[0] == 400,
      "max-parts not a number")
print("boto3 lists: %d checks passed" % checks)
