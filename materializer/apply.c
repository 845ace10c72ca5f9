/* apply.c: the deterministic state machine (docs/ARCHITECTURE.md, "The
 * state machine's rules"). It owns deciding the outcome of one event and
 * staging all of its effects in the batch (batch.h), so that later events
 * of the same batch read them.
 *
 * Contract (what keeps replay exact):
 *   - input is only the event's fields, its Kafka partition, offset and
 *     message timestamp, the partition's range map (the genesis map, then
 *     the one its last handoff event carried: handoff.h) and the bucket
 *     record (which carries the version cap); never the wall clock,
 *     randomness or local configuration;
 *   - every event gets exactly one outcome, stored at
 *     outcomes 'o' be32(p) be64(offset); the first event with a request id
 *     is found by it there (dedup.c: the row carries it, and an in-memory
 *     index of the partition's first outcomes finds the row);
 *   - a failed event changes nothing but its outcome rows;
 *   - after each event (rule 4) the partition's oldest outcomes beyond the
 *     dedup window or bound are trimmed, so the stored state is a function
 *     of the applied log prefix whatever the batch boundaries.
 *
 * Decision order, one rule per line (first match wins):
 *   1. request id already decided (a kept first outcome) within the window and the
 *      bound -> the stored outcome, copied verbatim (same partition/offset/
 *      version id/log time inside) to this event's own 'o' row, no other
 *      change. Window: T - first outcome's log_time_ms <= window (T = this
 *      event's Kafka timestamp, never the wall clock; default 24 h). Bound:
 *      the first outcome's offset >= this offset - max ids (default
 *      1,000,000), i.e. the event remembers the ids of the partition's
 *      previous max-ids offsets. Outside either: a new request, decided by
 *      rules 2-3, whose outcome is then the id's newest first outcome;
 *   2. route key (bucket ops use key "") outside this partition's range
 *      under its own map -> WrongRange (RangeOut/RangeIn: handoff.c);
 *   3. per operation (DeleteBucket and PutIndex first: a bucket with a
 *      range on another partition under this one's map ->
 *      BucketSpansRanges; SetQuota on such a bucket as stake.h says;
 *      BucketRelay: stake.h):
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
 *                     the edge, query/admit/admit.c, never by the state machine)
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
 *      SetObjectTags, SetObjectAcl, SetBucketTags, SetBucketAcl: applyattr.c
 *                     (a version's or the bucket's tags or canned ACL;
 *                     CreateBucket and PutObject take a canned ACL too:
 *                     one attrs.h does not name -> InvalidArgument)
 *      PutIndex,      missing bucket -> NoSuchBucket; then indexes.c:
 *      DropIndex,     bad name/field -> InvalidArgument, NoSuchIndex,
 *      BuildIndex     IndexAlreadyExists, TooManyIndexes (rules there);
 *                     every key op keeps the bucket's index rows in the
 *                     same batch (stage_key_begin/_end call indexes.c)
 *   4. (every event, after its outcome is stored) trim: the partition's 'o'
 *      rows at offsets <= this offset - max ids, or with T - log_time_ms >
 *      window, go, oldest offset first, stopping at the first row that is
 *      neither (at most TRIM_MAX_PER_EVENT per event); a first outcome
 *      takes its request id with it. meta "olow" = oldest kept
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
 * Q, bucket quota (BucketRecord.quota; 0 = no limit; of a bucket spread
 * over partitions, the share this partition's stake holds, stake.h), for
 * PutObject and CompleteUpload, read from this partition's `stats` row of
 * the bucket as this event sees it (so it is a function of the log
 * prefix, deterministic under replay):
 * live usage after the write = objects - (1 if the key has a live current
 * version) + 1, bytes - its size + the new size. objects > max_objects or
 * bytes > max_bytes -> QuotaExceeded (403), nothing changes, UNLESS the
 * write does not grow that figure (an overwrite by the same or a smaller
 * object), so a bucket above a lowered quota can still be rewritten and
 * shrunk. Deletes are never refused. Counters (stats CF, layout in
 * materializer.h) change in the same batch as the rows they count, only
 * for OK outcomes (stage_stats_commit).
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
 * be64 null_seq, be64 version count. It exists iff the key has a version
 * and its bucket is not Unversioned, so finding the null version is one
 * point read, never a scan. A key without one has at most its null
 * version (written while the bucket was Unversioned), which `objects`
 * shows: a PUT of a new key into an Unversioned bucket reads one row
 * (`objects`) and writes three (version, `objects`, outcome).
 * `objects` at route_key(b,k) holds the newest version iff it is live.
 * `uploads` layout: see materializer.h (upload row, then its part rows).
 *
 * A circle with applympu.c, on purpose: the multipart rules live there and
 * are dispatched from here, and they use this file's gates (applyint.h),
 * which every key operation shares.
 */
