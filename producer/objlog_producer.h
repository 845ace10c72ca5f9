/* objlog_producer.h: libobjlog_producer, the library upload frontends embed
 * to append metadata events to objlog.events (docs/ARCHITECTURE.md,
 * "How a write flows").
 *
 * Shaped like librdkafka: configuration is string key/value pairs checked at
 * set time (the error names the bad key); every call that can fail returns
 * a code and fills an errstr buffer. All calls are thread-safe. Writes are
 * asynchronous with a completion callback (called from a library thread,
 * exactly once per accepted write); the *_sync wrappers block.
 *
 * Inside a completion callback only the asynchronous calls may be made: a
 * *_sync write or objlog_producer_flush there would wait for a callback
 * that only the same library thread can run, so they fail at once (-1,
 * errstr "... called from a completion callback would wait for itself
 * (deadlock) ...", nothing sent), and objlog_producer_destroy there prints
 * that to stderr and returns without destroying.
 *
 * Configuration keys:
 *   bootstrap.servers  Kafka brokers (required)
 *   topic              events topic (default objlog.events)
 *   control.topic      range-map topic (default objlog.control)
 *   query.url          objlogd base URL, e.g. http://127.0.0.1:8080; needed
 *                      for ack=applied
 *   query.token        the Bearer token the library sends to query.url
 *                      (objlogd --api-credentials; a tenant's token reads its
 *                      own buckets and tenant stats, outcomes and lag)
 *   ack                applied (default) | logged
 *   outcome.timeout.ms how long ack=applied waits for the outcome before the
 *                      write completes as OBJLOG_STATUS_UNKNOWN (default 10000)
 *   unknown.retries    0..100 (default 0): a write about to complete UNKNOWN
 *                      is first re-produced with the same bytes (same request
 *                      id) and awaited again for outcome.timeout.ms, up to
 *                      this many times. The state machine dedups by request
 *                      id, so the result carries the FIRST attempt's outcome
 *                      (same version id) and nothing is applied twice; its
 *                      partition/offset/token are those of the last attempt.
 *   tenant.quota.tenant     the tenant this producer writes for (required
 *                           with a tenant.quota.max_*; needs query.url)
 *   tenant.quota.max_bytes  0 (default) = none; put_object and
 *   tenant.quota.max_objects  complete_upload return -1 up front, errstr
 *                           naming the quota, when the tenant's current
 *                           bytes/objects are already at or over it
 *   tenant.quota.refresh.ms 10..3600000 (default 1000): how often a library
 *                           thread re-reads GET /v1/tenants/{t}/stats; the
 *                           check itself only reads that cache (no HTTP on
 *                           the caller's path).
 *     Tenant quota vs bucket quota: the tenant check is advisory and STALE
 *     by up to refresh.ms + the stats view's apply lag (+ one HTTP round
 *     trip): writes accepted inside that window, from this or any other
 *     producer of the tenant, can overshoot it, and the write that crosses
 *     it is still accepted (the check is "already at or over"). If the
 *     query service cannot be reached the last good numbers stay in use
 *     (fail-open). The bucket quota (objlog_bucket_conf.quota_*) is decided
 *     by the state machine when it applies the event: exact, never
 *     overshot, deterministic under replay (QuotaExceeded, 403).
 *   admission          off (default) | on (needs query.url): the library
 *                      applies objlogd's admission control to its own
 *                      writes (producer/admit.c). A write routed
 *                      to a partition objlogd reports slow (apply lag over
 *                      its --slowdown-lag, GET /v1/admission), or over the
 *                      bucket's rate limit (GET /v1/buckets/{b}/ratelimit:
 *                      rps and write_rps, a token bucket per bucket in this
 *                      producer), is not sent: its callback runs (from a
 *                      library thread) with OBJLOG_STATUS_SLOW_DOWN,
 *                      error_code "SlowDown", partition/offset -1, and
 *                      error_message ending "retry after N s". Nothing was
 *                      logged: retrying (same or new request id) is safe.
 *                      Each producer enforces a bucket's limit on its own
 *                      writes (N producers may reach N times it); the limit
 *                      and the slow partitions are those of the last poll
 *                      (a bucket's first writes pass until a poll read its
 *                      limit; an unreachable objlogd refuses nothing).
 *                      set_rate_limit itself is never refused.
 *   admission.refresh.ms 10..3600000 (default 1000): the poll's period.
 *   kafka.<prop>       passed to librdkafka as <prop>; defaults that differ
 *                      from librdkafka's: linger.ms 5, socket.nagle.disable
 *                      true (a write waits for the linger, never for Nagle)
 * The librdkafka producer is always idempotent with acks=all:
 * kafka.acks, kafka.request.required.acks and kafka.enable.idempotence are
 * refused (OBJLOG_CONF_INVALID, errstr says why), as is
 * kafka.bootstrap.servers (use bootstrap.servers).
 *
 * What a write returns (objlog_write_result):
 *   status     OK (applied), LOGGED (ack=logged: in the log, not awaited),
 *              REJECTED (applied with an error outcome), UNKNOWN (no
 *              outcome in time: retry with request_id), FAILED (never
 *              reached the log), SLOW_DOWN (admission=on: not sent;
 *              retry after the seconds error_message names).
 *   error_code with REJECTED, the state machine's S3 code: NoSuchBucket,
 *              NoSuchKey, NoSuchVersion, NoSuchUpload, BucketAlreadyExists,
 *              BucketNotEmpty, PreconditionFailed, QuotaExceeded,
 *              TooManyVersions, InvalidArgument, InvalidPart,
 *              InvalidPartOrder, EntityTooSmall, WrongRange (the range map
 *              moved under the write: retry), InvalidEvent; "" otherwise.
 *              error_message says more; with FAILED and UNKNOWN it names
 *              the Kafka or HTTP error.
 *   token      "P.O": the write's partition and offset in the log, where
 *              its outcome is decided. A read that passes it
 *              (X-Objlog-Token header or token= parameter of objlogd's
 *              API) sees this write or later ones
 *              (read-your-writes, no broker round trip).
 *   Reading a write back: GET {query.url}/v1/writes/{token} answers its
 *   outcome (status code, version id, etag) once applied; GET
 *   /v1/buckets/{b}/objects/{key}?token={token} reads the object as of it.
 * Calls that take an object's metadata accept meta == NULL: an object of
 * size 0 with no etag, content type, blob id or user metadata.
 *
 * Retrying: every write carries a 16-byte request id (random unless
 * opts->request_id is given), reported in the result. A write that ended
 * UNKNOWN (or FAILED) may be re-sent with opts->request_id set to the
 * previous result's request_id: the state machine dedups by request id, so
 * the retry either applies once or returns the first attempt's stored
 * outcome (same version id). Never reuse an id for a different write.
 * The request id is remembered for the dedup window (24 h of log time);
 * retry well within it. Manual retry, e.g. after an UNKNOWN:
 *
 *     objlog_write_result r;
 *     objlog_producer_put_object_sync(p, "b", "k", 1, &meta, NULL, &r,
 *                                     err, sizeof(err));
 *     while (r.status == OBJLOG_STATUS_UNKNOWN ||
 *            r.status == OBJLOG_STATUS_FAILED) {
 *         uint8_t rid[OBJLOG_REQUEST_ID_LEN];
 *         memcpy(rid, r.request_id, sizeof(rid));
 *         objlog_write_opts retry = {.request_id = rid};  // same arguments
 *         objlog_producer_put_object_sync(p, "b", "k", 1, &meta, &retry, &r,
 *                                         err, sizeof(err));
 *     }
 *     // r.status is OK/REJECTED with the first applied attempt's outcome
 *
 * The retry must repeat the same operation and arguments (and the same
 * if_match / if_none_match): only the request id ties it to the first.
 *
 * How outcomes travel (ack=applied): per partition the library keeps the
 * writes awaiting an outcome ordered by offset and has at most one
 * GET {query.url}/v1/outcomes?partition=P&from=<lowest pending offset>
 * long-poll in flight; each answer completes every pending write it covers
 * (request ids checked), so many concurrent writes cost few requests
 * (objlog_producer_stats). GET /v1/writes/{token} stays the single-write
 * path for tools and ack=logged callers.
 */
