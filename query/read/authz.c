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
 * broker round trip on the write path), else the fenced record (sent on
 * whole to a node that applies it, or, for an API whose writes stay where
 * they arrived, asked of that node: cluster_ask_owner); the
 * window that leaves (the bucket deleted and re-created by another tenant
 * within the view's lag) can only let its previous owner's write through,
 * and the state machine still answers NoSuchBucket for a bucket that is
 * gone.
 *
 * A bucket's canned ACL (attrs.h; S3's x-amz-acl) lets callers who are
 * not its owner list it or write its objects (authz_bucket_acl), and a
 * version's lets them read that version (authz_object, checked by the
 * handler once it has read the version). An anonymous caller of an S3
 * endpoint without --s3-anonymous owns nothing and gets only that.
 *
 * Invariant: authz_bucket answers (403, or a fence's error) or returns 0;
 * it returns 0 without a read when authorization is off or the caller is
 * an admin. */
#include "core.h"
#include "attrs.h"
#include "cluster.h"
#include "read.h"
#include "server.h"

#include <string.h>

int authz_owner_ok(const http_ctx *c, const char *owner) {
    if (!c->authz || c->admin)
        return 1;
    return !c->anonymous && strcmp(owner ? owner : "", c->tenant) == 0;
}

/* 1 allowed, 0 denied; a read of an object by a non-owner is allowed
 * here and left to the version's ACL (c->acl_object). */
static int authz_grants(http_ctx *c, const char *owner, const char *acl, authz_need need) {
    if (authz_owner_ok(c, owner))
        return 1;
    int a = attrs_acl_parse(acl);
    switch (need) {
    case AUTHZ_LIST:
        return a >= 0 && attrs_acl_reads((attrs_acl)a, !c->anonymous);
    case AUTHZ_WRITE_OBJECT:
        return a >= 0 && attrs_acl_writes((attrs_acl)a);
    case AUTHZ_READ_OBJECT:
        /* 2: the bucket lets the caller see which keys exist, so a
         * missing one is 404 rather than 403 */
        c->acl_object = a >= 0 && attrs_acl_reads((attrs_acl)a, !c->anonymous) ? 2 : 1;
        return 1;
    case AUTHZ_OWNER:
        break;
    }
    return 0;
}

int authz_object(const http_ctx *c, const char *acl) {
    int a = attrs_acl_parse(acl);
    return !c->acl_object || (a >= 0 && attrs_acl_reads((attrs_acl)a, !c->anonymous));
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
    /* A write its API produces where it arrived: a node that applies the
     * bucket checks the owner, and the request runs again here. */
    if (write && c->q->cluster && !c->face->forward_writes &&
        cluster_ask_owner(c, bucket, part))
        return -1;
    int64_t applied;
    if (fence_wait(c, &part, 1, &applied) != 0)
        return -1;
    return authz_read(c, bucket, b);
}

int authz_bucket_acl(http_ctx *c, const char *bucket, int write, authz_need need) {
    c->acl_object = 0;
    if (!c->authz || c->admin)
        return 0;
    int ok;
    if (write && c->peer.known) { /* a peer's record (cluster_ask_owner) */
        ok = authz_grants(c, c->peer.tenant, c->peer.acl, need);
    } else {
        int32_t part;
        if (read_key_partition(c, bucket, (const uint8_t *)"", 0, &part) < 0)
            return -1;
        view_bucket b;
        int rc = authz_record(c, bucket, part, write, &b);
        if (rc != 0)
            return rc < 0 ? -1 : 0; /* no such bucket: the handler says so */
        ok = authz_grants(c, b.record->tenant, b.record->acl, need);
        view_bucket_free(&b);
    }
    if (ok)
        return 0;
    authz_deny(c);
    return -1;
}

int authz_bucket(http_ctx *c, const char *bucket, int write) {
    return authz_bucket_acl(c, bucket, write, AUTHZ_OWNER);
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
