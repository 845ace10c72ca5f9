/* test_apply.c: the state machine (materializer/apply.c) rule by rule. Each
 * table row is one S3 rule: a sequence of events, the exact outcome code and
 * version id of each, and the exact resulting `versions`, `objects` and
 * `buckets` contents. Every row runs twice against a real RocksDB: once with
 * one WriteBatch per event and once with the whole row in ONE batch, which
 * pins down read-your-writes inside a batch (both must give the same state).
 *
 * State notation, newest version first:
 *   versions "a=#3:e2,Mnull"  key a: version id of step 3 (etag e2), then a
 *                             null delete marker; keys joined by ';'
 *   objects  "a=#3:e2"        the current live version of each key
 *   buckets  "b:E/3"          bucket name, versioning (U/E/S) and the
 *                             version cap if set
 *   uploads  "a@#2;a@#2.1:5M:0cc1"  upload row of key a made by step 2,
 *                             then its part 1 (size, first 4 etag chars)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "apply.h"
#include "keycodec.h"
#include "materializer.h"
#include "proc.h"
#include "ridindex.h"
#include "rowcache.h"
#include "rows.h"
#include "statrows.h"

#define NPARTS 4
#define EPOCH 1
#define MAX_STEPS 16

#define OK OBJLOG__OUTCOME_CODE__OUTCOME_OK
#define NO_BUCKET OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET
#define EXISTS OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_ALREADY_EXISTS
#define NOT_EMPTY OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_NOT_EMPTY
#define PRECOND OBJLOG__OUTCOME_CODE__OUTCOME_PRECONDITION_FAILED
#define WRONG_RANGE OBJLOG__OUTCOME_CODE__OUTCOME_WRONG_RANGE
#define INVALID_ARG OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT
#define TOO_MANY OBJLOG__OUTCOME_CODE__OUTCOME_TOO_MANY_VERSIONS
#define NO_UPLOAD OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_UPLOAD
#define BAD_PART OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART
#define BAD_ORDER OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART_ORDER
#define TOO_SMALL OBJLOG__OUTCOME_CODE__OUTCOME_ENTITY_TOO_SMALL
#define NO_KEY OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_KEY
#define OVER_QUOTA OBJLOG__OUTCOME_CODE__OUTCOME_QUOTA_EXCEEDED

/* Part ETags: the MD5 of the one-byte strings "a", "b", "c". */
#define MD5_A "0cc175b9c0f1b6a831c399e269772661"
#define MD5_B "92eb5ffee6ae2fec3ad71c777531578f"
#define MD5_B_UPPER "92EB5FFEE6AE2FEC3AD71C777531578F"
#define MD5_C "4a8a08f09d37b73795649038408b5f33"
/* Multipart ETags hex(md5(md5 bytes of each part)) "-" count, computed
 * outside this code base (Python hashlib) and cross-checked in
 * test_multipart_etag_constants with OpenSSL:
 *   python3 -c "import hashlib as h; m=lambda s: h.md5(s).digest();
 *               print(h.md5(m(b'a')+m(b'b')).hexdigest())" */
#define ETAG_AB "96e024ba2074fe77e8e965ba43a704be-2"
#define ETAG_ABC "4054c6f7787ecb7b323323155b0c0583-3"
#define ETAG_A "b6ff9a06b7e20bcb2858c5b8ff744aea-1"
#define ETAG_C "653167ea08f56a237537717ba4f11c93-1"

/* One event. op: B create bucket (arg: versioning U/E/S, then an optional
 * max_versions, "E3"), X delete bucket, V set versioning (arg U/E/S),
 * Q set quota (arg NULL: max_bytes 1000; "o<n>" max_objects n; "b<n>"
 * max_bytes n), P put (arg: etag; every object is 7 bytes), D delete (arg: version ref or NULL),
 * multipart (upload ids are written "#n": the id of step n's upload):
 *   M create upload
 *   U upload part   arg "#n <part number> <size> <etag>", size in bytes or
 *                   with suffix M (MiB)
 *   C complete      arg "#n <part>:<etag> ... [=<expected etag>]"
 *   A abort         arg "#n" */
typedef struct step {
    char op;
    const char *bucket;
    const char *key;
    const char *arg;
    Objlog__OutcomeCode expect;
    const char *vid;       /* expected version id: "#n", "#" (this step),
                              "null" or "" */
    int marker;            /* expected delete_marker of the outcome */
    const char *if_match;
    int if_none_match;
    int rid;               /* request id number; 0 = fresh */
    int wrong_partition;   /* send it to a partition that does not own it */
} step;

typedef struct row {
    const char *name;
    step steps[MAX_STEPS];
    const char *versions;
    const char *objects;
    const char *buckets;
    const char *uploads;
} row;

/* Shorthands so the table reads like the rule. */
#define MKB(b, v) {'B', b, "", v, OK, "", 0, NULL, 0, 0, 0}
#define PUT(k, e, vid) {'P', "b", k, e, OK, vid, 0, NULL, 0, 0, 0}
#define DEL(k, vid, mk) {'D', "b", k, NULL, OK, vid, mk, NULL, 0, 0, 0}
#define DELV(k, ref, mk) {'D', "b", k, ref, OK, ref, mk, NULL, 0, 0, 0}
#define SETV(v) {'V', "b", "", v, OK, "", 0, NULL, 0, 0, 0}
#define MPU(k) {'M', "b", k, NULL, OK, "", 0, NULL, 0, 0, 0}
#define PART(k, arg) {'U', "b", k, arg, OK, "", 0, NULL, 0, 0, 0}
#define PARTX(k, arg, code) {'U', "b", k, arg, code, "", 0, NULL, 0, 0, 0}
#define DONE(k, arg, vid) {'C', "b", k, arg, OK, vid, 0, NULL, 0, 0, 0}
#define DONEX(k, arg, code) {'C', "b", k, arg, code, "", 0, NULL, 0, 0, 0}
#define ABORT(k, ref, code) {'A', "b", k, ref, code, "", 0, NULL, 0, 0, 0}
#define END {0, NULL, NULL, NULL, OK, NULL, 0, NULL, 0, 0, 0}
#define PUTX(k, e, code) {'P', "b", k, e, code, "", 0, NULL, 0, 0, 0}
#define DELX(k, code) {'D', "b", k, NULL, code, "", 0, NULL, 0, 0, 0}
#define QUOTA(q) {'Q', "b", "", q, OK, "", 0, NULL, 0, 0, 0}