#include "apply.h"
#include "applyint.h"

#include "dedup.h"
#include "handoff.h"
#include "indexes.h"
#include "keycodec.h"
#include "lifecycle.h"
#include "notify.h"
#include "ratelimit.h"
#include "rows.h"
#include "stage.h"
#include "stake.h"
#include "statrows.h"

#include <openssl/evp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- one event ---- */

void apply_reject(apply_ev *a, Objlog__OutcomeCode code, const char *fmt,
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
    case OBJLOG__EVENT__OP_SET_BUCKET_TAGS:
    case OBJLOG__EVENT__OP_SET_BUCKET_ACL:
    case OBJLOG__EVENT__OP_SET_NOTIFICATIONS:
        return 1;
    default:
        return 0;
    }
}

/* A handoff's events name a range and a partition, no bucket or key. */
static int is_range_op(const Objlog__Event *ev) {
    return ev->op_case == OBJLOG__EVENT__OP_RANGE_OUT ||
           ev->op_case == OBJLOG__EVENT__OP_RANGE_IN;
}

/* stage_load_bucket for operations that need the bucket: a missing one is
 * decided here as NoSuchBucket. 1 found, 0 rejected, -1 error. */
static int require_bucket(apply_ev *a, Objlog__BucketRecord **out) {
    int rc = stage_load_bucket(a, out);
    if (rc == 0)
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET,
               "bucket %s does not exist", a->ev->bucket);
    return rc;
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
int apply_check_preconditions(apply_ev *a) {
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
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_PRECONDITION_FAILED,
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
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_KEY,
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
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_PRECONDITION_FAILED,
               "If-Match %s failed: current etag differs", p->if_match);
    return ok;
}


/* Gate of every key op: non-empty key, existing bucket. 1 passed (*bs
 * filled), 0 rejected (outcome set), -1 error. */
int apply_key_gate(apply_ev *a, bucket_state *bs) {
    if (a->ev->key.len == 0) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
               "%s", "object key must not be empty");
        return 0;
    }
    Objlog__BucketRecord *br;
    int rc = require_bucket(a, &br);
    if (rc <= 0)
        return rc;
    bs->versioning = br->versioning;
    a->versioning = br->versioning;
    bs->max_versions = br->max_versions ? br->max_versions
                                        : OBJLOG_MAX_VERSIONS_DEFAULT;
    stake_quota_of(br, &bs->quota);
    rc = stage_set_tenant(a, br->tenant);
    indexes_key_keep(&a->ix, &br);
    feed_bucket_keep(&a->feed, &br, a->ix.br);
    objlog__bucket_record__free_unpacked(br, NULL);
    return rc < 0 ? -1 : 1;
}

/* Gate of PUT and DELETE: key_gate, then preconditions. */
static int object_gate(apply_ev *a, bucket_state *bs) {
    int rc = apply_key_gate(a, bs);
    return rc <= 0 ? rc : apply_check_preconditions(a);
}

/* 1 if one more version (or marker) fits under the cap, else 0 with
 * TooManyVersions decided. */
static int cap_allows_one_more(apply_ev *a, const objlog_key_header *h,
                               const bucket_state *bs) {
    if (h->versions < bs->max_versions)
        return 1;
    char n[24];
    snprintf(n, sizeof(n), "%llu", (unsigned long long)bs->max_versions);
    apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_TOO_MANY_VERSIONS,
           "the key already has the bucket's maximum of %s versions "
           "(delete markers included)", n);
    return 0;
}

/* ---- operations ---- */

static int lc_set_rules(apply_ev *a, Objlog__BucketRecord *r);

