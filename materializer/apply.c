/* apply.c: the deterministic state machine (docs/ARCHITECTURE.md, "The
 * state machine's rules"). It owns deciding the outcome of one event and
 * staging all of its effects in the batch's WriteBatchWithIndex, so that
 * later events of the same batch read them.
 *
 * Contract (what keeps replay exact):
 *   - input is only the event's fields, its Kafka partition, offset and
 *     message timestamp, the range map and the bucket record (which carries
 *     the version cap); never the wall clock, randomness or local
 *     configuration;
 *   - every event gets exactly one outcome, stored at
 *     outcomes 'o' be32(p) be64(offset); the first event with a request id
 *     also gets 'r' request_id -> be32(p) be64(offset);
 *   - a failed event changes nothing but its outcome rows;
 *   - after each event (rule 4) the partition's oldest outcomes beyond the
 *     dedup window or bound are trimmed, so the stored state is a function
 *     of the applied log prefix whatever the batch boundaries.
 *
 * Decision order, one rule per line (first match wins):
 *   1. request id already decided ('r' row) within the window and the
 *      bound -> the stored outcome, copied verbatim (same partition/offset/
 *      version id/log time inside) to this event's own 'o' row, no other
 *      change. Window: T - first outcome's log_time_ms <= window (T = this
 *      event's Kafka timestamp, never the wall clock; default 24 h). Bound:
 *      the first outcome's offset >= this offset - max ids (default
 *      1,000,000), i.e. the event remembers the ids of the partition's
 *      previous max-ids offsets. Outside either: a new request, decided by
 *      rules 2-3, and 'r' then points at this event;
 *   2. route key (bucket ops use key "") outside this partition's range
 *      -> WrongRange;
 *   3. per operation:
 *      CreateBucket   exists -> BucketAlreadyExists; else OK (versioning,
 *                     quota and max_versions copied into the record)
 *      DeleteBucket   missing -> NoSuchBucket; any version row or delete
 *                     marker under it -> BucketNotEmpty; any in-progress
 *                     multipart upload (`uploads` row) -> BucketNotEmpty;
 *                     else OK (removed). Uploads block the delete because
 *                     the S3 API reference says so (DeleteBucket,
 *                     https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteBucket.html):
 *                     "If multipart uploads in a directory bucket are in
 *                     progress, you can't delete the bucket until all the
 *                     in-progress multipart uploads are aborted or
 *                     completed." (S3-compatible stores document the same
 *                     for all buckets: BucketNotEmpty.)
 *      SetVersioning  missing -> NoSuchBucket; Unversioned once Enabled or
 *                     Suspended -> InvalidArgument; else OK
 *      SetRateLimit   missing -> NoSuchBucket; no limit, a rate or burst
 *                     over 1,000,000, or a burst without a rate ->
 *                     InvalidArgument; else OK (ratelimit.c; enforced at
 *                     the edge, query/admit.c, never by the state machine)
 *      DeleteRateLimit missing -> NoSuchBucket; else OK (default again)
 *      SetQuota       missing -> NoSuchBucket; else OK (the new quota
 *                     applies from the next event; usage above it stays)
 *      PutObject      empty key -> InvalidArgument; missing bucket ->
 *                     NoSuchBucket; preconditions (P below); a new version
 *                     beyond the cap -> TooManyVersions; bucket quota (Q
 *                     below) -> QuotaExceeded; else OK
 *      DeleteObject   same checks as PutObject (P included, against the
 *                     current version even with a version id: "Conditional
 *                     delete evaluations only apply to the current version
 *                     of the object", S3 User Guide, conditional deletes,
 *                     https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-deletes.html);
 *                     bad version id -> InvalidArgument; a missing key or
 *                     version is OK with no change (as in S3; with If-Match
 *                     it is NoSuchKey, P); a new delete marker beyond the
 *                     cap -> TooManyVersions
 *      CreateUpload   empty key -> InvalidArgument; missing bucket ->
 *                     NoSuchBucket; else OK: upload id = hex(seq), an
 *                     UploadRecord with the event's meta, outcome upload_id
 *      UploadPart     key/bucket as CreateUpload; part number outside
 *                     1..10000 -> InvalidArgument; no upload row ->
 *                     NoSuchUpload; else OK, a PartRecord (a re-upload of
 *                     the same number replaces it); outcome etag = part etag
 *      CompleteUpload key/bucket as CreateUpload; no upload row ->
 *                     NoSuchUpload; empty part list -> InvalidArgument;
 *                     numbers not strictly ascending -> InvalidPartOrder;
 *                     a number not recorded, an etag that differs (quotes
 *                     stripped, hex case-insensitive) or is not 32 hex
 *                     digits -> InvalidPart; a part but the last below
 *                     5 MiB -> EntityTooSmall; preconditions (P);
 *                     cap -> TooManyVersions; quota (Q) ->
 *                     QuotaExceeded; else OK:
 *                     a new version exactly as PutObject (versioning, null
 *                     replacement) with the upload's meta, size = sum of
 *                     the parts, etag = hex(md5(md5 bytes of each part in
 *                     order)) "-" count; the upload and ALL its parts
 *                     (listed or not) are removed
 *      AbortUpload    key/bucket as CreateUpload; no upload row ->
 *                     NoSuchUpload; else OK, upload and parts removed
 *      PutIndex,      missing bucket -> NoSuchBucket; then indexes.c:
 *      DropIndex,     bad name/field -> InvalidArgument, NoSuchIndex,
 *      BuildIndex     IndexAlreadyExists, TooManyIndexes (rules there);
 *                     every key op keeps the bucket's index rows in the
 *                     same batch (stats_key_begin/_end call indexes.c)
 *   4. (every event, after its outcome is stored) trim: the partition's 'o'
 *      rows at offsets <= this offset - max ids, or with T - log_time_ms >
 *      window, go, oldest offset first, stopping at the first row that is
 *      neither (at most TRIM_MAX_PER_EVENT per event); each takes its 'r'
 *      row along if that still points at it. meta "olow" = oldest kept
 *      offset, so readers tell "trimmed" from "not applied yet".
 *   Undecodable messages (apply_invalid) -> InvalidEvent, counted in
 *   meta "dlq", then rule 4.
 *
 * P, preconditions, as S3 (PUT, DELETE, CompleteUpload), evaluated at the
 * event's log position against the key's current version: the `objects`
 * row, absent when the key has no version or its newest is a delete marker
 * ("If the current version of the object is a delete marker, Amazon S3
 * behaves as if the object was deleted", S3 API reference, GetObject
 * DeleteMarker). API reference texts below as published in the AWS SDK
 * model docs, https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/s3/
 * aws.sdk.kotlin.services.s3.model/-put-object-request/if-match.html,
 * .../-put-object-request/if-none-match.html,
 * .../-complete-multipart-upload-request/if-none-match.html:
 *   If-None-Match: *  a current version exists -> PreconditionFailed (412);
 *                     none, or the newest is a delete marker -> holds.
 *                     PutObject / CompleteMultipartUpload API reference,
 *                     If-None-Match: "Uploads the object only if the object
 *                     key name does not already exist in the bucket
 *                     specified. Otherwise, Amazon S3 returns a 412
 *                     Precondition Failed error."
 *   If-Match: etag    no current version (missing key or delete marker
 *                     newest) -> NoSuchKey (404); etag differs (quotes
 *                     ignored) -> PreconditionFailed (412); "*" matches any
 *                     current version. PutObject API reference, If-Match:
 *                     "If the ETag values do not match, the operation
 *                     returns a 412 Precondition Failed error." A key
 *                     with no current version is not a mismatch but a
 *                     missing object: the S3 User Guide (conditional
 *                     deletes) uses If-Match "*" "to check if object
 *                     exists", and states that a conditional write whose
 *                     object was deleted concurrently gets 404 Not Found
 *                     because the key no longer exists (stated on the
 *                     zh-CN edition of that page; the general-purpose
 *                     bucket behaviour is 404 NoSuchKey when If-Match is
 *                     sent and the object is absent, 412 on a mismatch).
 *
 * Q, bucket quota (BucketRecord.quota; 0 = no limit), for PutObject and
 * CompleteUpload, read from the bucket's `stats` row as this event sees it
 * (so it is a function of the log prefix, deterministic under replay):
 * live usage after the write = objects - (1 if the key has a live current
 * version) + 1, bytes - its size + the new size. objects > max_objects or
 * bytes > max_bytes -> QuotaExceeded (403), nothing changes, UNLESS the
 * write does not grow that figure (an overwrite by the same or a smaller
 * object), so a bucket above a lowered quota can still be rewritten and
 * shrunk. Deletes are never refused. Counters (stats CF, layout in
 * materializer.h) change in the same batch as the rows they count, only
 * for OK outcomes (stats_commit).
 *
 * Versioning, exactly as S3 (seq = keycodec_seq(event epoch, offset)):
 *   Unversioned  PUT replaces the single "null" version; DELETE removes it
 *                (no marker).
 *   Enabled      PUT adds version hex(seq); DELETE adds a marker hex(seq).
 *   Suspended    PUT and DELETE replace the "null" version wherever it sits
 *                with a new newest "null" version (a marker for DELETE);
 *                other versions stay.
 *   DELETE ?version_id removes that version for good; `objects` then shows
 *   the next newest if it is live.
 *
 * Version cap: BucketRecord.max_versions (0 = OBJLOG_MAX_VERSIONS_DEFAULT).
 * The count is the header's, delete markers included: a marker is an entry
 * of the key's version list like any other (as in MinIO, whose per-object
 * version limit counts markers), so an unbounded stream of DELETEs can't
 * grow a key past the cap either. Only writes that ADD an entry are
 * refused: replacing the null version (Unversioned/Suspended PUT, Suspended
 * DELETE over an existing null) keeps the count, and DELETE by version id
 * always works, so a capped key can be trimmed.
 *
 * Per-key header row: `versions` at route_key(b,k) exactly (it sorts just
 * before the key's version rows) holds u8 format=1, u8 has_null,
 * be64 null_seq, be64 version count. It exists iff the key has a version,
 * so finding the null version is one point read, never a scan.
 * `objects` at route_key(b,k) holds the newest version iff it is live.
 * `uploads` layout: see materializer.h (upload row, then its part rows).
 */
#include "apply.h"

#include "indexes.h"
#include "keycodec.h"
#include "lifecycle.h"
#include "ratelimit.h"
#include "rows.h"
#include "statrows.h"