static const row rows[] = {
    {"create_bucket", {MKB("b", "E"), END}, "", "", "b:E", ""},
    {"create_bucket_twice_is_BucketAlreadyExists",
     {MKB("b", "U"), {'B', "b", "", "E", EXISTS, "", 0, NULL, 0, 0, 0}, END},
     "", "", "b:U", ""},
    {"put_without_bucket_is_NoSuchBucket",
     {{'P', "b", "a", "e1", NO_BUCKET, "", 0, NULL, 0, 0, 0}, END}, "", "", "", ""},
    {"put_empty_key_is_InvalidArgument",
     {MKB("b", "U"), {'P', "b", "", "e1", INVALID_ARG, "", 0, NULL, 0, 0, 0}, END},
     "", "", "b:U", ""},
    {"unversioned_put_replaces_the_null_version",
     {MKB("b", "U"), PUT("a", "e1", "null"), PUT("a", "e2", "null"),
      PUT("c", "e3", "null"), END},
     "a=null:e2;c=null:e3", "a=null:e2;c=null:e3", "b:U", ""},
    {"enabled_put_adds_a_version",
     {MKB("b", "E"), PUT("a", "e1", "#"), PUT("a", "e2", "#"), END},
     "a=#3:e2,#2:e1", "a=#3:e2", "b:E", ""},
    {"suspended_put_replaces_null_and_keeps_others",
     {MKB("b", "U"), PUT("a", "e1", "null"), SETV("E"), PUT("a", "e2", "#"),
      SETV("S"), PUT("a", "e3", "null"), END},
     "a=null:e3,#4:e2", "a=null:e3", "b:S", ""},
    {"suspended_put_replaces_a_null_version_in_the_middle",
     {MKB("b", "E"), PUT("a", "e1", "#"), SETV("S"), PUT("a", "e2", "null"),
      SETV("E"), PUT("a", "e3", "#"), SETV("S"), PUT("a", "e4", "null"), END},
     "a=null:e4,#6:e3,#2:e1", "a=null:e4", "b:S", ""},
    {"if_none_match_fails_on_a_live_version",
     {MKB("b", "U"), PUT("a", "e1", "null"),
      {'P', "b", "a", "e2", PRECOND, "", 0, NULL, 1, 0, 0},
      {'P', "b", "c", "e3", OK, "null", 0, NULL, 1, 0, 0}, END},
     "a=null:e1;c=null:e3", "a=null:e1;c=null:e3", "b:U", ""},
    {"if_none_match_succeeds_over_a_delete_marker",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1),
      {'P', "b", "a", "e2", OK, "#", 0, NULL, 1, 0, 0}, END},
     "a=#4:e2,M#3,#2:e1", "a=#4:e2", "b:E", ""},
    /* Preconditions follow S3 (rule list P in apply.c):
     * PutObject If-Match, S3 API reference: "If the ETag values do not
     * match, the operation returns a 412 Precondition Failed error."; a key
     * without a current version (missing, or a delete marker newest)
     * answers 404 NoSuchKey: S3 User Guide, conditional deletes/writes,
     * "404 Not Found response because the object key no longer exists". */
    {"if_match_needs_the_current_etag",
     {MKB("b", "E"),
      {'P', "b", "a", "e1", NO_KEY, "", 0, "e0", 0, 0, 0}, /* no object */
      PUT("a", "e1", "#"),
      {'P', "b", "a", "e2", OK, "#", 0, "\"e1\"", 0, 0, 0}, /* quoted ok */
      {'P', "b", "a", "e3", PRECOND, "", 0, "e1", 0, 0, 0}, /* stale etag */
      {'P', "b", "a", "e3", OK, "#", 0, "*", 0, 0, 0},
      DEL("a", "#", 1),
      {'P', "b", "a", "e4", NO_KEY, "", 0, "e3", 0, 0, 0}, /* marker newest */
      END},
     "a=M#7,#6:e3,#4:e2,#3:e1", "", "b:E", ""},
    {"put_if_match_on_a_missing_key_is_NoSuchKey_also_for_star",
     {MKB("b", "U"), {'P', "b", "a", "e1", NO_KEY, "", 0, "e1", 0, 0, 0},
      {'P', "b", "a", "e1", NO_KEY, "", 0, "*", 0, 0, 0}, END},
     "", "", "b:U", ""},
    /* S3 "behaves as if the object was deleted" when the current version
     * is a delete marker (GetObject, DeleteMarker): If-Match has nothing to
     * match -> NoSuchKey, in every versioning state that leaves a marker. */
    {"put_if_match_over_a_delete_marker_is_NoSuchKey",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1),
      {'P', "b", "a", "e2", NO_KEY, "", 0, "e1", 0, 0, 0},
      {'P', "b", "a", "e2", NO_KEY, "", 0, "*", 0, 0, 0}, END},
     "a=M#3,#2:e1", "", "b:E", ""},
    {"put_if_match_over_a_suspended_null_marker_is_NoSuchKey",
     {MKB("b", "S"), PUT("a", "e1", "null"), DEL("a", "null", 1),
      {'P', "b", "a", "e2", NO_KEY, "", 0, "e1", 0, 0, 0}, END},
     "a=Mnull", "", "b:S", ""},
    /* PutObject API reference, If-None-Match: "Uploads the object only if
     * the object key name does not already exist in the bucket specified.
     * Otherwise, Amazon S3 returns a 412 Precondition Failed error." A key
     * whose newest version is a delete marker does not exist. */
    {"put_if_none_match_over_a_suspended_null_marker_succeeds",
     {MKB("b", "S"), PUT("a", "e1", "null"), DEL("a", "null", 1),
      {'P', "b", "a", "e2", OK, "null", 0, NULL, 1, 0, 0},
      {'P', "b", "a", "e3", PRECOND, "", 0, NULL, 1, 0, 0}, END},
     "a=null:e2", "a=null:e2", "b:S", ""},
    /* S3 User Guide, conditional deletes: "Conditional delete evaluations
     * only apply to the current version of the object"; If-Match "*"
     * checks "if object exists". */
    {"delete_if_match_on_a_missing_key_is_NoSuchKey_and_adds_no_marker",
     {MKB("b", "E"), {'D', "b", "a", NULL, NO_KEY, "", 0, "e1", 0, 0, 0},
      {'D', "b", "a", NULL, NO_KEY, "", 0, "*", 0, 0, 0}, DEL("a", "#", 1), END},
     "a=M#4", "", "b:E", ""},
    {"delete_if_match_over_a_delete_marker_is_NoSuchKey",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1),
      {'D', "b", "a", NULL, NO_KEY, "", 0, "e1", 0, 0, 0},
      {'D', "b", "a", NULL, NO_KEY, "", 0, "*", 0, 0, 0}, END},
     "a=M#3,#2:e1", "", "b:E", ""},
    {"delete_if_match_star_on_a_live_key_adds_the_marker",
     {MKB("b", "E"), PUT("a", "e1", "#"),
      {'D', "b", "a", NULL, OK, "#", 1, "*", 0, 0, 0}, END},
     "a=M#3,#2:e1", "", "b:E", ""},
    {"delete_version_if_match_is_checked_against_the_current_version",
     {MKB("b", "E"), PUT("a", "e1", "#"), PUT("a", "e2", "#"),
      {'D', "b", "a", "#2", PRECOND, "", 0, "e1", 0, 0, 0},
      {'D', "b", "a", "#2", OK, "#2", 0, "e2", 0, 0, 0}, END},
     "a=#3:e2", "a=#3:e2", "b:E", ""},
    /* CompleteMultipartUpload API reference, If-None-Match: "Uploads the
     * object only if the object key name does not already exist in the
     * bucket specified. Otherwise, Amazon S3 returns a 412 Precondition
     * Failed error." If-Match as PutObject. */
    {"complete_if_match_on_a_missing_key_is_NoSuchKey_upload_kept",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 1 " MD5_A),
      {'C', "b", "a", "#2 1:" MD5_A, NO_KEY, "", 0, "e1", 0, 0, 0},
      {'C', "b", "a", "#2 1:" MD5_A, NO_KEY, "", 0, "*", 0, 0, 0}, END},
     "", "", "b:U", "a@#2;a@#2.1:1:0cc1"},
    {"complete_over_a_delete_marker_if_match_NoSuchKey_if_none_match_ok",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1), MPU("a"),
      PART("a", "#4 1 1 " MD5_A),
      {'C', "b", "a", "#4 1:" MD5_A, NO_KEY, "", 0, "e1", 0, 0, 0},
      {'C', "b", "a", "#4 1:" MD5_A " =" ETAG_A, OK, "#", 0, NULL, 1, 0, 0},
      END},
     "a=#7:" ETAG_A ",M#3,#2:e1", "a=#7:" ETAG_A, "b:E", ""},
    {"if_match_applies_to_delete",
     {MKB("b", "U"), PUT("a", "e1", "null"),
      {'D', "b", "a", NULL, PRECOND, "", 0, "e9", 0, 0, 0},
      {'D', "b", "a", NULL, OK, "", 0, "e1", 0, 0, 0}, END},
     "", "", "b:U", ""},
    {"unversioned_delete_removes_and_missing_key_is_ok",
     {MKB("b", "U"), PUT("a", "e1", "null"), DEL("a", "", 0), DEL("zz", "", 0),
      END},
     "", "", "b:U", ""},
    {"delete_without_bucket_is_NoSuchBucket",
     {{'D', "b", "a", NULL, NO_BUCKET, "", 0, NULL, 0, 0, 0}, END}, "", "", "", ""},
    {"enabled_delete_adds_a_marker",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1), DEL("n", "#", 1), END},
     "a=M#3,#2:e1;n=M#4", "", "b:E", ""},
    {"suspended_delete_replaces_null_with_a_null_marker",
     {MKB("b", "U"), PUT("a", "e1", "null"), SETV("E"), PUT("a", "e2", "#"),
      SETV("S"), DEL("a", "null", 1), END},
     "a=Mnull,#4:e2", "", "b:S", ""},
    {"delete_newest_version_reveals_the_next",
     {MKB("b", "E"), PUT("a", "e1", "#"), PUT("a", "e2", "#"), DELV("a", "#3", 0),
      END},
     "a=#2:e1", "a=#2:e1", "b:E", ""},
    {"delete_older_version_keeps_current",
     {MKB("b", "E"), PUT("a", "e1", "#"), PUT("a", "e2", "#"), DELV("a", "#2", 0),
      END},
     "a=#3:e2", "a=#3:e2", "b:E", ""},
    {"delete_the_marker_revives_the_object",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1), DELV("a", "#3", 1),
      END},
     "a=#2:e1", "a=#2:e1", "b:E", ""},
    {"delete_missing_version_is_ok_and_bad_id_is_InvalidArgument",
     {MKB("b", "E"), PUT("a", "e1", "#"), DELV("a", "00010000000000ff", 0),
      DELV("zz", "null", 0),
      {'D', "b", "a", "zz", INVALID_ARG, "", 0, NULL, 0, 0, 0}, END},
     "a=#2:e1", "a=#2:e1", "b:E", ""},
    {"delete_null_version_by_id",
     {MKB("b", "U"), PUT("a", "e1", "null"), SETV("E"), PUT("a", "e2", "#"),
      DELV("a", "null", 0), END},
     "a=#4:e2", "a=#4:e2", "b:E", ""},
    {"null_version_is_not_addressable_by_its_seq",
     {MKB("b", "U"), PUT("a", "e1", "null"), DELV("a", "0001000000000002", 0), END},
     "a=null:e1", "a=null:e1", "b:U", ""},
    {"delete_last_version_removes_the_key",
     {MKB("b", "E"), PUT("a", "e1", "#"), DELV("a", "#2", 0), END}, "", "", "b:E", ""},
    {"delete_bucket_with_versions_is_BucketNotEmpty",
     {MKB("b", "U"), PUT("a", "e1", "null"),
      {'X', "b", "", NULL, NOT_EMPTY, "", 0, NULL, 0, 0, 0}, END},
     "a=null:e1", "a=null:e1", "b:U", ""},
    {"delete_bucket_with_only_a_marker_is_BucketNotEmpty",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1), DELV("a", "#2", 0),
      {'X', "b", "", NULL, NOT_EMPTY, "", 0, NULL, 0, 0, 0},
      DELV("a", "#3", 1), {'X', "b", "", NULL, OK, "", 0, NULL, 0, 0, 0}, END},
     "", "", "", ""},
    {"delete_bucket",
     {{'X', "b", "", NULL, NO_BUCKET, "", 0, NULL, 0, 0, 0}, MKB("b", "U"),
      MKB("other", "U"), {'X', "b", "", NULL, OK, "", 0, NULL, 0, 0, 0}, END},
     "", "", "other:U", ""},
    {"versioning_cannot_return_to_unversioned",
     {{'V', "b", "", "E", NO_BUCKET, "", 0, NULL, 0, 0, 0}, MKB("b", "U"),
      SETV("U"), SETV("E"), {'V', "b", "", "U", INVALID_ARG, "", 0, NULL, 0, 0, 0},
      SETV("S"), END},
     "", "", "b:S", ""},
    {"set_quota",
     {{'Q', "b", "", NULL, NO_BUCKET, "", 0, NULL, 0, 0, 0}, MKB("b", "E"),
      {'Q', "b", "", NULL, OK, "", 0, NULL, 0, 0, 0}, END},
     "", "", "b:E", ""},
    /* ---- bucket quota: live usage after the write ---- */
    {"quota_max_objects_refuses_a_new_key_not_an_overwrite",
     {MKB("b", "E"), PUT("a", "e1", "#"), PUT("c", "e2", "#"), QUOTA("o2"),
      PUTX("d", "e3", OVER_QUOTA), PUT("a", "e4", "#"), DEL("a", "#", 1),
      PUT("d", "e6", "#"), PUTX("e", "e7", OVER_QUOTA), END},
     "a=M#7,#6:e4,#2:e1;c=#3:e2;d=#8:e6", "c=#3:e2;d=#8:e6", "b:E", ""},
    {"quota_max_bytes_refuses_growth_not_a_same_size_overwrite",
     {MKB("b", "U"), QUOTA("b20"), PUT("a", "e1", "null"), PUT("c", "e2", "null"),
      PUTX("d", "e3", OVER_QUOTA), PUT("a", "e4", "null"), QUOTA("b10"),
      PUT("c", "e5", "null"), PUTX("d", "e6", OVER_QUOTA), QUOTA("b0"),
      PUT("d", "e7", "null"), END},
     "a=null:e4;c=null:e5;d=null:e7", "a=null:e4;c=null:e5;d=null:e7", "b:U", ""},
    {"quota_applies_to_complete",
     {MKB("b", "E"), PUT("a", "e1", "#"), QUOTA("o1"), MPU("c"),
      PART("c", "#4 1 1 " MD5_A), DONEX("c", "#4 1:" MD5_A, OVER_QUOTA), MPU("a"),
      PART("a", "#7 1 1 " MD5_A), DONE("a", "#7 1:" MD5_A " =" ETAG_A, "#"), END},
     "a=#9:" ETAG_A ",#2:e1", "a=#9:" ETAG_A, "b:E", "c@#4;c@#4.1:1:0cc1"},
    {"wrong_partition_is_WrongRange",
     {{'B', "b", "", "U", WRONG_RANGE, "", 0, NULL, 0, 0, 1}, MKB("b", "U"),
      {'P', "b", "a", "e1", WRONG_RANGE, "", 0, NULL, 0, 0, 1}, END},
     "", "", "b:U", ""},
    {"repeated_request_id_returns_the_stored_outcome",
     {{'B', "b", "", "E", OK, "", 0, NULL, 0, 1, 0},
      {'B', "b", "", "E", OK, "", 0, NULL, 0, 1, 0},  /* not AlreadyExists */
      {'P', "b", "a", "e1", OK, "#", 0, NULL, 0, 2, 0},
      {'P', "b", "a", "e1", OK, "#3", 0, NULL, 0, 2, 0}, /* no new version */
      {'P', "b", "a", "e2", OK, "#", 0, NULL, 0, 0, 0},
      {'P', "b", "a", "e1", OK, "#3", 0, NULL, 0, 2, 0},
      {'P', "x", "a", "e1", NO_BUCKET, "", 0, NULL, 0, 3, 0},
      MKB("x", "U"),
      {'P', "x", "a", "e1", NO_BUCKET, "", 0, NULL, 0, 3, 0}, END},
     "a=#5:e2,#3:e1", "a=#5:e2", "b:E;x:U", ""},
    /* ---- multipart uploads ---- */
    {"multipart_rows_upload_then_its_parts_in_number_order",
     {MKB("b", "U"), MPU("a"), MPU("a"), PART("a", "#2 2 5M " MD5_B),
      PART("a", "#2 1 5M " MD5_A), MPU("c"), PART("c", "#6 1 1 " MD5_C), END},
     "", "", "b:U",
     "a@#2;a@#2.1:5M:0cc1;a@#2.2:5M:92eb;a@#3;c@#6;c@#6.1:1:4a8a"},
    {"complete_etag_is_md5_of_part_md5s_dash_count",
     {MKB("b", "E"), PUT("a", "e1", "#"), MPU("a"), PART("a", "#3 1 5M " MD5_A),
      PART("a", "#3 2 1M " MD5_B),
      DONE("a", "#3 1:" MD5_A " 2:" MD5_B " =" ETAG_AB, "#"), END},
     "a=#6:" ETAG_AB ",#2:e1", "a=#6:" ETAG_AB, "b:E", ""},
    {"complete_three_parts_last_small_etags_quoted_or_uppercase",
     {MKB("b", "E"), MPU("a"), PART("a", "#2 1 5M " MD5_A),
      PART("a", "#2 2 5M " MD5_B), PART("a", "#2 3 1 " MD5_C),
      DONE("a", "#2 1:\"" MD5_A "\" 2:" MD5_B_UPPER " 3:" MD5_C " =" ETAG_ABC,
           "#"), END},
     "a=#6:" ETAG_ABC, "a=#6:" ETAG_ABC, "b:E", ""},
    {"complete_with_a_subset_of_parts_drops_the_others",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5M " MD5_A),
      PART("a", "#2 2 5M " MD5_B), DONE("a", "#2 1:" MD5_A " =" ETAG_A, "null"),
      END},
     "a=null:" ETAG_A, "a=null:" ETAG_A, "b:U", ""},
    {"complete_unknown_part_number_is_InvalidPart",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5M " MD5_A),
      DONEX("a", "#2 1:" MD5_A " 2:" MD5_B, BAD_PART), END},
     "", "", "b:U", "a@#2;a@#2.1:5M:0cc1"},
    {"complete_wrong_etag_is_InvalidPart",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5M " MD5_A),
      DONEX("a", "#2 1:" MD5_B, BAD_PART), END},
     "", "", "b:U", "a@#2;a@#2.1:5M:0cc1"},
    {"complete_part_etag_not_32_hex_digits_is_InvalidPart",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5M e1"),
      DONEX("a", "#2 1:e1", BAD_PART), END},
     "", "", "b:U", "a@#2;a@#2.1:5M:e1"},
    {"complete_parts_not_ascending_is_InvalidPartOrder",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5M " MD5_A),
      PART("a", "#2 2 5M " MD5_B),
      DONEX("a", "#2 2:" MD5_B " 1:" MD5_A, BAD_ORDER),
      DONEX("a", "#2 1:" MD5_A " 1:" MD5_A, BAD_ORDER),
      DONE("a", "#2 1:" MD5_A " 2:" MD5_B " =" ETAG_AB, "null"), END},
     "a=null:" ETAG_AB, "a=null:" ETAG_AB, "b:U", ""},
    {"complete_part_below_5MiB_not_last_is_EntityTooSmall_last_may_be_small",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5242879 " MD5_A),
      PART("a", "#2 2 1 " MD5_B),
      DONEX("a", "#2 1:" MD5_A " 2:" MD5_B, TOO_SMALL),
      PART("a", "#2 1 5242880 " MD5_A),
      DONE("a", "#2 1:" MD5_A " 2:" MD5_B " =" ETAG_AB, "null"), END},
     "a=null:" ETAG_AB, "a=null:" ETAG_AB, "b:U", ""},
    {"upload_part_again_replaces_it",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5M " MD5_A),
      PART("a", "#2 1 6M " MD5_C), END},
     "", "", "b:U", "a@#2;a@#2.1:6M:4a8a"},
    {"complete_uses_the_replaced_part",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5M " MD5_A),
      PART("a", "#2 1 6M " MD5_C), DONEX("a", "#2 1:" MD5_A, BAD_PART),
      DONE("a", "#2 1:" MD5_C " =" ETAG_C, "null"), END},
     "a=null:" ETAG_C, "a=null:" ETAG_C, "b:U", ""},
    {"part_number_0_and_10001_are_InvalidArgument",
     {MKB("b", "U"), MPU("a"), PARTX("a", "#2 0 1M " MD5_A, INVALID_ARG),
      PARTX("a", "#2 10001 1M " MD5_A, INVALID_ARG),
      PART("a", "#2 10000 1M " MD5_A), END},
     "", "", "b:U", "a@#2;a@#2.10000:1M:0cc1"},
    {"NoSuchUpload_after_abort",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5M " MD5_A), ABORT("a", "#2", OK),
      PARTX("a", "#2 2 5M " MD5_B, NO_UPLOAD),
      DONEX("a", "#2 1:" MD5_A, NO_UPLOAD), ABORT("a", "#2", NO_UPLOAD), END},
     "", "", "b:U", ""},
    {"NoSuchUpload_after_complete",
     {MKB("b", "U"), MPU("a"), PART("a", "#2 1 5M " MD5_A),
      DONE("a", "#2 1:" MD5_A " =" ETAG_A, "null"),
      PARTX("a", "#2 2 5M " MD5_B, NO_UPLOAD),
      DONEX("a", "#2 1:" MD5_A, NO_UPLOAD), ABORT("a", "#2", NO_UPLOAD), END},
     "a=null:" ETAG_A, "a=null:" ETAG_A, "b:U", ""},
    {"NoSuchUpload_for_unknown_id_or_another_keys_upload",
     {MKB("b", "U"), MPU("a"), PARTX("a", "#9 1 5M " MD5_A, NO_UPLOAD),
      PARTX("c", "#2 1 5M " MD5_A, NO_UPLOAD), ABORT("c", "#2", NO_UPLOAD),
      ABORT("a", "junk", NO_UPLOAD), END},
     "", "", "b:U", "a@#2"},
    {"multipart_needs_bucket_and_key",
     {{'M', "b", "a", NULL, NO_BUCKET, "", 0, NULL, 0, 0, 0}, MKB("b", "U"),
      {'M', "b", "", NULL, INVALID_ARG, "", 0, NULL, 0, 0, 0},
      {'U', "x", "a", "#1 1 1 " MD5_A, NO_BUCKET, "", 0, NULL, 0, 0, 0},
      {'C', "x", "a", "#1 1:" MD5_A, NO_BUCKET, "", 0, NULL, 0, 0, 0},
      {'A', "x", "a", "#1", NO_BUCKET, "", 0, NULL, 0, 0, 0}, END},
     "", "", "b:U", ""},
    {"complete_in_unversioned_bucket_replaces_null",
     {MKB("b", "U"), PUT("a", "e1", "null"), MPU("a"),
      PART("a", "#3 1 1 " MD5_A), DONE("a", "#3 1:" MD5_A " =" ETAG_A, "null"),
      END},
     "a=null:" ETAG_A, "a=null:" ETAG_A, "b:U", ""},
    {"complete_in_suspended_bucket_replaces_null_keeps_others",
     {MKB("b", "E"), PUT("a", "e1", "#"), SETV("S"), PUT("a", "e2", "null"),
      MPU("a"), PART("a", "#5 1 1 " MD5_A),
      DONE("a", "#5 1:" MD5_A " =" ETAG_A, "null"), END},
     "a=null:" ETAG_A ",#2:e1", "a=null:" ETAG_A, "b:S", ""},
    {"complete_in_enabled_bucket_adds_a_version_over_a_marker",
     {MKB("b", "E"), PUT("a", "e1", "#"), DEL("a", "#", 1), MPU("a"),
      PART("a", "#4 1 1 " MD5_A), DONE("a", "#4 1:" MD5_A " =" ETAG_A, "#"),
      END},
     "a=#6:" ETAG_A ",M#3,#2:e1", "a=#6:" ETAG_A, "b:E", ""},
    {"complete_if_none_match_on_existing_key_is_PreconditionFailed",
     {MKB("b", "U"), PUT("a", "e1", "null"), MPU("a"),
      PART("a", "#3 1 1 " MD5_A),
      {'C', "b", "a", "#3 1:" MD5_A, PRECOND, "", 0, NULL, 1, 0, 0},
      {'C', "b", "a", "#3 1:" MD5_A, PRECOND, "", 0, "e9", 0, 0, 0},
      {'C', "b", "a", "#3 1:" MD5_A " =" ETAG_A, OK, "null", 0, "e1", 0, 0, 0},
      END},
     "a=null:" ETAG_A, "a=null:" ETAG_A, "b:U", ""},
    /* S3 API reference, DeleteBucket
     * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteBucket.html):
     * "If multipart uploads in a directory bucket are in progress, you
     * can't delete the bucket until all the in-progress multipart uploads
     * are aborted or completed": directory buckets only. A general purpose
     * bucket goes, and its uploads with it; a version still blocks it. */
    {"delete_bucket_takes_its_in_progress_uploads_per_S3_API_DeleteBucket",
     {MKB("b", "U"), MPU("a"), MPU("c"), PUT("d", "e1", "null"),
      {'X', "b", "", NULL, NOT_EMPTY, "", 0, NULL, 0, 0, 0}, DEL("d", "", 0),
      {'X', "b", "", NULL, OK, "", 0, NULL, 0, 0, 0}, ABORT("a", "#2", NO_BUCKET), END},
     "", "", "", ""},
    /* ---- version cap ---- */
    {"create_bucket_stores_max_versions",
     {MKB("b", "S7"), MKB("c", "E"), END}, "", "", "b:S/7;c:E", ""},
    {"version_cap_4th_put_is_TooManyVersions",
     {MKB("b", "E3"), PUT("a", "e1", "#"), PUT("a", "e2", "#"),
      PUT("a", "e3", "#"), PUTX("a", "e4", TOO_MANY), PUT("c", "e5", "#"),
      DELX("a", TOO_MANY), DELV("a", "#2", 0), PUT("a", "e6", "#"), END},
     "a=#9:e6,#4:e3,#3:e2;c=#6:e5", "a=#9:e6;c=#6:e5", "b:E/3", ""},
    {"version_cap_null_replacing_writes_still_ok",
     {MKB("b", "E3"), PUT("a", "e1", "#"), PUT("a", "e2", "#"), SETV("S"),
      PUT("a", "e3", "null"), PUT("a", "e4", "null"), DEL("a", "null", 1),
      SETV("E"), PUTX("a", "e5", TOO_MANY), DELX("a", TOO_MANY), END},
     "a=Mnull,#3:e2,#2:e1", "", "b:E/3", ""},
    {"version_cap_unversioned_put_replaces",
     {MKB("b", "U1"), PUT("a", "e1", "null"), PUT("a", "e2", "null"), END},
     "a=null:e2", "a=null:e2", "b:U/1", ""},
    {"version_cap_applies_to_complete",
     {MKB("b", "E1"), PUT("a", "e1", "#"), MPU("a"), PART("a", "#3 1 1 " MD5_A),
      DONEX("a", "#3 1:" MD5_A, TOO_MANY), END},
     "a=#2:e1", "a=#2:e1", "b:E/1", "a@#3;a@#3.1:1:0cc1"},
};

