/* s3wire.c: S3's words on the wire, for every S3 handler: the answers
 * (XML documents, empty answers, errors, a write's success), the request
 * headers and parameters S3 defines (Content-MD5, x-amz-meta-*,
 * x-amz-tagging, encoding-type, max-*), and the dates and ETags as S3
 * writes them.
 *
 * Invariant: one answer path. Every S3 answer carries x-amz-request-id and
 * goes out through http_reply_buffer; an error is S3's XML Error document
 * in S3's own codes (s3_error_code), whichever file refused the request.
 * Helpers that refuse a request have answered it when they return -1. */
#define _GNU_SOURCE /* strptime, timegm */
#include "core.h"
#include "attrs.h"
#include "cluster.h"
#include "s3.h"
#include "server.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <openssl/evp.h>

/* --------------------------------------------------------------- answers */

void s3_add_common(http_ctx *c) {
    struct evkeyvalq *oh = evhttp_request_get_output_headers(c->req);
    if (!evhttp_find_header(oh, "x-amz-request-id"))
        evhttp_add_header(oh, "x-amz-request-id", c->request_id);
    /* which node answered, where several could (X-Objlog-Forwarded-By
     * names the one a forwarded request came through) */
    if (c->q->cluster && !evhttp_find_header(oh, "X-Objlog-Node"))
        evhttp_add_header(oh, "X-Objlog-Node", cluster_self(c->q->cluster));
}

void s3_reply_xml(http_ctx *c, int status, xmlw *x, const char *root) {
    xmlw_close(x, root);
    if (evhttp_request_get_command(c->req) == EVHTTP_REQ_HEAD)
        x->buf.len = 0;
    struct evbuffer *body = xmlw_take(x);
    if (!body && x->failed) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    s3_add_common(c);
    http_reply_buffer(c, status, "application/xml", body);
}

void s3_reply_empty(http_ctx *c, int status) {
    s3_add_common(c);
    http_reply_buffer(c, status, "application/xml", NULL);
}

/* A store that cannot write is 507 InsufficientStorage on the JSON API;
 * S3 has no such code, its clients know 503 SlowDown and retry it with
 * backoff, and the message still names the disk. */
void s3_error_code(int *status, const char **code) {
    if (strcmp(*code, "InsufficientStorage") == 0) {
        *status = 503;
        *code = "SlowDown";
    }
}