/* SetNotifications: the event's configurations, checked as the API edge
 * checks them, become r's from this event on (notifications_seq), so a
 * change before it is never notified and every matching one after it is.
 * 1 set (r borrows the event's configurations), 0 rejected. */
static int notify_set(apply_ev *a, Objlog__BucketRecord *r) {
    const Objlog__SetNotifications *sn = a->ev->set_notifications;
    char why[sizeof(a->res.message)];
    if (notify_configs_check(sn->configs, sn->n_configs, why, sizeof(why)) < 0) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT, "%s", why);
        return 0;
    }
    r->n_notifications = sn->n_configs;
    r->notifications = sn->configs;
    r->notifications_seq = sn->n_configs ? a->seq : 0;
    return 1;
}

static int op_create_bucket(apply_ev *a) {
    Objlog__BucketRecord *old;
    int rc = stage_load_bucket(a, &old);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        objlog__bucket_record__free_unpacked(old, NULL);
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_ALREADY_EXISTS,
               "bucket %s already exists", a->ev->bucket);
        return 0;
    }
    const Objlog__CreateBucket *cb = a->ev->create_bucket;
    if (!apply_acl_ok(a, cb->acl))
        return 0;
    Objlog__BucketRecord r = OBJLOG__BUCKET_RECORD__INIT;
    r.acl = cb->acl && strcmp(cb->acl, "private") != 0 ? cb->acl : "";
    r.name = a->ev->bucket;
    r.tenant = cb->tenant;
    r.versioning = cb->versioning;
    r.quota = cb->quota;
    r.max_versions = cb->max_versions;
    r.created_seq = a->seq;
    r.created_ms = a->log_time_ms;
    if (stage_save_bucket(a, &r) < 0 || stage_set_tenant(a, cb->tenant) < 0)
        return -1;
    /* The bucket's row exists (all zero) from creation to deletion. */
    keybuf k;
    keybuf_init(&k);
    rc = objlog_stats_bucket_key(&k, a->ev->bucket, strlen(a->ev->bucket)) < 0 ||
                 stage_stats_reset(a->b, &k, 1) < 0 ? -1 : 0;
    if (rc < 0)
        snprintf(a->errstr, a->es, "out of memory");
    keybuf_free(&k);
    a->d.buckets = 1;
    return rc;
}