#ifndef OBJLOG_PRODUCER_H
#define OBJLOG_PRODUCER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The release this header belongs to (CMake reads it from here). The
 * shared library's SONAME carries the major: libobjlog_producer.so.0. */
#define OBJLOG_VERSION_MAJOR 0
#define OBJLOG_VERSION_MINOR 6
#define OBJLOG_VERSION_PATCH 0
#define OBJLOG_VERSION_STR "0.6.0"
/* (major << 16) | (minor << 8) | patch, for #if */
#define OBJLOG_VERSION 0x000600
/* 0.3 also adds OBJLOG_STATUS_SLOW_DOWN, objlog_producer_set_rate_limit and
 * the admission.* keys (admission control). */
/* The library's version at run time ("0.6.0"), which may be newer than
 * the header's OBJLOG_VERSION_STR a program was built with. */
const char *objlog_producer_version(void);

typedef struct objlog_producer objlog_producer;
typedef struct objlog_producer_conf objlog_producer_conf;

typedef enum objlog_status {
    OBJLOG_STATUS_OK = 0,        /* applied; outcome ok */
    OBJLOG_STATUS_LOGGED,        /* ack=logged: in the log, outcome not awaited */
    OBJLOG_STATUS_REJECTED,      /* applied with an error outcome (error_code) */
    OBJLOG_STATUS_UNKNOWN,       /* no outcome in time; retry with request_id */
    OBJLOG_STATUS_FAILED,        /* never reached the log (Kafka error) */
    OBJLOG_STATUS_SLOW_DOWN      /* admission (admission=on): not sent, over
                                    the bucket's rate limit or its partition
                                    lags; retry after error_message's
                                    "retry after N s" (error_code SlowDown) */
} objlog_status;

