/* test_s3_table.c: S3 object-metadata semantics, one rule per row.
 *
 * Each row is an operation sequence against a real `objlogd --brokers`
 * view (its own process) of the test's log, the mock cluster of `objlogd
 * --kafka-only` or a real 3-node Kafka (testlog.h), in a bucket of its
 * own, and every step states the exact
 * response: HTTP status, S3 error code, and clauses over the JSON body and
 * headers. Clause language (';'-separated):
 *   path=value     JSON value at a dotted path ("versions.0.is_latest");
 *                  strings compare unquoted (as JSON text if they hold
 *                  U+0000), numbers and booleans as text
 *   path#=N        array length
 *   !path          absent
 *   hdr:NAME: VAL  response header line (name lower-case)
 * "$B" is the row's bucket; "$X" (X = A..Z) is a value saved from an earlier
 * step with save "X=path" (escaped when it lands in a URL). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "proc.h"
#include "testlog.h"

#define MAX_STEPS 16

typedef struct step {
    const char *method, *path, *body, *header;
    long status;
    const char *code;   /* S3 error code, or NULL for a success */
    const char *expect; /* clauses, or NULL */
    const char *save;   /* "X=path", or NULL */
} step;

typedef struct row {
    const char *rule;
    step steps[MAX_STEPS];
} row;

#define MD5_A "0cc175b9c0f1b6a831c399e269772661"
#define MD5_B "92eb5ffee6ae2fec3ad71c777531578f"
#define MD5_C "4a8a08f09d37b73795649038408b5f33"
#define MIB5 "5242880"

#define MB(b) {"PUT", "/v1/buckets/$B", b, NULL, 200, NULL, NULL, NULL}
#define MB_PLAIN MB(NULL)
#define MB_VERSIONED MB("{\"versioning\":\"Enabled\"}")
#define PUT(k, etag, save) \
    {"PUT", "/v1/buckets/$B/objects/" k, "{\"size\":1,\"etag\":\"" etag "\"}", NULL, 200, NULL, NULL, save}