/* ---- fixture ---- */

typedef struct fixture {
    char dir[64];
    objlog_store *store;
    rangemap *rm;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    char err[256];
    assert_int_equal(proc_tmpdir(f->dir, sizeof(f->dir)), 0);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    f->rm = rangemap_new_default(NPARTS, EPOCH);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    objlog_store_close(f->store);
    rangemap_destroy(f->rm);
    proc_rmtree(f->dir);
    free(f);
    return 0;
}

static int owner(const fixture *f, const char *bucket, const char *key) {
    keybuf kb;
    keybuf_init(&kb);
    keycodec_route_key(&kb, bucket, strlen(bucket), (const uint8_t *)key,
                       strlen(key));
    int p = rangemap_partition(f->rm, kb.data, kb.len);
    keybuf_free(&kb);
    return p;
}

static Objlog__Versioning versioning_of(const char *v) {
    if (v && v[0] == 'E')
        return OBJLOG__VERSIONING__VERSIONING_ENABLED;
    if (v && v[0] == 'S')
        return OBJLOG__VERSIONING__VERSIONING_SUSPENDED;
    return OBJLOG__VERSIONING__VERSIONING_UNVERSIONED;
}

static void vid_of_step(int n, char out[KEYCODEC_VERSION_ID_LEN]) {
    keycodec_version_id(keycodec_seq(EPOCH, n), out);
}

/* "#n" -> version id of step n; "#" -> this step; anything else verbatim. */
static void resolve_vid(const char *ref, int self, char *out, size_t n) {
    char vid[KEYCODEC_VERSION_ID_LEN];
    if (ref && ref[0] == '#') {
        vid_of_step(ref[1] ? atoi(ref + 1) : self, vid);
        snprintf(out, n, "%s", vid);
    } else {
        /* A step names a literal id that must fit, never a cut one. */
        size_t len = ref ? strlen(ref) : 0;
        assert_true(len < n);
        memcpy(out, ref ? ref : "", len);
        out[len] = '\0';
    }
}

/* "5M" -> 5 MiB, "17" -> 17 bytes. */
static uint64_t parse_size(const char *s) {
    char *end;
    uint64_t n = strtoull(s, &end, 10);
    return *end == 'M' ? n * 1024 * 1024 : n;
}

#define MAX_PARTS 8

/* The parsed arg of a C step: "#n <part>:<etag> ... [=<etag>]". */
typedef struct complete_arg {
    char buf[512];
    char upload_id[KEYCODEC_VERSION_ID_LEN];
    Objlog__CompletedPart parts[MAX_PARTS];
    Objlog__CompletedPart *ptrs[MAX_PARTS];
    size_t n;
    const char *want_etag;
} complete_arg;