void s3_reply_error(http_ctx *c, int status, const char *code, const char *request_id,
                    const char *message) {
    s3_error_code(&status, &code);
    struct evkeyvalq *oh = evhttp_request_get_output_headers(c->req);
    if (!evhttp_find_header(oh, "x-amz-request-id"))
        evhttp_add_header(oh, "x-amz-request-id", request_id);
    if (status == 503 && !evhttp_find_header(oh, "Retry-After"))
        evhttp_add_header(oh, "Retry-After", "1");
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(c->req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    xmlw x;
    if (xmlw_begin_bare(&x, "Error") < 0) {
        http_reply_buffer(c, status, "application/xml", NULL);
        return;
    }
    xmlw_str(&x, "Code", code);
    xmlw_str(&x, "Message", message);
    xmlw_str(&x, "Resource", path ? path : "/");
    xmlw_str(&x, "RequestId", request_id);
    xmlw_close(&x, "Error");
    if (evhttp_request_get_command(c->req) == EVHTTP_REQ_HEAD)
        x.buf.len = 0;
    http_reply_buffer(c, status, "application/xml", xmlw_take(&x));
}

void s3_quoted_etag(const char *etag, char *out, size_t n) {
    if (etag && etag[0] == '"')
        snprintf(out, n, "%s", etag);
    else
        snprintf(out, n, "\"%s\"", etag ? etag : "");
}

/* CompleteMultipartUpload's Location: the object's URL as addressed. */
static void s3_object_location(http_ctx *c, char *out, size_t n) {
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(c->req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *host = evhttp_find_header(evhttp_request_get_input_headers(c->req), "Host");
    snprintf(out, n, "http://%s%s", host ? host : "localhost", path ? path : "/");
}

void s3_reply_written(http_ctx *c, const struct write_answer *w) {
    char quoted[160];
    int versioned = w->version_id && *w->version_id && strcmp(w->version_id, "null") != 0;
    xmlw x;
    switch (c->op) {
    case S3_OP_CREATE_BUCKET: {
        const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(c->req);
        const char *path = uri ? evhttp_uri_get_path(uri) : "/";
        http_add_header(c, "Location", path && *path ? path : "/");
        s3_reply_empty(c, 200);
        return;
    }
    case S3_OP_PUT_OBJECT:
    case S3_OP_UPLOAD_PART:
        s3_quoted_etag(w->etag, quoted, sizeof(quoted));
        http_add_header(c, "ETag", quoted);
        if (versioned && c->op == S3_OP_PUT_OBJECT)
            http_add_header(c, "x-amz-version-id", w->version_id);
        s3_reply_empty(c, 200);
        return;
    case S3_OP_DELETE_OBJECT:
        if (w->delete_marker)
            http_add_header(c, "x-amz-delete-marker", "true");
        if (versioned)
            http_add_header(c, "x-amz-version-id", w->version_id);
        s3_reply_empty(c, 204);
        return;
    case S3_OP_DELETE_BUCKET:
    case S3_OP_ABORT_UPLOAD:
    case S3_OP_DELETE_LIFECYCLE:
        s3_reply_empty(c, 204);
        return;
    case S3_OP_PUT_TAGGING:
    case S3_OP_DELETE_TAGGING:
        /* a version's tags name it; a bucket's have no version */
        if (versioned)
            http_add_header(c, "x-amz-version-id", w->version_id);
        s3_reply_empty(c, c->op == S3_OP_PUT_TAGGING ? 200 : 204);
        return;
    case S3_OP_CREATE_UPLOAD:
        if (xmlw_begin(&x, "InitiateMultipartUploadResult") < 0)
            break;
        xmlw_str(&x, "Bucket", w->bucket);
        xmlw_bytes(&x, "Key", w->key ? w->key : "", w->key_len, 0);
        xmlw_str(&x, "UploadId", w->upload_id);
        s3_reply_xml(c, 200, &x, "InitiateMultipartUploadResult");
        return;
    case S3_OP_COMPLETE_UPLOAD: {
        char loc[1400];
        if (xmlw_begin(&x, "CompleteMultipartUploadResult") < 0)
            break;
        s3_object_location(c, loc, sizeof(loc));
        s3_quoted_etag(w->etag, quoted, sizeof(quoted));
        xmlw_str(&x, "Location", loc);
        xmlw_str(&x, "Bucket", w->bucket);
        xmlw_bytes(&x, "Key", w->key ? w->key : "", w->key_len, 0);
        xmlw_str(&x, "ETag", quoted);
        if (versioned)
            http_add_header(c, "x-amz-version-id", w->version_id);
        s3_reply_xml(c, 200, &x, "CompleteMultipartUploadResult");
        return;
    }
    case S3_OP_COPY_OBJECT:
        if (xmlw_begin(&x, "CopyObjectResult") < 0)
            break;
        s3_quoted_etag(w->etag, quoted, sizeof(quoted));
        xmlw_time(&x, "LastModified", w->log_time_ms ? w->log_time_ms
                                                     : (int64_t)time(NULL) * 1000);
        xmlw_str(&x, "ETag", quoted);
        if (versioned)
            http_add_header(c, "x-amz-version-id", w->version_id);
        s3_reply_xml(c, 200, &x, "CopyObjectResult");
        return;
    default:
        s3_reply_empty(c, 200);
        return;
    }
    http_reply_error(c, 500, "InternalError", "out of memory");
}

/* ------------------------------------------------ headers and parameters */

const char *s3_header(http_ctx *c, const char *name) {
    return evhttp_find_header(evhttp_request_get_input_headers(c->req), name);
}

void s3_owner_xml(xmlw *x, const char *tag, const char *owner) {
    xmlw_open(x, tag);
    xmlw_str(x, "ID", owner);
    xmlw_str(x, "DisplayName", owner);
    xmlw_close(x, tag);
}

int s3_bucket_owner(http_ctx *c, const char *bucket, char *out, size_t n) {
    view *v = view_open(c->q->store);
    if (!v) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    view_bucket b;
    char err[256];
    view_rc rc = view_get_bucket(v, bucket, &b, err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, bucket, err);
        return -1;
    }
    const char *t = b.record->tenant;
    snprintf(out, n, "%s", t && *t ? t : S3_NO_OWNER);
    view_bucket_free(&b);
    return 0;
}

int s3_max_param(http_ctx *c, const char *name, int *out) {
    long long v;
    if (http_param_int(c, name, 0, 2147483647LL, VIEW_MAX_KEYS, &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "Provided %s not an integer or within integer range", name);
        return -1;
    }
    *out = v > VIEW_MAX_KEYS ? VIEW_MAX_KEYS : (int)v;
    return 0;
}

int s3_encoding(http_ctx *c) {
    const char *e = http_param_get(c, "encoding-type", NULL);
    if (!e)
        return 0;
    if (strcmp(e, "url") == 0)
        return 1;
    http_reply_error(c, 400, "InvalidArgument", "Invalid Encoding Method specified in Request");
    return -1;
}

int64_t s3_http_date(const char *s) {
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = s ? strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm) : NULL;
    if (!end || *end)
        return -1;
    return (int64_t)timegm(&tm) * 1000;
}