typedef enum objlog_versioning {
    OBJLOG_VERSIONING_UNVERSIONED = 0,
    OBJLOG_VERSIONING_ENABLED = 1,
    OBJLOG_VERSIONING_SUSPENDED = 2
} objlog_versioning;

#define OBJLOG_REQUEST_ID_LEN 16

typedef struct objlog_write_result {
    objlog_status status;
    char error_code[48];         /* S3 code ("NoSuchBucket", ...) or "" */
    char error_message[256];
    uint8_t request_id[OBJLOG_REQUEST_ID_LEN];
    char request_id_hex[2 * OBJLOG_REQUEST_ID_LEN + 1];
    int32_t partition;           /* -1 if not logged */
    int64_t offset;              /* -1 if not logged */
    char version_id[24];         /* "" unless OK; "null" for null versions */
    char etag[80];
    int delete_marker;
    char token[64];              /* read-after-write token ("" if not logged) */
    char upload_id[24];          /* create_upload with status OK: the new
                                    upload's id (16 hex digits), else "" */
} objlog_write_result;

typedef void(objlog_write_cb)(const objlog_write_result *res, void *opaque);

typedef struct objlog_user_meta {
    const char *name;
    const char *value;
} objlog_user_meta;

/* One blob of an object whose bytes are several blobs in order (a
 * completed multipart upload's parts). */
typedef struct objlog_blob_part {
    const char *blob_id;
    uint64_t size;
} objlog_blob_part;

typedef struct objlog_object_meta {
    uint64_t size;
    const char *etag;
    const char *content_type;
    const char *blob_id;
    const char *storage_class;
    const char *checksum;
    const objlog_user_meta *user_meta;
    size_t n_user_meta;
    /* Object tags (since 0.3.0): at most 10, keys 1..128 and values
     * 0..256 bytes of UTF-8, keys unique, as S3's tag set. Lifecycle rules
     * and attribute indexes filter on them. The struct grew here: a
     * program built against an older header must be rebuilt (zeroed
     * structs, `{0}` or designated initialisers, need no other change). */
    const objlog_user_meta *tags;
    size_t n_tags;
    /* HTTP's representation headers, kept and returned as S3 keeps its
     * system metadata (since 0.4.0; NULL: not given): at most 1024 bytes
     * each, no control characters. Grown as the tags were above. */
    const char *cache_control;
    const char *content_disposition;
    const char *content_encoding;
    const char *content_language;
    const char *expires;
    /* The object's bytes as several blobs, in order (since 0.4.0): what a
     * completed multipart upload's version carries, and what a copy of
     * one must carry too; their sizes add up to size. blob_id is then
     * NULL. At most 10,000. */
    const objlog_blob_part *parts;
    size_t n_parts;
    /* A canned ACL, as S3's x-amz-acl (since 0.5.0; NULL or "private":
     * only the owner): public-read, public-read-write, authenticated-read,
     * bucket-owner-read, bucket-owner-full-control. */
    const char *acl;
} objlog_object_meta;

typedef struct objlog_write_opts {
    const char *if_match;        /* etag or NULL */
    int if_none_match;           /* 1: If-None-Match: * */
    const uint8_t *request_id;   /* OBJLOG_REQUEST_ID_LEN bytes to retry a
                                    write; NULL: a new random id */
    /* PutObject only (since 0.6.0): the write copies this source
     * ("bucket/key[?versionId=V]", at most 2,048 bytes), so the change
     * feed names it s3:ObjectCreated:Copy. NULL: a plain PUT. */
    const char *copy_source;
} objlog_write_opts;