static void parse_complete(const char *arg, int self, complete_arg *c) {
    char *save = NULL;
    snprintf(c->buf, sizeof(c->buf), "%s", arg);
    c->n = 0;
    c->want_etag = NULL;
    char *tok = strtok_r(c->buf, " ", &save);
    assert_non_null(tok);
    resolve_vid(tok, self, c->upload_id, sizeof(c->upload_id));
    while ((tok = strtok_r(NULL, " ", &save)) != NULL) {
        if (tok[0] == '=') {
            c->want_etag = tok + 1;
            continue;
        }
        char *colon = strchr(tok, ':');
        assert_non_null(colon);
        assert_true(c->n < MAX_PARTS);
        *colon = '\0';
        Objlog__CompletedPart init = OBJLOG__COMPLETED_PART__INIT;
        c->parts[c->n] = init;
        c->parts[c->n].part_number = (uint32_t)strtoul(tok, NULL, 10);
        c->parts[c->n].etag = colon + 1;
        c->ptrs[c->n] = &c->parts[c->n];
        c->n++;
    }
}

/* Packs the step's event and decodes it back, as the consumer would. */
static Objlog__Event *step_event(const step *s, int idx) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    Objlog__DeleteBucket db = OBJLOG__DELETE_BUCKET__INIT;
    Objlog__SetVersioning sv = OBJLOG__SET_VERSIONING__INIT;
    Objlog__SetQuota sq = OBJLOG__SET_QUOTA__INIT;
    Objlog__Quota q = OBJLOG__QUOTA__INIT;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
    Objlog__DeleteObject dobj = OBJLOG__DELETE_OBJECT__INIT;
    Objlog__CreateUpload cu = OBJLOG__CREATE_UPLOAD__INIT;
    Objlog__UploadPart up = OBJLOG__UPLOAD_PART__INIT;
    Objlog__CompleteUpload cpl = OBJLOG__COMPLETE_UPLOAD__INIT;
    Objlog__AbortUpload ab = OBJLOG__ABORT_UPLOAD__INIT;
    complete_arg carg;
    char ref[32], size[32], etag[64];
    unsigned part = 0;
    Objlog__Preconditions pre = OBJLOG__PRECONDITIONS__INIT;
    uint8_t rid[16] = {0};
    char vid[KEYCODEC_VERSION_ID_LEN];
    int r = s->rid ? 1000 + s->rid : idx;
    memcpy(rid, &r, sizeof(r));
    ev.request_id.data = rid;
    ev.request_id.len = sizeof(rid);
    ev.range_epoch = EPOCH;
    ev.bucket = (char *)s->bucket;
    ev.key.data = (uint8_t *)s->key;
    ev.key.len = strlen(s->key);
    if (s->if_match || s->if_none_match) {
        pre.if_match = (char *)(s->if_match ? s->if_match : "");
        pre.if_none_match = s->if_none_match;
        ev.pre = &pre;
    }
    switch (s->op) {
    case 'B':
        cb.tenant = "t1";
        cb.versioning = versioning_of(s->arg);
        cb.max_versions = s->arg && s->arg[0] ? strtoull(s->arg + 1, NULL, 10) : 0;
        ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
        ev.create_bucket = &cb;
        break;
    case 'X':
        ev.op_case = OBJLOG__EVENT__OP_DELETE_BUCKET;
        ev.delete_bucket = &db;
        break;
    case 'V':
        sv.status = versioning_of(s->arg);
        ev.op_case = OBJLOG__EVENT__OP_SET_VERSIONING;
        ev.set_versioning = &sv;
        break;
    case 'Q':
        q.max_bytes = 1000;
        if (s->arg && s->arg[0] == 'o') {
            q.max_bytes = 0;
            q.max_objects = strtoull(s->arg + 1, NULL, 10);
        } else if (s->arg && s->arg[0] == 'b') {
            q.max_bytes = strtoull(s->arg + 1, NULL, 10);
        }
        sq.quota = &q;
        ev.op_case = OBJLOG__EVENT__OP_SET_QUOTA;
        ev.set_quota = &sq;
        break;
    case 'P':
        meta.etag = (char *)s->arg;
        meta.size = 7;
        po.meta = &meta;
        ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
        ev.put_object = &po;
        break;
    case 'D':
        resolve_vid(s->arg, idx, vid, sizeof(vid));
        dobj.version_id = vid;
        ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
        ev.delete_object = &dobj;
        break;
    case 'M':
        meta.content_type = "text/plain";
        meta.storage_class = "STANDARD";
        cu.meta = &meta;
        ev.op_case = OBJLOG__EVENT__OP_CREATE_UPLOAD;
        ev.create_upload = &cu;
        break;
    case 'U':
        assert_int_equal(sscanf(s->arg, "%31s %u %31s %63s", ref, &part, size,
                                etag), 4);
        resolve_vid(ref, idx, vid, sizeof(vid));
        up.upload_id = vid;
        up.part_number = part;
        up.size = parse_size(size);
        up.etag = etag;
        up.blob_id = "blob";
        ev.op_case = OBJLOG__EVENT__OP_UPLOAD_PART;
        ev.upload_part = &up;
        break;
    case 'C':
        parse_complete(s->arg, idx, &carg);
        cpl.upload_id = carg.upload_id;
        cpl.n_parts = carg.n;
        cpl.parts = carg.ptrs;
        ev.op_case = OBJLOG__EVENT__OP_COMPLETE_UPLOAD;
        ev.complete_upload = &cpl;
        break;
    case 'A':
        resolve_vid(s->arg, idx, vid, sizeof(vid));
        ab.upload_id = vid;
        ev.op_case = OBJLOG__EVENT__OP_ABORT_UPLOAD;
        ev.abort_upload = &ab;
        break;
    default:
        fail_msg("bad op %c", s->op);
    }
    size_t n = objlog__event__get_packed_size(&ev);
    uint8_t *buf = malloc(n);
    objlog__event__pack(&ev, buf);
    char why[128];
    Objlog__Event *out = apply_decode(buf, n, why, sizeof(why));
    free(buf);
    assert_non_null(out);
    return out;
}

/* Writes b's WriteBatch to the store; told (kept), the batch keeps what it
 * holds in memory of the rows (the request-id indexes), as the
 * materializer's batches do; untold, it reloads them. */
static void write_batch_as(fixture *f, apply_batch *b, int told) {
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write(objlog_store_db(f->store), wo, apply_batch_wb(b), &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
    if (told)
        apply_batch_written(b);
    apply_batch_clear(b);
}

static void write_batch(fixture *f, apply_batch *b) { write_batch_as(f, b, 0); }

static void write_batch_kept(fixture *f, apply_batch *b) { write_batch_as(f, b, 1); }

/* ---- state dumps ---- */

static void append(char *out, size_t n, const char *s) {
    size_t l = strlen(out);
    snprintf(out + l, n - l, "%s", s);
}

/* "#n" for a version id that is step n's, "null" for null, with marker and
 * etag decorations. */
static void version_token(const Objlog__VersionRecord *r, char *out, size_t n) {
    char ref[32];
    uint64_t seq;
    if (keycodec_parse_version_id(r->version_id, &seq) == 0)
        snprintf(ref, sizeof(ref), "#%llu",
                 (unsigned long long)(seq & 0xFFFFFFFFFFFFULL));
    else
        snprintf(ref, sizeof(ref), "%s", r->version_id);
    if (r->delete_marker)
        snprintf(out, n, "M%s", ref);
    else
        snprintf(out, n, "%s:%s", ref, r->meta ? r->meta->etag : "?");
}

/* Dumps a CF of version records; for `versions` also checks every header
 * row against the rows it describes, and that a key without one has its
 * null version alone. */
static void dump_records(fixture *f, objlog_cf cf, char *out, size_t n) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it =
        rocksdb_create_iterator_cf(objlog_store_db(f->store), ro,
                                   objlog_store_cf(f->store, cf));
    keybuf lastkey;
    keybuf_init(&lastkey);
    objlog_key_header h = {0, 0, 0};
    uint64_t seen = 0;
    int seen_null = 0, have_header = 0;
    keybuf hdr; /* the route key the header h describes */
    keybuf_init(&hdr);
    out[0] = '\0';
    for (rocksdb_iter_seek_to_first(it);; rocksdb_iter_next(it)) {
        int valid = rocksdb_iter_valid(it);
        size_t kn = 0, vn = 0;
        const uint8_t *k = valid ? (const uint8_t *)rocksdb_iter_key(it, &kn) : NULL;
        int header = valid && cf == OBJLOG_CF_VERSIONS &&
                     objlog_versions_row_is_header(k, kn);
        if (cf == OBJLOG_CF_VERSIONS && (header || !valid) && have_header) {
            assert_int_equal(h.versions, seen); /* header counts its rows */
            assert_int_equal(h.has_null, seen_null);
        }
        if (!valid)
            break;
        const char *v = rocksdb_iter_value(it, &vn);
        if (header) {
            assert_int_equal(objlog_key_header_decode(v, vn, &h), 0);
            have_header = 1;
            seen = 0;
            seen_null = 0;
            keybuf_reset(&hdr);
            keybuf_append(&hdr, k, kn);
            continue;
        }
        keybuf b, key;
        size_t used;
        keybuf_init(&b);
        keybuf_init(&key);
        assert_int_equal(keycodec_parse_route_key(k, kn, &b, &key, &used), 0);
        Objlog__VersionRecord *r =
            objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
        assert_non_null(r);
        if (cf == OBJLOG_CF_VERSIONS && (hdr.len != kn - 8 || memcmp(hdr.data, k, kn - 8))) {
            /* no header row: the key's one version is its null version
             * (checked when the next key starts) */
            assert_string_equal(r->version_id, "null");
            if (have_header) {
                assert_int_equal(h.versions, seen);
                assert_int_equal(h.has_null, seen_null);
            }
            h = (objlog_key_header){.has_null = 1, .null_seq = r->seq, .versions = 1};
            have_header = 1;
            seen = 0;
            seen_null = 0;
            keybuf_reset(&hdr);
            keybuf_append(&hdr, k, kn - 8);
        }
        if (cf == OBJLOG_CF_VERSIONS) {
            assert_int_equal(keycodec_row_seq(k, kn), r->seq);
            seen++;
            if (strcmp(r->version_id, "null") == 0) {
                seen_null = 1;
                assert_int_equal(h.null_seq, r->seq);
            }
        }
        int same = lastkey.len == key.len && !memcmp(lastkey.data, key.data, key.len);
        if (out[0])
            append(out, n, same ? "," : ";");
        if (!same) {
            char kbuf[64];
            snprintf(kbuf, sizeof(kbuf), "%.*s=", (int)key.len, (char *)key.data);
            append(out, n, kbuf);
        }
        char tok[64];
        version_token(r, tok, sizeof(tok));
        append(out, n, tok);
        keybuf_reset(&lastkey);
        keybuf_append(&lastkey, key.data, key.len);
        objlog__version_record__free_unpacked(r, NULL);
        keybuf_free(&b);
        keybuf_free(&key);
    }
    keybuf_free(&lastkey);
    keybuf_free(&hdr);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

static void dump_buckets(fixture *f, char *out, size_t n) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(f->store), ro, objlog_store_cf(f->store, OBJLOG_CF_BUCKETS));
    out[0] = '\0';
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t vn;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__BucketRecord *r =
            objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v);
        assert_non_null(r);
        char tok[64];
        snprintf(tok, sizeof(tok), "%s%s:%c", out[0] ? ";" : "", r->name,
                 "UES"[r->versioning]);
        append(out, n, tok);
        if (r->max_versions) {
            snprintf(tok, sizeof(tok), "/%llu", (unsigned long long)r->max_versions);
            append(out, n, tok);
        }
        objlog__bucket_record__free_unpacked(r, NULL);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

/* "#n" of an upload id made by step n. */
static void upload_ref(const uint8_t *id, size_t n, char *out, size_t on) {
    char hex[KEYCODEC_VERSION_ID_LEN];
    uint64_t seq;
    assert_true(n == KEYCODEC_VERSION_ID_LEN - 1);
    memcpy(hex, id, n);
    hex[n] = '\0';
    assert_int_equal(keycodec_parse_version_id(hex, &seq), 0);
    snprintf(out, on, "#%llu",
             (unsigned long long)(seq & 0xFFFFFFFFFFFFULL));
}