static int op_delete_bucket(apply_ev *a) {
    Objlog__BucketRecord *old;
    int rc = require_bucket(a, &old);
    if (rc <= 0)
        return rc;
    rc = stage_set_tenant(a, old->tenant);
    objlog__bucket_record__free_unpacked(old, NULL);
    if (rc < 0)
        return -1;
    rc = stage_bucket_has_rows(a, OBJLOG_CF_VERSIONS);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_NOT_EMPTY,
               "bucket %s is not empty (versions or delete markers remain)",
               a->ev->bucket);
        return 0;
    }
    /* In-progress uploads go with the bucket (S3 aborts them too). */
    if (stage_drop_bucket_uploads(a) < 0)
        return -1;
    apply_batch_del(a->b, OBJLOG_CF_BUCKETS, a->bpart.data, a->bpart.len);
    /* Empty but for its uploads, so it only leaves the bucket and upload
     * counts of its tenant and of the global row. */
    keybuf k;
    keybuf_init(&k);
    if (objlog_stats_bucket_key(&k, a->ev->bucket, strlen(a->ev->bucket)) < 0 ||
        stage_stats_reset(a->b, &k, 0) < 0) {
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
    size_t old_nn = r->n_notifications;
    Objlog__NotifyConfig **old_nc = r->notifications;
    attr_keep keep = {r->n_tags, r->tags, r->acl};
    if (a->ev->op_case == OBJLOG__EVENT__OP_SET_BUCKET_TAGS ||
        a->ev->op_case == OBJLOG__EVENT__OP_SET_BUCKET_ACL) {
        int go = apply_bucket_attrs(a, r, &keep);
        if (go <= 0) {
            objlog__bucket_record__free_unpacked(r, NULL);
            return go;
        }
    } else if (a->ev->op_case == OBJLOG__EVENT__OP_SET_VERSIONING) {
        Objlog__Versioning to = a->ev->set_versioning->status;
        if (to == OBJLOG__VERSIONING__VERSIONING_UNVERSIONED &&
            r->versioning != OBJLOG__VERSIONING__VERSIONING_UNVERSIONED) {
            objlog__bucket_record__free_unpacked(r, NULL);
            apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
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
    } else if (a->ev->op_case == OBJLOG__EVENT__OP_SET_NOTIFICATIONS) {
        if (notify_set(a, r) == 0) {
            objlog__bucket_record__free_unpacked(r, NULL);
            return 0;
        }
    } else if (a->ev->op_case == OBJLOG__EVENT__OP_SET_QUOTA) {
        int go = stake_quota_change(a, r, a->ev->set_quota->quota);
        if (go <= 0) {
            objlog__bucket_record__free_unpacked(r, NULL);
            return go;
        }
        r->quota = a->ev->set_quota->quota;
    } else if (ratelimit_settle(a->ev, &r->rate_limit, a->res.message,
                                sizeof(a->res.message)) < 0) {
        objlog__bucket_record__free_unpacked(r, NULL);
        a->res.code = OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT;
        return 0;
    }
    r->settings_seq = a->seq;
    rc = stage_save_bucket(a, r);
    r->quota = old_quota; /* free only what unpack allocated */
    r->rate_limit = old_limit;
    r->n_lifecycle = old_nlc;
    r->lifecycle = old_lc;
    r->n_notifications = old_nn;
    r->notifications = old_nc;
    apply_bucket_attrs_restore(r, &keep);
    objlog__bucket_record__free_unpacked(r, NULL);
    return rc;
}

/* Writes meta as the key's new newest version following the bucket's
 * versioning (PutObject and CompleteUpload). 1 written, 0 refused by the
 * cap (outcome set, nothing staged), -1 error. */
int apply_put_version(apply_ev *a, const bucket_state *bs,
                       Objlog__ObjectMeta *meta) {
    objlog_key_header h;
    if (stage_load_header(a, &h) < 0)
        return -1;
    Objlog__Versioning vs = bs->versioning;
    int replaces_null = vs != OBJLOG__VERSIONING__VERSIONING_ENABLED && h.has_null;
    if (!replaces_null && !cap_allows_one_more(a, &h, bs))
        return 0;
    int qrc = stake_quota_allows(a, &bs->quota, meta ? meta->size : 0);
    if (qrc <= 0)
        return qrc;
    if (vs == OBJLOG__VERSIONING__VERSIONING_ENABLED) {
        keycodec_version_id(a->seq, a->res.version_id);
        h.versions++;
    } else {
        /* Unversioned and Suspended: the new version is the null one. */
        if (h.has_null && stage_delete_version(a, h.null_seq) < 0)
            return -1;
        if (!h.has_null)
            h.versions++;
        h.has_null = 1;
        h.null_seq = a->seq;
        snprintf(a->res.version_id, sizeof(a->res.version_id), "null");
    }
    if (stage_add_version(a, a->res.version_id, 0, meta) < 0)
        return -1;
    stage_save_header(a, &h);
    return 1;
}

static int op_put_object(apply_ev *a) {
    bucket_state bs;
    int rc = object_gate(a, &bs);
    if (rc <= 0)
        return rc;
    Objlog__ObjectMeta *meta = a->ev->put_object->meta;
    if (meta && !apply_acl_ok(a, meta->acl))
        return 0;
    if (stage_key_begin(a) < 0)
        return -1;
    rc = apply_put_version(a, &bs, meta);
    if (rc <= 0)
        return rc;
    a->res.etag = meta && meta->etag ? meta->etag : "";
    const char *src = a->ev->put_object->copy_source;
    a->feed_event = src && src[0] ? "ObjectCreated:Copy" : "ObjectCreated:Put";
    a->feed_size = meta ? meta->size : 0;
    a->feed_etag = a->res.etag;
    return stage_key_end(a);
}

/* DELETE without a version id: a marker, or (Unversioned) removal. */
static int delete_current(apply_ev *a, const bucket_state *bs) {
    objlog_key_header h;
    if (stage_load_header(a, &h) < 0)
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
        a->feed_event = "ObjectRemoved:DeleteMarkerCreated";
        if (stage_add_version(a, a->res.version_id, 1, NULL) < 0)
            return -1;
        stage_save_header(a, &h);
        return 0;
    }
    if (h.has_null) {
        if (stage_delete_version(a, h.null_seq) < 0)
            return -1;
        h.has_null = 0;
        h.versions--;
        a->feed_event = "ObjectRemoved:Delete";
    }
    if (vs == OBJLOG__VERSIONING__VERSIONING_SUSPENDED) {
        snprintf(a->res.version_id, sizeof(a->res.version_id), "null");
        a->res.delete_marker = 1;
        a->feed_event = "ObjectRemoved:DeleteMarkerCreated";
        h.has_null = 1;
        h.null_seq = a->seq;
        h.versions++;
        if (stage_add_version(a, "null", 1, NULL) < 0)
            return -1;
    } else if (vs == OBJLOG__VERSIONING__VERSIONING_UNVERSIONED) {
        stage_clear_current(a); /* its one version, the null one, is gone */
    } else if (stage_refresh_current(a) < 0) {
        return -1;
    }
    stage_save_header(a, &h);
    return 0;
}

