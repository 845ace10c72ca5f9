/* read.c: the fenced read path every API shares (docs/ARCHITECTURE.md,
 * "Reads"): which partitions a read touches, their fence, the one
 * snapshot opened after it, the checks and pages that the JSON routes
 * (api/reads.c) and the S3 endpoint (s3/) make alike, and the errors a
 * view's answers become. The answers' shapes are each API's; the reading
 * itself is view.c's.
 *
 * Invariant: every read first passes its fence (fence.c), then reads from
 * ONE view (one RocksDB snapshot) opened after the fence, so the answer
 * reflects at least the positions it reports in X-Objlog-Applied. */
#define _GNU_SOURCE
#include "core.h"
#include "read.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keycodec.h"

#define READ_MAX_PARTS 256

/* ------------------------------------------------------------- plumbing */

void read_reply_rc(http_ctx *c, view_rc rc, const char *bucket, const char *errstr) {
    switch (rc) {
    case VIEW_NO_SUCH_BUCKET:
        http_reply_error(c, 404, "NoSuchBucket", "bucket %s does not exist", bucket);
        break;
    case VIEW_NO_SUCH_KEY:
        http_reply_error(c, 404, "NoSuchKey", "the key does not exist");
        break;
    case VIEW_NO_SUCH_VERSION:
        http_reply_error(c, 404, "NoSuchVersion", "no such version of this key");
        break;
    case VIEW_NO_SUCH_UPLOAD:
        http_reply_error(c, 404, "NoSuchUpload",
                         "the upload does not exist (aborted or completed?)");
        break;
    case VIEW_INVALID_ARGUMENT:
        http_reply_error(c, 400, "InvalidArgument", "invalid version id or marker");
        break;
    default:
        http_reply_error(c, 500, "InternalError", "%s",
                         errstr && *errstr ? errstr : "store read failed");
        break;
    }
}

view *read_fenced_view(http_ctx *c, const int32_t *parts, int n) {
    int64_t applied[READ_MAX_PARTS];
    if (fence_wait(c, parts, n, applied) != 0)
        return NULL;
    fence_applied_header(c, parts, n, applied);
    view *v = view_open(c->q->store);
    if (!v)
        http_reply_error(c, 500, "InternalError", "out of memory");
    return v;
}

/* The partition of route_key(b, k) (k "" for bucket-level reads). */
int read_key_partition(http_ctx *c, const char *bucket, const uint8_t *key, size_t kn,
                       int32_t *part) {
    keybuf rk;
    keybuf_init(&rk);
    if (keycodec_route_key(&rk, bucket, strlen(bucket), key, kn) < 0) {
        keybuf_free(&rk);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    *part = rangemap_partition(objlog_materializer_rangemap(c->q->m), rk.data, rk.len);
    keybuf_free(&rk);
    return 0;
}

int read_bucket_record(http_ctx *c, const char *bucket, view_bucket *b) {
    int32_t part;
    if (read_key_partition(c, bucket, (const uint8_t *)"", 0, &part) < 0)
        return -1;
    view *v = read_fenced_view(c, &part, 1);
    if (!v)
        return -1;
    char err[256];
    view_rc rc = view_get_bucket(v, bucket, b, err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, bucket, err);
        return -1;
    }
    return 0;
}

/* Partitions whose ranges intersect [lo, hi). */
static int read_range_partitions(const rangemap *rm, const keybuf *lo,
                                 const keybuf *hi, int32_t *parts) {
    int n = 0;
    for (int i = 0; i < rangemap_count(rm); i++) {
        const uint8_t *s, *e;
        size_t sl, el;
        int p;
        rangemap_entry(rm, i, &s, &sl, &e, &el, &p);
        size_t m1 = sl < hi->len ? sl : hi->len;
        int s_lt_hi = memcmp(s, hi->data, m1) < 0 ||
                      (memcmp(s, hi->data, m1) == 0 && sl < hi->len);
        size_t m2 = e ? (el < lo->len ? el : lo->len) : 0;
        int e_gt_lo = !e || memcmp(e, lo->data, m2) > 0 ||
                      (memcmp(e, lo->data, m2) == 0 && el > lo->len);
        if (!s_lt_hi || !e_gt_lo)
            continue;
        int dup = 0;
        for (int j = 0; j < n; j++)
            dup |= parts[j] == p;
        if (!dup && n < READ_MAX_PARTS)
            parts[n++] = p;
    }
    return n;
}

/* Fence + snapshot for a listing under prefix p of bucket. */
view *read_prefix_view(http_ctx *c, const char *bucket, const char *p, size_t pn) {
    keybuf lo, hi;
    keybuf_init(&lo);
    keybuf_init(&hi);
    int32_t parts[READ_MAX_PARTS];
    int np = -1;
    if (keycodec_prefix_start(&lo, bucket, strlen(bucket), (const uint8_t *)p, pn) == 0 &&
        keybuf_append(&hi, lo.data, lo.len) == 0 && keycodec_prefix_end(&hi) == 0)
        np = read_range_partitions(objlog_materializer_rangemap(c->q->m), &lo, &hi, parts);
    keybuf_free(&lo);
    keybuf_free(&hi);
    if (np < 0) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return NULL;
    }
    return read_fenced_view(c, parts, np);
}