/* Dumps `uploads`: "key@#n" per upload row, "key@#n.part:size:etag4" per
 * part row (size with M for whole MiB), checking each record against its
 * row key through the public row helpers. */
static void dump_uploads(fixture *f, char *out, size_t n) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(f->store), ro, objlog_store_cf(f->store, OBJLOG_CF_UPLOADS));
    out[0] = '\0';
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn, rk, idn, used;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
        const uint8_t *id;
        uint32_t pn;
        objlog_uploads_row kind =
            objlog_uploads_row_kind(k, kn, &rk, &id, &idn, &pn);
        assert_true(kind == OBJLOG_UPLOADS_ROW_UPLOAD ||
                    kind == OBJLOG_UPLOADS_ROW_PART);
        keybuf b, key, again;
        keybuf_init(&b);
        keybuf_init(&key);
        keybuf_init(&again);
        assert_int_equal(keycodec_parse_route_key(k, kn, &b, &key, &used), 0);
        assert_int_equal(used, rk);
        char ref[32], tok[128], idstr[KEYCODEC_VERSION_ID_LEN];
        upload_ref(id, idn, ref, sizeof(ref));
        memcpy(idstr, id, idn);
        idstr[idn] = '\0';
        if (kind == OBJLOG_UPLOADS_ROW_UPLOAD) {
            Objlog__UploadRecord *u = objlog__upload_record__unpack(NULL, vn, v);
            assert_non_null(u);
            assert_string_equal(u->upload_id, idstr);
            assert_int_equal(u->key.len, key.len);
            assert_memory_equal(u->key.data, key.data, key.len);
            assert_string_equal(u->meta->content_type, "text/plain");
            objlog__upload_record__free_unpacked(u, NULL);
            assert_int_equal(objlog_uploads_upload_key(&again, (char *)b.data,
                                                       b.len, key.data, key.len,
                                                       idstr), 0);
            snprintf(tok, sizeof(tok), "%.*s@%s", (int)key.len,
                     (char *)key.data, ref);
        } else {
            Objlog__PartRecord *p = objlog__part_record__unpack(NULL, vn, v);
            assert_non_null(p);
            assert_int_equal(p->part_number, pn);
            assert_string_equal(p->blob_id, "blob");
            char size[32];
            if (p->size && p->size % (1024 * 1024) == 0)
                snprintf(size, sizeof(size), "%lluM",
                         (unsigned long long)(p->size / (1024 * 1024)));
            else
                snprintf(size, sizeof(size), "%llu", (unsigned long long)p->size);
            snprintf(tok, sizeof(tok), "%.*s@%s.%u:%s:%.4s", (int)key.len,
                     (char *)key.data, ref, pn, size, p->etag);
            objlog__part_record__free_unpacked(p, NULL);
            assert_int_equal(objlog_uploads_part_key(&again, (char *)b.data,
                                                     b.len, key.data, key.len,
                                                     idstr, pn), 0);
        }
        /* the key builders produce exactly the stored row key */
        assert_int_equal(again.len, kn);
        assert_memory_equal(again.data, k, kn);
        if (out[0])
            append(out, n, ";");
        append(out, n, tok);
        keybuf_free(&b);
        keybuf_free(&key);
        keybuf_free(&again);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

/* Buckets sort by hash; the table lists them by name. */
static void sort_tokens(char *s) {
    char *tok[16];
    int n = 0;
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", s);
    for (char *p = strtok(copy, ";"); p && n < 16; p = strtok(NULL, ";"))
        tok[n++] = p;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(tok[j - 1], tok[j]) > 0; j--) {
            char *t = tok[j];
            tok[j] = tok[j - 1];
            tok[j - 1] = t;
        }
    s[0] = '\0';
    for (int i = 0; i < n; i++) {
        strcat(s, i ? ";" : "");
        strcat(s, tok[i]);
    }
}

/* ---- running a row ---- */

static void run_row(const row *r, int one_batch) {
    fixture *f;
    setup((void **)&f);
    apply_batch *b = apply_batch_new(f->store, f->rm);
    char err[256];
    int nsteps = 0;
    int part[MAX_STEPS];
    for (int i = 0; i < MAX_STEPS && r->steps[i].op; i++, nsteps++) {
        const step *s = &r->steps[i];
        int idx = i + 1; /* offset and version id of step i+1 */
        int p = owner(f, s->bucket, strchr("BXVQ", s->op) ? "" : s->key);
        if (s->wrong_partition)
            p = (p + 1) % NPARTS;
        part[i] = p;
        Objlog__Event *ev = step_event(s, idx);
        Objlog__OutcomeCode code;
        assert_int_equal(apply_event(b, p, idx, 5000 + idx, ev, &code, err,
                                     sizeof(err)), 0);
        objlog__event__free_unpacked(ev, NULL);
        if (code != s->expect)
            fail_msg("%s step %d: outcome %d, want %d", r->name, idx, code,
                     s->expect);
        if (!one_batch)
            write_batch(f, b);
    }
    write_batch(f, b);
    for (int i = 0; i < nsteps; i++) {
        const step *s = &r->steps[i];
        Objlog__Outcome *o = NULL;
        char want[KEYCODEC_VERSION_ID_LEN + 8];
        assert_int_equal(objlog_store_get_outcome(f->store, part[i], i + 1, &o,
                                                  err, sizeof(err)), 1);
        resolve_vid(s->vid, i + 1, want, sizeof(want));
        if (o->code != s->expect || strcmp(o->version_id, want) != 0 ||
            o->delete_marker != s->marker)
            fail_msg("%s step %d stored outcome: code %d vid '%s' marker %d; "
                     "want %d '%s' %d", r->name, i + 1, o->code, o->version_id,
                     o->delete_marker, s->expect, want, s->marker);
        if (s->op == 'P' && s->expect == OK && !s->rid)
            assert_string_equal(o->etag, s->arg);
        char want_uid[KEYCODEC_VERSION_ID_LEN] = "";
        if (s->op == 'M' && s->expect == OK)
            vid_of_step(i + 1, want_uid);
        assert_string_equal(o->upload_id, want_uid);
        if (s->op == 'C') {
            complete_arg c;
            parse_complete(s->arg, i + 1, &c);
            if (s->expect == OK && c.want_etag)
                assert_string_equal(o->etag, c.want_etag);
        }
        if (s->expect != OK)
            assert_true(o->message[0] != '\0');
        objlog__outcome__free_unpacked(o, NULL);
    }
    char got[2048], want[256];
    dump_records(f, OBJLOG_CF_VERSIONS, got, sizeof(got));
    if (strcmp(got, r->versions))
        fail_msg("%s (%s): versions '%s', want '%s'", r->name,
                 one_batch ? "one batch" : "batch per event", got, r->versions);
    dump_records(f, OBJLOG_CF_OBJECTS, got, sizeof(got));
    if (strcmp(got, r->objects))
        fail_msg("%s (%s): objects '%s', want '%s'", r->name,
                 one_batch ? "one batch" : "batch per event", got, r->objects);
    dump_uploads(f, got, sizeof(got));
    if (strcmp(got, r->uploads))
        fail_msg("%s (%s): uploads '%s', want '%s'", r->name,
                 one_batch ? "one batch" : "batch per event", got, r->uploads);
    dump_buckets(f, got, sizeof(got));
    sort_tokens(got);
    snprintf(want, sizeof(want), "%s", r->buckets);
    sort_tokens(want);
    if (strcmp(got, want))
        fail_msg("%s: buckets '%s', want '%s'", r->name, got, want);
    apply_batch_destroy(b);
    teardown((void **)&f);
}

static void test_rule(void **state) {
    const row *r = *state;
    run_row(r, 0);
    run_row(r, 1);
}

/* ---- dedup window, space bound, outcome trimming ---- */

#define T0 1700000000000LL
#define DAY (24LL * 60 * 60 * 1000)

/* A step at a given Kafka timestamp (log time, ms). */
typedef struct dstep {
    step s;
    int64_t ts;
} dstep;

#define AT(ts, st) {st, ts}
#define DEND {END, 0}
/* Put of key k, etag e, request id number r (0 = fresh), expected vid. */
#define PUTR(k, e, r, vid) {'P', "b", k, e, OK, vid, 0, NULL, 0, r, 0}

/* One rule of the window/bound. window_ms/max_ids 0 = the defaults. After
 * the row: `kept` = offsets that still have an 'o' row (every other step
 * must answer OBJLOG_OUTCOME_TRIMMED, and the low mark is the first kept),
 * `rids` = remembered request ids, "R<n>@<offset>" for request id n and
 * "#<n>" for step n's fresh id, sorted. */
typedef struct dedup_row {
    const char *name;
    int64_t window_ms;
    int64_t max_ids;
    dstep steps[MAX_STEPS];
    const char *versions;
    const char *objects;
    const char *kept;
    const char *rids;
} dedup_row;

static const dedup_row dedup_rows[] = {
    /* Dedup (docs/ARCHITECTURE.md, "The state machine's rules"): a retry
     * within 24 h of log time returns the first outcome and changes nothing;
     * T - first == window still counts. */
    {"retry_within_the_window_returns_the_first_outcome",
     0, 0,
     {AT(T0, MKB("b", "E")), AT(T0 + 1, PUTR("a", "e1", 1, "#")),
      AT(T0 + 2, PUTR("a", "e2", 0, "#")),
      AT(T0 + 1 + DAY, PUTR("a", "e1", 1, "#2")), DEND},
     "a=#3:e2,#2:e1", "a=#3:e2", "2,3,4", "#3@3;R1@2"}, /* 1: T0, expired */
    /* log time +24 h +1 ms: a new request. The old rows are trimmed by the
     * window; 'r' now points at the new write and survives the trim of
     * its old first outcome. */
    {"retry_after_the_window_is_a_new_write",
     0, 0,
     {AT(T0, MKB("b", "E")), AT(T0 + 1, PUTR("a", "e1", 1, "#")),
      AT(T0 + 1 + DAY + 1, PUTR("a", "e1", 1, "#")), DEND},
     "a=#3:e1,#2:e1", "a=#3:e1", "3", "R1@3"},
    /* Bound 3: the event at offset X remembers offsets X-3..X-1. R3 (4)
     * and R2 (3) are still known at 5 and 6; R1 (2) is forgotten at 7. */
    {"space_bound_forgets_the_oldest_ids_first",
     0, 3,
     {AT(T0, MKB("b", "E")), AT(T0, PUTR("a", "e1", 1, "#")),
      AT(T0, PUTR("c", "e2", 2, "#")), AT(T0, PUTR("d", "e3", 3, "#")),
      AT(T0, PUTR("d", "e3", 3, "#4")), AT(T0, PUTR("c", "e2", 2, "#3")),
      AT(T0, PUTR("a", "e1", 1, "#")), DEND},
     "a=#7:e1,#2:e1;c=#3:e2;d=#4:e3", "a=#7:e1;c=#3:e2;d=#4:e3", "5,6,7",
     "R1@7"},
    /* Window 1000 ms: rows older than the newest event's time - 1000 go,
     * oldest offset first; the scan stops at the first row kept (exactly
     * 1000 ms old stays). */
    {"outcome_rows_are_trimmed_by_the_window_oldest_first",
     1000, 0,
     {AT(T0, MKB("b", "E")), AT(T0 + 10, PUTR("a", "e1", 0, "#")),
      AT(T0 + 500, PUTR("a", "e2", 0, "#")),
      AT(T0 + 1011, PUTR("a", "e3", 0, "#")),
      AT(T0 + 1500, PUTR("a", "e4", 0, "#")), DEND},
     "a=#5:e4,#4:e3,#3:e2,#2:e1", "a=#5:e4", "3,4,5", "#3@3;#4@4;#5@5"},
    /* A retry's 'o' row is a copy (log time included), so it expires with
     * the request it answers, even behind newer rows. */
    {"a_retry_outcome_expires_with_its_request",
     1000, 0,
     {AT(T0, MKB("b", "E")), AT(T0 + 100, PUTR("a", "e1", 1, "#")),
      AT(T0 + 900, PUTR("a", "e1", 1, "#2")),
      AT(T0 + 1050, PUTR("a", "e2", 0, "#")),
      AT(T0 + 1200, PUTR("a", "e3", 0, "#")), DEND},
     "a=#5:e3,#4:e2,#2:e1", "a=#5:e3", "4,5", "#4@4;#5@5"},
    /* Bound 2 and a retry of a forgotten id with a different body: it is
     * decided afresh (here: precondition now fails), nothing copied. */
    {"forgotten_id_is_decided_again",
     0, 2,
     {AT(T0, MKB("b", "E")),
      AT(T0, ((step){'P', "b", "a", "e1", OK, "#", 0, NULL, 1, 1, 0})),
      AT(T0, PUTR("a", "e2", 0, "#")), AT(T0, PUTR("a", "e3", 0, "#")),
      AT(T0, ((step){'P', "b", "a", "e1", PRECOND, "", 0, NULL, 1, 1, 0})),
      DEND},
     "a=#4:e3,#3:e2,#2:e1", "a=#4:e3", "4,5", "#4@4;R1@5"},
};

