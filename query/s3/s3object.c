/* s3object.c: one object's operations on the S3 endpoint: GetObject and
 * HeadObject (the version's headers and system metadata, S3's conditional
 * requests, ranges, response-* overrides, the bytes from the blob store
 * or a redirect to where a frontend keeps them), PutObject and
 * DeleteObject.
 *
 * Invariant: the version record decides every answer; the bytes only
 * follow it (s3blob.c). A PUT derives the size, MD5 ETag and checksum from
 * the body it was sent, keeps the body in the blob store and hands the
 * gateway the metadata with the blob's id. Reads go through a fenced view
 * of the key's partition, writes through the gateway, as the JSON routes
 * do. */
#define _GNU_SOURCE /* strptime, timegm */
#include "core.h"
#include "read.h"
#include "s3.h"
#include "server.h"
#include "write.h"

#include <inttypes.h>
#include <stddef.h>
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

/* S3's system metadata: the header, the response-* parameter that
 * overrides it on a signed GET, and the stored field. */
typedef struct s3_sysmeta {
    const char *header, *param;
    size_t field;                /* offsetof in Objlog__ObjectMeta: char * */
} s3_sysmeta;
static const s3_sysmeta s3_sysmetas[] = {
    {"Cache-Control", "response-cache-control", offsetof(Objlog__ObjectMeta, cache_control)},
    {"Content-Disposition", "response-content-disposition",
     offsetof(Objlog__ObjectMeta, content_disposition)},
    {"Content-Encoding", "response-content-encoding",
     offsetof(Objlog__ObjectMeta, content_encoding)},
    {"Content-Language", "response-content-language",
     offsetof(Objlog__ObjectMeta, content_language)},
    {"Expires", "response-expires", offsetof(Objlog__ObjectMeta, expires)},
};

static const char *s3_sysmeta_value(const Objlog__ObjectMeta *m, const s3_sysmeta *s) {
    const char *v = m ? *(char *const *)((const char *)m + s->field) : NULL;
    return v && *v ? v : NULL;
}

/* The response-* parameters: S3 takes them on signed requests only
 * (presigned URLs, say): 0, or -1 after 400 InvalidRequest. */
static int s3_overrides_allowed(http_ctx *c) {
    int any = http_param_get(c, "response-content-type", NULL) != NULL;
    for (size_t i = 0; i < sizeof(s3_sysmetas) / sizeof(s3_sysmetas[0]); i++)
        any |= http_param_get(c, s3_sysmetas[i].param, NULL) != NULL;
    if (!any || !c->authz || *c->tenant)
        return 0;
    http_reply_error(c, 400, "InvalidRequest",
                     "Request specific response headers cannot be used for anonymous GET "
                     "requests.");
    return -1;
}

/* The object's Content-Type, as a response-content-type asks. */
static const char *s3_content_type(http_ctx *c, const view_version *v) {
    const Objlog__ObjectMeta *m = v->record ? v->record->meta : NULL;
    const char *o = http_param_get(c, "response-content-type", NULL);
    if (o)
        return o;
    return m && m->content_type && *m->content_type ? m->content_type : "binary/octet-stream";
}

/* The version's headers; Content-Length only for HEAD (a body's length
 * is evhttp's to write, once). */
