/* read.h: the read path every API shares (query/read/): the fence a read
 * waits on (fence.c), the one snapshot it then reads and the checks and
 * pages the JSON routes and the S3 endpoint make alike (read.c), who may
 * act on a bucket (authz.c), and the continuation tokens of listings
 * (listtoken.c). The reading itself is view.h, which knows no HTTP (tests
 * call it directly); the answers' shapes are each API's.
 *
 * Invariant: an answer is read from one view opened after its fence is
 * met, so it reflects at least the offsets its X-Objlog-Applied reports.
 * A call that returns "after replying" has answered the request, or parked
 * it on its fence (its route runs again): the caller returns at once. */
#ifndef OBJLOG_QUERY_READ_H
#define OBJLOG_QUERY_READ_H

#include <stddef.h>
#include <stdint.h>

/* http_ctx; fence_rc and fence_result stay there, since http_ctx.fenced
 * and http_rerun carry them. */
#include "server.h"
#include "view.h"

/* ---- fence.c ---- */
/* Fence modes counted in metrics. */
enum { FENCE_STRONG = 0, FENCE_TOKEN = 1, FENCE_MODES = 2 };
typedef struct fence_req fence_req;

#define FENCE_PARKED 2
/* Makes the read consistent per consistency=/token= for the partitions it
 * will read, then fills applied[i] (next offset applied). 0 ready; -1 when
 * it already replied (400 bad token/consistency, 503 SlowDown);
 * FENCE_PARKED: the fence is not met yet, the handler must return at once
 * without replying, and its route runs again when the fence is met (this
 * then returns 0) or failed (this then replies 503 and returns -1). */
int fence_wait(http_ctx *c, const int32_t *parts, int nparts,
               int64_t *applied);
/* The wait of GET /v1/outcomes and /v1/writes/T: until partition p applied
 * the event at offset, bounded by timeout_ms. FENCE_PARKED (return at
 * once, replying nothing; the route runs again), else 0 applied, 1 not in
 * time, -1 the partition is stopped. Never replies. */
int fence_await_applied(http_ctx *c, int32_t p, int64_t offset, int timeout_ms);
/* For /v1/lag: until every partition's end offset was fetched after now
 * (or failed), at most timeout_ms. FENCE_PARKED (return at once; the
 * route runs again), else 0: wm_last_end holds the freshest ends known. */
int fence_await_ends(http_ctx *c, int timeout_ms);
/* The fences: their per-worker state (parked reads) in server slot
 * `slot`, and their counters for /metrics. */
typedef struct fence_state {
    int slot;
    struct fence_worker **workers; /* one a worker, from fence_new on */
    int nworkers;
    atomic_uint_fast64_t waits[FENCE_MODES];
    atomic_uint_fast64_t timeouts[FENCE_MODES];
} fence_state;
fence_state *fence_new(server *s, char *errstr, size_t errstr_size);
void fence_free(fence_state *f);
/* For objlog_materializer_set_progress_cb (arg: the objlog_query): wakes
 * every worker that has parked reads. */
void fence_notify(void *arg);
/* For wm_set_notify: the same, and an idle materializer is kicked when the
 * log's end is past what it applied (events it has not fetched). */
void fence_notify_end(void *arg, int32_t p, int64_t end);
/* The 503 SlowDown of a request that needs partition p to have applied
 * offset `need` when it has not (stopped: the partition is stopped, its
 * error is the message): X-Objlog-Applied, the lag, and "stopped" so that
 * a waiting client knows whether retrying can help. */
void fence_reply_behind(http_ctx *c, int32_t p, int64_t need, int stopped);
/* "p.next_p.next..." for X-Objlog-Applied. */
void fence_applied_header(http_ctx *c, const int32_t *parts, int nparts,
                          const int64_t *applied);

/* ---- read.c: the fenced read path every API shares ---- */
/* Replies for a view answer that is not VIEW_OK. */
void read_reply_rc(http_ctx *c, view_rc rc, const char *bucket, const char *errstr);
/* The partition of route_key(bucket, key) (key "" for the bucket's own
 * rows). 0, or -1 after replying. */
int read_key_partition(http_ctx *c, const char *bucket, const uint8_t *key, size_t kn,
                       int32_t *part);
/* A listing's prefix, delimiter and markers (either API's spelling) are
 * UTF-8, as keys are: 0, or -1 after 400 InvalidArgument (neither JSON
 * nor XML could echo another byte string). */
int read_listing_text_ok(http_ctx *c);
/* A view fenced on every partition a listing of bucket under prefix p may
 * touch; NULL after replying (or parking: the read is run again). */
view *read_prefix_view(http_ctx *c, const char *bucket, const char *p, size_t pn);
/* Fences the partitions, then opens the snapshot the answer comes from.
 * NULL when it already replied, or parked the read (fence.c: its route
 * runs again later). */
view *read_fenced_view(http_ctx *c, const int32_t *parts, int n);
/* The bucket's record, read at the fence of its partition: 0 with *b (the
 * caller frees it), or -1 after replying (404 NoSuchBucket) or parking. */
int read_bucket_record(http_ctx *c, const char *bucket, view_bucket *b);
/* The required key= query parameter of the upload routes (checked length);
 * NULL after replying 400. */
const char *read_upload_key(http_ctx *c, size_t *key_len);
/* The reads behind ListObjectVersions, ListMultipartUploads and ListParts,
 * shared by the JSON routes and the S3 endpoint (s3list.c), which differ
 * only in parameter names and the answer's shape: the checks both make,
 * the fence, one snapshot. 0 with *o filled (the caller frees it), or -1
 * after replying (or parking: the route runs again). */