/* DELETE ?version_id=: removes that version for good; a missing one is OK. */
static int delete_version_id(apply_ev *a, const char *vid) {
    objlog_key_header h;
    uint64_t seq = 0;
    int is_null = strcmp(vid, "null") == 0;
    if (!is_null && keycodec_parse_version_id(vid, &seq) < 0) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT,
               "invalid version id %s", vid);
        return 0;
    }
    if (stage_load_header(a, &h) < 0)
        return -1;
    snprintf(a->res.version_id, sizeof(a->res.version_id), "%s", vid);
    if (is_null) {
        if (!h.has_null)
            return 0;
        seq = h.null_seq;
    }
    Objlog__VersionRecord *r;
    int rc = stage_load_version(a, seq, &r);
    if (rc <= 0)
        return rc;
    /* A null version's row is addressed only as "null", never by hex. */
    int match = strcmp(r->version_id, vid) == 0;
    a->res.delete_marker = match && r->delete_marker;
    objlog__version_record__free_unpacked(r, NULL);
    if (!match)
        return 0;
    if (stage_delete_version(a, seq) < 0)
        return -1;
    a->feed_event = "ObjectRemoved:Delete";
    if (is_null)
        h.has_null = 0;
    h.versions--;
    stage_save_header(a, &h);
    return stage_refresh_current(a);
}

static int op_delete_object(apply_ev *a) {
    bucket_state bs;
    int rc = object_gate(a, &bs);
    if (rc <= 0)
        return rc;
    const char *vid = a->ev->delete_object->version_id;
    if (stage_key_begin(a) < 0)
        return -1;
    rc = vid && vid[0] ? delete_version_id(a, vid) : delete_current(a, &bs);
    if (rc < 0 || a->res.code != OBJLOG__OUTCOME_CODE__OUTCOME_OK)
        return rc;
    return stage_key_end(a);
}

/* Loads the upload row: 1 found (*out owned by the caller), 0 absent with
 * NoSuchUpload decided, -1 error. */
int apply_require_upload(apply_ev *a, const char *upload_id,
                          Objlog__UploadRecord **out) {
    int rc = stage_load_upload(a, upload_id ? upload_id : "", out);
    if (rc == 0)
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_UPLOAD,
               "upload %s does not exist (never created, aborted or "
               "completed)", upload_id ? upload_id : "");
    return rc;
}

/* ---- lifecycle (the rules themselves: lifecycle.c) ---- */

/* SetLifecycle: the event's rules, checked as the API edge checks them
 * (a producer that skipped the edge gets InvalidArgument), become r's.
 * 1 set (r borrows the event's rules), 0 rejected. */