/* Offsets with an 'o' row and the request ids remembered (the kept rows
 * that are their request's first outcome), in the notation above. */
static void dump_outcomes(fixture *f, char *kept, size_t kn, char *rids,
                          size_t rn) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it =
        rocksdb_create_iterator_cf(objlog_store_db(f->store), ro,
                                   objlog_store_cf(f->store, OBJLOG_CF_OUTCOMES));
    kept[0] = rids[0] = '\0';
    char tok[64];
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t n, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &n);
        const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
        if (k[0] == 'o') {
            assert_int_equal(n, APPLY_OUTCOME_KEY_LEN);
            uint64_t off = apply_get_be64(k + 5);
            snprintf(tok, sizeof(tok), "%s%llu", kept[0] ? "," : "", (unsigned long long)off);
            append(kept, kn, tok);
            Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, v);
            assert_non_null(o);
            if (o->request_id.len && o->offset == (int64_t)off) {
                int r;
                assert_true(o->request_id.len >= sizeof(r));
                memcpy(&r, o->request_id.data, sizeof(r));
                snprintf(tok, sizeof(tok), "%s%s%d@%llu", rids[0] ? ";" : "",
                         r >= 1000 ? "R" : "#", r >= 1000 ? r - 1000 : r,
                         (unsigned long long)off);
                append(rids, rn, tok);
            }
            objlog__outcome__free_unpacked(o, NULL);
            continue;
        }
        /* nothing but outcome rows: request ids have no row of their own */
        assert_int_equal(k[0], 'o');
        append(rids, rn, tok);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    sort_tokens(rids);
}

/* The whole store as objlog_store_dump writes it, in a malloc'd string. */
static char *dump_store(fixture *f) {
    char *buf = NULL, err[256];
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    assert_non_null(out);
    assert_int_equal(objlog_store_dump(f->store, out, err, sizeof(err)), 0);
    fclose(out);
    return buf;
}

/* How run_dedup_row writes its batches. */
enum {
    DEDUP_BATCH_PER_EVENT,  /* each cleared unwritten-told: indexes reload */
    DEDUP_ONE_BATCH,
    DEDUP_KEPT_PER_EVENT,   /* each told it was written: indexes kept */
    DEDUP_MODES
};
static const char *const dedup_mode_name[DEDUP_MODES] = {
    "batch per event", "one batch", "batch per event, index kept"};

/* Runs a dedup row into fixture f (batches as mode says) and checks every
 * outcome and the resulting state. */
static void run_dedup_row(const dedup_row *r, fixture *f, int mode) {
    apply_batch *b = apply_batch_new(f->store, f->rm);
    apply_batch_set_dedup_limits(b, r->window_ms ? r->window_ms : OBJLOG_DEDUP_WINDOW_MS,
                                 r->max_ids ? r->max_ids : OBJLOG_DEDUP_MAX_IDS);
    char err[256];
    int n = 0, p0 = -1;
    for (; n < MAX_STEPS && r->steps[n].s.op; n++) {
        const step *s = &r->steps[n].s;
        int p = owner(f, s->bucket, strchr("BXVQ", s->op) ? "" : s->key);
        if (p0 < 0)
            p0 = p;
        assert_int_equal(p, p0); /* the bound is per partition */
        Objlog__Event *ev = step_event(s, n + 1);
        Objlog__OutcomeCode code;
        assert_int_equal(apply_event(b, p, n + 1, r->steps[n].ts, ev, &code,
                                     err, sizeof(err)), 0);
        objlog__event__free_unpacked(ev, NULL);
        if (code != s->expect)
            fail_msg("%s step %d: outcome %d, want %d", r->name, n + 1, code,
                     s->expect);
        if (mode == DEDUP_BATCH_PER_EVENT)
            write_batch(f, b);
        else if (mode == DEDUP_KEPT_PER_EVENT)
            write_batch_kept(f, b);
    }
    apply_set_applied(b, p0, n + 1);
    write_batch(f, b);
    apply_batch_destroy(b);

    char kept[256], rids[256], got[1024];
    dump_outcomes(f, kept, sizeof(kept), rids, sizeof(rids));
    if (strcmp(kept, r->kept) || strcmp(rids, r->rids))
        fail_msg("%s (%s): kept '%s' rids '%s', want '%s' '%s'", r->name,
                 dedup_mode_name[mode], kept, rids, r->kept, r->rids);
    assert_int_equal(objlog_store_outcomes_low(f->store, p0), atoi(r->kept));
    for (int i = 0; i < n; i++) {
        const step *s = &r->steps[i].s;
        char off[16], want[KEYCODEC_VERSION_ID_LEN + 8];
        snprintf(off, sizeof(off), "%d", i + 1);
        char padded[300];
        snprintf(padded, sizeof(padded), ",%s,", r->kept);
        char needle[20];
        snprintf(needle, sizeof(needle), ",%s,", off);
        Objlog__Outcome *o = NULL;
        int rc = objlog_store_get_outcome(f->store, p0, i + 1, &o, err, sizeof(err));
        if (!strstr(padded, needle)) {
            assert_int_equal(rc, OBJLOG_OUTCOME_TRIMMED);
            assert_null(o);
            continue;
        }
        assert_int_equal(rc, OBJLOG_OUTCOME_FOUND);
        resolve_vid(s->vid, i + 1, want, sizeof(want));
        if (o->code != s->expect || strcmp(o->version_id, want) != 0)
            fail_msg("%s step %d stored outcome: code %d vid '%s'; want %d '%s'",
                     r->name, i + 1, o->code, o->version_id, s->expect, want);
        objlog__outcome__free_unpacked(o, NULL);
    }
    /* beyond the applied prefix: not applied yet, not trimmed */
    Objlog__Outcome *o = NULL;
    assert_int_equal(objlog_store_get_outcome(f->store, p0, n + 1, &o, err,
                                              sizeof(err)), OBJLOG_OUTCOME_NOT_FOUND);
    dump_records(f, OBJLOG_CF_VERSIONS, got, sizeof(got));
    if (strcmp(got, r->versions))
        fail_msg("%s: versions '%s', want '%s'", r->name, got, r->versions);
    dump_records(f, OBJLOG_CF_OBJECTS, got, sizeof(got));
    if (strcmp(got, r->objects))
        fail_msg("%s: objects '%s', want '%s'", r->name, got, r->objects);
}

/* Each row twice, batch per event and all in one batch: trimming happens
 * per event, so both stores must dump byte for byte the same. */
static void test_dedup_rule(void **state) {
    const dedup_row *r = *state;
    fixture *f[DEDUP_MODES];
    char *dump[DEDUP_MODES];
    for (int m = 0; m < DEDUP_MODES; m++) {
        setup((void **)&f[m]);
        run_dedup_row(r, f[m], m);
        dump[m] = dump_store(f[m]);
    }
    for (int m = 1; m < DEDUP_MODES; m++)
        assert_string_equal(dump[0], dump[m]);
    for (int m = 0; m < DEDUP_MODES; m++) {
        free(dump[m]);
        teardown((void **)&f[m]);
    }
}

/* A backlog (here: the bound lowered under 100 kept outcomes) drains at
 * most 64 rows per event, oldest first, and the low mark follows. The
 * bound is decided on offsets, not on what is still stored: a retry of
 * request 1 (offset 1, still stored at that moment) is a new request. */
static void test_trim_backlog_drains_64_per_event(void **state) {
    fixture *f = *state;
    char err[256];
    apply_batch *b = apply_batch_new(f->store, f->rm);
    int p = owner(f, "b", "");
    Objlog__OutcomeCode code;
    for (int i = 1; i <= 100; i++) {
        step s = {'B', "b", "", "E", OK, "", 0, NULL, 0, i, 0};
        Objlog__Event *ev = step_event(&s, i);
        assert_int_equal(apply_event(b, p, i, T0, ev, &code, err, sizeof(err)), 0);
        assert_int_equal(code, i == 1 ? OK : EXISTS);
        objlog__event__free_unpacked(ev, NULL);
    }
    write_batch(f, b);
    assert_int_equal(objlog_store_outcomes_low(f->store, p), 1);
    apply_batch_set_dedup_limits(b, OBJLOG_DEDUP_WINDOW_MS, 10);
    step retry1 = {'B', "b", "", "E", OK, "", 0, NULL, 0, 1, 0};
    Objlog__Event *ev = step_event(&retry1, 101);
    assert_int_equal(apply_event(b, p, 101, T0, ev, &code, err, sizeof(err)), 0);
    assert_int_equal(code, EXISTS); /* decided again, not the stored OK */
    write_batch(f, b);
    assert_int_equal(objlog_store_outcomes_low(f->store, p), 65);
    Objlog__Outcome *o = NULL;
    assert_int_equal(objlog_store_get_outcome(f->store, p, 64, &o, err, sizeof(err)),
                     OBJLOG_OUTCOME_TRIMMED);
    assert_int_equal(objlog_store_get_outcome(f->store, p, 65, &o, err, sizeof(err)),
                     OBJLOG_OUTCOME_FOUND);
    objlog__outcome__free_unpacked(o, NULL);
    assert_int_equal(apply_event(b, p, 102, T0, ev, NULL, err, sizeof(err)), 0);
    write_batch(f, b);
    /* 65..92 go (offsets <= 102 - 10); 93 is the oldest kept */
    assert_int_equal(objlog_store_outcomes_low(f->store, p), 93);
    objlog__event__free_unpacked(ev, NULL);
    apply_batch_destroy(b);
}

/* ---- what one event asks of RocksDB ---- */

/* One kind of event: the steps that make the state before it (written
 * in their own batch), the event, and what it costs. */
typedef struct opcount_case {
    const char *name;
    step before[4];
    step ev;
    apply_batch_ops want;      /* reads, puts, deletes, iterators */
} opcount_case;

/* Point reads that reach RocksDB, puts, deletes and iterators of one
 * event, in a batch where an earlier event (a PUT of another key of the
 * bucket) already loaded what a batch loads once: the bucket's record,
 * the partition's outcome low mark, the stats rows (staged once per
 * batch, with the applied offsets, when the batch is written: not the
 * event's). Exact counts: a change of the state machine that costs a
 * RocksDB call more or less per event shows here. */