int s3_check_content_md5(http_ctx *c, const unsigned char md5[16]) {
    const char *cm = s3_header(c, "Content-MD5");
    if (!cm)
        return 0;
    unsigned char want[64];
    size_t cl = strlen(cm);
    int wn = cl <= 44 ? EVP_DecodeBlock(want, (const unsigned char *)cm, (int)cl) : -1;
    /* EVP_DecodeBlock counts the padding's zero bytes: 16 bytes are 24
     * characters, "==" included, which decode to 18. */
    if (wn != 18 || cl != 24 || memcmp(want, md5, 16) != 0) {
        http_reply_error(c, 400, wn != 18 || cl != 24 ? "InvalidDigest" : "BadDigest",
                         "The Content-MD5 you specified did not match what was received.");
        return -1;
    }
    return 0;
}

int s3_user_meta(http_ctx *c, objlog_user_meta *um, size_t *n, char names[][256]) {
    struct evkeyvalq *ih = evhttp_request_get_input_headers(c->req);
    *n = 0;
    for (struct evkeyval *kv = ih->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strncasecmp(kv->key, "x-amz-meta-", 11) != 0)
            continue;
        if (*n == S3_USER_META_MAX || strlen(kv->key + 11) >= 256) {
            http_reply_error(c, 400, "MetadataTooLarge",
                             "Your metadata headers exceed the maximum allowed metadata size");
            return -1;
        }
        size_t i = 0;
        for (; kv->key[11 + i]; i++)
            names[*n][i] = (char)tolower((unsigned char)kv->key[11 + i]);
        names[*n][i] = '\0';
        um[*n].name = names[*n];
        um[*n].value = kv->value;
        (*n)++;
    }
    return 0;
}

/* Content-Encoding as the object keeps it: aws-chunked is how this
 * request's body was framed (SigV4 streaming), not the object's encoding,
 * so it goes from the list ("aws-chunked,gzip" keeps gzip; S3 does the
 * same). NULL when nothing is left. */
static const char *s3_content_encoding(http_ctx *c) {
    const char *v = s3_header(c, "Content-Encoding");
    if (!v || strncasecmp(v, "aws-chunked", 11) != 0)
        return v && *v ? v : NULL;
    v += 11;
    while (*v == ',' || *v == ' ')
        v++;
    return *v ? v : NULL;
}

int s3_acl_header(http_ctx *c, const char **acl) {
    static const char *const grants[] = {"x-amz-grant-read", "x-amz-grant-write",
                                         "x-amz-grant-read-acp", "x-amz-grant-write-acp",
                                         "x-amz-grant-full-control", NULL};
    for (int i = 0; grants[i]; i++) {
        if (s3_header(c, grants[i])) {
            http_reply_error(c, 501, "NotImplemented",
                             "%s: objlog keeps canned ACLs only (x-amz-acl)", grants[i]);
            return -1;
        }
    }
    *acl = s3_header(c, "x-amz-acl");
    if (!*acl || attrs_acl_parse(*acl) >= 0)
        return 0;
    http_reply_error(c, 400, "InvalidArgument", "%.64s is not a canned ACL (x-amz-acl)", *acl);
    return -1;
}