static int lc_set_rules(apply_ev *a, Objlog__BucketRecord *r) {
    const Objlog__SetLifecycle *sl = a->ev->set_lifecycle;
    char why[200];
    if (objlog_lc_validate(sl->rules, sl->n_rules, why, sizeof(why)) < 0) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT, "%s", why);
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
        int rc = apply_require_upload(a, ex->upload_id, &ur);
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
    int rc = apply_key_gate(a, &bs);
    if (rc <= 0)
        return rc;
    Objlog__BucketRecord *br;
    if (stage_load_bucket(a, &br) < 0)
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
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_LIFECYCLE_SKIPPED,
               "lifecycle rule %s no longer exists or is disabled", ex->rule_id);
        return 0;
    }
    if (action != (int)ex->action) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_LIFECYCLE_SKIPPED,
               "the item is no longer what rule %s expires (overwritten, "
               "removed, or the rule changed)", ex->rule_id);
        return 0;
    }
    if (a->log_time_ms < due_ms) {
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_NOT_DUE,
               "rule %s: not due yet at this event's log time", ex->rule_id);
        return 0;
    }
    if (stage_key_begin(a) < 0)
        return -1;
    if (action == OBJLOG__EXPIRE_ACTION__EXPIRE_CURRENT)
        rc = delete_current(a, &bs);
    else if (action == OBJLOG__EXPIRE_ACTION__EXPIRE_ABORT_UPLOAD)
        rc = stage_remove_upload(a, ex->upload_id);
    else
        rc = delete_version_id(a, pin.version_id);
    if (rc < 0 || a->res.code != OBJLOG__OUTCOME_CODE__OUTCOME_OK)
        return rc;
    if (action == OBJLOG__EXPIRE_ACTION__EXPIRE_ABORT_UPLOAD)
        snprintf(a->res.upload_id, sizeof(a->res.upload_id), "%s", ex->upload_id);
    /* S3 names what a rule removed LifecycleExpiration:* */
    if (a->feed_event)
        a->feed_event = a->res.delete_marker ? "LifecycleExpiration:DeleteMarkerCreated"
                                             : "LifecycleExpiration:Delete";
    return stage_key_end(a);
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
        rc = stage_save_bucket(a, br);
    objlog__bucket_record__free_unpacked(br, NULL);
    return rc < 0 ? -1 : 0;
}

static int apply_op(apply_ev *a) {
    int go = stake_bucket_gate(a);
    if (go <= 0)
        return go;
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
    case OBJLOG__EVENT__OP_SET_BUCKET_TAGS:
    case OBJLOG__EVENT__OP_SET_BUCKET_ACL:
    case OBJLOG__EVENT__OP_SET_NOTIFICATIONS:
        return op_bucket_settings(a);
    case OBJLOG__EVENT__OP_SET_OBJECT_TAGS:
    case OBJLOG__EVENT__OP_SET_OBJECT_ACL:
        return apply_op_object_attrs(a);
    case OBJLOG__EVENT__OP_PUT_OBJECT:
        return op_put_object(a);
    case OBJLOG__EVENT__OP_DELETE_OBJECT:
        return op_delete_object(a);
    case OBJLOG__EVENT__OP_CREATE_UPLOAD:
        return apply_op_create_upload(a);
    case OBJLOG__EVENT__OP_UPLOAD_PART:
        return apply_op_upload_part(a);
    case OBJLOG__EVENT__OP_COMPLETE_UPLOAD:
        return apply_op_complete_upload(a);
    case OBJLOG__EVENT__OP_ABORT_UPLOAD:
        return apply_op_abort_upload(a);
    case OBJLOG__EVENT__OP_EXPIRE:
        return op_expire(a);
    case OBJLOG__EVENT__OP_PUT_INDEX:
    case OBJLOG__EVENT__OP_DROP_INDEX:
    case OBJLOG__EVENT__OP_BUILD_INDEX:
        return op_index(a);
    case OBJLOG__EVENT__OP_RANGE_OUT:
        return handoff_range_out(a);
    case OBJLOG__EVENT__OP_RANGE_IN:
        return handoff_range_in(a);
    case OBJLOG__EVENT__OP_BUCKET_RELAY:
        return stake_relay(a);
    default:
        apply_reject(a, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT, "%s",
               "event has no operation");
        return 0;
    }
}

/* ---- entry points ---- */