/* Bucket settings for objlog_producer_create_bucket_ex. NULL conf or zero
 * fields: no tenant, unversioned, default version cap (100,000 per key),
 * no quota. */
typedef struct objlog_bucket_conf {
    const char *tenant;
    objlog_versioning versioning;
    uint64_t max_versions;       /* versions per key; 0 = default */
    uint64_t quota_max_bytes;    /* 0 = unlimited */
    uint64_t quota_max_objects;  /* 0 = unlimited */
    const char *acl;             /* canned ACL, as objlog_object_meta's (0.5.0) */
} objlog_bucket_conf;

/* One entry of the part list given to complete_upload. */
typedef struct objlog_completed_part {
    uint32_t part_number;        /* 1..10000, ascending in the list */
    const char *etag;
} objlog_completed_part;

typedef enum objlog_conf_res {
    OBJLOG_CONF_OK = 0,
    OBJLOG_CONF_UNKNOWN = -1,
    OBJLOG_CONF_INVALID = -2
} objlog_conf_res;

objlog_producer_conf *objlog_producer_conf_new(void);
objlog_conf_res objlog_producer_conf_set(objlog_producer_conf *conf,
                                         const char *name, const char *value,
                                         char *errstr, size_t errstr_size);
void objlog_producer_conf_destroy(objlog_producer_conf *conf);

/* Where the producer's log lines go: librdkafka's (level is syslog's, 0-7;
 * facility as librdkafka names it, e.g. "FAIL", "REQTMOUT") and the
 * library's own (facility "OBJLOG"). Called from internal threads, so it
 * must be thread-safe and must not call back into the producer. Without
 * it the lines go to stderr, as librdkafka writes them by default. */
typedef void(objlog_log_cb)(void *opaque, int level, const char *facility,
                            const char *message);
void objlog_producer_conf_set_log_cb(objlog_producer_conf *conf, objlog_log_cb *cb,
                                     void *opaque);

/* Takes ownership of conf on success (and on failure). */
objlog_producer *objlog_producer_new(objlog_producer_conf *conf, char *errstr,
                                     size_t errstr_size);
/* Flushes outstanding writes (their callbacks run) and frees. A write the
 * log has not taken within outcome.timeout.ms (brokers unreachable) is
 * purged: its callback reports FAILED, or UNKNOWN when it may have been
 * logged (retry it with its request id). Returns in bounded time. */
void objlog_producer_destroy(objlog_producer *p);
/* Waits until every accepted write has completed. 0, or -1 on timeout. */
int objlog_producer_flush(objlog_producer *p, int timeout_ms);

/* Asynchronous writes: 0 if accepted (cb will be called once), -1 with
 * errstr if rejected up front (bad argument; cb is not called). */
int objlog_producer_create_bucket(objlog_producer *p, const char *bucket,
                                  const char *tenant,
                                  objlog_versioning versioning,
                                  const objlog_write_opts *opts,
                                  objlog_write_cb *cb, void *opaque,
                                  char *errstr, size_t errstr_size);
int objlog_producer_put_object(objlog_producer *p, const char *bucket,
                               const char *key, size_t key_len,
                               const objlog_object_meta *meta,
                               const objlog_write_opts *opts,
                               objlog_write_cb *cb, void *opaque,
                               char *errstr, size_t errstr_size);
/* version_id NULL: delete marker (versioned) or plain delete (unversioned). */
int objlog_producer_delete_object(objlog_producer *p, const char *bucket,
                                  const char *key, size_t key_len,
                                  const char *version_id,
                                  const objlog_write_opts *opts,
                                  objlog_write_cb *cb, void *opaque,
                                  char *errstr, size_t errstr_size);

/* create_bucket with every setting (quota, version cap). */
int objlog_producer_create_bucket_ex(objlog_producer *p, const char *bucket,
                                     const objlog_bucket_conf *conf,
                                     const objlog_write_opts *opts,
                                     objlog_write_cb *cb, void *opaque,
                                     char *errstr, size_t errstr_size);
/* v must be ENABLED or SUSPENDED: a bucket never goes back to unversioned. */
int objlog_producer_set_versioning(objlog_producer *p, const char *bucket,
                                   objlog_versioning v,
                                   const objlog_write_opts *opts,
                                   objlog_write_cb *cb, void *opaque,
                                   char *errstr, size_t errstr_size);