#include <openssl/evp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PART_NUMBER_MAX 10000
#define PART_MIN_SIZE (5ULL * 1024 * 1024) /* every part but the last */
#define MD5_LEN 16
/* "<32 hex>-<count up to 10000>" */
#define MULTIPART_ETAG_MAX (2 * MD5_LEN + 1 + 5 + 1)



/* ---- one event ---- */

/* Signed change of every UsageStats counter made by one event. */
typedef struct stats_delta {
    int64_t objects, bytes, versions, version_bytes, noncurrent_versions,
        noncurrent_bytes, delete_markers, uploads, upload_part_bytes, buckets;
} stats_delta;

typedef struct apply_result {
    Objlog__OutcomeCode code;
    char message[256];
    char version_id[KEYCODEC_VERSION_ID_LEN];
    const char *etag;
    int delete_marker;
    char upload_id[KEYCODEC_VERSION_ID_LEN];
    char etag_buf[MULTIPART_ETAG_MAX]; /* etag computed by Complete */
} apply_result;

typedef struct apply_ev {
    apply_batch *b;
    const Objlog__Event *ev;
    int32_t partition;
    int64_t offset;
    int64_t log_time_ms;
    uint64_t seq;
    keybuf route;  /* route_key(bucket, key), key "" for bucket ops */
    keybuf bpart;  /* bucket_part(bucket) */
    apply_result res;
    char *errstr;
    size_t es;
    /* Usage delta of this event (stats CF), staged only if it succeeds. */
    stats_delta d;
    int obj_live_before;     /* the `objects` row before a key op */
    uint64_t obj_size_before;
    /* ... and after, once the op staged it (objects_noted), so
     * the counters need not read it back. */
    int obj_staged, obj_live_after;
    uint64_t obj_size_after;
    char *tenant;            /* the bucket's tenant once loaded (owned) */
    indexes_key ix;          /* the bucket's indexes, for key ops */
} apply_ev;

static void reject(apply_ev *a, Objlog__OutcomeCode code, const char *fmt,
                   const char *arg) {
    a->res.code = code;
    snprintf(a->res.message, sizeof(a->res.message), fmt, arg);
}

static int is_bucket_op(const Objlog__Event *ev) {
    switch (ev->op_case) {
    case OBJLOG__EVENT__OP_CREATE_BUCKET:
    case OBJLOG__EVENT__OP_DELETE_BUCKET:
    case OBJLOG__EVENT__OP_SET_VERSIONING:
    case OBJLOG__EVENT__OP_SET_QUOTA:
    case OBJLOG__EVENT__OP_SET_RATE_LIMIT:
    case OBJLOG__EVENT__OP_DELETE_RATE_LIMIT:
    case OBJLOG__EVENT__OP_SET_LIFECYCLE:
    case OBJLOG__EVENT__OP_PUT_INDEX:
    case OBJLOG__EVENT__OP_DROP_INDEX:
    case OBJLOG__EVENT__OP_BUILD_INDEX:
        return 1;
    default:
        return 0;
    }
}

/* 1 found (*out owned by the caller), 0 absent, -1 error. */
static int load_bucket(apply_ev *a, Objlog__BucketRecord **out) {
    char *v;
    size_t vn;
    *out = NULL;
    int rc = apply_batch_get(a->b, OBJLOG_CF_BUCKETS, a->bpart.data, a->bpart.len,
                       &v, &vn, a->errstr, a->es);
    if (rc <= 0)
        return rc;
    *out = objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out) {
        snprintf(a->errstr, a->es, "bucket %s: corrupt record", a->ev->bucket);
        return -1;
    }
    return 1;
}

/* load_bucket for operations that need the bucket: a missing one is
 * decided here as NoSuchBucket. 1 found, 0 rejected, -1 error. */
static int require_bucket(apply_ev *a, Objlog__BucketRecord **out) {
    int rc = load_bucket(a, out);
    if (rc == 0)
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET,
               "bucket %s does not exist", a->ev->bucket);
    return rc;
}

static int save_bucket(apply_ev *a, const Objlog__BucketRecord *r) {
    return apply_batch_put_msg(a->b, OBJLOG_CF_BUCKETS, a->bpart.data, a->bpart.len,
                         &r->base, a->errstr, a->es);
}

static int load_header(apply_ev *a, objlog_key_header *h) {
    char *v;
    size_t vn;
    memset(h, 0, sizeof(*h));
    int rc = apply_batch_get(a->b, OBJLOG_CF_VERSIONS, a->route.data, a->route.len,
                       &v, &vn, a->errstr, a->es);
    if (rc <= 0)
        return rc;
    rc = objlog_key_header_decode(v, vn, h);
    rocksdb_free(v);
    if (rc < 0) {
        snprintf(a->errstr, a->es, "key header in %s: corrupt", a->ev->bucket);
        return -1;
    }
    return 1;
}

static void save_header(apply_ev *a, const objlog_key_header *h) {
    if (h->versions == 0) {
        apply_batch_del(a->b, OBJLOG_CF_VERSIONS, a->route.data, a->route.len);
        return;
    }
    uint8_t v[APPLY_HEADER_LEN];
    apply_header_encode(h, v);
    apply_batch_put(a->b, OBJLOG_CF_VERSIONS, a->route.data, a->route.len, v, sizeof(v));
}

/* version_row(b,k,seq) built from the route key already at hand. */
static int version_row(apply_ev *a, uint64_t seq, keybuf *row) {
    keybuf_init(row);
    if (keybuf_append(row, a->route.data, a->route.len) < 0 ||
        keycodec_append_be64(row, UINT64_MAX - seq) < 0) {
        keybuf_free(row);
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    return 0;
}

/* Loads the version at seq: 1 found (*out owned by the caller), 0, -1. */
static int load_version(apply_ev *a, uint64_t seq, Objlog__VersionRecord **out) {
    keybuf row;
    char *v;
    size_t vn;
    *out = NULL;
    if (version_row(a, seq, &row) < 0)
        return -1;
    int rc = apply_batch_get(a->b, OBJLOG_CF_VERSIONS, row.data, row.len, &v, &vn,
                       a->errstr, a->es);
    keybuf_free(&row);
    if (rc <= 0)
        return rc;
    *out = objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out) {
        snprintf(a->errstr, a->es, "version record in %s: corrupt", a->ev->bucket);
        return -1;
    }
    return 1;
}

static int delete_version(apply_ev *a, uint64_t seq) {
    Objlog__VersionRecord *r;
    int rc = load_version(a, seq, &r);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        if (r->delete_marker) {
            a->d.delete_markers--;
        } else {
            a->d.versions--;
            a->d.version_bytes -= (int64_t)(r->meta ? r->meta->size : 0);
        }
        objlog__version_record__free_unpacked(r, NULL);
    }
    keybuf row;
    if (version_row(a, seq, &row) < 0)
        return -1;
    apply_batch_del(a->b, OBJLOG_CF_VERSIONS, row.data, row.len);
    keybuf_free(&row);
    return 0;
}

/* Every write of the key's `objects` row notes the row's new state here,
 * for stats_key_end; row (malloc'd or NULL, taken) goes to the indexes. */
static void objects_noted(apply_ev *a, int live, uint64_t size, uint8_t *row,
                          size_t n) {
    a->obj_staged = 1;
    a->obj_live_after = live;
    a->obj_size_after = size;
    indexes_key_staged(&a->ix, row, n);
}

static void objects_del(apply_ev *a) {
    apply_batch_del(a->b, OBJLOG_CF_OBJECTS, a->route.data, a->route.len);
    objects_noted(a, 0, 0, NULL, 0);
}

/* Writes a new newest version (or marker) at a->seq. A new version always
 * has the highest seq of its key, so it is what `objects` must show. */
static int add_version(apply_ev *a, const char *version_id, int marker,
                       Objlog__ObjectMeta *meta) {
    Objlog__VersionRecord r = OBJLOG__VERSION_RECORD__INIT;
    Objlog__ObjectMeta empty = OBJLOG__OBJECT_META__INIT;
    r.key = a->ev->key;
    r.seq = a->seq;
    r.version_id = (char *)version_id;
    r.delete_marker = marker;
    r.meta = marker ? NULL : (meta ? meta : &empty);
    r.log_time_ms = a->log_time_ms;
    if (marker) {
        a->d.delete_markers++;
    } else {
        a->d.versions++;
        a->d.version_bytes += (int64_t)(r.meta->size);
    }
    keybuf row;
    if (version_row(a, a->seq, &row) < 0)
        return -1;
    int rc = apply_batch_put_msg(a->b, OBJLOG_CF_VERSIONS, row.data, row.len,
                           &r.base, a->errstr, a->es);
    keybuf_free(&row);
    if (rc < 0)
        return -1;
    if (marker) {
        objects_del(a);
        return 0;
    }
    size_t n;
    uint8_t *buf = apply_batch_pack(&r.base, &n, a->errstr, a->es);
    if (!buf)
        return -1;
    apply_batch_put(a->b, OBJLOG_CF_OBJECTS, a->route.data, a->route.len, buf, n);
    objects_noted(a, 1, r.meta->size, buf, n);
    return 0;
}

/* Makes `objects` show the key's newest version if it is live, else
 * nothing. Used after a version other than a new newest one changed. */
static int refresh_current(apply_ev *a) {
    rocksdb_iterator_t *it = apply_batch_iter(a->b, OBJLOG_CF_VERSIONS);
    const uint8_t *rk = a->route.data;
    size_t rn = a->route.len;
    int found = 0;
    rocksdb_iter_seek(it, (const char *)rk, rn);
    for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn < rn || memcmp(k, rk, rn) != 0)
            break;
        if (kn != rn + 8)
            continue; /* the header row */
        size_t vn;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__VersionRecord *r =
            objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
        if (!r) {
            snprintf(a->errstr, a->es, "version record in %s: corrupt", a->ev->bucket);
            rocksdb_iter_destroy(it);
            return -1;
        }
        if (!r->delete_marker) {
            /* v may point into the batch itself, which the put can grow
             * (and move): put a copy. */
            char *copy = malloc(vn ? vn : 1);
            if (!copy) {
                objlog__version_record__free_unpacked(r, NULL);
                rocksdb_iter_destroy(it);
                snprintf(a->errstr, a->es, "out of memory");
                return -1;
            }
            memcpy(copy, v, vn);
            apply_batch_put(a->b, OBJLOG_CF_OBJECTS, rk, rn, copy, vn);
            objects_noted(a, 1, r->meta ? r->meta->size : 0, (uint8_t *)copy, vn);
            found = 1;
        }
        objlog__version_record__free_unpacked(r, NULL);
        break;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(a->errstr, a->es, "scan versions: %s", err);
        rocksdb_free(err);
        return -1;
    }
    if (!found)
        objects_del(a);
    return 0;
}