static void s3_object_headers(http_ctx *c, const view_version *v, int with_length) {
    char quoted[160], date[64], size[32];
    const Objlog__ObjectMeta *m = v->record ? v->record->meta : NULL;
    s3_quoted_etag(v->etag, quoted, sizeof(quoted));
    s3_rfc1123(v->last_modified_ms, date, sizeof(date));
    http_add_header(c, "ETag", quoted);
    http_add_header(c, "Last-Modified", date);
    if (with_length) {
        snprintf(size, sizeof(size), "%" PRIu64, v->size);
        http_add_header(c, "Content-Length", size);
    }
    http_add_header(c, "Accept-Ranges", "bytes");
    if (strcmp(v->version_id, "null") != 0)
        http_add_header(c, "x-amz-version-id", v->version_id);
    if (strcmp(v->storage_class, "STANDARD") != 0)
        http_add_header(c, "x-amz-storage-class", v->storage_class);
    if (m && m->blob_id && *m->blob_id)
        http_add_header(c, "x-objlog-blob-id", m->blob_id);
    for (size_t i = 0; i < sizeof(s3_sysmetas) / sizeof(s3_sysmetas[0]); i++) {
        const char *val = http_param_get(c, s3_sysmetas[i].param, NULL);
        if (!val)
            val = s3_sysmeta_value(m, &s3_sysmetas[i]);
        if (val)
            http_add_header(c, s3_sysmetas[i].header, val);
    }
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

/* A value percent-encoded into a URL: unreserved characters and '/' as
 * they are (a key's folders stay a path), every other byte %XX. */
static void s3_location_encode(struct evbuffer *b, const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '/') {
            evbuffer_add(b, &ch, 1);
        } else {
            char out[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            evbuffer_add(b, out, 3);
        }
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
        s3_location_encode(b, val, vn);
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

/* GetObject's bytes, or the redirect to them. */
static void s3_object_bytes(http_ctx *c, const s3_request *r, const view_version *v) {
    if (!c->q->s3->blobs && c->q->s3->blob_url) {
        char *loc = s3_blob_location(c->q->s3->blob_url, r->bucket, v);
        if (!loc) {
            http_reply_error(c, 500, "InternalError", "out of memory");
            return;
        }
        s3_object_headers(c, v, 0); /* evhttp writes the one Content-Length: 0 */
        http_add_header(c, "Location", loc);
        free(loc);
        s3_reply_empty(c, 307);
        return;
    }
    uint64_t off, len;
    int partial = s3_blob_range(c, v->size, &off, &len);
    if (partial < 0)
        return; /* 416 answered */
    struct evbuffer *body = http_body_buffer(c);
    if (!body) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    if (s3_blob_body(c, v, off, len, body) < 0) {
        evbuffer_free(body);
        return;
    }
    s3_object_headers(c, v, 0);
    if (partial) {
        char cr[80];
        snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off, off + len - 1,
                 v->size);
        http_add_header(c, "Content-Range", cr);
    }
    http_reply_buffer(c, partial ? 206 : 200, s3_content_type(c, v), body);
}

static void s3_object_read(http_ctx *c, const s3_request *r, int head) {
    if (s3_overrides_allowed(c) < 0)
        return;
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
    /* A caller the bucket's ACL does not let list it learns nothing of
     * which keys exist (S3: 403 without s3:ListBucket). */
    if (rc != VIEW_OK && c->acl_object == 1 && rc != VIEW_NO_SUCH_BUCKET) {
        authz_deny(c);
        return;
    }
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, r->bucket, err);
        return;
    }
    if (!authz_object(c, ver.record->meta ? ver.record->meta->acl : NULL) ||
        (ver.delete_marker && c->acl_object == 1)) {
        view_version_free(&ver);
        authz_deny(c);
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
        char quoted[160], date[64];
        s3_quoted_etag(ver.etag, quoted, sizeof(quoted));
        s3_rfc1123(ver.last_modified_ms, date, sizeof(date));
        http_add_header(c, "ETag", quoted);
        http_add_header(c, "Last-Modified", date);
        s3_reply_empty(c, 304);
    } else if (head) {
        s3_object_headers(c, &ver, 1);
        http_reply_buffer(c, 200, s3_content_type(c, &ver), NULL);
    } else {
        s3_object_bytes(c, r, &ver);
    }
    view_version_free(&ver);
}

void s3_get_object(http_ctx *c, const s3_request *r) { s3_object_read(c, r, 0); }

void s3_head_object(http_ctx *c, const s3_request *r) { s3_object_read(c, r, 1); }

void s3_put_object(http_ctx *c, const s3_request *r) {
    unsigned char md5[16];
    http_stream *st = http_stream_of(c);
    if (st) {
        s3_stream_put_object(c, r, st);
        return;
    }
    if (s3_body_whole(c, r) < 0 || s3_body_readable(c, r) < 0 || s3_body_md5(c, r, md5) < 0)
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
    char blob_id[BLOB_ID_LEN + 1];
    if (s3_tags_parse(c, &tags, &meta) == 0 && s3_blob_store(c, r, blob_id) == 0) {
        if (*blob_id)
            meta.blob_id = blob_id;
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