/* Deletes an empty bucket (BucketNotEmpty otherwise). */
int objlog_producer_delete_bucket(objlog_producer *p, const char *bucket,
                                  const objlog_write_opts *opts,
                                  objlog_write_cb *cb, void *opaque,
                                  char *errstr, size_t errstr_size);
/* Multipart upload metadata. create_upload reports the new id in
 * res->upload_id (ack=applied, status OK). upload_id: 16 hex digits;
 * part_number: 1..10000; n_parts: 1..10000. */
int objlog_producer_create_upload(objlog_producer *p, const char *bucket,
                                  const char *key, size_t key_len,
                                  const objlog_object_meta *meta,
                                  const objlog_write_opts *opts,
                                  objlog_write_cb *cb, void *opaque,
                                  char *errstr, size_t errstr_size);
int objlog_producer_upload_part(objlog_producer *p, const char *bucket,
                                const char *key, size_t key_len,
                                const char *upload_id, uint32_t part_number,
                                uint64_t size, const char *etag,
                                const char *blob_id,
                                const objlog_write_opts *opts,
                                objlog_write_cb *cb, void *opaque,
                                char *errstr, size_t errstr_size);
int objlog_producer_complete_upload(objlog_producer *p, const char *bucket,
                                    const char *key, size_t key_len,
                                    const char *upload_id,
                                    const objlog_completed_part *parts,
                                    size_t n_parts,
                                    const objlog_write_opts *opts,
                                    objlog_write_cb *cb, void *opaque,
                                    char *errstr, size_t errstr_size);
int objlog_producer_abort_upload(objlog_producer *p, const char *bucket,
                                 const char *key, size_t key_len,
                                 const char *upload_id,
                                 const objlog_write_opts *opts,
                                 objlog_write_cb *cb, void *opaque,
                                 char *errstr, size_t errstr_size);

/* Synchronous wrappers: block until the write completes and fill *res.
 * Return 0 when the call completed (inspect res->status), -1 with errstr
 * when it was rejected up front. */
int objlog_producer_create_bucket_sync(objlog_producer *p, const char *bucket,
                                       const char *tenant,
                                       objlog_versioning versioning,
                                       const objlog_write_opts *opts,
                                       objlog_write_result *res, char *errstr,
                                       size_t errstr_size);
int objlog_producer_put_object_sync(objlog_producer *p, const char *bucket,
                                    const char *key, size_t key_len,
                                    const objlog_object_meta *meta,
                                    const objlog_write_opts *opts,
                                    objlog_write_result *res, char *errstr,
                                    size_t errstr_size);
int objlog_producer_delete_object_sync(objlog_producer *p, const char *bucket,
                                       const char *key, size_t key_len,
                                       const char *version_id,
                                       const objlog_write_opts *opts,
                                       objlog_write_result *res, char *errstr,
                                       size_t errstr_size);

int objlog_producer_create_bucket_ex_sync(objlog_producer *p,
                                          const char *bucket,
                                          const objlog_bucket_conf *conf,
                                          const objlog_write_opts *opts,
                                          objlog_write_result *res,
                                          char *errstr, size_t errstr_size);
int objlog_producer_set_versioning_sync(objlog_producer *p, const char *bucket,
                                        objlog_versioning v,
                                        const objlog_write_opts *opts,
                                        objlog_write_result *res, char *errstr,
                                        size_t errstr_size);
int objlog_producer_delete_bucket_sync(objlog_producer *p, const char *bucket,
                                       const objlog_write_opts *opts,
                                       objlog_write_result *res, char *errstr,
                                       size_t errstr_size);
int objlog_producer_create_upload_sync(objlog_producer *p, const char *bucket,
                                       const char *key, size_t key_len,
                                       const objlog_object_meta *meta,
                                       const objlog_write_opts *opts,
                                       objlog_write_result *res, char *errstr,
                                       size_t errstr_size);
int objlog_producer_upload_part_sync(objlog_producer *p, const char *bucket,
                                     const char *key, size_t key_len,
                                     const char *upload_id,
                                     uint32_t part_number, uint64_t size,
                                     const char *etag, const char *blob_id,
                                     const objlog_write_opts *opts,
                                     objlog_write_result *res, char *errstr,
                                     size_t errstr_size);
int objlog_producer_complete_upload_sync(objlog_producer *p,
                                         const char *bucket, const char *key,
                                         size_t key_len, const char *upload_id,
                                         const objlog_completed_part *parts,
                                         size_t n_parts,
                                         const objlog_write_opts *opts,
                                         objlog_write_result *res,
                                         char *errstr, size_t errstr_size);