/* ETags compare without their optional surrounding quotes. */
static int etag_eq(const char *x, const char *y) {
    size_t xn = strlen(x), yn = strlen(y);
    if (xn >= 2 && x[0] == '"' && x[xn - 1] == '"')
        x++, xn -= 2;
    if (yn >= 2 && y[0] == '"' && y[yn - 1] == '"')
        y++, yn -= 2;
    return xn == yn && memcmp(x, y, xn) == 0;
}

/* Evaluates If-Match / If-None-Match against the current live version (the
 * `objects` row: absent when there is none or the newest is a marker).
 * 1 holds, 0 failed (outcome set), -1 error. */
static int check_preconditions(apply_ev *a) {
    const Objlog__Preconditions *p = a->ev->pre;
    int has_match = p && p->if_match && p->if_match[0];
    if (!p || (!has_match && !p->if_none_match))
        return 1;
    char *v;
    size_t vn;
    int rc = apply_batch_get(a->b, OBJLOG_CF_OBJECTS, a->route.data, a->route.len,
                       &v, &vn, a->errstr, a->es);
    if (rc < 0)
        return -1;
    if (p->if_none_match && rc == 1) {
        rocksdb_free(v);
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_PRECONDITION_FAILED,
               "If-None-Match: * failed: %s exists", "the key");
        return 0;
    }
    if (!has_match) {
        rocksdb_free(v);
        return 1;
    }
    if (rc == 0) {
        /* S3 answers 404 NoSuchKey, not 412, when If-Match meets no current
         * version (rule list above). */
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_KEY,
               "If-Match %s: the key has no current version", p->if_match);
        return 0;
    }
    Objlog__VersionRecord *cur =
        objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!cur) {
        snprintf(a->errstr, a->es, "object record in %s: corrupt", a->ev->bucket);
        return -1;
    }
    const char *etag = cur->meta && cur->meta->etag ? cur->meta->etag : "";
    int ok = strcmp(p->if_match, "*") == 0 || etag_eq(p->if_match, etag);
    objlog__version_record__free_unpacked(cur, NULL);
    if (!ok)
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_PRECONDITION_FAILED,
               "If-Match %s failed: current etag differs", p->if_match);
    return ok;
}

/* Keeps the bucket's tenant for the stats rows. 0 or -1. */
static int set_tenant(apply_ev *a, const char *tenant) {
    free(a->tenant);
    a->tenant = strdup(tenant ? tenant : "");
    if (!a->tenant) {
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    return 0;
}

/* What object ops need to know about their bucket. */
typedef struct bucket_state {
    Objlog__Versioning versioning;
    uint64_t max_versions; /* the cap, default applied */
    uint64_t max_bytes, max_objects; /* quota, 0 = none */
} bucket_state;

/* Gate of every key op: non-empty key, existing bucket. 1 passed (*bs
 * filled), 0 rejected (outcome set), -1 error. */
static int key_gate(apply_ev *a, bucket_state *bs) {
    if (a->ev->key.len == 0) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
               "%s", "object key must not be empty");
        return 0;
    }
    Objlog__BucketRecord *br;
    int rc = require_bucket(a, &br);
    if (rc <= 0)
        return rc;
    bs->versioning = br->versioning;
    bs->max_versions = br->max_versions ? br->max_versions
                                        : OBJLOG_MAX_VERSIONS_DEFAULT;
    bs->max_bytes = br->quota ? br->quota->max_bytes : 0;
    bs->max_objects = br->quota ? br->quota->max_objects : 0;
    rc = set_tenant(a, br->tenant);
    indexes_key_keep(&a->ix, &br);
    objlog__bucket_record__free_unpacked(br, NULL);
    return rc < 0 ? -1 : 1;
}

/* Gate of PUT and DELETE: key_gate, then preconditions. */
static int object_gate(apply_ev *a, bucket_state *bs) {
    int rc = key_gate(a, bs);
    return rc <= 0 ? rc : check_preconditions(a);
}

/* 1 if one more version (or marker) fits under the cap, else 0 with
 * TooManyVersions decided. */
static int cap_allows_one_more(apply_ev *a, const objlog_key_header *h,
                               const bucket_state *bs) {
    if (h->versions < bs->max_versions)
        return 1;
    char n[24];
    snprintf(n, sizeof(n), "%llu", (unsigned long long)bs->max_versions);
    reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_TOO_MANY_VERSIONS,
           "the key already has the bucket's maximum of %s versions "
           "(delete markers included)", n);
    return 0;
}

/* ---- usage counters (stats CF; layout in materializer.h) ----
 *
 * Every event that changes a counted row accumulates its change in a->d
 * while it stages the rows; apply_decide then adds a->d to the bucket's,
 * its tenant's and the global row, in the same batch. Noncurrent versions
 * are not tracked row by row: per key, noncurrent = versions - (1 if the
 * newest row is live), and the newest row is live iff `objects` holds it,
 * so noncurrent changes by Δversions - Δobjects (bytes likewise). */

static uint64_t *stats_field(Objlog__UsageStats *u, int i) {
    uint64_t *f[] = {&u->objects, &u->bytes, &u->versions, &u->version_bytes,
                     &u->noncurrent_versions, &u->noncurrent_bytes,
                     &u->delete_markers, &u->uploads, &u->upload_part_bytes,
                     &u->buckets};
    return f[i];
}

static int64_t *delta_field(stats_delta *d, int i) {
    int64_t *f[] = {&d->objects, &d->bytes, &d->versions, &d->version_bytes,
                    &d->noncurrent_versions, &d->noncurrent_bytes,
                    &d->delete_markers, &d->uploads, &d->upload_part_bytes,
                    &d->buckets};
    return f[i];
}
#define STATS_FIELDS 10

static int delta_is_zero(stats_delta *d) {
    for (int i = 0; i < STATS_FIELDS; i++)
        if (*delta_field(d, i))
            return 0;
    return 1;
}

/* The stats row at k as the batch sees it (loaded from the store on first
 * touch; absent = all zero, present 0). NULL on error (errstr). */
static statrow *stats_row(apply_batch *b, const keybuf *k, char *errstr, size_t es) {
    statrow *r = statrows_find(apply_batch_stats_rows(b), k->data, k->len);
    if (r)
        return r;
    char *v;
    size_t vn;
    int rc = apply_batch_get(b, OBJLOG_CF_STATS, k->data, k->len, &v, &vn, errstr, es);
    if (rc < 0)
        return NULL;
    Objlog__UsageStats *u =
        rc ? objlog__usage_stats__unpack(NULL, vn, (const uint8_t *)v) : NULL;
    if (rc)
        rocksdb_free(v);
    if (rc && !u) {
        snprintf(errstr, es, "stats row: corrupt record");
        return NULL;
    }
    r = statrows_insert(apply_batch_stats_rows(b), k->data, k->len);
    if (r && u) {
        r->present = 1;
        for (int i = 0; i < STATS_FIELDS; i++)
            *stats_field(&r->u, i) = *stats_field(u, i);
    }
    if (u)
        objlog__usage_stats__free_unpacked(u, NULL);
    if (!r)
        snprintf(errstr, es, "out of memory");
    return r;
}

/* Adds d to the row at k (unsigned wrap-around: the final values are
 * exact). drop_empty: delete the row when no bucket is left (tenant and
 * global rows). */
static int stats_add(apply_batch *b, const keybuf *k, stats_delta *d,
                     int drop_empty, char *errstr, size_t es) {
    statrow *r = stats_row(b, k, errstr, es);
    if (!r)
        return -1;
    for (int i = 0; i < STATS_FIELDS; i++)
        *stats_field(&r->u, i) += (uint64_t)*delta_field(d, i);
    r->present = !(drop_empty && r->u.buckets == 0);
    r->dirty = 1;
    return 0;
}

/* Sets the row at k to all zero (present) or absent, without reading it. */
static int stats_reset(apply_batch *b, const keybuf *k, int present) {
    if (!apply_batch_stats_on(b))
        return 0;
    statrow *r = statrows_find(apply_batch_stats_rows(b), k->data, k->len);
    if (!r)
        r = statrows_insert(apply_batch_stats_rows(b), k->data, k->len);
    if (!r)
        return -1;
    Objlog__UsageStats zero = OBJLOG__USAGE_STATS__INIT;
    r->u = zero;
    r->present = present;
    r->dirty = 1;
    return 0;
}

/* Stages every changed row into the WriteBatch. Cannot fail: a row packs
 * into at most 10 varints of 11 bytes. */
static void stats_stage(apply_batch *b) {
    statrows *t = apply_batch_stats_rows(b);
    for (size_t i = 0; i < t->n; i++) {
        statrow *r = &t->rows[i];
        if (!r->dirty)
            continue;
        uint8_t buf[STATS_FIELDS * 11];
        if (r->present)
            apply_batch_put(b, OBJLOG_CF_STATS, r->key, r->key_len, buf,
                      objlog__usage_stats__pack(&r->u, buf));
        else
            apply_batch_del(b, OBJLOG_CF_STATS, r->key, r->key_len);
        r->dirty = 0;
    }
}

/* Stages a->d into the bucket's row and into this partition's rows of the
 * tenant and of the global sums: every row belongs to one partition, the
 * event's (a bucket's keys all route to its partition, see ARCHITECTURE,
 * bucket quotas), so a partition's rows are a function of its log alone.
 * The bucket's own row never counts buckets (DeleteBucket removes it); the
 * tenant's and the global row go when their bucket count drops to 0 (all
 * their other counters are 0 then: only an empty bucket is deleted). */