static void test_rocksdb_ops_per_event(void **state) {
    (void)state;
    /* Point reads that reach the store, puts, deletes, iterators. A new
     * request's id costs nothing (the in-memory index); an Unversioned
     * key has no header row (`objects` shows its one version). */
    static const opcount_case cases[] = {
        /* `objects`; the version, `objects`, the outcome */
        {"PUT of a new key", {MKB("b", "U"), END}, PUT("k", "e1", "null"), {1, 3, 0, 0}},
        /* the replaced null version is `objects`' row: no read for it */
        {"overwrite (unversioned)", {MKB("b", "U"), PUT("k", "e1", "null"), END},
         PUT("k", "e2", "null"), {1, 3, 1, 0}},
        /* plus the header row, read and written */
        {"versioned PUT over a version", {MKB("b", "E"), PUT("k", "e1", "#"), END},
         PUT("k", "e2", "#"), {2, 4, 0, 0}},
        /* the null version and `objects` go; nothing newer to look for */
        {"DELETE (unversioned)", {MKB("b", "U"), PUT("k", "e1", "null"), END},
         DEL("k", "", 0), {1, 1, 2, 0}},
        /* a marker: version row, header, `objects` deleted, the outcome */
        {"DELETE (versioned)", {MKB("b", "E"), PUT("k", "e1", "#"), END},
         DEL("k", "#", 1), {2, 3, 1, 0}},
        /* the precondition reads `objects` once more than a plain
         * overwrite */
        {"conditional PUT (If-Match)", {MKB("b", "U"), PUT("k", "e1", "null"), END},
         {'P', "b", "k", "e2", OK, "null", 0, "e1", 0, 0, 0}, {2, 3, 1, 0}},
        /* a retry reads its first outcome and copies it, nothing else */
        {"retry of a PUT", {MKB("b", "U"), PUTR("k", "e1", 7, "null"), END},
         PUTR("k", "e1", 7, "null"), {1, 1, 0, 0}},
    };
    int bad = 0;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        fixture *f;
        setup((void **)&f);
        apply_batch *b = apply_batch_new(f->store, f->rm);
        char err[256];
        Objlog__OutcomeCode code;
        int idx = 1;
        const opcount_case *oc = &cases[c];
        for (int i = 0; oc->before[i].op; i++, idx++) {
            int p = owner(f, "b", strchr("BXVQ", oc->before[i].op) ? "" : oc->before[i].key);
            Objlog__Event *ev = step_event(&oc->before[i], idx);
            assert_int_equal(apply_event(b, p, idx, 5000 + idx, ev, &code, err, sizeof(err)), 0);
            assert_int_equal(code, oc->before[i].expect);
            objlog__event__free_unpacked(ev, NULL);
        }
        write_batch(f, b);
        int p = owner(f, "b", "k");
        step warm = PUT("w", "ew", "");
        Objlog__Event *ev = step_event(&warm, idx);
        assert_int_equal(apply_event(b, owner(f, "b", "w"), idx, 5000 + idx, ev, &code, err,
                                     sizeof(err)), 0);
        objlog__event__free_unpacked(ev, NULL);
        idx++;
        apply_batch_ops before, after;
        apply_batch_ops_get(b, &before);
        ev = step_event(&oc->ev, idx);
        assert_int_equal(apply_event(b, p, idx, 5000 + idx, ev, &code, err, sizeof(err)), 0);
        objlog__event__free_unpacked(ev, NULL);
        apply_batch_ops_get(b, &after);
        if (code != oc->ev.expect)
            fail_msg("%s: outcome %d, want %d", oc->name, code, oc->ev.expect);
        apply_batch_ops got = {after.reads - before.reads, after.puts - before.puts,
                               after.deletes - before.deletes,
                               after.iterators - before.iterators};
        print_message("%-30s reads %llu puts %llu deletes %llu iterators %llu\n", oc->name,
                      (unsigned long long)got.reads, (unsigned long long)got.puts,
                      (unsigned long long)got.deletes, (unsigned long long)got.iterators);
        if (memcmp(&got, &oc->want, sizeof(got)) != 0 && ++bad)
            print_error("%s: reads %llu puts %llu deletes %llu iterators %llu, want %llu %llu "
                     "%llu %llu", oc->name, (unsigned long long)got.reads,
                     (unsigned long long)got.puts, (unsigned long long)got.deletes,
                     (unsigned long long)got.iterators, (unsigned long long)oc->want.reads,
                     (unsigned long long)oc->want.puts, (unsigned long long)oc->want.deletes,
                     (unsigned long long)oc->want.iterators);
        write_batch(f, b);
        apply_batch_destroy(b);
        teardown((void **)&f);
    }
    assert_int_equal(bad, 0);
}

/* objlog_store_dump: same events -> identical bytes; one event different
 * (an etag) -> different; the format is "<cf> <hex key> <hex value>". */
static void test_store_dump(void **state) {
    (void)state;
    fixture *f[3];
    char err[256];
    for (int k = 0; k < 3; k++) {
        setup((void **)&f[k]);
        apply_batch *b = apply_batch_new(f[k]->store, f[k]->rm);
        step s[] = {MKB("b", "E"), PUT("a", "e1", "#"),
                    PUT("a", k == 2 ? "e9" : "e2", "#")};
        for (int i = 0; i < 3; i++) {
            Objlog__Event *ev = step_event(&s[i], i + 1);
            int p = owner(f[k], "b", i ? "a" : "");
            assert_int_equal(apply_event(b, p, i + 1, T0 + i, ev, NULL, err,
                                         sizeof(err)), 0);
            objlog__event__free_unpacked(ev, NULL);
            if (k == 1)
                write_batch(f[k], b); /* other batch boundaries, same dump */
        }
        apply_set_applied(b, owner(f[k], "b", "a"), 4);
        write_batch(f[k], b);
        apply_batch_destroy(b);
    }
    char *d0 = dump_store(f[0]), *d1 = dump_store(f[1]), *d2 = dump_store(f[2]);
    assert_string_equal(d0, d1);
    assert_true(strcmp(d0, d2) != 0);
    /* every CF that has rows appears, lines are well formed */
    const char *need[] = {"versions ", "objects ", "buckets ", "outcomes ", "meta "};
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
        char line[16];
        snprintf(line, sizeof(line), "\n%s", need[i]);
        assert_true(strncmp(d0, need[i], strlen(need[i])) == 0 ||
                    strstr(d0, line) != NULL);
    }
    /* meta "applied" be32(p) -> be64(4) */
    char applied[96];
    snprintf(applied, sizeof(applied), "meta 6170706c696564%08x 0000000000000004\n",
             owner(f[0], "b", "a"));
    assert_non_null(strstr(d0, applied));
    for (const char *c = d0; *c; c++)
        assert_true(strchr("abcdefghijklmnopqrstuvwxyz0123456789 \n", *c) != NULL);
    free(d0);
    free(d1);
    free(d2);
    for (int k = 0; k < 3; k++)
        teardown((void **)&f[k]);
}

/* The `objects` row is byte-identical to the newest version row. */
static void test_objects_mirror_newest_version(void **state) {
    fixture *f = *state;
    apply_batch *b = apply_batch_new(f->store, f->rm);
    char err[256];
    step s[] = {MKB("b", "E"), PUT("a", "e1", "#"), PUT("a", "e2", "#")};
    for (int i = 0; i < 3; i++) {
        Objlog__Event *ev = step_event(&s[i], i + 1);
        int p = owner(f, "b", i ? "a" : "");
        assert_int_equal(apply_event(b, p, i + 1, 77, ev, NULL, err, sizeof(err)), 0);
        objlog__event__free_unpacked(ev, NULL);
    }
    write_batch(f, b);
    keybuf rk, vr;
    keybuf_init(&rk);
    keybuf_init(&vr);
    keycodec_route_key(&rk, "b", 1, (const uint8_t *)"a", 1);
    keycodec_version_row(&vr, "b", 1, (const uint8_t *)"a", 1, keycodec_seq(EPOCH, 3));
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    size_t on, vn;
    char *e = NULL;
    char *ov = rocksdb_get_cf(objlog_store_db(f->store), ro,
                              objlog_store_cf(f->store, OBJLOG_CF_OBJECTS),
                              (char *)rk.data, rk.len, &on, &e);
    char *vv = rocksdb_get_cf(objlog_store_db(f->store), ro,
                              objlog_store_cf(f->store, OBJLOG_CF_VERSIONS),
                              (char *)vr.data, vr.len, &vn, &e);
    assert_non_null(ov);
    assert_non_null(vv);
    assert_int_equal(on, vn);
    assert_memory_equal(ov, vv, on);
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, on, (uint8_t *)ov);
    assert_int_equal(r->seq, keycodec_seq(EPOCH, 3));
    assert_int_equal(r->log_time_ms, 77);
    assert_int_equal(r->meta->size, 7);
    assert_memory_equal(r->key.data, "a", 1);
    objlog__version_record__free_unpacked(r, NULL);
    rocksdb_free(ov);
    rocksdb_free(vv);
    rocksdb_readoptions_destroy(ro);
    keybuf_free(&rk);
    keybuf_free(&vr);
    apply_batch_destroy(b);
}

/* Undecodable payloads: decode refuses them, apply_invalid records
 * InvalidEvent and counts them; applied offsets land in meta. */
static void test_invalid_events_and_meta(void **state) {
    fixture *f = *state;
    char why[128], err[256];
    assert_null(apply_decode("\xff\xff\xff", 3, why, sizeof(why)));
    assert_string_equal(why, "payload is not an objlog.Event");
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = "b";
    uint8_t buf[64];
    size_t n = objlog__event__pack(&ev, buf);
    assert_null(apply_decode(buf, n, why, sizeof(why)));
    assert_string_equal(why, "event has no operation");
    Objlog__DeleteBucket db = OBJLOG__DELETE_BUCKET__INIT;
    ev.bucket = "";
    ev.op_case = OBJLOG__EVENT__OP_DELETE_BUCKET;
    ev.delete_bucket = &db;
    n = objlog__event__pack(&ev, buf);
    assert_null(apply_decode(buf, n, why, sizeof(why)));
    assert_string_equal(why, "event has no bucket");

    apply_batch *b = apply_batch_new(f->store, f->rm);
    assert_int_equal(apply_invalid(b, 2, 10, 1, "bad one", err, sizeof(err)), 0);
    assert_int_equal(apply_invalid(b, 2, 11, 1, "bad two", err, sizeof(err)), 0);
    apply_set_applied(b, 2, 12);
    write_batch(f, b);
    assert_int_equal(apply_invalid(b, 2, 12, 1, "bad three", err, sizeof(err)), 0);
    write_batch(f, b);
    assert_int_equal(objlog_store_dlq_count(f->store, 2), 3);
    assert_int_equal(objlog_store_dlq_count(f->store, 1), 0);
    assert_int_equal(objlog_store_applied(f->store, 2), 12);
    assert_int_equal(objlog_store_applied(f->store, 3), 0);
    Objlog__Outcome *o;
    assert_int_equal(objlog_store_get_outcome(f->store, 2, 11, &o, err, sizeof(err)), 1);
    assert_int_equal(o->code, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT);
    assert_string_equal(o->message, "bad two");
    assert_int_equal(o->partition, 2);
    assert_int_equal(o->offset, 11);
    objlog__outcome__free_unpacked(o, NULL);
    assert_int_equal(objlog_store_get_outcome(f->store, 2, 13, &o, err, sizeof(err)), 0);
    apply_batch_destroy(b);
}

/* Reopening keeps everything (the CFs are found again, not recreated). */
static void test_store_reopen(void **state) {
    fixture *f = *state;
    char err[256];
    apply_batch *b = apply_batch_new(f->store, f->rm);
    apply_set_applied(b, 1, 42);
    write_batch(f, b);
    apply_batch_destroy(b);
    objlog_store_close(f->store);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    assert_int_equal(objlog_store_applied(f->store, 1), 42);
    for (int i = 0; i < OBJLOG_CF_COUNT; i++)
        assert_non_null(objlog_store_cf(f->store, (objlog_cf)i));
    assert_string_equal(objlog_cf_name(OBJLOG_CF_OUTCOMES), "outcomes");
    assert_null(objlog_cf_name(OBJLOG_CF_COUNT));
    assert_null(objlog_store_open("/proc/forbidden/x", err, sizeof(err)));
    assert_true(strstr(err, "open store") != NULL);
}

/* The ETag constants of the table, recomputed with OpenSSL from the part
 * strings: S3's rule is md5(concat of each part's binary md5) "-" count. */
static void test_multipart_etag_constants(void **state) {
    (void)state;
    static const struct {
        const char *parts;
        const char *etag;
    } cases[] = {{"ab", ETAG_AB}, {"abc", ETAG_ABC}, {"a", ETAG_A}, {"c", ETAG_C}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint8_t cat[16 * 4], md[EVP_MAX_MD_SIZE];
        unsigned mdn = 0, one = 0;
        size_t n = strlen(cases[c].parts);
        for (size_t i = 0; i < n; i++)
            assert_true(EVP_Digest(cases[c].parts + i, 1, cat + 16 * i, &one,
                                   EVP_md5(), NULL));
        assert_true(EVP_Digest(cat, 16 * n, md, &mdn, EVP_md5(), NULL));
        char got[48] = "";
        for (unsigned i = 0; i < mdn; i++)
            snprintf(got + 2 * i, 3, "%02x", md[i]);
        snprintf(got + 2 * mdn, sizeof(got) - 2 * mdn, "-%zu", n);
        assert_string_equal(got, cases[c].etag);
    }
}