int s3_object_meta(http_ctx *c, objlog_object_meta *m, objlog_user_meta *um,
                   char names[][256]) {
    memset(m, 0, sizeof(*m));
    if (s3_acl_header(c, &m->acl) < 0)
        return -1;
    m->content_type = s3_header(c, "Content-Type");
    m->blob_id = s3_header(c, "x-objlog-blob-id");
    m->storage_class = s3_header(c, "x-amz-storage-class");
    m->cache_control = s3_header(c, "Cache-Control");
    m->content_disposition = s3_header(c, "Content-Disposition");
    m->content_encoding = s3_content_encoding(c);
    m->content_language = s3_header(c, "Content-Language");
    m->expires = s3_header(c, "Expires");
    m->user_meta = um;
    return s3_user_meta(c, um, &m->n_user_meta, names);
}

static int s3_tag_dup(http_ctx *c, s3_tags *tags, const char *s, size_t n) {
    char *raw = strndup(s, n);
    char *d = raw ? evhttp_uridecode(raw, 1, NULL) : NULL;
    free(raw);
    if (!d) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    tags->decoded[2 * tags->n + (tags->pairs[tags->n].name ? 1 : 0)] = d;
    return 0;
}

/* One "key=value" of x-amz-tagging into tags->pairs[tags->n]. */
static int s3_tag_one(http_ctx *c, s3_tags *tags, const char *s, size_t n) {
    const char *eq = memchr(s, '=', n);
    size_t kn = eq ? (size_t)(eq - s) : n;
    if (s3_tag_dup(c, tags, s, kn) < 0)
        return -1;
    objlog_user_meta *t = &tags->pairs[tags->n];
    t->name = tags->decoded[2 * tags->n];
    if (s3_tag_dup(c, tags, eq ? eq + 1 : s + n, eq ? n - kn - 1 : 0) < 0)
        return -1;
    t->value = tags->decoded[2 * tags->n + 1];
    if (!*t->name) {
        http_reply_error(c, 400, "InvalidTag", "The TagKey you have provided is invalid");
        return -1;
    }
    for (size_t j = 0; j < tags->n; j++) {
        if (!strcmp(tags->pairs[j].name, t->name)) {
            http_reply_error(c, 400, "InvalidTag",
                             "Cannot provide multiple Tags with the same key");
            return -1;
        }
    }
    tags->n++;
    return 0;
}

int s3_tags_parse(http_ctx *c, s3_tags *tags, objlog_object_meta *m) {
    memset(tags, 0, sizeof(*tags));
    m->tags = NULL;
    m->n_tags = 0;
    const char *h = s3_header(c, "x-amz-tagging");
    if (!h || !*h)
        return 0;
    for (const char *p = h;;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        if (tags->n == S3_TAGS_MAX) {
            http_reply_error(c, 400, "BadRequest", "Object tags cannot be greater than %d",
                             S3_TAGS_MAX);
            return -1;
        }
        if (s3_tag_one(c, tags, p, n) < 0)
            return -1;
        if (!amp)
            break;
        p = amp + 1;
    }
    m->tags = tags->pairs;
    m->n_tags = tags->n;
    return 0;
}

void s3_tags_free(s3_tags *tags) {
    for (size_t i = 0; i < 2 * S3_TAGS_MAX; i++)
        free(tags->decoded[i]);
}

/* ------------------------------------------------------------------ bodies */

int s3_body_md5(http_ctx *c, const s3_request *r, unsigned char md5[16]) {
    unsigned int n = 0;
    if (!EVP_Digest(r->body_len ? r->body : (const uint8_t *)"", r->body_len, md5, &n,
                    EVP_md5(), NULL)) {
        http_reply_error(c, 500, "InternalError", "MD5 failed");
        return -1;
    }
    return s3_check_content_md5(c, md5);
}

int s3_body_readable(http_ctx *c, const s3_request *r) {
    const char *sha = s3_header(c, "x-amz-content-sha256");
    if (r->decoded || !sha || strncmp(sha, "STREAMING-", 10) != 0)
        return 0;
    http_reply_error(c, 501, "NotImplemented",
                     "aws-chunked uploads need a signed request (objlogd --s3-credentials); "
                     "send the body whole");
    return -1;
}