static int stats_commit(apply_ev *a) {
    if (!apply_batch_stats_on(a->b) || delta_is_zero(&a->d))
        return 0;
    keybuf k;
    int rc = 0;
    int64_t nb = a->d.buckets;
    keybuf_init(&k);
    if (a->ev->op_case != OBJLOG__EVENT__OP_DELETE_BUCKET) {
        a->d.buckets = 0;
        rc = objlog_stats_bucket_key(&k, a->ev->bucket, strlen(a->ev->bucket));
        if (rc < 0)
            rc = -2;
        else
            rc = stats_add(a->b, &k, &a->d, 0, a->errstr, a->es);
        a->d.buckets = nb;
    }
    if (rc == 0 && objlog_stats_tenant_key(&k, a->tenant ? a->tenant : "", a->partition) < 0)
        rc = -2;
    if (rc == 0)
        rc = stats_add(a->b, &k, &a->d, 1, a->errstr, a->es);
    if (rc == 0 && objlog_stats_global_key(&k, a->partition) < 0)
        rc = -2;
    if (rc == 0)
        rc = stats_add(a->b, &k, &a->d, 1, a->errstr, a->es);
    keybuf_free(&k);
    if (rc == -2)
        snprintf(a->errstr, a->es, "out of memory");
    return rc < 0 ? -1 : 0;
}

/* The size of the version in `objects` row v. 0 or -1 (corrupt). */
static int row_size(apply_ev *a, const char *v, size_t vn, uint64_t *size) {
    Objlog__VersionRecord *r =
        objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
    if (!r) {
        snprintf(a->errstr, a->es, "object record in %s: corrupt", a->ev->bucket);
        return -1;
    }
    *size = r->meta ? r->meta->size : 0;
    objlog__version_record__free_unpacked(r, NULL);
    return 0;
}

/* Before a key op stages anything: remembers the current live version,
 * and hands its row to the bucket's indexes (one read for both). */
static int stats_key_begin(apply_ev *a) {
    a->obj_staged = 0;
    a->obj_live_before = 0;
    a->obj_size_before = 0;
    if (!apply_batch_stats_on(a->b) && !indexes_key_wants(&a->ix))
        return 0;
    char *v = NULL;
    size_t vn = 0;
    int rc = apply_batch_get(a->b, OBJLOG_CF_OBJECTS, a->route.data, a->route.len,
                       &v, &vn, a->errstr, a->es);
    if (rc < 0)
        return -1;
    if (rc == 1 && apply_batch_stats_on(a->b) && row_size(a, v, vn, &a->obj_size_before) < 0) {
        rocksdb_free(v);
        return -1;
    }
    a->obj_live_before = rc;
    indexes_key_begin(&a->ix, rc == 1 ? v : NULL, vn);
    return 0;
}

/* After a key op staged its rows: objects/bytes and noncurrent deltas,
 * from the `objects` row's state noted by objects_noted (none:
 * the op left it as it was). */
static int stats_key_end(apply_ev *a) {
    if (indexes_key_end(a->b, &a->ix, a->ev->bucket, a->ev->key, a->errstr, a->es) < 0)
        return -1;
    if (!apply_batch_stats_on(a->b))
        return 0;
    int live = a->obj_staged ? a->obj_live_after : a->obj_live_before;
    uint64_t size = a->obj_staged ? a->obj_size_after : a->obj_size_before;
    a->d.objects += live - a->obj_live_before;
    a->d.bytes += (int64_t)size - (int64_t)a->obj_size_before;
    a->d.noncurrent_versions = a->d.versions - a->d.objects;
    a->d.noncurrent_bytes = a->d.version_bytes - a->d.bytes;
    return 0;
}

/* Bucket quota (0 = none), checked before a PUT or CompleteUpload stages
 * anything: the live usage after the write (it replaces the key's current
 * version) must stay within the quota. A write that does not grow a
 * dimension is never refused for it, so a bucket over a lowered quota can
 * still be overwritten or shrunk. 1 allowed, 0 QuotaExceeded, -1 error. */
static int quota_allows(apply_ev *a, const bucket_state *bs, uint64_t size) {
    if (!apply_batch_stats_on(a->b) || (!bs->max_bytes && !bs->max_objects))
        return 1;
    keybuf k;
    keybuf_init(&k);
    statrow *row = NULL;
    if (objlog_stats_bucket_key(&k, a->ev->bucket, strlen(a->ev->bucket)) < 0)
        snprintf(a->errstr, a->es, "out of memory");
    else
        row = stats_row(a->b, &k, a->errstr, a->es);
    keybuf_free(&k);
    if (!row)
        return -1;
    Objlog__UsageStats u = row->u;
    uint64_t objects = u.objects - (uint64_t)a->obj_live_before + 1;
    uint64_t bytes = u.bytes - a->obj_size_before + size;
    const char *what = NULL;
    if (bs->max_objects && objects > bs->max_objects && objects > u.objects)
        what = "objects";
    else if (bs->max_bytes && bytes > bs->max_bytes && bytes > u.bytes)
        what = "bytes";
    if (!what)
        return 1;
    reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_QUOTA_EXCEEDED,
           "the write would exceed the bucket's quota of max %s", what);
    return 0;
}

/* ---- operations ---- */

static int lc_set_rules(apply_ev *a, Objlog__BucketRecord *r);

static int op_create_bucket(apply_ev *a) {
    Objlog__BucketRecord *old;
    int rc = load_bucket(a, &old);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        objlog__bucket_record__free_unpacked(old, NULL);
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_ALREADY_EXISTS,
               "bucket %s already exists", a->ev->bucket);
        return 0;
    }
    const Objlog__CreateBucket *cb = a->ev->create_bucket;
    Objlog__BucketRecord r = OBJLOG__BUCKET_RECORD__INIT;
    r.name = a->ev->bucket;
    r.tenant = cb->tenant;
    r.versioning = cb->versioning;
    r.quota = cb->quota;
    r.max_versions = cb->max_versions;
    r.created_seq = a->seq;
    r.created_ms = a->log_time_ms;
    if (save_bucket(a, &r) < 0 || set_tenant(a, cb->tenant) < 0)
        return -1;
    /* The bucket's row exists (all zero) from creation to deletion. */
    keybuf k;
    keybuf_init(&k);
    rc = objlog_stats_bucket_key(&k, a->ev->bucket, strlen(a->ev->bucket)) < 0 ||
                 stats_reset(a->b, &k, 1) < 0 ? -1 : 0;
    if (rc < 0)
        snprintf(a->errstr, a->es, "out of memory");
    keybuf_free(&k);
    a->d.buckets = 1;
    return rc;
}

/* 1 if cf has any row under the bucket (in `versions`: a version or a
 * delete marker; in `uploads`: an in-progress multipart upload). */
static int bucket_has_rows(apply_ev *a, objlog_cf cf) {
    rocksdb_iterator_t *it = apply_batch_iter(a->b, cf);
    rocksdb_iter_seek(it, (const char *)a->bpart.data, a->bpart.len);
    int found = 0;
    if (rocksdb_iter_valid(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        found = kn >= a->bpart.len && memcmp(k, a->bpart.data, a->bpart.len) == 0;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(a->errstr, a->es, "scan %s: %s", objlog_cf_name(cf), err);
        rocksdb_free(err);
        return -1;
    }
    return found;
}

static int op_delete_bucket(apply_ev *a) {
    Objlog__BucketRecord *old;
    int rc = require_bucket(a, &old);
    if (rc <= 0)
        return rc;
    rc = set_tenant(a, old->tenant);
    objlog__bucket_record__free_unpacked(old, NULL);
    if (rc < 0)
        return -1;
    rc = bucket_has_rows(a, OBJLOG_CF_VERSIONS);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_NOT_EMPTY,
               "bucket %s is not empty (versions or delete markers remain)",
               a->ev->bucket);
        return 0;
    }
    rc = bucket_has_rows(a, OBJLOG_CF_UPLOADS);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_NOT_EMPTY,
               "bucket %s is not empty (in-progress multipart uploads: abort "
               "or complete them first)", a->ev->bucket);
        return 0;
    }
    apply_batch_del(a->b, OBJLOG_CF_BUCKETS, a->bpart.data, a->bpart.len);
    /* Empty, so it only leaves the bucket counts of its tenant and of the
     * global row. */
    keybuf k;
    keybuf_init(&k);
    if (objlog_stats_bucket_key(&k, a->ev->bucket, strlen(a->ev->bucket)) < 0 ||
        stats_reset(a->b, &k, 0) < 0) {
        keybuf_free(&k);
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    keybuf_free(&k);
    a->d.buckets = -1;
    return 0;
}

/* SetVersioning, SetQuota, SetLifecycle and the rate limit (ratelimit.c):
 * read-modify-write of the bucket record. */
static int op_bucket_settings(apply_ev *a) {
    Objlog__BucketRecord *r;
    int rc = require_bucket(a, &r);
    if (rc <= 0)
        return rc;
    Objlog__Quota *old_quota = r->quota;
    Objlog__RateLimit *old_limit = r->rate_limit;
    size_t old_nlc = r->n_lifecycle;
    Objlog__LifecycleRule **old_lc = r->lifecycle;
    if (a->ev->op_case == OBJLOG__EVENT__OP_SET_VERSIONING) {
        Objlog__Versioning to = a->ev->set_versioning->status;
        if (to == OBJLOG__VERSIONING__VERSIONING_UNVERSIONED &&
            r->versioning != OBJLOG__VERSIONING__VERSIONING_UNVERSIONED) {
            objlog__bucket_record__free_unpacked(r, NULL);
            reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
                   "bucket %s: versioning cannot return to Unversioned once "
                   "enabled (use Suspended)", a->ev->bucket);
            return 0;
        }
        r->versioning = to;
    } else if (a->ev->op_case == OBJLOG__EVENT__OP_SET_LIFECYCLE) {
        if (lc_set_rules(a, r) == 0) {
            objlog__bucket_record__free_unpacked(r, NULL);
            return 0;
        }
    } else if (a->ev->op_case == OBJLOG__EVENT__OP_SET_QUOTA) {
        r->quota = a->ev->set_quota->quota;
    } else if (ratelimit_settle(a->ev, &r->rate_limit, a->res.message,
                                sizeof(a->res.message)) < 0) {
        objlog__bucket_record__free_unpacked(r, NULL);
        a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT;
        return 0;
    }
    rc = save_bucket(a, r);
    r->quota = old_quota; /* free only what unpack allocated */
    r->rate_limit = old_limit;
    r->n_lifecycle = old_nlc;
    r->lifecycle = old_lc;
    objlog__bucket_record__free_unpacked(r, NULL);
    return rc;
}

/* Writes meta as the key's new newest version following the bucket's
 * versioning (PutObject and CompleteUpload). 1 written, 0 refused by the
 * cap (outcome set, nothing staged), -1 error. */
