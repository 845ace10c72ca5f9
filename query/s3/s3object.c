/* s3object.c: one object's operations on the S3 endpoint: GetObject and
 * HeadObject (the version's headers, S3's conditional requests, the
 * redirect to the blob store), PutObject and DeleteObject.
 *
 * Invariant: objlog keeps metadata, not bytes. A GET answers from the
 * version record only (a 307 to --s3-blob-url, or 501 without one); a PUT
 * derives the size, MD5 ETag and checksum from the body it was sent and
 * hands the gateway only those. Reads go through a fenced view of the
 * key's partition, writes through the gateway, as the JSON routes do. */
#define _GNU_SOURCE /* strptime, timegm */
#include "core.h"
#include "read.h"
#include "s3.h"
#include "server.h"
#include "write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>

static void s3_rfc1123(int64_t ms, char *out, size_t n) {
    time_t tt = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* S3's conditional GET/HEAD: 0 go on, else the status answered (304 or
 * 412). Times compare at whole seconds, as HTTP dates carry. */
static int s3_conditions(http_ctx *c, const view_version *v) {
    char quoted[160];
    s3_quoted_etag(v->etag, quoted, sizeof(quoted));
    const char *im = s3_header(c, "If-Match"), *inm = s3_header(c, "If-None-Match");
    int64_t ims = s3_http_date(s3_header(c, "If-Modified-Since"));
    int64_t ius = s3_http_date(s3_header(c, "If-Unmodified-Since"));
    int64_t mod = v->last_modified_ms / 1000 * 1000;
    int match = im && (strcmp(im, "*") == 0 || strcmp(im, quoted) == 0 ||
                       strcmp(im, v->etag) == 0);
    if (im && !match)
        return 412;
    if (!im && ius >= 0 && mod > ius)
        return 412;
    int none = inm && (strcmp(inm, "*") == 0 || strcmp(inm, quoted) == 0 ||
                       strcmp(inm, v->etag) == 0);
    if (none)
        return 304;
    if (!inm && ims >= 0 && mod <= ims)
        return 304;
    return 0;
}

static void s3_object_headers(http_ctx *c, const view_version *v) {
    char quoted[160], date[64], size[32];
    const Objlog__ObjectMeta *m = v->record ? v->record->meta : NULL;
    s3_quoted_etag(v->etag, quoted, sizeof(quoted));
    s3_rfc1123(v->last_modified_ms, date, sizeof(date));
    snprintf(size, sizeof(size), "%" PRIu64, v->size);
    http_add_header(c, "ETag", quoted);
    http_add_header(c, "Last-Modified", date);
    http_add_header(c, "Content-Length", size);
    http_add_header(c, "Accept-Ranges", "bytes");
    if (strcmp(v->version_id, "null") != 0)
        http_add_header(c, "x-amz-version-id", v->version_id);
    if (strcmp(v->storage_class, "STANDARD") != 0)
        http_add_header(c, "x-amz-storage-class", v->storage_class);
    if (m && m->blob_id && *m->blob_id)
        http_add_header(c, "x-objlog-blob-id", m->blob_id);
    const char *mode = s3_header(c, "x-amz-checksum-mode"), *sv;
    char sn[48];
    if (m && mode && strcasecmp(mode, "ENABLED") == 0 &&
        s3_checksum_header(m->checksum, sn, sizeof(sn), &sv))
        http_add_header(c, sn, sv);
    for (size_t i = 0; m && i < m->n_user_metadata; i++) {
        char name[300];
        snprintf(name, sizeof(name), "x-amz-meta-%s", m->user_metadata[i]->name);
        http_add_header(c, name, m->user_metadata[i]->value);
    }
    if (m && m->n_tags) {
        char count[24];
        snprintf(count, sizeof(count), "%zu", m->n_tags);
        http_add_header(c, "x-amz-tagging-count", count);
    }
}

/* {bucket}, {key}, {version_id} and {blob_id} of the template, each
 * percent-encoded; NULL out of memory. */
static char *s3_blob_location(const char *tmpl, const char *bucket, const view_version *v) {
    const Objlog__ObjectMeta *m = v->record ? v->record->meta : NULL;
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return NULL;
    for (const char *p = tmpl; *p;) {
        const char *val = NULL;
        size_t vn = 0, skip = 0;
        if (strncmp(p, "{bucket}", 8) == 0)
            val = bucket, vn = strlen(bucket), skip = 8;
        else if (strncmp(p, "{key}", 5) == 0)
            val = (const char *)v->key.data, vn = v->key.len, skip = 5;
        else if (strncmp(p, "{version_id}", 12) == 0)
            val = v->version_id, vn = strlen(v->version_id), skip = 12;
        else if (strncmp(p, "{blob_id}", 9) == 0)
            val = m && m->blob_id ? m->blob_id : "", vn = strlen(val), skip = 9;
        if (!skip) {
            evbuffer_add(b, p++, 1);
            continue;
        }
        char *enc = evhttp_uriencode(val, (ev_ssize_t)vn, 0);
        if (enc)
            evbuffer_add(b, enc, strlen(enc));
        free(enc);
        p += skip;
    }
    size_t n = evbuffer_get_length(b);
    char *out = malloc(n + 1);
    if (out) {
        evbuffer_remove(b, out, n);
        out[n] = '\0';
    }
    evbuffer_free(b);
    return out;
}

