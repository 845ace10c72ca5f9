/* s3blob.c: the S3 endpoint's bytes: a PutObject's or UploadPart's body
 * into the blob store (blob.h), and a GetObject's bytes out of it, from
 * the object's blob or, for a completed multipart upload, its parts'
 * blobs in order (no copy is ever made of them).
 *
 * Invariant: a write's blob is durable before its event is produced, and
 * its answer settles it (s3_blob_settle): kept when the write was applied
 * or its outcome is unknown (2xx, 5xx), dropped when it was refused
 * (4xx), so neither an acknowledged object loses its bytes nor a refused
 * write leaves its own. A CopyObject brings no bytes but pins its source's
 * blobs (blob_pin) before its event is produced, settled the same way, so
 * the collector cannot take them from under it (blob.h). Without a blob
 * store, a body is taken only where a frontend keeps the bytes
 * (--s3-blob-url) or there is none. */
#include "core.h"
#include "s3.h"
#include "server.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <openssl/evp.h>

#include "objlog_logger.h"

static void s3_blob_settle_one(http_ctx *c, int status, blob_put *p) {
    if (status >= 400 && status < 500) {
        blob_put_drop(p);
        return;
    }
    char err[512];
    if (blob_put_keep(p, err, sizeof(err)) < 0)
        objlog_logf(OBJLOG_LEVEL_ERR, "s3", "request %s: %s (the bytes stay pending until "
                    "objlogd restarts)", c->request_id, err);
}

static void s3_blob_settle(http_ctx *c, int status, void *arg) {
    s3_blob_settle_one(c, status, arg);
}

/* A copy's pins, settled together by its answer. */
typedef struct s3_pins {
    size_t n;
    blob_put *p[];
} s3_pins;

static void s3_pins_settle(http_ctx *c, int status, void *arg) {
    s3_pins *ps = arg;
    for (size_t i = 0; i < ps->n; i++)
        s3_blob_settle_one(c, status, ps->p[i]);
    free(ps);
}

/* The id a blob store would give the body (its SHA-256), for a frontend
 * that keeps the bytes itself and said no id of its own. */
static int s3_blob_name(http_ctx *c, const s3_request *r, char *id) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (!EVP_Digest(r->body, r->body_len, md, &n, EVP_sha256(), NULL)) {
        http_reply_error(c, 500, "InternalError", "SHA-256 failed");
        return -1;
    }
    for (unsigned i = 0; i < n; i++)
        snprintf(id + 2 * i, 3, "%02x", md[i]);
    return 0;
}

void s3_blob_settle_on_answer(http_ctx *c, blob_put *p) {
    c->on_answer = s3_blob_settle;
    c->on_answer_arg = p;
}

int s3_blob_store(http_ctx *c, const s3_request *r, char *id) {
    blobstore *bs = c->q->s3->blobs;
    id[0] = '\0';
    if (!bs) {
        if (r->body_len && c->q->s3->blob_url && !s3_header(c, "x-objlog-blob-id"))
            return s3_blob_name(c, r, id); /* the redirect's {blob_id} */
        if (r->body_len == 0 || c->q->s3->blob_url)
            return 0;
        http_reply_error(c, 501, "NotImplemented",
                         "this endpoint keeps no object bytes: start objlogd with --blob-dir "
                         "DIR (or --s3-blob-url TEMPLATE where a frontend keeps them)");
        return -1;
    }
    if (s3_header(c, "x-objlog-blob-id")) {
        http_reply_error(c, 400, "InvalidArgument",
                         "x-objlog-blob-id: this endpoint keeps the bytes and names each blob id "
                         "itself");
        return -1;
    }
    if (r->body_len == 0)
        return 0; /* nothing to keep: GET answers no bytes */
    char err[512];
    uint64_t size;
    blob_put *p = blob_put_begin(bs, err, sizeof(err));
    if (!p || blob_put_write(p, r->body, r->body_len, err, sizeof(err)) < 0 ||
        blob_put_finish(p, id, &size, err, sizeof(err)) < 0) {
        int full = errno == ENOSPC || errno == EDQUOT;
        blob_put_drop(p);
        id[0] = '\0';
        objlog_logf(OBJLOG_LEVEL_ERR, "s3", "request %s: %s", c->request_id, err);
        if (full) /* S3's SlowDown (s3_error_code): retry once there is room */
            http_reply_error(c, 507, "InsufficientStorage", "the disk under %s is full, the "
                             "bytes were not kept and nothing was written: %s",
                             blobstore_dir(bs), err);
        else
            http_reply_error(c, 500, "InternalError", "the blob store could not keep the "
                             "bytes: %s", err);
        return -1;
    }
    s3_blob_settle_on_answer(c, p);
    return 0;
}

int s3_blob_pin_copy(http_ctx *c, const view_version *v) {
    blobstore *bs = c->q->s3->blobs;
    const Objlog__ObjectMeta *m = v->record ? v->record->meta : NULL;
    if (!bs || !m)
        return 0;
    size_t n = m->n_parts ? m->n_parts : 1;
    s3_pins *ps = calloc(1, sizeof(*ps) + n * sizeof(ps->p[0]));
    if (!ps) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const char *id = m->n_parts ? m->parts[i]->blob_id : m->blob_id;
        char err[512];
        blob_put *p = NULL;
        /* an id not of this store's (a frontend's): nothing here to hold */
        int rc = blob_id_valid(id) ? blob_pin(bs, id, &p, err, sizeof(err)) : 0;
        if (rc == 1) /* as GetObject answers a blob gone missing */
            snprintf(err, sizeof(err), "blob %s is missing from %s", id, blobstore_dir(bs));
        if (rc != 0) {
            objlog_logf(OBJLOG_LEVEL_ERR, "s3", "request %s: copy source: %s", c->request_id,
                        err);
            s3_pins_settle(c, 400, ps); /* drops the pins taken so far */
            http_reply_error(c, 500, "InternalError", "the source object's bytes cannot be "
                             "read: %s", err);
            return -1;
        }
        if (p)
            ps->p[ps->n++] = p;
    }
    if (!ps->n) {
        free(ps);
        return 0;
    }
    c->on_answer = s3_pins_settle;
    c->on_answer_arg = ps;
    return 0;
}