static int put_version(apply_ev *a, const bucket_state *bs,
                       Objlog__ObjectMeta *meta) {
    objlog_key_header h;
    if (load_header(a, &h) < 0)
        return -1;
    Objlog__Versioning vs = bs->versioning;
    int replaces_null = vs != OBJLOG__VERSIONING__VERSIONING_ENABLED && h.has_null;
    if (!replaces_null && !cap_allows_one_more(a, &h, bs))
        return 0;
    int qrc = quota_allows(a, bs, meta ? meta->size : 0);
    if (qrc <= 0)
        return qrc;
    if (vs == OBJLOG__VERSIONING__VERSIONING_ENABLED) {
        keycodec_version_id(a->seq, a->res.version_id);
        h.versions++;
    } else {
        /* Unversioned and Suspended: the new version is the null one. */
        if (h.has_null && delete_version(a, h.null_seq) < 0)
            return -1;
        if (!h.has_null)
            h.versions++;
        h.has_null = 1;
        h.null_seq = a->seq;
        snprintf(a->res.version_id, sizeof(a->res.version_id), "null");
    }
    if (add_version(a, a->res.version_id, 0, meta) < 0)
        return -1;
    save_header(a, &h);
    return 1;
}

static int op_put_object(apply_ev *a) {
    bucket_state bs;
    int rc = object_gate(a, &bs);
    if (rc <= 0)
        return rc;
    Objlog__ObjectMeta *meta = a->ev->put_object->meta;
    if (stats_key_begin(a) < 0)
        return -1;
    rc = put_version(a, &bs, meta);
    if (rc <= 0)
        return rc;
    a->res.etag = meta && meta->etag ? meta->etag : "";
    return stats_key_end(a);
}

/* DELETE without a version id: a marker, or (Unversioned) removal. */
static int delete_current(apply_ev *a, const bucket_state *bs) {
    objlog_key_header h;
    if (load_header(a, &h) < 0)
        return -1;
    Objlog__Versioning vs = bs->versioning;
    int adds = vs == OBJLOG__VERSIONING__VERSIONING_ENABLED ||
               (vs == OBJLOG__VERSIONING__VERSIONING_SUSPENDED && !h.has_null);
    if (adds && !cap_allows_one_more(a, &h, bs))
        return 0;
    if (vs == OBJLOG__VERSIONING__VERSIONING_ENABLED) {
        keycodec_version_id(a->seq, a->res.version_id);
        h.versions++;
        a->res.delete_marker = 1;
        if (add_version(a, a->res.version_id, 1, NULL) < 0)
            return -1;
        save_header(a, &h);
        return 0;
    }
    if (h.has_null) {
        if (delete_version(a, h.null_seq) < 0)
            return -1;
        h.has_null = 0;
        h.versions--;
    }
    if (vs == OBJLOG__VERSIONING__VERSIONING_SUSPENDED) {
        snprintf(a->res.version_id, sizeof(a->res.version_id), "null");
        a->res.delete_marker = 1;
        h.has_null = 1;
        h.null_seq = a->seq;
        h.versions++;
        if (add_version(a, "null", 1, NULL) < 0)
            return -1;
    } else if (refresh_current(a) < 0) {
        return -1;
    }
    save_header(a, &h);
    return 0;
}

/* DELETE ?version_id=: removes that version for good; a missing one is OK. */
static int delete_version_id(apply_ev *a, const char *vid) {
    objlog_key_header h;
    uint64_t seq = 0;
    int is_null = strcmp(vid, "null") == 0;
    if (!is_null && keycodec_parse_version_id(vid, &seq) < 0) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
               "invalid version id %s", vid);
        return 0;
    }
    if (load_header(a, &h) < 0)
        return -1;
    snprintf(a->res.version_id, sizeof(a->res.version_id), "%s", vid);
    if (is_null) {
        if (!h.has_null)
            return 0;
        seq = h.null_seq;
    }
    Objlog__VersionRecord *r;
    int rc = load_version(a, seq, &r);
    if (rc <= 0)
        return rc;
    /* A null version's row is addressed only as "null", never by hex. */
    int match = strcmp(r->version_id, vid) == 0;
    a->res.delete_marker = match && r->delete_marker;
    objlog__version_record__free_unpacked(r, NULL);
    if (!match)
        return 0;
    if (delete_version(a, seq) < 0)
        return -1;
    if (is_null)
        h.has_null = 0;
    h.versions--;
    save_header(a, &h);
    return refresh_current(a);
}

static int op_delete_object(apply_ev *a) {
    bucket_state bs;
    int rc = object_gate(a, &bs);
    if (rc <= 0)
        return rc;
    const char *vid = a->ev->delete_object->version_id;
    if (stats_key_begin(a) < 0)
        return -1;
    rc = vid && vid[0] ? delete_version_id(a, vid) : delete_current(a, &bs);
    if (rc < 0 || a->res.code != OBJLOG__OUTCOME_CODE__OUTCOME_OK)
        return rc;
    return stats_key_end(a);
}

/* ---- multipart uploads ---- */

/* upload row = route_key(b,k) ‖ enc(upload_id) */
static int upload_row(apply_ev *a, const char *upload_id, keybuf *row) {
    keybuf_init(row);
    if (keybuf_append(row, a->route.data, a->route.len) < 0 ||
        keycodec_append_enc(row, (const uint8_t *)upload_id,
                            strlen(upload_id)) < 0) {
        keybuf_free(row);
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    return 0;
}

/* part row = upload row ‖ be32(part_number) */
static int part_row(apply_ev *a, const char *upload_id, uint32_t part,
                    keybuf *row) {
    uint8_t be[4];
    apply_put_be32(be, part);
    if (upload_row(a, upload_id, row) < 0)
        return -1;
    if (keybuf_append(row, be, sizeof(be)) < 0) {
        keybuf_free(row);
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    return 0;
}

/* Loads the upload row: 1 found (*out owned by the caller), 0 absent with
 * NoSuchUpload decided, -1 error. */
static int require_upload(apply_ev *a, const char *upload_id,
                          Objlog__UploadRecord **out) {
    keybuf row;
    char *v;
    size_t vn;
    *out = NULL;
    if (upload_row(a, upload_id ? upload_id : "", &row) < 0)
        return -1;
    int rc = apply_batch_get(a->b, OBJLOG_CF_UPLOADS, row.data, row.len, &v, &vn,
                       a->errstr, a->es);
    keybuf_free(&row);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_UPLOAD,
               "upload %s does not exist (never created, aborted or "
               "completed)", upload_id ? upload_id : "");
        return 0;
    }
    *out = objlog__upload_record__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out) {
        snprintf(a->errstr, a->es, "upload record in %s: corrupt", a->ev->bucket);
        return -1;
    }
    return 1;
}

/* Loads one part: 1 found (*out owned by the caller), 0 absent, -1. */
static int load_part(apply_ev *a, const char *upload_id, uint32_t part,
                     Objlog__PartRecord **out) {
    keybuf row;
    char *v;
    size_t vn;
    *out = NULL;
    if (part_row(a, upload_id, part, &row) < 0)
        return -1;
    int rc = apply_batch_get(a->b, OBJLOG_CF_UPLOADS, row.data, row.len, &v, &vn,
                       a->errstr, a->es);
    keybuf_free(&row);
    if (rc <= 0)
        return rc;
    *out = objlog__part_record__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out) {
        snprintf(a->errstr, a->es, "part record in %s: corrupt", a->ev->bucket);
        return -1;
    }
    return 1;
}

/* Part numbers recorded for an upload (ascending), as the batch sees them.
 * *parts is owned by the caller (free). 0 or -1. */
static int list_parts(apply_ev *a, const keybuf *urow, uint32_t **parts,
                      size_t *n, uint64_t *bytes) {
    size_t cap = 0;
    *bytes = 0;
    *parts = NULL;
    *n = 0;
    rocksdb_iterator_t *it = apply_batch_iter(a->b, OBJLOG_CF_UPLOADS);
    int rc = 0;
    for (rocksdb_iter_seek(it, (const char *)urow->data, urow->len);
         rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn < urow->len || memcmp(k, urow->data, urow->len) != 0)
            break;
        if (kn != urow->len + 4)
            continue; /* the upload row itself */
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            uint32_t *p = realloc(*parts, cap * sizeof(*p));
            if (!p) {
                snprintf(a->errstr, a->es, "out of memory");
                rc = -1;
                break;
            }
            *parts = p;
        }
        size_t vn;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__PartRecord *pr =
            objlog__part_record__unpack(NULL, vn, (const uint8_t *)v);
        if (!pr) {
            snprintf(a->errstr, a->es, "part record in %s: corrupt", a->ev->bucket);
            rc = -1;
            break;
        }
        *bytes += pr->size;
        objlog__part_record__free_unpacked(pr, NULL);
        const uint8_t *be = k + urow->len;
        (*parts)[(*n)++] = (uint32_t)be[0] << 24 | (uint32_t)be[1] << 16 |
                           (uint32_t)be[2] << 8 | be[3];
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(a->errstr, a->es, "scan uploads: %s", err);
        rocksdb_free(err);
        rc = -1;
    }
    return rc;
}

/* Removes the upload row and all its part rows. The part numbers are read
 * first: deleting from the batch while iterating it would invalidate the
 * iterator's keys. At most 10,001 rows. */
static int remove_upload(apply_ev *a, const char *upload_id) {
    keybuf row;
    uint32_t *parts;
    size_t n;
    uint64_t bytes;
    if (upload_row(a, upload_id, &row) < 0)
        return -1;
    int rc = list_parts(a, &row, &parts, &n, &bytes);
    a->d.uploads--;
    a->d.upload_part_bytes -= (int64_t)bytes;
    if (rc == 0)
        apply_batch_del(a->b, OBJLOG_CF_UPLOADS, row.data, row.len);
    keybuf_free(&row);
    for (size_t i = 0; i < n && rc == 0; i++) {
        keybuf prow;
        rc = part_row(a, upload_id, parts[i], &prow);
        if (rc == 0) {
            apply_batch_del(a->b, OBJLOG_CF_UPLOADS, prow.data, prow.len);
            keybuf_free(&prow);
        }
    }
    free(parts);
    return rc;
}

/* A part ETag (optionally quoted) as the 16 bytes of its MD5. 0 or -1 if
 * it is not exactly 32 hex digits. */
