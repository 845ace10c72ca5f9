/* write.h: the gateway, objlogd's one way of writing (write/gateway.c):
 * a write becomes an event in the log and its request is answered with
 * the outcome the state machine stored for it. Its callers (the JSON
 * API's write routes, api/writes.c; the S3 endpoint; the lifecycle and
 * index APIs) parse their own requests and call these with typed values,
 * so every front end gets the same checks (ack=, timeout_ms=, request id,
 * preconditions, a full disk) and the same answers.
 *
 * Invariant: every write call answers c exactly once (a batch's write:
 * calls its sink exactly once), on c's worker thread, possibly after the
 * call has returned. */
#ifndef OBJLOG_QUERY_WRITE_H
#define OBJLOG_QUERY_WRITE_H

#include "server.h"
#include "objlog_producer.h"
#include "view.h"

typedef struct gateway gateway;

/* What a write's success answer may name (http_face.written: an API
 * that answers writes in its own shape). */
struct write_answer {
    const char *bucket;          /* "" unless the write kept it */
    const char *key;             /* NULL unless the write kept it */
    size_t key_len;
    const char *version_id;
    const char *etag;
    int delete_marker;
    const char *upload_id;
    int64_t log_time_ms;         /* the new version's LastModified; 0 unknown */
};

gateway *gateway_new(objlog_query *q, int waiters, char *errstr,
                     size_t errstr_size);
/* Joins the waiter threads once they have drained their queue. */
void gateway_destroy(gateway *g);
/* On worker w's thread as it stops: answers every request of w now (503,
 * retry with the same request id), so a stop never waits on the log. */
void gateway_expire_worker(gateway *g, http_worker *w);

/* The writes with their values parsed, for every front end (the JSON
 * routes, api/writes.c; the S3 endpoint, s3.c and s3write.c): same
 * checks, same replies (an S3 request's success answer is
 * s3_reply_written). */
void gateway_create_bucket(http_ctx *c, const char *bucket, const objlog_bucket_conf *bc);
void gateway_delete_bucket(http_ctx *c, const char *bucket);
void gateway_set_versioning(http_ctx *c, const char *bucket, objlog_versioning v);
/* SetQuota (0 = no limit) and SetRateLimit (l NULL: DeleteRateLimit). */
void gateway_set_quota(http_ctx *c, const char *bucket, uint64_t max_bytes,
                       uint64_t max_objects);
void gateway_set_rate_limit(http_ctx *c, const char *bucket, const objlog_rate_limit *l);
void gateway_delete_rate_limit(http_ctx *c, const char *bucket);
void gateway_put_object_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                             size_t key_len, const objlog_object_meta *meta);
/* CopyObject's write: as gateway_put_object_meta, the event naming its
 * source ("bucket/key[?versionId=V]") for the change feed. */
void gateway_copy_object_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                              size_t key_len, const objlog_object_meta *meta,
                              const char *source);
void gateway_delete_version(http_ctx *c, const char *bucket, const uint8_t *key,
                            size_t key_len, const char *version_id);

/* The multipart writes (the JSON routes parse their bodies into these;
 * the S3 endpoint, s3write.c, its XML). */
void gateway_create_upload_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                                size_t key_len, const objlog_object_meta *meta);
/* A part number "1".."10000" -> *out; -1 otherwise. */
int gateway_part_number(const char *s, uint32_t *out);
void gateway_upload_part_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                              size_t key_len, const char *upload_id, uint32_t part_number,
                              uint64_t size, const char *etag, const char *blob_id);
void gateway_complete_upload_parts(http_ctx *c, const char *bucket, const uint8_t *key,
                                   size_t key_len, const char *upload_id,
                                   const objlog_completed_part *parts, size_t n);
void gateway_abort_upload_key(http_ctx *c, const char *bucket, const uint8_t *key,
                              size_t key_len, const char *upload_id);

/* What one write of a batch came to: status 200 and its version, or the
 * status, code and message its own answer would have carried. */
typedef struct gateway_result {
    int status;
    const char *code;            /* "" when ok */
    const char *message;
    const char *version_id;
    const char *etag;
    int delete_marker;
} gateway_result;
/* Called on c's worker thread exactly once per item i (possibly before
 * gateway_delete_versions returns); res is valid during the call only. */
typedef void gateway_sink(void *arg, size_t i, const gateway_result *res);
typedef struct gateway_delete_item {
    const uint8_t *key;
    size_t key_len;
    const char *version_id;      /* NULL: the current version */
} gateway_delete_item;
/* One delete per item, each its own write with its own request id; their
 * outcomes go to sink, nothing is answered on c. 0 when every item was
 * issued (sink will be called n times), -1 after answering c (bad ack= or
 * timeout_ms=: nothing issued). */
int gateway_delete_versions(http_ctx *c, const char *bucket, const gateway_delete_item *items,
                            size_t n, gateway_sink *sink, void *arg);

/* Where an ack=applied write's time goes, stage by stage, over the writes
 * answered 200 from an applied outcome: log (the request to the log's
 * acknowledgement: the producer's linger and the brokers' round trip),
 * apply (that acknowledgement to the outcome applied here: the
 * consumer's fetch, the batch, the apply, a waiter thread's wake-up) and
 * answer (the outcome to the answer written: the worker's wake-up and the
 * HTTP write). Buckets as http_hist_bounds, per bucket (not cumulative);
 * slot HTTP_HIST_BUCKETS is +Inf. */
enum { GATEWAY_STAGE_LOG, GATEWAY_STAGE_APPLY, GATEWAY_STAGE_ANSWER, GATEWAY_STAGES };
typedef struct gateway_stage_hist {
    uint64_t count[HTTP_HIST_BUCKETS + 1];
    uint64_t sum_ns;
} gateway_stage_hist;
const char *gateway_stage_name(int stage);
void gateway_stage_get(gateway *g, int stage, gateway_stage_hist *out);

/* A prepared event (SetLifecycle: lcapi.c, s3lc.c) through the same
 * request path as every write: ack=, timeout_ms=, request id, the answer. */
void gateway_write_event(http_ctx *c, Objlog__Event *ev);

/* Attribute indexes: PutIndex (the name and field checked by the caller,
 * as the state machine will) and DropIndex. */
void gateway_create_index(http_ctx *c, const char *bucket, const char *name,
                          const char *field, int last_modified);
void gateway_drop_index(http_ctx *c, const char *bucket, const char *name);

#endif