static void s3_object_read(http_ctx *c, const s3_request *r, int head) {
    int32_t part;
    if (read_key_partition(c, r->bucket, (const uint8_t *)r->key, r->key_len, &part) < 0)
        return;
    view *v = read_fenced_view(c, &part, 1);
    if (!v)
        return;
    const char *vid = http_param_get(c, "versionId", NULL);
    view_version ver;
    char err[256];
    view_rc rc = view_get_object(v, r->bucket, (const uint8_t *)r->key, r->key_len, vid, &ver,
                                 err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, r->bucket, err);
        return;
    }
    if (ver.delete_marker) {
        http_add_header(c, "x-amz-delete-marker", "true");
        http_add_header(c, "x-amz-version-id", ver.version_id);
        if (vid)
            http_reply_error(c, 405, "MethodNotAllowed",
                             "The specified method is not allowed against this resource.");
        else
            http_reply_error(c, 404, "NoSuchKey", "The specified key does not exist.");
        view_version_free(&ver);
        return;
    }
    int cond = s3_conditions(c, &ver);
    if (cond == 412) {
        http_reply_error(c, 412, "PreconditionFailed",
                         "At least one of the pre-conditions you specified did not hold");
    } else if (cond == 304) {
        char quoted[160];
        s3_quoted_etag(ver.etag, quoted, sizeof(quoted));
        http_add_header(c, "ETag", quoted);
        s3_reply_empty(c, 304);
    } else if (head) {
        const Objlog__ObjectMeta *m = ver.record ? ver.record->meta : NULL;
        s3_object_headers(c, &ver);
        s3_add_common(c);
        http_reply_buffer(c, 200, m && m->content_type && *m->content_type
                                      ? m->content_type : "binary/octet-stream", NULL);
    } else if (c->q->s3->blob_url) {
        char *loc = s3_blob_location(c->q->s3->blob_url, r->bucket, &ver);
        s3_object_headers(c, &ver);
        http_add_header(c, "Content-Length", "0");
        if (loc)
            http_add_header(c, "Location", loc);
        free(loc);
        s3_reply_empty(c, 307);
    } else {
        http_reply_error(c, 501, "NotImplemented",
                         "objlog keeps object metadata, not bytes: HEAD gives the object's "
                         "headers; objlogd --s3-blob-url makes GET redirect to the blob store");
    }
    view_version_free(&ver);
}

void s3_get_object(http_ctx *c, const s3_request *r) { s3_object_read(c, r, 0); }

void s3_head_object(http_ctx *c, const s3_request *r) { s3_object_read(c, r, 1); }

void s3_put_object(http_ctx *c, const s3_request *r) {
    unsigned char md5[16];
    if (s3_body_readable(c, r) < 0 || s3_body_md5(c, r, md5) < 0)
        return;
    char etag[33];
    for (int i = 0; i < 16; i++)
        snprintf(etag + 2 * i, 3, "%02x", md5[i]);
    objlog_user_meta um[S3_USER_META_MAX];
    char names[S3_USER_META_MAX][256]; /* 16 KB: the worker stack is 8 MB */
    objlog_object_meta meta;
    if (s3_object_meta(c, &meta, um, names) < 0)
        return;
    char sum[96], sum_header[48];
    int has_sum = s3_checksum(c, r->auth, r->body, r->body_len, sum, sizeof(sum), sum_header,
                              sizeof(sum_header));
    if (has_sum < 0)
        return;
    if (has_sum) /* S3 echoes it in the PutObject answer */
        http_add_header(c, sum_header, strchr(sum, ':') + 1);
    meta.size = r->body_len;
    meta.etag = etag;
    meta.checksum = has_sum ? sum : NULL;
    s3_tags tags;
    if (s3_tags_parse(c, &tags, &meta) == 0) {
        c->op = S3_OP_PUT_OBJECT;
        gateway_put_object_meta(c, r->bucket, (const uint8_t *)r->key, r->key_len, &meta);
    }
    s3_tags_free(&tags);
}

void s3_delete_object(http_ctx *c, const s3_request *r) {
    c->op = S3_OP_DELETE_OBJECT;
    gateway_delete_version(c, r->bucket, (const uint8_t *)r->key, r->key_len,
                           http_param_get(c, "versionId", NULL));
}