static int etag_md5(const char *etag, uint8_t out[MD5_LEN]) {
    size_t n = etag ? strlen(etag) : 0;
    if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"')
        etag++, n -= 2;
    if (n != 2 * MD5_LEN)
        return -1;
    for (int i = 0; i < MD5_LEN; i++) {
        int hi = keycodec_hex_digit(etag[2 * i]), lo = keycodec_hex_digit(etag[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int op_create_upload(apply_ev *a) {
    bucket_state bs;
    int rc = key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    keycodec_version_id(a->seq, a->res.upload_id);
    Objlog__UploadRecord r = OBJLOG__UPLOAD_RECORD__INIT;
    r.upload_id = a->res.upload_id;
    r.key = a->ev->key;
    r.meta = a->ev->create_upload->meta;
    r.initiated_seq = a->seq;
    r.initiated_ms = a->log_time_ms;
    keybuf row;
    if (upload_row(a, r.upload_id, &row) < 0)
        return -1;
    rc = apply_batch_put_msg(a->b, OBJLOG_CF_UPLOADS, row.data, row.len, &r.base,
                       a->errstr, a->es);
    keybuf_free(&row);
    a->d.uploads++;
    return rc;
}

static int op_upload_part(apply_ev *a) {
    bucket_state bs;
    int rc = key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    const Objlog__UploadPart *up = a->ev->upload_part;
    if (up->part_number < 1 || up->part_number > PART_NUMBER_MAX) {
        char n[16];
        snprintf(n, sizeof(n), "%u", up->part_number);
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
               "part number %s is not between 1 and 10000", n);
        return 0;
    }
    Objlog__UploadRecord *ur;
    rc = require_upload(a, up->upload_id, &ur);
    if (rc <= 0)
        return rc;
    objlog__upload_record__free_unpacked(ur, NULL);
    Objlog__PartRecord *old;
    rc = load_part(a, up->upload_id, up->part_number, &old);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        a->d.upload_part_bytes -= (int64_t)old->size;
        objlog__part_record__free_unpacked(old, NULL);
    }
    a->d.upload_part_bytes += (int64_t)up->size;
    Objlog__PartRecord p = OBJLOG__PART_RECORD__INIT;
    p.part_number = up->part_number;
    p.size = up->size;
    p.etag = up->etag;
    p.blob_id = up->blob_id;
    p.last_modified_ms = a->log_time_ms;
    keybuf row;
    if (part_row(a, up->upload_id, up->part_number, &row) < 0)
        return -1;
    rc = apply_batch_put_msg(a->b, OBJLOG_CF_UPLOADS, row.data, row.len, &p.base,
                       a->errstr, a->es);
    keybuf_free(&row);
    a->res.etag = up->etag;
    return rc;
}

/* Checks Complete's part list against the recorded parts and computes the
 * object's size and S3 multipart ETag into a->res.etag_buf. 1 valid, 0
 * rejected (outcome set), -1 error. */
static int check_parts(apply_ev *a, const Objlog__CompleteUpload *cu,
                       uint64_t *size) {
    char num[16];
    if (cu->n_parts == 0) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT, "%s",
               "complete needs at least one part");
        return 0;
    }
    for (size_t i = 1; i < cu->n_parts; i++) {
        if (cu->parts[i]->part_number > cu->parts[i - 1]->part_number)
            continue;
        snprintf(num, sizeof(num), "%u", cu->parts[i]->part_number);
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART_ORDER,
               "part %s is not in ascending order", num);
        return 0;
    }
    uint8_t *md5s = malloc(cu->n_parts * MD5_LEN);
    if (!md5s) {
        snprintf(a->errstr, a->es, "out of memory");
        return -1;
    }
    int rc = 1;
    *size = 0;
    for (size_t i = 0; i < cu->n_parts && rc == 1; i++) {
        const Objlog__CompletedPart *want = cu->parts[i];
        Objlog__PartRecord *got;
        uint8_t given[MD5_LEN];
        snprintf(num, sizeof(num), "%u", want->part_number);
        rc = load_part(a, cu->upload_id, want->part_number, &got);
        if (rc < 0)
            break;
        if (rc == 0) {
            reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART,
                   "part %s was not uploaded", num);
            break;
        }
        if (etag_md5(got->etag, md5s + i * MD5_LEN) < 0 ||
            etag_md5(want->etag, given) < 0 ||
            memcmp(given, md5s + i * MD5_LEN, MD5_LEN) != 0) {
            reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART,
                   "part %s: the etag does not match the uploaded part", num);
            rc = 0;
        } else if (i + 1 < cu->n_parts && got->size < PART_MIN_SIZE) {
            reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_ENTITY_TOO_SMALL,
                   "part %s is smaller than 5 MiB and not the last", num);
            rc = 0;
        }
        *size += got->size;
        objlog__part_record__free_unpacked(got, NULL);
    }
    if (rc == 1) {
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned mdn = 0;
        if (!EVP_Digest(md5s, cu->n_parts * MD5_LEN, md, &mdn, EVP_md5(), NULL)) {
            snprintf(a->errstr, a->es, "md5 failed");
            rc = -1;
        } else {
            char *p = a->res.etag_buf;
            for (unsigned i = 0; i < mdn; i++, p += 2)
                snprintf(p, 3, "%02x", md[i]);
            snprintf(p, sizeof(a->res.etag_buf) - (size_t)(p - a->res.etag_buf),
                     "-%u", (unsigned)(cu->n_parts % 100000));
        }
    }
    free(md5s);
    return rc;
}

static int op_complete_upload(apply_ev *a) {
    bucket_state bs;
    int rc = key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    const Objlog__CompleteUpload *cu = a->ev->complete_upload;
    Objlog__UploadRecord *ur;
    rc = require_upload(a, cu->upload_id, &ur);
    if (rc <= 0)
        return rc;
    uint64_t size;
    rc = check_parts(a, cu, &size);
    if (rc == 1)
        rc = check_preconditions(a);
    if (rc == 1 && stats_key_begin(a) < 0)
        rc = -1;
    if (rc == 1) {
        /* A shallow copy: the strings stay owned by ur. */
        Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
        if (ur->meta)
            meta = *ur->meta;
        meta.size = size;
        meta.etag = a->res.etag_buf;
        rc = put_version(a, &bs, &meta);
    }
    objlog__upload_record__free_unpacked(ur, NULL);
    if (rc <= 0)
        return rc;
    a->res.etag = a->res.etag_buf;
    rc = remove_upload(a, cu->upload_id);
    return rc < 0 ? -1 : stats_key_end(a);
}

static int op_abort_upload(apply_ev *a) {
    bucket_state bs;
    int rc = key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    const char *uid = a->ev->abort_upload->upload_id;
    Objlog__UploadRecord *ur;
    rc = require_upload(a, uid, &ur);
    if (rc <= 0)
        return rc;
    objlog__upload_record__free_unpacked(ur, NULL);
    return remove_upload(a, uid);
}

/* ---- lifecycle (the rules themselves: lifecycle.c) ---- */

/* SetLifecycle: the event's rules, checked as the API edge checks them
 * (a producer that skipped the edge gets InvalidArgument), become r's.
 * 1 set (r borrows the event's rules), 0 rejected. */
static int lc_set_rules(apply_ev *a, Objlog__BucketRecord *r) {
    const Objlog__SetLifecycle *sl = a->ev->set_lifecycle;
    char why[200];
    if (objlog_lc_validate(sl->rules, sl->n_rules, why, sizeof(why)) < 0) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT, "%s", why);
        return 0;
    }
    r->n_lifecycle = sl->n_rules;
    r->lifecycle = sl->rules;
    return 1;
}

/* What the walk of the Expire's key found at the pinned version. */
typedef struct lc_pin {
    uint64_t seq;
    const Objlog__LifecycleRule *rule;
    int action;                  /* the rule's action on it now, -1 none */
    int64_t due_ms;
    char version_id[KEYCODEC_VERSION_ID_LEN];
} lc_pin;

static int lc_pin_fn(void *arg, const objlog_lc_version *v) {
    lc_pin *p = arg;
    if (v->rec->seq != p->seq)
        return 0;
    p->action = objlog_lc_version_action(p->rule, v, &p->due_ms);
    snprintf(p->version_id, sizeof(p->version_id), "%s",
             v->rec->version_id ? v->rec->version_id : "");
    return 1;
}

/* The action rule takes now on what the Expire pinned (-1: none, or the
 * item is gone), and from when. 0 or -1 (storage error). */
static int lc_pinned_action(apply_ev *a, const Objlog__LifecycleRule *rule,
                            int *action, int64_t *due_ms, lc_pin *pin) {
    const Objlog__Expire *ex = a->ev->expire;
    *action = -1;
    if (ex->action == OBJLOG__EXPIRE_ACTION__EXPIRE_ABORT_UPLOAD) {
        Objlog__UploadRecord *ur;
        int rc = require_upload(a, ex->upload_id, &ur);
        if (rc <= 0) {
            a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_OK; /* decided below */
            return rc;
        }
        if (objlog_lc_upload_action(rule, a->ev->key.data, a->ev->key.len,
                                    ur->initiated_ms, due_ms))
            *action = OBJLOG__EXPIRE_ACTION__EXPIRE_ABORT_UPLOAD;
        objlog__upload_record__free_unpacked(ur, NULL);
        return 0;
    }
    memset(pin, 0, sizeof(*pin));
    pin->seq = ex->version_seq;
    pin->rule = rule;
    pin->action = -1;
    rocksdb_iterator_t *it = apply_batch_iter(a->b, OBJLOG_CF_VERSIONS);
    int rc = objlog_lc_walk_key(it, a->route.data, a->route.len, a->ev->key.data,
                                a->ev->key.len, lc_pin_fn, pin, a->errstr, a->es);
    rocksdb_iter_destroy(it);
    if (rc < 0)
        return -1;
    *action = pin->action;
    *due_ms = pin->due_ms;
    return 0;
}

/* Expire (rule list in lifecycle.h): the rule must still exist, be
 * enabled and take the event's action on the pinned item at this log
 * time; then exactly what a client's DELETE / DELETE ?versionId / abort
 * would do, with the same counters. */