int read_versions_page(http_ctx *c, const char *bucket, const view_versions_req *r,
                       view_versions *o);
int read_uploads_page(http_ctx *c, const char *bucket, const view_uploads_req *r,
                      view_uploads *o);
/* As above for LIST, whose callers check the text first (their own
 * parameter rules come before it). */
int read_list_page(http_ctx *c, const char *bucket, const view_list_req *r,
                   view_list *o);
int read_parts_page(http_ctx *c, const char *bucket, const uint8_t *key, size_t kn,
                    const char *upload_id, uint32_t marker, int max, view_parts *o);

/* ---- authz.c: a bucket's owner is the tenant in its record ---- */
/* 1 when the caller may act on a bucket whose record names owner. */
int authz_owner_ok(const http_ctx *c, const char *owner);
/* 403 AccessDenied, as S3 answers. */
void authz_deny(http_ctx *c);
/* 0 when the caller may act on bucket (or it does not exist: the handler
 * answers NoSuchBucket); -1 after answering 403, an error, or parking the
 * request on a fence (it runs again, as a parked read does). write: a
 * request that changes state (see authz.c for which view decides). */
int authz_bucket(http_ctx *c, const char *bucket, int write);
/* What a caller who is not the owner asks of a bucket, which its canned
 * ACL (attrs.h) may grant: nothing (OWNER), a listing, an object's read
 * (which the version's own ACL decides: the handler checks it, see
 * authz_object), an object's write. */
typedef enum authz_need { AUTHZ_OWNER, AUTHZ_LIST, AUTHZ_READ_OBJECT, AUTHZ_WRITE_OBJECT }
    authz_need;
/* authz_bucket with the bucket's ACL: an owner (or admin) always passes,
 * another caller (or an anonymous one) where the ACL grants need. */
int authz_bucket_acl(http_ctx *c, const char *bucket, int write, authz_need need);
/* After a read allowed as AUTHZ_READ_OBJECT: 1 when the version of ACL
 * acl may be read by the caller; else 0 (the handler answers 403). */
int authz_object(const http_ctx *c, const char *acl);
/* A bucket created by a tenant's caller is that tenant's: bc->tenant set
 * to it (naming another is 403), and no quota (the admin's). 0, or -1
 * after answering 403. */
int authz_create_bucket(http_ctx *c, objlog_bucket_conf *bc);

/* ---- listtoken.c ---- */
#define LISTTOKEN_KEY 0
#define LISTTOKEN_PREFIX 1
#define LISTTOKEN_INDEX 2   /* attribute index queries (ixread.c) only */
/* base64url(version, fnv64(bucket), kind, last, HMAC tag under key, the
 * store's token secret); caller frees; NULL out of memory. */
char *listtoken_encode(const uint8_t *key, const char *bucket, int kind,
                       const uint8_t *last, size_t last_len);
/* 0 and the decoded position (into *last, caller frees), -1 if forged,
 * edited, corrupt, from another store or from another bucket. */
int listtoken_decode(const uint8_t *key, const char *bucket, const char *text,
                     size_t text_len, int *kind, uint8_t **last, size_t *last_len);

/* Prefix usage tokens: where a /usage page stopped (view_usage_resume). */
#define USAGETOKEN_INVALID -1      /* corrupt, edited, forged, another store's, a LIST token */
#define USAGETOKEN_OTHER_BUCKET -2
#define USAGETOKEN_OTHER_SCOPE -3  /* issued for another prefix or delimiter */
/* Binds bucket, prefix and delimiter; caller frees. */
char *usagetoken_encode(const uint8_t *key, const char *bucket, const uint8_t *prefix,
                        size_t pn, const uint8_t *delim, size_t dn,
                        const view_usage_resume *r);
/* 0 with *r filled (r->after points to *after, which the caller frees), or
 * a USAGETOKEN_* code. */
int usagetoken_decode(const uint8_t *key, const char *bucket, const uint8_t *prefix,
                      size_t pn, const uint8_t *delim, size_t dn, const char *text,
                      size_t text_len, view_usage_resume *r, uint8_t **after);
/* LIST's token format with kind LISTTOKEN_INDEX: pos is opaque to it. */
char *indextoken_encode(const uint8_t *key, const char *bucket, const uint8_t *pos,
                        size_t pos_len);
int indextoken_decode(const uint8_t *key, const char *bucket, const char *text,
                      size_t text_len, uint8_t **pos, size_t *pos_len);


/* ---- bucketscan.c: the bucket records by name, for every API ---- */
typedef struct bucket_query {
    const char *prefix, *tenant, *after; /* NULL: none */
    size_t prefix_len;
    /* A cluster node asked by another (cluster_buckets): only buckets of
     * these partitions. NULL: every partition. */
    const unsigned char *only;
    const rangemap *rm;
} bucket_query;
/* One listed bucket; record owned. */
typedef struct bucket_row {
    Objlog__BucketRecord *r;
} bucket_row;

typedef struct bucket_page {
    bucket_row *rows;            /* sorted by name, at most max + 1 */
    size_t n, max;               /* max: max_buckets + 1 (tells truncation) */
} bucket_page;

/* Every bucket row of s that q wants into p (at most p->max, by name):
 * 0, or -1 with err. */
int buckets_scan(objlog_store *s, const bucket_query *q, bucket_page *p, char *err,
                 size_t es);
/* The first max buckets q wants (its tenant: every bucket for NULL or "";
 * its prefix and after) by name into *p, at the fence of every
 * partition: 0 (free it with buckets_page_free), or -1 after replying 500
 * or parking on the fence (which runs c again). */
int buckets_read_all(http_ctx *c, const bucket_query *q, size_t max, bucket_page *p);
void buckets_page_free(bucket_page *p);


#endif
