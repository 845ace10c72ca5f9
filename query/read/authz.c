/* authz.c: who may touch a bucket. A bucket belongs to the tenant that
 * created it: the tenant of its record, which the state machine wrote from
 * the CreateBucket event, so every replica and every replay agrees on the
 * owner. With authorization on (the endpoint checks credentials), a request
 * is allowed on a bucket only when its caller's tenant is the owner or the
 * caller has the admin role; anonymous callers are tenant "", owners of the
 * buckets created without a tenant. Otherwise 403 AccessDenied, as S3
 * answers, before anything is read or logged.
 *
 * Which view decides: a read checks the record at the same fence as the
 * read that follows (its own consistency, strong by default), so no read
 * answers from a bucket whose owner it has not seen. A write checks the
 * record this node has applied when it applies the bucket's partition (no
 * broker round trip on the write path), else the fenced record; the
 * window that leaves (the bucket deleted and re-created by another tenant
 * within the view's lag) can only let its previous owner's write through,
 * and the state machine still answers NoSuchBucket for a bucket that is
 * gone.
 *
 * Invariant: authz_bucket answers (403, or a fence's error) or returns 0;
 * it returns 0 without a read when authorization is off or the caller is
 * an admin. */
#include "core.h"
#include "read.h"
#include "server.h"

#include <string.h>

int authz_owner_ok(const http_ctx *c, const char *owner) {
    if (!c->authz || c->admin)
        return 1;
    return strcmp(owner ? owner : "", c->tenant) == 0;
}

void authz_deny(http_ctx *c) {
    http_reply_error(c, 403, "AccessDenied", "Access Denied");
}

/* The bucket's record from this node's store: 0 filled, 1 no such bucket,
 * -1 after replying. */
static int authz_read(http_ctx *c, const char *bucket, view_bucket *b) {
    view *v = view_open(c->q->store);
    if (!v) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    char err[256];
    view_rc rc = view_get_bucket(v, bucket, b, err, sizeof(err));
    view_close(v);
    if (rc == VIEW_OK)
        return 0;
    if (rc == VIEW_NO_SUCH_BUCKET)
        return 1;
    read_reply_rc(c, rc, bucket, err);
    return -1;
}

/* The record: for a write, as this node applied it when it applies the
 * partition and has the bucket; else at the request's fence (which may
 * park the request or send it to the node that applies the partition).
 * 0 filled, 1 no such bucket, -1 after replying or parking. */
static int authz_record(http_ctx *c, const char *bucket, int32_t part, int write,
                        view_bucket *b) {
    if (write && objlog_materializer_applies(c->q->m, part)) {
        int rc = authz_read(c, bucket, b);
        if (rc <= 0)
            return rc;
    }
    int64_t applied;
    if (fence_wait(c, &part, 1, &applied) != 0)
        return -1;
    return authz_read(c, bucket, b);
}

int authz_bucket(http_ctx *c, const char *bucket, int write) {
    if (!c->authz || c->admin)
        return 0;
    int32_t part;
    if (read_key_partition(c, bucket, (const uint8_t *)"", 0, &part) < 0)
        return -1;
    view_bucket b;
    int rc = authz_record(c, bucket, part, write, &b);
    if (rc != 0)
        return rc < 0 ? -1 : 0; /* no such bucket: the handler says so */
    int ok = authz_owner_ok(c, b.record->tenant);
    view_bucket_free(&b);
    if (ok)
        return 0;
    authz_deny(c);
    return -1;
}

int authz_create_bucket(http_ctx *c, objlog_bucket_conf *bc) {
    if (!c->authz || c->admin)
        return 0;
    if (bc->tenant && strcmp(bc->tenant, c->tenant) != 0) {
        http_reply_error(c, 403, "AccessDenied",
                         "a bucket belongs to its creator's tenant: leave tenant out, or "
                         "name your own");
        return -1;
    }
    if (bc->quota_max_bytes || bc->quota_max_objects) {
        http_reply_error(c, 403, "AccessDenied", "quotas are set by the admin role");
        return -1;
    }
    bc->tenant = *c->tenant ? c->tenant : NULL;
    return 0;
}