static int op_expire(apply_ev *a) {
    bucket_state bs;
    int rc = key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    Objlog__BucketRecord *br;
    if (load_bucket(a, &br) < 0)
        return -1;
    const Objlog__Expire *ex = a->ev->expire;
    const Objlog__LifecycleRule *rule = objlog_lc_rule(br, ex->rule_id);
    int action = -1;
    int64_t due_ms = 0;
    lc_pin pin;
    int live = rule && rule->enabled;
    rc = live ? lc_pinned_action(a, rule, &action, &due_ms, &pin) : 0;
    objlog__bucket_record__free_unpacked(br, NULL);
    if (rc < 0)
        return -1;
    if (!live) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_LIFECYCLE_SKIPPED,
               "lifecycle rule %s no longer exists or is disabled", ex->rule_id);
        return 0;
    }
    if (action != (int)ex->action) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_LIFECYCLE_SKIPPED,
               "the item is no longer what rule %s expires (overwritten, "
               "removed, or the rule changed)", ex->rule_id);
        return 0;
    }
    if (a->log_time_ms < due_ms) {
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NOT_DUE,
               "rule %s: not due yet at this event's log time", ex->rule_id);
        return 0;
    }
    if (stats_key_begin(a) < 0)
        return -1;
    if (action == OBJLOG__EXPIRE_ACTION__EXPIRE_CURRENT)
        rc = delete_current(a, &bs);
    else if (action == OBJLOG__EXPIRE_ACTION__EXPIRE_ABORT_UPLOAD)
        rc = remove_upload(a, ex->upload_id);
    else
        rc = delete_version_id(a, pin.version_id);
    if (rc < 0 || a->res.code != OBJLOG__OUTCOME_CODE__OUTCOME_OK)
        return rc;
    if (action == OBJLOG__EXPIRE_ACTION__EXPIRE_ABORT_UPLOAD)
        snprintf(a->res.upload_id, sizeof(a->res.upload_id), "%s", ex->upload_id);
    return stats_key_end(a);
}

/* PutIndex, DropIndex, BuildIndex: decided by indexes.c on the record. */
static int op_index(apply_ev *a) {
    Objlog__BucketRecord *br;
    int rc = require_bucket(a, &br);
    if (rc <= 0)
        return rc;
    rc = indexes_op(a->b, a->ev, a->seq, br, &a->res.code, a->res.message,
                    sizeof(a->res.message), a->errstr, a->es);
    if (rc == 1)
        rc = save_bucket(a, br);
    objlog__bucket_record__free_unpacked(br, NULL);
    return rc < 0 ? -1 : 0;
}

static int apply_op(apply_ev *a) {
    switch (a->ev->op_case) {
    case OBJLOG__EVENT__OP_CREATE_BUCKET:
        return op_create_bucket(a);
    case OBJLOG__EVENT__OP_DELETE_BUCKET:
        return op_delete_bucket(a);
    case OBJLOG__EVENT__OP_SET_VERSIONING:
    case OBJLOG__EVENT__OP_SET_QUOTA:
    case OBJLOG__EVENT__OP_SET_RATE_LIMIT:
    case OBJLOG__EVENT__OP_DELETE_RATE_LIMIT:
    case OBJLOG__EVENT__OP_SET_LIFECYCLE:
        return op_bucket_settings(a);
    case OBJLOG__EVENT__OP_PUT_OBJECT:
        return op_put_object(a);
    case OBJLOG__EVENT__OP_DELETE_OBJECT:
        return op_delete_object(a);
    case OBJLOG__EVENT__OP_CREATE_UPLOAD:
        return op_create_upload(a);
    case OBJLOG__EVENT__OP_UPLOAD_PART:
        return op_upload_part(a);
    case OBJLOG__EVENT__OP_COMPLETE_UPLOAD:
        return op_complete_upload(a);
    case OBJLOG__EVENT__OP_ABORT_UPLOAD:
        return op_abort_upload(a);
    case OBJLOG__EVENT__OP_EXPIRE:
        return op_expire(a);
    case OBJLOG__EVENT__OP_PUT_INDEX:
    case OBJLOG__EVENT__OP_DROP_INDEX:
    case OBJLOG__EVENT__OP_BUILD_INDEX:
        return op_index(a);
    default:
        reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT, "%s",
               "event has no operation");
        return 0;
    }
}

/* ---- outcomes ---- */