int read_listing_text_ok(http_ctx *c) {
    static const char *const names[] = {"prefix", "delimiter", "start_after", "start-after",
                                        "marker", "key_marker", "key-marker"};
    for (int i = 0; i < c->nparams; i++)
        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
            const http_param *p = &c->params[i];
            if (strcmp(p->name, names[k]) != 0)
                continue;
            size_t n = strlen(p->value);
            if (keycodec_utf8_valid_len((const uint8_t *)p->value, n) != n) {
                http_reply_error(c, 400, "InvalidArgument",
                                 "%s must be UTF-8, as keys are (an answer echoes it)",
                                 p->name);
                return -1;
            }
        }
    return 0;
}

/* -------------------------------------- versions, uploads and parts pages */

int read_versions_page(http_ctx *c, const char *bucket, const view_versions_req *r,
                       view_versions *o) {
    memset(o, 0, sizeof(*o));
    if (read_listing_text_ok(c) < 0)
        return -1;
    if (r->version_id_marker && *r->version_id_marker && !r->key_marker_len) {
        http_reply_error(c, 400, "InvalidArgument",
                         "a version id marker cannot be given without a key marker");
        return -1;
    }
    view *v = read_prefix_view(c, bucket, (const char *)r->prefix, r->prefix_len);
    if (!v)
        return -1;
    char err[256];
    view_rc rc = view_list_versions(v, bucket, r, o, err, sizeof(err));
    view_close(v);
    if (rc == VIEW_OK)
        return 0;
    read_reply_rc(c, rc, bucket, err);
    view_versions_free(o);
    return -1;
}

int read_uploads_page(http_ctx *c, const char *bucket, const view_uploads_req *r,
                      view_uploads *o) {
    memset(o, 0, sizeof(*o));
    if (read_listing_text_ok(c) < 0)
        return -1;
    view *v = read_prefix_view(c, bucket, (const char *)r->prefix, r->prefix_len);
    if (!v)
        return -1;
    char err[256];
    view_rc rc = view_list_uploads(v, bucket, r, o, err, sizeof(err));
    view_close(v);
    if (rc == VIEW_OK)
        return 0;
    read_reply_rc(c, rc, bucket, err);
    view_uploads_free(o);
    return -1;
}

/* The LIST page both APIs answer from, their parameters already checked
 * (read_listing_text_ok): the fence, the listing and the error reply in
 * one place, as for versions and uploads. */
int read_list_page(http_ctx *c, const char *bucket, const view_list_req *r,
                   view_list *o) {
    memset(o, 0, sizeof(*o));
    view *v = read_prefix_view(c, bucket, (const char *)r->prefix, r->prefix_len);
    if (!v)
        return -1;
    char err[256];
    view_rc rc = view_list_objects(v, bucket, r, o, err, sizeof(err));
    view_close(v);
    if (rc == VIEW_OK)
        return 0;
    read_reply_rc(c, rc, bucket, err);
    view_list_free(o);
    return -1;
}

/* The required key= of an upload route; NULL after replying. */
const char *read_upload_key(http_ctx *c, size_t *kn) {
    const char *key = http_param_get(c, "key", kn);
    if (!key || !*kn) {
        http_reply_error(c, 400, "InvalidArgument",
                         "the upload's key is required as query parameter key=");
        return NULL;
    }
    if (*kn > HTTP_MAX_KEY_LEN) {
        http_reply_error(c, 400, "KeyTooLongError", "key is %zu bytes; the limit is %d",
                         *kn, HTTP_MAX_KEY_LEN);
        return NULL;
    }
    if (!http_utf8_valid((const uint8_t *)key, *kn)) {
        http_reply_error(c, 400, "InvalidArgument", "key is not valid UTF-8");
        return NULL;
    }
    return key;
}

int read_parts_page(http_ctx *c, const char *bucket, const uint8_t *key, size_t kn,
                    const char *upload_id, uint32_t marker, int max, view_parts *o) {
    memset(o, 0, sizeof(*o));
    int32_t part;
    if (read_key_partition(c, bucket, key, kn, &part) < 0)
        return -1;
    view *v = read_fenced_view(c, &part, 1);
    if (!v)
        return -1;
    char err[256];
    view_rc rc = view_list_parts(v, bucket, key, kn, upload_id, marker, max, o, err,
                                 sizeof(err));
    view_close(v);
    if (rc == VIEW_OK)
        return 0;
    read_reply_rc(c, rc, bucket, err);
    view_parts_free(o);
    return -1;
}