rocksdb_writebatch_t *apply_batch_wb(apply_batch *b) {
    stage_stats_flush(b);
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
    else if ((!ev->bucket || !ev->bucket[0]) && !is_range_op(ev))
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

/* The change an OK key op made, staged as feed rows for the bucket's
 * configurations that match it (feed.h). 0 or -1. */
static int feed_note(apply_ev *a) {
    if (!a->feed_event || !a->feed.br)
        return 0;
    int unversioned = a->versioning == OBJLOG__VERSIONING__VERSIONING_UNVERSIONED;
    feed_change ch = {
        .event_name = a->feed_event,
        .bucket = a->ev->bucket,
        .key = a->ev->key.data,
        .key_len = a->ev->key.len,
        .size = a->feed_size,
        .etag = a->feed_etag,
        .version_id = unversioned ? "" : a->res.version_id,
        .log_time_ms = a->log_time_ms,
        .request_id = a->ev->request_id,
        .owner = a->tenant,
    };
    return feed_stage(a->b, a->partition, a->offset, a->map_epoch, &a->feed, &ch, &a->feed_n,
                      a->errstr, a->es);
}

/* BlobReleased rows for the blob references an OK event removed and its
 * partition holds no more (blobrefs.h). 0 or -1. */
static int blobs_note(apply_ev *a) {
    blobrefs_event ev = {
        .p = a->partition,
        .off = a->offset,
        .epoch = a->map_epoch,
        .bucket = a->ev->bucket,
        .log_time_ms = a->log_time_ms,
        .request_id = a->ev->request_id,
        .owner = a->tenant,
    };
    return blobrefs_release(a->b, &a->blobs, &ev, &a->feed_n, a->errstr, a->es);
}

int apply_event(apply_batch *b, int32_t partition, int64_t offset,
                int64_t log_time_ms, const Objlog__Event *ev,
                Objlog__OutcomeCode *code, char *errstr, size_t errstr_size) {
    Objlog__OutcomeCode dummy;
    if (!code)
        code = &dummy;
    int rc = dedup_retry(b, partition, offset, log_time_ms, ev, code, errstr,
                         errstr_size);
    if (rc < 0)
        return -1;
    if (rc == 0)
        rc = apply_decide(b, partition, offset, log_time_ms, ev, code, errstr,
                          errstr_size);
    else
        rc = 0;
    if (rc == 0)
        rc = dedup_trim(b, partition, offset, log_time_ms, errstr,
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
    keybuf_init(&a.stake);
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
    uint32_t epoch = 0;
    int owns = is_range_op(ev) ? 1
                               : handoff_owns(b, partition, a.route.data, a.route.len, &epoch,
                                              errstr, errstr_size);
    if (owns > 0 && !is_range_op(ev))
        owns = stake_key(b, partition, a.bpart.data, a.bpart.len, &a.stake, errstr,
                         errstr_size) < 0 ? -1 : 1;
    if (owns < 0) {
        rc = -1;
        goto out;
    }
    a.map_epoch = epoch;
    if (!owns) {
        a.res.code = OBJLOG__OUTCOME_CODE__OUTCOME_WRONG_RANGE;
        snprintf(a.res.message, sizeof(a.res.message),
                 "key of bucket %s is not in partition %d's range (epoch %u)",
                 ev->bucket, partition, epoch);
    } else if (apply_op(&a) < 0) {
        rc = -1;
        goto out;
    }
    if (a.res.code == OBJLOG__OUTCOME_CODE__OUTCOME_OK &&
        (stage_stats_commit(&a) < 0 || feed_note(&a) < 0 || blobs_note(&a) < 0)) {
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
    rc = dedup_save_outcome(b, partition, offset, log_time_ms, ev->request_id,
                            is_range_op(ev) ? NULL : &a.route, &a.res, errstr, errstr_size);
out:
    keybuf_free(&a.route);
    keybuf_free(&a.bpart);
    keybuf_free(&a.stake);
    free(a.tenant);
    indexes_key_done(&a.ix);
    feed_bucket_done(&a.feed);
    blobrefs_ev_free(&a.blobs);
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
    if (dedup_save_outcome(b, partition, offset, log_time_ms, none, NULL, &res, errstr,
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
    return dedup_trim(b, partition, offset, log_time_ms, errstr, errstr_size);
}

void apply_set_applied(apply_batch *b, int32_t partition, int64_t next_offset) {
    uint8_t key[APPLY_META_KEY_MAX];
    size_t kn = apply_meta_key(key, APPLY_META_APPLIED, partition);
    uint8_t v[8];
    apply_put_be64(v, (uint64_t)next_offset);
    apply_batch_put(b, OBJLOG_CF_META, key, kn, v, sizeof(v));
}