static int save_outcome(apply_batch *b, int32_t p, int64_t off,
                        int64_t log_time_ms, ProtobufCBinaryData rid,
                        const apply_result *res, char *errstr, size_t es) {
    Objlog__Outcome o = OBJLOG__OUTCOME__INIT;
    o.code = res->code;
    o.message = (char *)res->message;
    o.request_id = rid;
    o.partition = p;
    o.offset = off;
    o.version_id = (char *)res->version_id;
    o.etag = (char *)(res->etag ? res->etag : "");
    o.delete_marker = res->delete_marker;
    o.log_time_ms = log_time_ms;
    o.upload_id = (char *)res->upload_id;
    uint8_t key[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(key, p, off);
    return apply_batch_put_msg(b, OBJLOG_CF_OUTCOMES, key, sizeof(key), &o.base,
                         errstr, es);
}

static int rid_key(keybuf *kb, ProtobufCBinaryData rid) {
    keybuf_init(kb);
    return (keybuf_append(kb, "r", 1) < 0 ||
            keybuf_append(kb, rid.data, rid.len) < 0) ? -1 : 0;
}

/* Position (partition, offset) of a request id's first outcome, from its
 * 'r' row. 1 found, 0 none, -1 error. */
static int rid_position(apply_batch *b, ProtobufCBinaryData rid, int32_t *rp,
                        int64_t *roff, char *errstr, size_t es) {
    keybuf rk;
    char *pos;
    size_t pn;
    if (rid_key(&rk, rid) < 0) {
        keybuf_free(&rk);
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    int rc = apply_batch_get(b, OBJLOG_CF_OUTCOMES, rk.data, rk.len, &pos, &pn,
                       errstr, es);
    keybuf_free(&rk);
    if (rc <= 0)
        return rc;
    if (pn == 12) {
        *rp = (int32_t)apply_get_be32((const uint8_t *)pos);
        *roff = (int64_t)apply_get_be64((const uint8_t *)pos + 4);
    }
    rocksdb_free(pos);
    return pn == 12 ? 1 : 0;
}

/* Rule 1: a request id decided within the window and the bound. 1 handled
 * (*code set, the first outcome copied to this offset), 0 new, -1 error. */
static int apply_dedup(apply_batch *b, int32_t p, int64_t off, int64_t now,
                       const Objlog__Event *ev, Objlog__OutcomeCode *code,
                       char *errstr, size_t es) {
    if (ev->request_id.len == 0)
        return 0;
    int32_t rp = 0;
    int64_t roff = 0;
    int rc = rid_position(b, ev->request_id, &rp, &roff, errstr, es);
    if (rc <= 0)
        return rc;
    /* The bound, checked here too so the decision never depends on when
     * trimming ran: the event at off remembers offsets off-max_ids..off-1. */
    if (rp == p && roff < off - apply_batch_max_ids(b))
        return 0;
    uint8_t okey[APPLY_OUTCOME_KEY_LEN];
    char *v;
    size_t vn;
    apply_outcome_key(okey, rp, roff);
    rc = apply_batch_get(b, OBJLOG_CF_OUTCOMES, okey, sizeof(okey), &v, &vn, errstr, es);
    if (rc <= 0)
        return rc;
    Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
    if (!o) {
        rocksdb_free(v);
        snprintf(errstr, es, "outcome %d.%lld: corrupt record", rp,
                 (long long)roff);
        return -1;
    }
    int expired = now - o->log_time_ms > apply_batch_window_ms(b);
    *code = o->code;
    objlog__outcome__free_unpacked(o, NULL);
    if (!expired) {
        apply_outcome_key(okey, p, off);
        apply_batch_put(b, OBJLOG_CF_OUTCOMES, okey, sizeof(okey), v, vn);
    }
    rocksdb_free(v);
    return expired ? 0 : 1;
}

static int record_request(apply_batch *b, int32_t p, int64_t off,
                          ProtobufCBinaryData rid, char *errstr, size_t es) {
    if (rid.len == 0)
        return 0;
    keybuf rk;
    uint8_t pos[12];
    if (rid_key(&rk, rid) < 0) {
        keybuf_free(&rk);
        snprintf(errstr, es, "out of memory");
        return -1;
    }
    apply_put_be32(pos, (uint32_t)p);
    apply_put_be64(pos + 4, (uint64_t)off);
    apply_batch_put(b, OBJLOG_CF_OUTCOMES, rk.data, rk.len, pos, sizeof(pos));
    keybuf_free(&rk);
    return 0;
}

/* ---- trimming outcomes (the dedup window and bound) ---- */

/* Rows trimmed per event at most: a backlog (a lowered bound, a store from
 * before trimming existed) drains over the next events instead of stalling
 * one. A constant, so replays trim exactly the same rows. */
#define TRIM_MAX_PER_EVENT 64

typedef struct trim_victim {
    int64_t offset;
    keybuf rkey; /* 'r' request_id, empty if the outcome has none */
} trim_victim;

/* meta "olow" be32(p) -> be64(oldest kept 'o' offset) be64(its log time).
 * 1 found, 0 absent, -1 error. */
static int olow_get(apply_batch *b, int32_t p, int64_t *low, int64_t *low_ts,
                    char *errstr, size_t es) {
    uint8_t mk[APPLY_META_KEY_MAX];
    size_t mkn = apply_meta_key(mk, APPLY_META_OUTCOMES_LOW, p);
    char *v;
    size_t vn;
    int rc = apply_batch_get(b, OBJLOG_CF_META, mk, mkn, &v, &vn, errstr, es);
    if (rc <= 0)
        return rc;
    if (vn == 16) {
        *low = (int64_t)apply_get_be64((const uint8_t *)v);
        *low_ts = (int64_t)apply_get_be64((const uint8_t *)v + 8);
    }
    rocksdb_free(v);
    return vn == 16 ? 1 : 0;
}

static void olow_put(apply_batch *b, int32_t p, int64_t low, int64_t low_ts) {
    uint8_t mk[APPLY_META_KEY_MAX], v[16];
    size_t mkn = apply_meta_key(mk, APPLY_META_OUTCOMES_LOW, p);
    apply_put_be64(v, (uint64_t)low);
    apply_put_be64(v + 8, (uint64_t)low_ts);
    apply_batch_put(b, OBJLOG_CF_META, mk, mkn, v, sizeof(v));
}

/* 1 if the 'o' row (offset, log time) is past the window or the bound as
 * seen from the event at (off, now). */
static int trim_due(const apply_batch *b, int64_t off, int64_t now,
                    int64_t o_off, int64_t o_ts) {
    return o_off <= off - apply_batch_max_ids(b) || now - o_ts > apply_batch_window_ms(b);
}

/* Collects up to TRIM_MAX_PER_EVENT rows of partition p from the oldest
 * while they are due; *low and *low_ts get the first row kept. Returns the
 * number collected, or -1. The batch is not written while iterating. */
static int trim_collect(apply_batch *b, int32_t p, int64_t off, int64_t now,
                        trim_victim *vict, int64_t *low, int64_t *low_ts,
                        char *errstr, size_t es) {
    uint8_t start[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(start, p, *low);
    rocksdb_iterator_t *it = apply_batch_iter(b, OBJLOG_CF_OUTCOMES);
    int n = 0, rc = 0;
    for (rocksdb_iter_seek(it, (const char *)start, sizeof(start));
         rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn != APPLY_OUTCOME_KEY_LEN || k[0] != 'o' ||
            apply_get_be32(k + 1) != (uint32_t)p)
            break;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
        if (!o) {
            snprintf(errstr, es, "outcome in partition %d: corrupt record", p);
            rc = -1;
            break;
        }
        int64_t o_off = (int64_t)apply_get_be64(k + 5);
        *low = o_off;
        *low_ts = o->log_time_ms;
        int due = n < TRIM_MAX_PER_EVENT && trim_due(b, off, now, o_off, o->log_time_ms);
        if (due) {
            vict[n].offset = o_off;
            keybuf_init(&vict[n].rkey);
            if (o->request_id.len && rid_key(&vict[n].rkey, o->request_id) < 0) {
                snprintf(errstr, es, "out of memory");
                rc = -1;
            }
            n++;
        }
        objlog__outcome__free_unpacked(o, NULL);
        if (!due || rc < 0)
            break;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(errstr, es, "scan outcomes: %s", err);
        rocksdb_free(err);
        rc = -1;
    }
    if (rc < 0)
        for (int i = 0; i < n; i++)
            keybuf_free(&vict[i].rkey);
    return rc < 0 ? -1 : n;
}

/* Deletes a trimmed 'o' row and, if it was its request's first outcome
 * (the 'r' row still points at it), the 'r' row: a retry after the window
 * re-pointed 'r' to its own outcome, which must stay. */
static int trim_victim_apply(apply_batch *b, int32_t p, const trim_victim *t,
                             char *errstr, size_t es) {
    uint8_t okey[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(okey, p, t->offset);
    apply_batch_del(b, OBJLOG_CF_OUTCOMES, okey, sizeof(okey));
    if (t->rkey.len == 0)
        return 0;
    char *pos;
    size_t pn;
    int rc = apply_batch_get(b, OBJLOG_CF_OUTCOMES, t->rkey.data, t->rkey.len, &pos,
                       &pn, errstr, es);
    if (rc <= 0)
        return rc;
    int mine = pn == 12 && memcmp(pos, okey + 1, 12) == 0;
    rocksdb_free(pos);
    if (mine)
        apply_batch_del(b, OBJLOG_CF_OUTCOMES, t->rkey.data, t->rkey.len);
    return 0;
}

/* Runs after the event at (p, off, now) stored its outcome: drops the
 * partition's oldest outcomes (and their request ids) that are out of the
 * window or the bound, oldest offset first, and records the oldest kept
 * offset in meta "olow". Depends only on the log, so replay is exact. */
static int trim_outcomes(apply_batch *b, int32_t p, int64_t off, int64_t now,
                         char *errstr, size_t es) {
    int64_t low = 0, low_ts = 0;
    int rc = olow_get(b, p, &low, &low_ts, errstr, es);
    if (rc < 0)
        return -1;
    if (rc == 1 && !trim_due(b, off, now, low, low_ts))
        return 0; /* the common case: one point read */
    trim_victim vict[TRIM_MAX_PER_EVENT];
    int64_t new_low = rc == 1 ? low : 0, new_ts = now;
    int n = trim_collect(b, p, off, now, vict, &new_low, &new_ts, errstr, es);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (rc >= 0)
            rc = trim_victim_apply(b, p, &vict[i], errstr, es);
        keybuf_free(&vict[i].rkey);
    }
    if (rc < 0)
        return -1;
    /* The event's own outcome is never due, so a row is always kept; when
     * the cap stopped the scan, new_low is the first row not yet trimmed. */
    if (n > 0 && new_low == vict[n - 1].offset) {
        new_low = off;
        new_ts = now;
    }
    olow_put(b, p, new_low, new_ts);
    return 0;
}

/* ---- entry points ---- */

rocksdb_writebatch_wi_t *apply_batch_wb(apply_batch *b) {
    stats_stage(b);
    indexes_stage(b, apply_batch_index_counts(b));
    return apply_batch_staged(b);
}

Objlog__Event *apply_decode(const void *payload, size_t n, char *why,
                            size_t why_size) {
    Objlog__Event *ev = objlog__event__unpack(NULL, n, payload);
    if (!ev) {
        snprintf(why, why_size, "payload is not an objlog.Event");
        return NULL;
    }
    const char *bad = NULL;
    if (ev->op_case == OBJLOG__EVENT__OP__NOT_SET)
        bad = "event has no operation";
    else if (!ev->bucket || !ev->bucket[0])
        bad = "event has no bucket";
    if (bad) {
        snprintf(why, why_size, "%s", bad);
        objlog__event__free_unpacked(ev, NULL);
        return NULL;
    }
    return ev;
}

static int apply_decide(apply_batch *b, int32_t partition, int64_t offset,
                        int64_t log_time_ms, const Objlog__Event *ev,
                        Objlog__OutcomeCode *code, char *errstr,
                        size_t errstr_size);

int apply_event(apply_batch *b, int32_t partition, int64_t offset,
                int64_t log_time_ms, const Objlog__Event *ev,
                Objlog__OutcomeCode *code, char *errstr, size_t errstr_size) {
    Objlog__OutcomeCode dummy;
    if (!code)
        code = &dummy;
    int rc = apply_dedup(b, partition, offset, log_time_ms, ev, code, errstr,
                         errstr_size);
    if (rc < 0)
        return -1;
    if (rc == 0)
        rc = apply_decide(b, partition, offset, log_time_ms, ev, code, errstr,
                          errstr_size);
    else
        rc = 0;
    if (rc == 0)
        rc = trim_outcomes(b, partition, offset, log_time_ms, errstr,
                           errstr_size);
    return rc;
}

/* Rules 2-3 for an event that is not a retry: decides, stages the effects,
 * the outcome and the request id. */
static int apply_decide(apply_batch *b, int32_t partition, int64_t offset,
                        int64_t log_time_ms, const Objlog__Event *ev,
                        Objlog__OutcomeCode *code, char *errstr,
                        size_t errstr_size) {
    int rc = 0;
    apply_ev a;
    memset(&a, 0, sizeof(a));
    a.b = b;
    a.ev = ev;
    a.partition = partition;
    a.offset = offset;
    a.log_time_ms = log_time_ms;
    a.seq = keycodec_seq(ev->range_epoch, offset);
    a.errstr = errstr;
    a.es = errstr_size;
    a.res.code = OBJLOG__OUTCOME_CODE__OUTCOME_OK;
    keybuf_init(&a.route);
    keybuf_init(&a.bpart);
    size_t bn = strlen(ev->bucket);
    int bucket_op = is_bucket_op(ev);
    if (keycodec_route_key(&a.route, ev->bucket, bn,
                           bucket_op ? (const uint8_t *)"" : ev->key.data,
                           bucket_op ? 0 : ev->key.len) < 0 ||
        keycodec_bucket_part(&a.bpart, ev->bucket, bn) < 0) {
        snprintf(errstr, errstr_size, "out of memory");
        rc = -1;
        goto out;
    }
    if (!rangemap_owns(apply_batch_rangemap(b), partition, a.route.data, a.route.len)) {
        a.res.code = OBJLOG__OUTCOME_CODE__OUTCOME_WRONG_RANGE;
        snprintf(a.res.message, sizeof(a.res.message),
                 "key of bucket %s is not in partition %d's range (epoch %u)",
                 ev->bucket, partition, rangemap_epoch(apply_batch_rangemap(b)));
    } else if (apply_op(&a) < 0) {
        rc = -1;
        goto out;
    }
    if (a.res.code == OBJLOG__OUTCOME_CODE__OUTCOME_OK && stats_commit(&a) < 0) {
        rc = -1;
        goto out;
    }
    if (a.res.code != OBJLOG__OUTCOME_CODE__OUTCOME_OK) {
        /* A rejected event leaves no trace but its outcome. */
        a.res.version_id[0] = '\0';
        a.res.etag = NULL;
        a.res.delete_marker = 0;
        a.res.upload_id[0] = '\0';
    }
    *code = a.res.code;
    rc = save_outcome(b, partition, offset, log_time_ms, ev->request_id, &a.res,
                      errstr, errstr_size);
    if (rc == 0)
        rc = record_request(b, partition, offset, ev->request_id, errstr,
                            errstr_size);
out:
    keybuf_free(&a.route);
    keybuf_free(&a.bpart);
    free(a.tenant);
    indexes_key_done(&a.ix);
    return rc;
}

int apply_invalid(apply_batch *b, int32_t partition, int64_t offset,
                  int64_t log_time_ms, const char *why, char *errstr,
                  size_t errstr_size) {
    apply_result res;
    memset(&res, 0, sizeof(res));
    res.code = OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT;
    snprintf(res.message, sizeof(res.message), "%s", why);
    ProtobufCBinaryData none = {0, NULL};
    if (save_outcome(b, partition, offset, log_time_ms, none, &res, errstr,
                     errstr_size) < 0)
        return -1;
    uint8_t key[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(key, APPLY_META_DLQ, partition);
    char *v;
    size_t vn;
    int rc = apply_batch_get(b, OBJLOG_CF_META, key, kn, &v, &vn, errstr, errstr_size);
    if (rc < 0)
        return -1;
    uint64_t n = (rc == 1 && vn == 8) ? apply_get_be64((const uint8_t *)v) : 0;
    if (rc == 1)
        rocksdb_free(v);
    uint8_t nv[8];
    apply_put_be64(nv, n + 1);
    apply_batch_put(b, OBJLOG_CF_META, key, kn, nv, sizeof(nv));
    return trim_outcomes(b, partition, offset, log_time_ms, errstr, errstr_size);
}

void apply_set_applied(apply_batch *b, int32_t partition, int64_t next_offset) {
    uint8_t key[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(key, APPLY_META_APPLIED, partition);
    uint8_t v[8];
    apply_put_be64(v, (uint64_t)next_offset);
    apply_batch_put(b, OBJLOG_CF_META, key, kn, v, sizeof(v));
}