/* The completed version carries the upload's meta (content type, storage
 * class from CreateUpload), size = sum of the listed parts, and the S3
 * multipart ETag; Complete's outcome has the version id and etag. */
static void test_complete_sets_size_and_meta(void **state) {
    fixture *f = *state;
    apply_batch *b = apply_batch_new(f->store, f->rm);
    char err[256];
    step s[] = {MKB("b", "E"), MPU("k"), PART("k", "#2 1 5M " MD5_A),
                PART("k", "#2 2 123 " MD5_B),
                DONE("k", "#2 1:" MD5_A " 2:" MD5_B, "#")};
    for (int i = 0; i < 5; i++) {
        Objlog__Event *ev = step_event(&s[i], i + 1);
        Objlog__OutcomeCode code;
        int p = owner(f, "b", i ? "k" : "");
        assert_int_equal(apply_event(b, p, i + 1, 900 + i, ev, &code, err,
                                     sizeof(err)), 0);
        assert_int_equal(code, OK);
        objlog__event__free_unpacked(ev, NULL);
    }
    write_batch(f, b);
    keybuf rk;
    keybuf_init(&rk);
    keycodec_route_key(&rk, "b", 1, (const uint8_t *)"k", 1);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    size_t on;
    char *e = NULL;
    char *ov = rocksdb_get_cf(objlog_store_db(f->store), ro,
                              objlog_store_cf(f->store, OBJLOG_CF_OBJECTS),
                              (char *)rk.data, rk.len, &on, &e);
    assert_null(e);
    assert_non_null(ov);
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, on, (uint8_t *)ov);
    assert_non_null(r);
    char vid[KEYCODEC_VERSION_ID_LEN];
    vid_of_step(5, vid);
    assert_string_equal(r->version_id, vid);
    assert_int_equal(r->seq, keycodec_seq(EPOCH, 5));
    assert_int_equal(r->log_time_ms, 904);
    assert_int_equal(r->meta->size, 5 * 1024 * 1024 + 123);
    assert_string_equal(r->meta->etag, ETAG_AB);
    assert_string_equal(r->meta->content_type, "text/plain");
    assert_string_equal(r->meta->storage_class, "STANDARD");
    objlog__version_record__free_unpacked(r, NULL);
    rocksdb_free(ov);
    Objlog__Outcome *o;
    assert_int_equal(objlog_store_get_outcome(f->store, owner(f, "b", "k"), 5,
                                              &o, err, sizeof(err)), 1);
    assert_string_equal(o->version_id, vid);
    assert_string_equal(o->etag, ETAG_AB);
    assert_string_equal(o->upload_id, "");
    objlog__outcome__free_unpacked(o, NULL);
    rocksdb_readoptions_destroy(ro);
    keybuf_free(&rk);
    apply_batch_destroy(b);
}

/* Malformed `uploads` keys are told apart from upload and part rows. */
static void test_uploads_row_kind_rejects_other_keys(void **state) {
    (void)state;
    keybuf kb;
    keybuf_init(&kb);
    uint32_t pn = 99;
    assert_int_equal(objlog_uploads_row_kind("", 0, NULL, NULL, NULL, NULL),
                     OBJLOG_UPLOADS_ROW_INVALID);
    keycodec_route_key(&kb, "b", 1, (const uint8_t *)"k", 1);
    assert_int_equal(objlog_uploads_row_kind(kb.data, kb.len, NULL, NULL, NULL,
                                             NULL), OBJLOG_UPLOADS_ROW_INVALID);
    assert_int_equal(objlog_uploads_upload_key(&kb, "b", 1, (const uint8_t *)"k",
                                               1, "0001000000000002"), 0);
    keybuf_append(&kb, "\x01\x02", 2); /* neither 0 nor 4 bytes of part */
    assert_int_equal(objlog_uploads_row_kind(kb.data, kb.len, NULL, NULL, NULL,
                                             NULL), OBJLOG_UPLOADS_ROW_INVALID);
    assert_int_equal(objlog_uploads_part_key(&kb, "b", 1, (const uint8_t *)"k", 1,
                                             "0001000000000002", 258), 0);
    assert_int_equal(objlog_uploads_row_kind(kb.data, kb.len, NULL, NULL, NULL,
                                             &pn), OBJLOG_UPLOADS_ROW_PART);
    assert_int_equal(pn, 258);
    keybuf_free(&kb);
}

/* The batch's stats-row table (statrows.h): every key inserted is found
 * again with its own value across growth (5,000 rows: many doublings);
 * keys that are prefixes of others ("1", "12", "123") stay apart; a clear
 * forgets every row and the table is reusable. */
static void test_statrows_table(void **state) {
    (void)state;
    statrows t;
    statrows_init(&t);
    assert_null(statrows_find(&t, (const uint8_t *)"1", 1));
    for (int round = 0; round < 2; round++) {
        for (uint32_t i = 0; i < 5000; i++) {
            char k[16];
            int kn = snprintf(k, sizeof(k), "%u", i);
            statrow *r = statrows_insert(&t, (const uint8_t *)k, (size_t)kn);
            assert_non_null(r);
            assert_int_equal(r->present, 0);
            assert_int_equal(r->u.objects, 0);
            r->u.objects = i + (uint32_t)round;
        }
        assert_int_equal(t.n, 5000);
        for (uint32_t i = 0; i < 5000; i++) {
            char k[16];
            int kn = snprintf(k, sizeof(k), "%u", i);
            statrow *r = statrows_find(&t, (const uint8_t *)k, (size_t)kn);
            if (!r || r->u.objects != i + (uint32_t)round ||
                r->key_len != (size_t)kn || memcmp(r->key, k, (size_t)kn) != 0)
                fail_msg("round %d: row %s lost or mixed up", round, k);
        }
        assert_null(statrows_find(&t, (const uint8_t *)"5000", 4));
        statrows_clear(&t);
        assert_int_equal(t.n, 0);
        assert_null(statrows_find(&t, (const uint8_t *)"12", 2));
    }
    statrows_free(&t);
}

/* The batch's hot-row cache: a miss, a value, a known absence, the newest
 * value of a key, and more keys than slots (the oldest go, the rest keep
 * their exact values). */
static void test_rowcache_table(void **state) {
    (void)state;
    rowcache c;
    rowcache_init(&c);
    char *v = (char *)1;
    size_t vn = 7;
    assert_int_equal(rowcache_get(&c, 2, "k", 1, &v, &vn), 0);
    rowcache_set(&c, 2, "k", 1, "v1", 2);
    rowcache_set(&c, 2, "k", 1, "v22", 3);
    assert_int_equal(rowcache_get(&c, 2, "k", 1, &v, &vn), 1);
    assert_int_equal(vn, 3);
    assert_memory_equal(v, "v22", 3);
    free(v);
    assert_int_equal(rowcache_get(&c, 6, "k", 1, &v, &vn), 0); /* other cf */
    rowcache_set(&c, 2, "k", 1, NULL, 0);
    assert_int_equal(rowcache_get(&c, 2, "k", 1, &v, &vn), 1);
    assert_null(v);
    for (int i = 0; i < ROWCACHE_MAX + 5; i++) {
        char k[16], val[16];
        snprintf(k, sizeof(k), "key%d", i);
        snprintf(val, sizeof(val), "val%d", i);
        rowcache_set(&c, 6, k, strlen(k), val, strlen(val));
    }
    int cached = 0;
    for (int i = 0; i < ROWCACHE_MAX + 5; i++) {
        char k[16], val[16];
        snprintf(k, sizeof(k), "key%d", i);
        snprintf(val, sizeof(val), "val%d", i);
        int rc = rowcache_get(&c, 6, k, strlen(k), &v, &vn);
        assert_true(rc == 0 || rc == 1);
        if (rc == 1) {
            cached++;
            assert_int_equal(vn, strlen(val));
            assert_memory_equal(v, val, vn);
            free(v);
        }
        if (i >= 5)
            assert_int_equal(rc, 1); /* the newest ROWCACHE_MAX stay */
    }
    assert_int_equal(cached, ROWCACHE_MAX);
    rowcache_clear(&c);
    assert_int_equal(rowcache_get(&c, 6, "key40", 5, &v, &vn), 0);
}

/* ridindex against a plain list, over random inserts, removes and finds
 * with hashes drawn from a few values that share home slots (every probe
 * run collides, and removes shift runs that wrap the table's end). */
static void test_ridindex_model(void **state) {
    (void)state;
    enum { MODEL_MAX = 4000 };
    static struct { uint64_t h; int64_t off; } model[MODEL_MAX];
    size_t n = 0;
    ridindex *x = ridindex_new();
    assert_non_null(x);
    uint64_t rng = 88172645463325252ULL;
    for (int step = 0; step < 200000; step++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        /* 12 hashes; homes 0, 63, 1 and their multiples mod small sizes */
        static const uint64_t hs[] = {0, 63, 64, 127, 1, 65, 129, 62, 126, 255, 256, 511};
        uint64_t h = hs[rng % 12];
        int64_t off = (int64_t)((rng >> 8) % 3000);
        int op = (int)((rng >> 40) % 3);
        size_t at = n;
        for (size_t i = 0; i < n; i++)
            if (model[i].h == h && model[i].off == off)
                at = i;
        if (op == 0 && n < MODEL_MAX) {
            assert_int_equal(ridindex_insert(x, h, off), 0);
            if (at == n)
                model[n++] = (typeof(model[0])){h, off};
        } else if (op == 1) {
            ridindex_remove(x, h, off);
            if (at < n)
                model[at] = model[--n];
        }
        int64_t got[8], want[8];
        size_t nw = 0;
        for (size_t i = 0; i < n; i++) {
            if (model[i].h != h)
                continue;
            size_t k = nw < 8 ? nw : 7;
            if (nw >= 8 && model[i].off <= want[7]) {
                nw++;
                continue;
            }
            while (k > 0 && want[k - 1] < model[i].off) {
                want[k] = want[k - 1];
                k--;
            }
            want[k] = model[i].off;
            nw++;
        }
        size_t ng = ridindex_find(x, h, got, 8);
        assert_int_equal(ng, nw);
        assert_memory_equal(got, want, (ng < 8 ? ng : 8) * sizeof(int64_t));
        assert_int_equal(ridindex_count(x), n);
    }
    assert_true(n > 500); /* the table grew past its first sizes */
    ridindex_free(x);
}

int main(void) {
    size_t nrows = sizeof(rows) / sizeof(rows[0]);
    size_t ndedup = sizeof(dedup_rows) / sizeof(dedup_rows[0]);
    size_t extra = 12;
    struct CMUnitTest *t = calloc(nrows + ndedup + extra, sizeof(*t));
    for (size_t i = 0; i < nrows; i++) {
        t[i].name = rows[i].name;
        t[i].test_func = test_rule;
        t[i].initial_state = (void *)&rows[i];
    }
    for (size_t i = 0; i < ndedup; i++) {
        t[nrows + extra + i].name = dedup_rows[i].name;
        t[nrows + extra + i].test_func = test_dedup_rule;
        t[nrows + extra + i].initial_state = (void *)&dedup_rows[i];
    }
    t[nrows + 6] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_trim_backlog_drains_64_per_event, setup, teardown);
    t[nrows + 7] = (struct CMUnitTest)cmocka_unit_test(test_store_dump);
    t[nrows + 8] = (struct CMUnitTest)cmocka_unit_test(test_statrows_table);
    t[nrows + 9] = (struct CMUnitTest)cmocka_unit_test(test_rowcache_table);
    t[nrows + 10] = (struct CMUnitTest)cmocka_unit_test(test_rocksdb_ops_per_event);
    t[nrows + 11] = (struct CMUnitTest)cmocka_unit_test(test_ridindex_model);
    t[nrows] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_objects_mirror_newest_version, setup, teardown);
    t[nrows + 1] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_invalid_events_and_meta, setup, teardown);
    t[nrows + 2] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_store_reopen, setup, teardown);
    t[nrows + 3] = (struct CMUnitTest)cmocka_unit_test(test_multipart_etag_constants);
    t[nrows + 4] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_complete_sets_size_and_meta, setup, teardown);
    t[nrows + 5] = (struct CMUnitTest)cmocka_unit_test(
        test_uploads_row_kind_rejects_other_keys);
    int rc = _cmocka_run_group_tests("apply", t, nrows + ndedup + extra, NULL,
                                     NULL);
    free(t);
    return rc;
}