#define OBJ "/v1/buckets/$B/objects/"
#define VERS "/v1/buckets/$B/versions"
#define UPL "/v1/buckets/$B/uploads"
#define PART(n, size, etag) \
    {"PUT", UPL "/$U/parts/" #n "?key=big", "{\"size\":" size ",\"etag\":\"" etag "\"}", NULL, 200, NULL, NULL, NULL}
#define CREATE_UPLOAD {"POST", UPL, "{\"key\":\"big\"}", NULL, 200, NULL, "key=big", "U=upload_id"}

static const row rows[] = {
    /* ---- buckets ---- */
    {"bucket: a second create is BucketAlreadyExists (409)",
     {MB_PLAIN, {"PUT", "/v1/buckets/$B", NULL, NULL, 409, "BucketAlreadyExists", NULL, NULL}}},
    {"bucket: settings read back (tenant, versioning)",
     {MB("{\"tenant\":\"acme\",\"versioning\":\"Enabled\"}"),
      {"GET", "/v1/buckets/$B", NULL, NULL, 200, NULL, "tenant=acme;versioning=Enabled", NULL}}},
    {"bucket: delete refused while an object exists (BucketNotEmpty 409)",
     {MB_PLAIN, PUT("k", "e1", NULL),
      {"DELETE", "/v1/buckets/$B", NULL, NULL, 409, "BucketNotEmpty", NULL, NULL}}},
    {"bucket: a lone delete marker keeps the bucket non-empty",
     {MB_VERSIONED, PUT("k", "e1", "V=version_id"),
      {"DELETE", OBJ "k", NULL, NULL, 200, NULL, "delete_marker=true", NULL},
      {"DELETE", OBJ "k?version_id=$V", NULL, NULL, 200, NULL, NULL, NULL},
      {"DELETE", "/v1/buckets/$B", NULL, NULL, 409, "BucketNotEmpty", NULL, NULL}}},
    {"bucket: delete when empty, then NoSuchBucket, then recreate",
     {MB_PLAIN, PUT("k", "e1", NULL), {"DELETE", OBJ "k", NULL, NULL, 200, NULL, NULL, NULL},
      {"DELETE", "/v1/buckets/$B", NULL, NULL, 200, NULL, NULL, NULL},
      {"GET", "/v1/buckets/$B", NULL, NULL, 404, "NoSuchBucket", NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 404, "NoSuchBucket", NULL, NULL},
      {"GET", "/v1/buckets/$B/objects", NULL, NULL, 404, "NoSuchBucket", NULL, NULL},
      MB_PLAIN,
      {"GET", "/v1/buckets/$B/objects", NULL, NULL, 200, NULL, "key_count=0;objects#=0", NULL}}},

    /* S3 API Reference, DeleteBucket (docs.aws.amazon.com/AmazonS3/latest/API/
     * API_DeleteBucket.html): "If multipart uploads in a directory bucket are
     * in progress, you can't delete the bucket until all the in-progress
     * multipart uploads are aborted or completed": directory buckets only.
     * A general purpose bucket goes, with its uploads. */
    {"bucket: DeleteBucket takes its in-progress multipart uploads (S3 API DeleteBucket)",
     {MB_PLAIN, CREATE_UPLOAD,
      {"DELETE", "/v1/buckets/$B", NULL, NULL, 200, NULL, NULL, NULL},
      {"DELETE", UPL "/$U?key=big", NULL, NULL, 404, "NoSuchBucket", NULL, NULL}}},
    /* ---- versioning states ---- */
    {"unversioned: PUT overwrites the single null version",
     {MB_PLAIN, {"PUT", OBJ "k", "{\"etag\":\"e1\"}", NULL, 200, NULL, "version_id=null", NULL},
      PUT("k", "e2", NULL),
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e2;version_id=null", NULL},
      {"GET", VERS, NULL, NULL, 200, NULL,
       "versions#=1;versions.0.version_id=null;versions.0.is_latest=true;versions.0.etag=e2", NULL}}},
    {"unversioned: DELETE removes the object, no delete marker",
     {MB_PLAIN, PUT("k", "e1", NULL), {"DELETE", OBJ "k", NULL, NULL, 200, NULL, NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 404, "NoSuchKey", NULL, NULL},
      {"GET", VERS, NULL, NULL, 200, NULL, "versions#=0", NULL}}},
    {"enabled: every PUT adds a version, newest first",
     {MB_VERSIONED, PUT("k", "e1", "V=version_id"), PUT("k", "e2", "W=version_id"),
      {"GET", VERS, NULL, NULL, 200, NULL,
       "versions#=2;versions.0.version_id=$W;versions.0.is_latest=true;versions.0.etag=e2;"
       "versions.1.version_id=$V;versions.1.is_latest=false;versions.1.etag=e1", NULL},
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e2;version_id=$W", NULL},
      {"GET", OBJ "k?version_id=$V", NULL, NULL, 200, NULL, "etag=e1;version_id=$V", NULL}}},
    {"enabled: DELETE adds a delete marker; GET is 404 NoSuchKey flagged as a marker",
     {MB_VERSIONED, PUT("k", "e1", "V=version_id"),
      {"DELETE", OBJ "k", NULL, NULL, 200, NULL, "delete_marker=true", "M=version_id"},
      {"GET", OBJ "k", NULL, NULL, 404, "NoSuchKey", "hdr:x-amz-delete-marker: true", NULL},
      {"HEAD", OBJ "k", NULL, NULL, 404, NULL, "hdr:x-amz-delete-marker: true", NULL},
      {"GET", VERS, NULL, NULL, 200, NULL,
       "versions#=2;versions.0.version_id=$M;versions.0.delete_marker=true;versions.0.is_latest=true;"
       "versions.1.version_id=$V;versions.1.delete_marker=false;versions.1.is_latest=false", NULL}}},
    {"enabled: GET or HEAD of a delete marker by version id is 405 MethodNotAllowed",
     {MB_VERSIONED, PUT("k", "e1", NULL),
      {"DELETE", OBJ "k", NULL, NULL, 200, NULL, NULL, "M=version_id"},
      {"GET", OBJ "k?version_id=$M", NULL, NULL, 405, "MethodNotAllowed", "hdr:x-amz-delete-marker: true", NULL},
      {"HEAD", OBJ "k?version_id=$M", NULL, NULL, 405, NULL, NULL, NULL}}},
    {"enabled: deleting the newest delete marker makes the object visible again",
     {MB_VERSIONED, PUT("k", "e1", "V=version_id"),
      {"DELETE", OBJ "k", NULL, NULL, 200, NULL, NULL, "M=version_id"},
      {"DELETE", OBJ "k?version_id=$M", NULL, NULL, 200, NULL, NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e1;version_id=$V", NULL}}},
    {"DELETE with a version id removes that version permanently",
     {MB_VERSIONED, PUT("k", "e1", "V=version_id"), PUT("k", "e2", "W=version_id"),
      {"DELETE", OBJ "k?version_id=$W", NULL, NULL, 200, NULL, NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e1;version_id=$V", NULL},
      {"GET", OBJ "k?version_id=$W", NULL, NULL, 404, "NoSuchVersion", NULL, NULL},
      {"GET", VERS, NULL, NULL, 200, NULL, "versions#=1;versions.0.version_id=$V;versions.0.is_latest=true", NULL}}},
    {"suspended: PUT replaces the null version and keeps the others",
     {MB_VERSIONED, PUT("k", "e1", "V=version_id"),
      {"PUT", "/v1/buckets/$B/versioning", "{\"status\":\"Suspended\"}", NULL, 200, NULL, NULL, NULL},
      {"PUT", OBJ "k", "{\"etag\":\"e2\"}", NULL, 200, NULL, "version_id=null", NULL},
      {"PUT", OBJ "k", "{\"etag\":\"e3\"}", NULL, 200, NULL, "version_id=null", NULL},
      {"GET", VERS, NULL, NULL, 200, NULL,
       "versions#=2;versions.0.version_id=null;versions.0.etag=e3;versions.0.is_latest=true;"
       "versions.1.version_id=$V;versions.1.etag=e1", NULL},
      {"GET", "/v1/buckets/$B", NULL, NULL, 200, NULL, "versioning=Suspended", NULL}}},
    {"suspended: DELETE adds a null delete marker replacing the null version",
     {MB_VERSIONED, PUT("k", "e1", "V=version_id"),
      {"PUT", "/v1/buckets/$B/versioning", "{\"status\":\"Suspended\"}", NULL, 200, NULL, NULL, NULL},
      PUT("k", "e2", NULL),
      {"DELETE", OBJ "k", NULL, NULL, 200, NULL, "delete_marker=true;version_id=null", NULL},
      {"GET", OBJ "k", NULL, NULL, 404, "NoSuchKey", "hdr:x-amz-delete-marker: true", NULL},
      {"GET", VERS, NULL, NULL, 200, NULL,
       "versions#=2;versions.0.version_id=null;versions.0.delete_marker=true;versions.1.version_id=$V", NULL}}},
    {"versioning cannot go back to Unversioned once enabled",
     {MB_VERSIONED,
      {"PUT", "/v1/buckets/$B/versioning", "{\"status\":\"Unversioned\"}", NULL, 400, "InvalidArgument", NULL, NULL},
      {"GET", "/v1/buckets/$B", NULL, NULL, 200, NULL, "versioning=Enabled", NULL}}},
    {"version cap: a PUT beyond max_versions is TooManyVersions, decided in the log",
     {MB("{\"versioning\":\"Enabled\",\"max_versions\":2}"), PUT("k", "e1", NULL), PUT("k", "e2", NULL),
      {"PUT", OBJ "k", "{\"etag\":\"e3\"}", NULL, 400, "TooManyVersions", NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e2", NULL},
      {"GET", "/v1/buckets/$B", NULL, NULL, 200, NULL, "max_versions=2", NULL}}},

    /* ---- conditional writes, decided at the event's log position ---- */
    {"conditional: If-None-Match * on an existing key is 412 PreconditionFailed",
     {MB_PLAIN, PUT("k", "e1", NULL),
      {"PUT", OBJ "k", "{\"etag\":\"e2\"}", "If-None-Match: *", 412, "PreconditionFailed", NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e1", NULL}}},
    {"conditional: If-None-Match * succeeds when the newest version is a delete marker",
     {MB_VERSIONED, PUT("k", "e1", NULL), {"DELETE", OBJ "k", NULL, NULL, 200, NULL, NULL, NULL},
      {"PUT", OBJ "k", "{\"etag\":\"e2\"}", "If-None-Match: *", 200, NULL, NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e2", NULL}}},
    {"conditional: If-Match with the current etag succeeds, a stale one is 412",
     {MB_PLAIN, PUT("k", "e1", NULL),
      {"PUT", OBJ "k", "{\"etag\":\"e2\"}", "If-Match: e1", 200, NULL, NULL, NULL},
      {"PUT", OBJ "k", "{\"etag\":\"e3\"}", "If-Match: e1", 412, "PreconditionFailed", NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e2", NULL}}},
    {"conditional: If-Match on a missing key or a delete marker is 404 NoSuchKey",
     {MB_VERSIONED,
      {"PUT", OBJ "k", "{\"etag\":\"e1\"}", "If-Match: e0", 404, "NoSuchKey", NULL, NULL},
      PUT("k", "e1", NULL), {"DELETE", OBJ "k", NULL, NULL, 200, NULL, NULL, NULL},
      {"PUT", OBJ "k", "{\"etag\":\"e2\"}", "If-Match: e1", 404, "NoSuchKey", NULL, NULL}}},
    {"conditional: DELETE with a stale If-Match is 412 and deletes nothing",
     {MB_PLAIN, PUT("k", "e1", NULL),
      {"DELETE", OBJ "k", NULL, "If-Match: e0", 412, "PreconditionFailed", NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e1", NULL},
      {"DELETE", OBJ "k", NULL, "If-Match: e1", 200, NULL, NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 404, "NoSuchKey", NULL, NULL}}},
    {"conditional: If-None-Match other than * (or on DELETE) is 400 InvalidArgument",
     {MB_PLAIN, PUT("k", "e1", NULL),
      {"PUT", OBJ "k", "{\"etag\":\"e2\"}", "If-None-Match: e1", 400, "InvalidArgument", NULL, NULL},
      {"DELETE", OBJ "k", NULL, "If-None-Match: *", 400, "InvalidArgument", NULL, NULL},
      {"GET", OBJ "k", NULL, NULL, 200, NULL, "etag=e1", NULL}}},
    {"conditional: CompleteMultipartUpload with If-None-Match * over an existing key is 412",
     {MB_PLAIN, PUT("big", "e1", NULL), CREATE_UPLOAD, PART(1, "3", MD5_A),
      {"POST", UPL "/$U/complete?key=big", "{\"parts\":[{\"part_number\":1,\"etag\":\"" MD5_A "\"}]}",
       "If-None-Match: *", 412, "PreconditionFailed", NULL, NULL},
      {"GET", OBJ "big", NULL, NULL, 200, NULL, "etag=e1", NULL}}},
    /* ---- LIST (ListObjectsV2) ---- */
    {"LIST: a delimiter may be any string",
     {MB_PLAIN, PUT("a-b-1", "e", NULL), PUT("a-b-2", "e", NULL), PUT("a-c", "e", NULL), PUT("b", "e", NULL),
      {"GET", "/v1/buckets/$B/objects?delimiter=-b-", NULL, NULL, 200, NULL,
       "key_count=3;common_prefixes#=1;common_prefixes.0=a-b-;objects#=2;objects.0.key=a-c;objects.1.key=b", NULL}}},
    {"LIST: common prefixes count toward max_keys and paginate",
     {MB_PLAIN, PUT("d1%2Fx", "e", NULL), PUT("d2%2Fx", "e", NULL), PUT("e", "e", NULL),
      {"GET", "/v1/buckets/$B/objects?delimiter=%2F&max_keys=2", NULL, NULL, 200, NULL,
       "key_count=2;is_truncated=true;common_prefixes#=2;common_prefixes.0=d1/;common_prefixes.1=d2/;objects#=0",
       "T=next_continuation_token"},
      {"GET", "/v1/buckets/$B/objects?delimiter=%2F&max_keys=2&continuation_token=$T", NULL, NULL, 200, NULL,
       "key_count=1;is_truncated=false;objects#=1;objects.0.key=e;common_prefixes#=0", NULL}}},
    {"LIST: start_after starts after the given key",
     {MB_PLAIN, PUT("a", "e", NULL), PUT("b", "e", NULL), PUT("c", "e", NULL),
      {"GET", "/v1/buckets/$B/objects?start_after=a", NULL, NULL, 200, NULL,
       "key_count=2;objects.0.key=b;objects.1.key=c", NULL}}},
    {"LIST: prefix selects exactly the keys that start with it",
     {MB_PLAIN, PUT("ab", "e", NULL), PUT("abc", "e", NULL), PUT("ac", "e", NULL), PUT("b", "e", NULL),
      {"GET", "/v1/buckets/$B/objects?prefix=ab", NULL, NULL, 200, NULL,
       "key_count=2;objects.0.key=ab;objects.1.key=abc", NULL}}},
    {"LIST: max_keys is 0..1000; -1, 1001 and abc are InvalidArgument",
     {MB_PLAIN, PUT("a", "e", NULL),
      {"GET", "/v1/buckets/$B/objects?max_keys=0", NULL, NULL, 200, NULL, "key_count=0;objects#=0", NULL},
      {"GET", "/v1/buckets/$B/objects?max_keys=-1", NULL, NULL, 400, "InvalidArgument", NULL, NULL},
      {"GET", "/v1/buckets/$B/objects?max_keys=1001", NULL, NULL, 400, "InvalidArgument", NULL, NULL},
      {"GET", "/v1/buckets/$B/objects?max_keys=abc", NULL, NULL, 400, "InvalidArgument", NULL, NULL},
      {"GET", "/v1/buckets/$B/objects", NULL, NULL, 200, NULL, "max_keys=1000;key_count=1", NULL}}},
    {"LIST: a forged or foreign continuation token is a 400",
     {MB_PLAIN, PUT("a", "e", NULL), PUT("b", "e", NULL),
      {"PUT", "/v1/buckets/$B-x", NULL, NULL, 200, NULL, NULL, NULL},
      {"PUT", "/v1/buckets/$B-x/objects/a", "{}", NULL, 200, NULL, NULL, NULL},
      {"PUT", "/v1/buckets/$B-x/objects/b", "{}", NULL, 200, NULL, NULL, NULL},
      {"GET", "/v1/buckets/$B/objects?max_keys=1", NULL, NULL, 200, NULL, "is_truncated=true", "T=next_continuation_token"},
      {"GET", "/v1/buckets/$B-x/objects?continuation_token=$T", NULL, NULL, 400, "InvalidArgument", NULL, NULL},
      {"GET", "/v1/buckets/$B/objects?continuation_token=AAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL, NULL, 400,
       "InvalidArgument", NULL, NULL}}},
    {"LIST: keys sort by UTF-8 bytes and round-trip exactly through JSON",
     {MB_PLAIN, PUT("%C3%A9", "e", NULL), PUT("z", "e", NULL), PUT("Z", "e", NULL), PUT("a%20b", "e", NULL),
      PUT("%E2%82%AC%00x", "e", NULL),
      {"GET", "/v1/buckets/$B/objects", NULL, NULL, 200, NULL,
       "key_count=5;objects.0.key=Z;objects.1.key=a b;objects.2.key=z;objects.3.key=\xc3\xa9;"
       "objects.4.key=\"\xe2\x82\xac\\u0000x\"", NULL}}},

    /* ---- ListObjectVersions ---- */
    {"versions: pagination inside one key's versions neither repeats nor skips",
     {MB_VERSIONED, PUT("k", "e1", "P=version_id"), PUT("k", "e2", "Q=version_id"), PUT("k", "e3", "R=version_id"),
      PUT("k", "e4", "S=version_id"), PUT("k", "e5", "T=version_id"),
      {"GET", VERS "?max_keys=2", NULL, NULL, 200, NULL,
       "versions#=2;versions.0.version_id=$T;versions.0.is_latest=true;versions.1.version_id=$S;"
       "is_truncated=true;next_key_marker=k;next_version_id_marker=$S", NULL},
      {"GET", VERS "?max_keys=2&key_marker=k&version_id_marker=$S", NULL, NULL, 200, NULL,
       "versions#=2;versions.0.version_id=$R;versions.0.is_latest=false;versions.1.version_id=$Q;"
       "is_truncated=true;next_key_marker=k;next_version_id_marker=$Q", NULL},
      {"GET", VERS "?max_keys=2&key_marker=k&version_id_marker=$Q", NULL, NULL, 200, NULL,
       "versions#=1;versions.0.version_id=$P;is_truncated=false", NULL}}},
    {"versions: key_marker alone starts after every version of that key",
     {MB_VERSIONED, PUT("a", "e1", NULL), PUT("a", "e2", NULL), PUT("b", "e3", "V=version_id"),
      {"GET", VERS "?key_marker=a", NULL, NULL, 200, NULL,
       "versions#=1;versions.0.key=b;versions.0.version_id=$V", NULL}}},
    {"versions: a delimiter collapses keys into common prefixes",
     {MB_VERSIONED, PUT("d%2F1", "e", NULL), PUT("d%2F2", "e", NULL), PUT("e", "e", NULL),
      {"GET", VERS "?delimiter=%2F", NULL, NULL, 200, NULL,
       "common_prefixes#=1;common_prefixes.0=d/;versions#=1;versions.0.key=e", NULL}}},

    /* ---- multipart ---- */
    {"multipart: complete makes a version whose ETag is md5 of the part md5s, dash count",
     {MB_PLAIN, CREATE_UPLOAD, PART(1, MIB5, MD5_A), PART(2, "1", MD5_B),
      {"POST", UPL "/$U/complete?key=big",
       "{\"parts\":[{\"part_number\":1,\"etag\":\"" MD5_A "\"},{\"part_number\":2,\"etag\":\"" MD5_B "\"}]}",
       NULL, 200, NULL, "etag=96e024ba2074fe77e8e965ba43a704be-2", NULL},
      {"GET", OBJ "big", NULL, NULL, 200, NULL, "etag=96e024ba2074fe77e8e965ba43a704be-2;size=5242881", NULL},
      {"GET", UPL, NULL, NULL, 200, NULL, "uploads#=0", NULL}}},
    {"multipart: re-uploading a part replaces it",
     {MB_PLAIN, CREATE_UPLOAD, PART(1, MIB5, MD5_A), PART(1, "7", MD5_C),
      {"GET", UPL "/$U/parts?key=big", NULL, NULL, 200, NULL,
       "parts#=1;parts.0.part_number=1;parts.0.etag=" MD5_C ";parts.0.size=7", NULL}}},
    {"multipart: list parts paginates with part_number_marker and max_parts",
     {MB_PLAIN, CREATE_UPLOAD, PART(1, MIB5, MD5_A), PART(2, MIB5, MD5_B), PART(3, "1", MD5_C),
      {"GET", UPL "/$U/parts?key=big&max_parts=2", NULL, NULL, 200, NULL,
       "parts#=2;parts.0.part_number=1;parts.1.part_number=2;is_truncated=true;next_part_number_marker=2", NULL},
      {"GET", UPL "/$U/parts?key=big&max_parts=2&part_number_marker=2", NULL, NULL, 200, NULL,
       "parts#=1;parts.0.part_number=3;is_truncated=false", NULL}}},
    {"multipart: complete checks the list against recorded parts (InvalidPart, InvalidPartOrder)",
     {MB_PLAIN, CREATE_UPLOAD, PART(1, MIB5, MD5_A), PART(2, "1", MD5_B),
      {"POST", UPL "/$U/complete?key=big", "{\"parts\":[{\"part_number\":1,\"etag\":\"" MD5_A "\"},{\"part_number\":3,\"etag\":\"" MD5_B "\"}]}",
       NULL, 400, "InvalidPart", NULL, NULL},
      {"POST", UPL "/$U/complete?key=big", "{\"parts\":[{\"part_number\":1,\"etag\":\"" MD5_B "\"}]}",
       NULL, 400, "InvalidPart", NULL, NULL},
      {"POST", UPL "/$U/complete?key=big", "{\"parts\":[{\"part_number\":2,\"etag\":\"" MD5_B "\"},{\"part_number\":1,\"etag\":\"" MD5_A "\"}]}",
       NULL, 400, "InvalidPartOrder", NULL, NULL},
      {"GET", OBJ "big", NULL, NULL, 404, "NoSuchKey", NULL, NULL}}},
    {"multipart: every part but the last must be at least 5 MiB (EntityTooSmall)",
     {MB_PLAIN, CREATE_UPLOAD, PART(1, "1", MD5_A), PART(2, "1", MD5_B),
      {"POST", UPL "/$U/complete?key=big", "{\"parts\":[{\"part_number\":1,\"etag\":\"" MD5_A "\"},{\"part_number\":2,\"etag\":\"" MD5_B "\"}]}",
       NULL, 400, "EntityTooSmall", NULL, NULL},
      {"POST", UPL "/$U/complete?key=big", "{\"parts\":[{\"part_number\":2,\"etag\":\"" MD5_B "\"}]}",
       NULL, 200, NULL, NULL, NULL},
      {"GET", OBJ "big", NULL, NULL, 200, NULL, "size=1", NULL}}},
    {"multipart: after abort the upload is NoSuchUpload",
     {MB_PLAIN, CREATE_UPLOAD, PART(1, MIB5, MD5_A),
      {"DELETE", UPL "/$U?key=big", NULL, NULL, 200, NULL, NULL, NULL},
      {"PUT", UPL "/$U/parts/2?key=big", "{\"size\":1,\"etag\":\"" MD5_B "\"}", NULL, 404, "NoSuchUpload", NULL, NULL},
      {"POST", UPL "/$U/complete?key=big", "{\"parts\":[{\"part_number\":1,\"etag\":\"" MD5_A "\"}]}",
       NULL, 404, "NoSuchUpload", NULL, NULL},
      {"DELETE", UPL "/$U?key=big", NULL, NULL, 404, "NoSuchUpload", NULL, NULL}}},
    {"multipart: after complete the upload is NoSuchUpload",
     {MB_PLAIN, CREATE_UPLOAD, PART(1, "3", MD5_A),
      {"POST", UPL "/$U/complete?key=big", "{\"parts\":[{\"part_number\":1,\"etag\":\"" MD5_A "\"}]}",
       NULL, 200, NULL, NULL, NULL},
      {"POST", UPL "/$U/complete?key=big", "{\"parts\":[{\"part_number\":1,\"etag\":\"" MD5_A "\"}]}",
       NULL, 404, "NoSuchUpload", NULL, NULL}}},
    {"multipart: part numbers are 1 to 10,000",
     {MB_PLAIN, CREATE_UPLOAD,
      {"PUT", UPL "/$U/parts/0?key=big", "{\"size\":1,\"etag\":\"" MD5_A "\"}", NULL, 400, "InvalidArgument", NULL, NULL},
      {"PUT", UPL "/$U/parts/10001?key=big", "{\"size\":1,\"etag\":\"" MD5_A "\"}", NULL, 400, "InvalidArgument", NULL, NULL},
      PART(10000, "1", MD5_A)}},
    {"multipart: list uploads with prefix and key_marker",
     {MB_PLAIN, {"POST", UPL, "{\"key\":\"a\"}", NULL, 200, NULL, NULL, "U=upload_id"},
      {"POST", UPL, "{\"key\":\"b\"}", NULL, 200, NULL, NULL, "V=upload_id"},
      {"GET", UPL, NULL, NULL, 200, NULL,
       "uploads#=2;uploads.0.key=a;uploads.0.upload_id=$U;uploads.1.key=b;uploads.1.upload_id=$V", NULL},
      {"GET", UPL "?key_marker=a", NULL, NULL, 200, NULL, "uploads#=1;uploads.0.key=b", NULL},
      {"GET", UPL "?prefix=a", NULL, NULL, 200, NULL, "uploads#=1;uploads.0.key=a", NULL}}},
};

/* ---- runner ---- */

static struct {
    char root[256], data[300], objlogd[512], url[256];
    testlog *log;
    proc *d;
} T;

typedef struct vars {
    char bucket[64];
    char val[26][512];
} vars;

static int setup(void **state) {
    (void)state;
    char listen[96];
    assert_int_equal(proc_tmpdir(T.root, sizeof(T.root)), 0);
    snprintf(T.data, sizeof(T.data), "%s/data", T.root);
    proc_bin("query/objlogd", T.objlogd, sizeof(T.objlogd));
    T.log = testlog_start(8);
    assert_non_null(T.log);
    char *argv[] = {T.objlogd, "--brokers", (char *)testlog_bootstrap(T.log), "--listen",
                    "127.0.0.1:0", "--data", T.data, NULL};
    T.d = proc_spawn(argv, NULL);
    assert_non_null(T.d);
    assert_int_equal(proc_wait_line(T.d, "OBJLOG_LISTEN=", listen, sizeof(listen), 60000), 0);
    assert_int_equal(proc_wait_line(T.d, "OBJLOG_READY", NULL, 0, 60000), 0);
    snprintf(T.url, sizeof(T.url), "http://%s", listen);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    int st = T.d ? proc_stop(T.d, 20000) : 0;
    testlog_stop(T.log);
    proc_rmtree(T.root);
    assert_int_equal(st, 0);
    return 0;
}

/* Expands $B and $X into out; values are URL-escaped when in_url. */
static void expand(httpc *c, const vars *v, const char *in, int in_url, char *out, size_t size) {
    size_t o = 0;
    for (const char *p = in; *p && o + 1 < size; p++) {
        const char *sub = NULL;
        char *esc = NULL;
        if (p[0] == '$' && p[1] == 'B') {
            sub = v->bucket;
        } else if (p[0] == '$' && p[1] >= 'A' && p[1] <= 'Z') {
            sub = v->val[p[1] - 'A'];
            if (in_url)
                sub = esc = httpc_escape(c, sub, strlen(sub));
        }
        if (!sub) {
            out[o++] = *p;
            continue;
        }
        size_t n = strlen(sub);
        if (o + n >= size)
            n = size - 1 - o;
        memcpy(out + o, sub, n);
        o += n;
        p++;
        free(esc);
    }
    out[o] = '\0';
}

static json_t *json_at(json_t *root, const char *path) {
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    json_t *cur = root;
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && cur;
         tok = strtok_r(NULL, ".", &save)) {
        if (json_is_array(cur))
            cur = json_array_get(cur, (size_t)strtoul(tok, NULL, 10));
        else
            cur = json_object_get(cur, tok);
    }
    return cur;
}

static void json_text(json_t *j, char *out, size_t size) {
    /* Strings compare unquoted unless they hold U+0000: those compare as
     * their JSON text, so a clause can spell the NUL ("\\u0000"). */
    if (json_is_string(j) && json_string_length(j) == strlen(json_string_value(j))) {
        snprintf(out, size, "%s", json_string_value(j));
        return;
    }
    char *d = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(out, size, "%s", d ? d : "?");
    free(d);
}

static void check_clause(const char *where, json_t *body, const httpc_resp *r, const char *cl) {
    char text[1024];
    if (!strncmp(cl, "hdr:", 4)) {
        char want[600];
        snprintf(want, sizeof(want), "%s\n", cl + 4);
        if (!strstr(r->headers, want))
            fail_msg("%s: header \"%s\" missing in:\n%s", where, cl + 4, r->headers);
        return;
    }
    if (cl[0] == '!') {
        if (json_at(body, cl + 1))
            fail_msg("%s: %s should be absent", where, cl + 1);
        return;
    }
    const char *eq = strchr(cl, '=');
    if (!eq)
        fail_msg("%s: bad clause %s", where, cl);
    char path[256];
    int count = eq > cl && eq[-1] == '#';
    size_t pl = (size_t)(eq - cl) - (size_t)count;
    snprintf(path, sizeof(path), "%.*s", (int)pl, cl);
    json_t *j = json_at(body, path);
    if (!j)
        fail_msg("%s: %s is absent in %s", where, path, r->body);
    if (count)
        snprintf(text, sizeof(text), "%zu", json_array_size(j));
    else
        json_text(j, text, sizeof(text));
    if (strcmp(text, eq + 1) != 0)
        fail_msg("%s: %s is \"%s\", want \"%s\"; body %s", where, path, text, eq + 1, r->body);
}

static void run_step(httpc *c, vars *v, const row *rw, int si) {
    const step *s = &rw->steps[si];
    char path[2048], body[4096], header[512], expect[4096], where[600];
    expand(c, v, s->path, 1, path, sizeof(path));
    if (s->body)
        expand(c, v, s->body, 0, body, sizeof(body));
    if (s->header)
        expand(c, v, s->header, 0, header, sizeof(header));
    const char *hdrs[2] = {s->header ? header : NULL, NULL};
    snprintf(where, sizeof(where), "[%.200s] step %d %s %.300s", rw->rule, si + 1, s->method, path);
    httpc_resp r;
    if (httpc_do(c, s->method, path, s->body ? body : NULL, hdrs, &r) != 0)
        fail_msg("%s: no response", where);
    if (r.status != s->status)
        fail_msg("%s: status %ld, want %ld; body %s", where, r.status, s->status, r.body);
    if (!strcmp(s->method, "HEAD")) {
        if (s->expect)
            check_clause(where, NULL, &r, s->expect);
        return;
    }
    json_t *j = json_loads(r.body, JSON_ALLOW_NUL, NULL);
    if (!j)
        fail_msg("%s: body is not JSON: %s", where, r.body);
    if (s->code) {
        json_t *code = json_at(j, "error.code");
        if (!json_is_string(code) || strcmp(json_string_value(code), s->code))
            fail_msg("%s: error code %s, want %s", where, r.body, s->code);
    }
    if (s->expect) {
        expand(c, v, s->expect, 0, expect, sizeof(expect));
        char *save = NULL;
        for (char *cl = strtok_r(expect, ";", &save); cl; cl = strtok_r(NULL, ";", &save))
            check_clause(where, j, &r, cl);
    }
    if (s->save) {
        json_t *val = json_at(j, s->save + 2);
        if (!val)
            fail_msg("%s: nothing to save at %s in %s", where, s->save + 2, r.body);
        json_text(val, v->val[s->save[0] - 'A'], sizeof(v->val[0]));
    }
    json_decref(j);
}

/* One cmocka test per row, named after its rule, so a failure names the
 * S3 behaviour that broke and the other rows still run. */
static void run_row(void **state) {
    const row *rw = *state;
    httpc *c = httpc_new(T.url);
    vars v;
    memset(&v, 0, sizeof(v));
    snprintf(v.bucket, sizeof(v.bucket), "s3rule%03d", (int)(rw - rows));
    for (int si = 0; si < MAX_STEPS && rw->steps[si].method; si++)
        run_step(c, &v, rw, si);
    httpc_destroy(c);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    size_t n = sizeof(rows) / sizeof(rows[0]);
    struct CMUnitTest *tests = calloc(n, sizeof(*tests));
    for (size_t i = 0; i < n; i++) {
        tests[i].name = rows[i].rule;
        tests[i].test_func = run_row;
        tests[i].initial_state = (void *)&rows[i];
    }
    int rc = _cmocka_run_group_tests("s3_table", tests, n, setup, teardown);
    free(tests);
    return rc;
}