int s3_body_whole(http_ctx *c, const s3_request *r) {
    const char *cl = s3_header(c, "Content-Length");
    if (r->decoded || !cl || strtoull(cl, NULL, 10) == r->body_len)
        return 0;
    http_reply_error(c, 400, "IncompleteBody",
                     "You did not provide the number of bytes specified by the Content-Length "
                     "HTTP header");
    return -1;
}

/* "bytes=A-B", "bytes=A-" or "bytes=-N" against size: 1 with the range
 * (B cut to the end), 0 not a single range this parser reads (S3 then
 * serves the whole object), -1 unsatisfiable. */
static int s3_range_parse(const char *h, uint64_t size, uint64_t *off, uint64_t *len) {
    if (strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
        return 0;
    const char *p = h + 6, *dash = strchr(p, '-');
    if (!dash)
        return 0;
    char *end;
    if (dash == p) { /* the last N bytes */
        if (dash[1] < '0' || dash[1] > '9')
            return 0;
        unsigned long long n = strtoull(dash + 1, &end, 10);
        if (*end)
            return 0;
        if (n == 0 || size == 0)
            return -1;
        *len = n < size ? n : size;
        *off = size - *len;
        return 1;
    }
    if (*p < '0' || *p > '9')
        return 0;
    unsigned long long a = strtoull(p, &end, 10), b = UINT64_MAX;
    if (end != dash)
        return 0;
    if (dash[1]) {
        if (dash[1] < '0' || dash[1] > '9')
            return 0;
        b = strtoull(dash + 1, &end, 10);
        if (*end || b < a)
            return 0;
    }
    if (a >= size)
        return -1;
    *off = a;
    *len = (b >= size ? size - 1 : b) - a + 1;
    return 1;
}

int s3_blob_range(http_ctx *c, uint64_t size, uint64_t *off, uint64_t *len) {
    const char *h = s3_header(c, "Range");
    *off = 0;
    *len = size;
    if (!h)
        return 0;
    int rc = s3_range_parse(h, size, off, len);
    if (rc >= 0) {
        if (rc == 0)
            *off = 0, *len = size;
        return rc;
    }
    char cr[48];
    snprintf(cr, sizeof(cr), "bytes */%" PRIu64, size);
    http_add_header(c, "Content-Range", cr);
    http_reply_error(c, 416, "InvalidRange", "The requested range is not satisfiable");
    return -1;
}

/* One blob's [off, off + len) into out: 0, or -1 after replying. */
static int s3_blob_piece(http_ctx *c, blobstore *bs, const char *id, uint64_t off,
                         uint64_t len, struct evbuffer *out) {
    char err[512];
    int rc = blob_id_valid(id) ? blob_get(bs, id, off, len, out, err, sizeof(err)) : 2;
    if (rc == 0)
        return 0;
    if (rc == 2) {
        http_reply_error(c, 501, "NotImplemented",
                         "the object's bytes are not in this endpoint's blob store (it was "
                         "written where a frontend keeps them)");
        return -1;
    }
    if (rc == 1)
        snprintf(err, sizeof(err), "blob %s is missing from %s", id, blobstore_dir(bs));
    objlog_logf(OBJLOG_LEVEL_ERR, "s3", "request %s: %s", c->request_id, err);
    http_reply_error(c, 500, "InternalError", "the object's bytes cannot be read: %s", err);
    return -1;
}

int s3_blob_body(http_ctx *c, const view_version *v, uint64_t off, uint64_t len,
                 struct evbuffer *out) {
    blobstore *bs = c->q->s3->blobs;
    const Objlog__ObjectMeta *m = v->record ? v->record->meta : NULL;
    if (len == 0)
        return 0;
    if (!bs) {
        http_reply_error(c, 501, "NotImplemented",
                         "this endpoint keeps no object bytes: objlogd --blob-dir DIR keeps "
                         "them, --s3-blob-url TEMPLATE redirects to where a frontend keeps "
                         "them");
        return -1;
    }
    if (!m || m->n_parts == 0)
        return s3_blob_piece(c, bs, m ? m->blob_id : "", off, len, out);
    uint64_t at = 0; /* where the part starts in the object */
    for (size_t i = 0; i < m->n_parts && len; i++) {
        uint64_t ps = m->parts[i]->size;
        if (off < at + ps) {
            uint64_t from = off - at, n = ps - from < len ? ps - from : len;
            if (s3_blob_piece(c, bs, m->parts[i]->blob_id, from, n, out) < 0)
                return -1;
            off += n;
            len -= n;
        }
        at += ps;
    }
    if (len) {
        http_reply_error(c, 500, "InternalError", "the object's parts hold fewer bytes than "
                                                  "its size");
        return -1;
    }
    return 0;
}