int objlog_producer_abort_upload_sync(objlog_producer *p, const char *bucket,
                                      const char *key, size_t key_len,
                                      const char *upload_id,
                                      const objlog_write_opts *opts,
                                      objlog_write_result *res, char *errstr,
                                      size_t errstr_size);

/* Counters since objlog_producer_new, for benchmarks and monitoring. */
typedef struct objlog_producer_stats {
    uint64_t writes_completed;   /* callbacks run, any status */
    uint64_t outcome_requests;   /* HTTP requests made for outcomes */
    uint64_t unknown_retries;    /* re-produces done for unknown.retries */
    uint64_t kafka_queue;        /* messages librdkafka holds that the log
                                    has not acknowledged yet (now) */
    uint64_t wrong_range_resends; /* ack=applied: writes a partition answered
                                    WrongRange (its range had moved) sent
                                    again, same request id, by the newer map */
} objlog_producer_stats;
void objlog_producer_stats_get(objlog_producer *p,
                               objlog_producer_stats *stats);

const char *objlog_status_name(objlog_status s);

/* Sets a bucket's quota (SetQuota event; 0 = no limit). The state machine
 * then refuses a PUT or CompleteUpload that would take the bucket's live
 * usage above it with OBJLOG_QUOTA_EXCEEDED; usage already above a lowered
 * quota stays. */
int objlog_producer_set_quota(objlog_producer *p, const char *bucket,
                              uint64_t max_bytes, uint64_t max_objects,
                              const objlog_write_opts *opts,
                              objlog_write_cb *cb, void *opaque,
                              char *errstr, size_t errstr_size);
int objlog_producer_set_quota_sync(objlog_producer *p, const char *bucket,
                                   uint64_t max_bytes, uint64_t max_objects,
                                   const objlog_write_opts *opts,
                                   objlog_write_result *res, char *errstr,
                                   size_t errstr_size);

/* Attribute indexes: PutIndex declares index `name` of the
 * bucket on `field` ("user_metadata.KEY", "tag.KEY", "content_type",
 * "storage_class"), composite with last-modified if with_last_modified;
 * DropIndex removes it and its rows; BuildIndex advances a building
 * index's backfill by up to max_keys objects (0: the state machine's
 * default). Names and fields are checked by the state machine
 * (InvalidArgument); errstr here only for a missing name or field. */
int objlog_producer_put_index(objlog_producer *p, const char *bucket, const char *name,
                              const char *field, int with_last_modified,
                              const objlog_write_opts *opts, objlog_write_cb *cb,
                              void *opaque, char *errstr, size_t errstr_size);
int objlog_producer_drop_index(objlog_producer *p, const char *bucket, const char *name,
                               const objlog_write_opts *opts, objlog_write_cb *cb,
                               void *opaque, char *errstr, size_t errstr_size);
int objlog_producer_build_index(objlog_producer *p, const char *bucket, const char *name,
                                uint32_t max_keys, const objlog_write_opts *opts,
                                objlog_write_cb *cb, void *opaque, char *errstr,
                                size_t errstr_size);

/* A bucket's request-rate limit, enforced before the
 * log by objlogd's JSON API and S3 endpoint (503 SlowDown, Retry-After)
 * and, with admission=on, by this library for its own writes. rps: every
 * request of the bucket per second; write_rps: writes, on top of it; 0 =
 * no limit for that class (even when objlogd has a default). burst: the
 * token bucket's depth, 0 = max(rps, 1). Each figure at most 1,000,000; a
 * burst without its rate is refused (InvalidArgument). */
typedef struct objlog_rate_limit {
    uint32_t rps;
    uint32_t burst;
    uint32_t write_rps;
    uint32_t write_burst;
} objlog_rate_limit;

/* SetRateLimit event, or with limit NULL DeleteRateLimit (the bucket
 * returns to objlogd's --rate-limit-bucket default). */
int objlog_producer_set_rate_limit(objlog_producer *p, const char *bucket,
                                   const objlog_rate_limit *limit,
                                   const objlog_write_opts *opts,
                                   objlog_write_cb *cb, void *opaque,
                                   char *errstr, size_t errstr_size);
int objlog_producer_set_rate_limit_sync(objlog_producer *p, const char *bucket,
                                        const objlog_rate_limit *limit,
                                        const objlog_write_opts *opts,
                                        objlog_write_result *res, char *errstr,
                                        size_t errstr_size);

#ifdef __cplusplus
}
#endif
#endif
