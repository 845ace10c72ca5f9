/* s3.c: the S3 REST endpoint (`objlogd --s3-listen HOST:PORT`):
 * S3's wire format over the same views and gateway as the JSON API.
 *
 * Each HTTP worker runs a second evhttp on its own loop for the S3
 * listener; its connections are counted and limited with the JSON
 * listener's (conn.c). A request is addressed path-style (/BUCKET/KEY) or
 * virtual-hosted-style (Host: BUCKET.DOMAIN), authenticated, routed by
 * method, bucket, key and sub-resource to a handler, which reads through
 * read.c's fenced views or writes through gateway.c; errors take the one
 * error path (http_reply_error), which answers S3's XML when c->s3 is set.
 *
 * Invariant: the S3 handlers decide nothing the JSON handlers do not:
 * same fences (strong by default, as S3 is), same state machine outcomes;
 * only the parameter names, the answer's shape and S3's status codes for
 * successes differ. Every answer carries x-amz-request-id. */
#define _GNU_SOURCE /* strptime, timegm */
#include "internal.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <openssl/evp.h>

#include "keycodec.h"
#include "s3auth.h"
#include "secretfile.h"

/* A PutObject or UploadPart body is read whole to derive its size and
 * MD5: objlog keeps no bytes, but evhttp holds the body in memory. */
#define S3_MAX_BODY (64 * 1024 * 1024)
#define S3_MAX_KEYS_DEFAULT 1000

struct s3_conf {
    char region[64];
    char domain[256];            /* virtual-hosted style: BUCKET.domain */
    int anonymous;
    char *blob_url;              /* GetObject redirect template, NULL none */
    /* --s3-credentials; NULL: nothing verified. Swapped whole by
     * s3_conf_reload (SIGHUP) under the write lock; a request holds the
     * read lock only while it checks its signature. */
    s3creds *creds;
    char *creds_path;
    int creds_allow_open;
    pthread_rwlock_t creds_lock;
};

/* What a request addresses. */
typedef struct s3_target {
    char bucket[64];             /* "" for the service (ListBuckets) */
    char *key;                   /* decoded bytes, NUL-terminated; NULL none */
    size_t key_len;
    char resource[1100];         /* /bucket/key as sent, for error XML */
    char tenant[S3CREDS_MAX_TENANT_LEN + 1]; /* the signer's ("" anonymous) */
    int admin;                   /* the signer's key has the admin role */
    s3auth auth;                 /* how it was signed (creds only) */
    uint8_t *body;               /* an aws-chunked body, decoded; else NULL */
    size_t body_len;
} s3_target;

/* ------------------------------------------------------------- settings */

static void s3_creds_warn(const struct s3_conf *s);

int s3_conf_new(objlog_query *q, const objlog_query_conf *conf, char *errstr,
                size_t errstr_size) {
    struct s3_conf *s = calloc(1, sizeof(*s));
    q->s3_host = strdup(conf->s3_host);
    if (!s || !q->s3_host) {
        free(s);
        snprintf(errstr, errstr_size, "s3: out of memory");
        return -1;
    }
    q->s3 = s;
    q->s3_port = conf->s3_port;
    snprintf(s->region, sizeof(s->region), "%s",
             conf->s3_region && *conf->s3_region ? conf->s3_region : "us-east-1");
    snprintf(s->domain, sizeof(s->domain), "%s",
             conf->s3_domain && *conf->s3_domain ? conf->s3_domain : "localhost");
    s->anonymous = conf->s3_anonymous;
    pthread_rwlock_init(&s->creds_lock, NULL);
    if ((conf->s3_blob_url && !(s->blob_url = strdup(conf->s3_blob_url))) ||
        (conf->s3_credentials && !(s->creds_path = strdup(conf->s3_credentials)))) {
        snprintf(errstr, errstr_size, "s3: out of memory");
        return -1;
    }
    s->creds_allow_open = conf->insecure;
    if (conf->s3_credentials &&
        !(s->creds = s3creds_load(conf->s3_credentials, conf->insecure, errstr, errstr_size)))
        return -1;
    s3_creds_warn(s);
    return 0;
}

static void s3_creds_warn(const struct s3_conf *s) {
    char msg[600];
    if (secretfile_open_warning(s->creds_path, s3creds_open_mode(s->creds), msg, sizeof(msg)))
        objlog_logf(OBJLOG_LEVEL_WARNING, "s3", "%s", msg);
}

int s3_conf_reload(objlog_query *q, char *errstr, size_t errstr_size) {
    struct s3_conf *s = q->s3;
    if (!s || !s->creds_path)
        return 0;
    s3creds *n = s3creds_load(s->creds_path, s->creds_allow_open, errstr, errstr_size);
    if (!n)
        return -1; /* the keys in force stay */
    pthread_rwlock_wrlock(&s->creds_lock);
    s3creds *old = s->creds;
    s->creds = n;
    pthread_rwlock_unlock(&s->creds_lock);
    s3creds_free(old);
    s3_creds_warn(s);
    snprintf(errstr, errstr_size, "%s: %zu keys", s->creds_path, s3creds_count(n));
    return 0;
}

void s3_conf_free(objlog_query *q) {
    if (q->s3) {
        free(q->s3->blob_url);
        free(q->s3->creds_path);
        s3creds_free(q->s3->creds);
        pthread_rwlock_destroy(&q->s3->creds_lock);
    }
    free(q->s3);
    q->s3 = NULL;
    free(q->s3_host);
    q->s3_host = NULL;
}

/* --------------------------------------------------------------- answers */

static void s3_add_common(http_ctx *c) {
    struct evkeyvalq *oh = evhttp_request_get_output_headers(c->req);
    if (!evhttp_find_header(oh, "x-amz-request-id"))
        evhttp_add_header(oh, "x-amz-request-id", c->request_id);
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

/* An answer with no body (204s, HEAD, PutObject's 200). */
static void s3_reply_empty(http_ctx *c, int status) {
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

static void s3_quoted_etag(const char *etag, char *out, size_t n) {
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

void s3_reply_written(http_ctx *c, const s3_written *w) {
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

/* ------------------------------------------------------------ addressing */

const char *s3_header(http_ctx *c, const char *name) {
    return evhttp_find_header(evhttp_request_get_input_headers(c->req), name);
}

/* The bucket label of a virtual-hosted-style Host (BUCKET.DOMAIN[:port]):
 * where it starts in host and its length, whatever that is (the caller
 * judges it: cutting it to a bucket's 63 characters addressed another
 * bucket); 0 when Host names no bucket (path style). */
static int s3_host_bucket(const struct s3_conf *s, const char *host, const char **label,
                          size_t *n) {
    if (!host)
        return 0;
    size_t hl = strcspn(host, ":"), dl = strlen(s->domain);
    if (hl <= dl + 1 || host[hl - dl - 1] != '.' ||
        strncasecmp(host + hl - dl, s->domain, dl) != 0)
        return 0;
    *label = host;
    *n = hl - dl - 1;
    return 1;
}

/* Bucket and key of the request; -1 after replying. */
static int s3_address(http_ctx *c, const char *path, s3_target *t) {
    const char *rest = path[0] == '/' ? path + 1 : path;
    const char *label;
    size_t bl;
    snprintf(t->resource, sizeof(t->resource), "%s", path);
    int hosted = s3_host_bucket(c->q->s3, s3_header(c, "Host"), &label, &bl);
    if (!hosted) {
        label = rest;
        bl = strcspn(rest, "/");
        rest += bl;
        if (*rest == '/')
            rest++;
    }
    if (bl >= sizeof(t->bucket)) {
        http_bucket_name_ok(c, label, bl); /* 400: longer than 63 */
        return -1;
    }
    for (size_t i = 0; i < bl; i++) /* a host name's case is not its own */
        t->bucket[i] = hosted ? (char)tolower((unsigned char)label[i]) : label[i];
    t->bucket[bl] = '\0';
    if (t->bucket[0] && !http_bucket_name_ok(c, t->bucket, bl))
        return -1;
    if (!*rest)
        return 0;
    t->key = evhttp_uridecode(rest, 0, &t->key_len);
    if (!t->key) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    if (t->key_len > 1024 || keycodec_utf8_valid_len((const uint8_t *)t->key, t->key_len) !=
                                 t->key_len) {
        http_reply_error(c, 400, t->key_len > 1024 ? "KeyTooLongError" : "InvalidURI",
                         t->key_len > 1024 ? "keys are at most 1024 bytes"
                                           : "keys are UTF-8");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- auth */

static const char *s3_method_name(enum evhttp_cmd_type cmd) {
    switch (cmd) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_HEAD: return "HEAD";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_OPTIONS: return "OPTIONS";
    default: return "OTHER";
    }
}

/* The body as signed: a SIGNED payload's hash checked, an aws-chunked one
 * decoded (every chunk signature checked) into t->body. 0, or -1 after
 * replying. */
static int s3_auth_body(http_ctx *c, s3_target *t) {
    struct evbuffer *in = evhttp_request_get_input_buffer(c->req);
    size_t n = evbuffer_get_length(in);
    const uint8_t *data = n ? evbuffer_pullup(in, -1) : (const uint8_t *)"";
    s3auth *a = &t->auth;
    int rc = 0;
    if (a->payload == S3AUTH_PAYLOAD_SIGNED)
        rc = s3auth_check_payload(a, data, n);
    else if (a->payload != S3AUTH_PAYLOAD_UNSIGNED)
        rc = s3auth_decode_chunked(a, data, n, &t->body, &t->body_len);
    if (rc < 0)
        http_reply_error(c, a->status, a->code, "%s", a->message);
    return rc;
}

/* Who signed the request: 0 with t->tenant set, or -1 after replying.
 * Without --s3-credentials nothing is verified and every request is
 * anonymous (tenant ""): the endpoint must allow that (--s3-anonymous).
 * With them, Signature V4 (header or presigned query) is checked against
 * the key's secret over every header received (s3_run refused more than
 * S3_MAX_HEADERS), and the key's tenant and role are the caller's; an
 * unsigned request is anonymous only with --s3-anonymous. */
static int s3_authenticate(http_ctx *c, s3_target *t, size_t nheaders) {
    struct s3_conf *s = c->q->s3;
    t->tenant[0] = '\0';
    if (!s->creds)
        return 0; /* objlogd refuses --s3-listen without one or the other */
    struct evkeyvalq *ih = evhttp_request_get_input_headers(c->req);
    s3_kv hs[S3_MAX_HEADERS];
    size_t nh = 0;
    for (struct evkeyval *kv = ih->tqh_first; kv && nh < nheaders; kv = kv->next.tqe_next)
        hs[nh++] = (s3_kv){kv->key, kv->value};
    const char *uri = evhttp_request_get_uri(c->req);
    char *path = strdup(uri ? uri : "/");
    if (!path) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    char *q = strchr(path, '?');
    if (q)
        *q++ = '\0';
    s3auth_req r = {.method = s3_method_name(evhttp_request_get_command(c->req)),
                    .path = path, .query = q, .headers = hs, .nheaders = nh,
                    .now_s = (int64_t)time(NULL)};
    pthread_rwlock_rdlock(&s->creds_lock);
    s3auth_check(s->creds, s->region, s->anonymous, &r, &t->auth);
    if (t->auth.cred) { /* copied: a reload may free the keys */
        snprintf(t->tenant, sizeof(t->tenant), "%s", t->auth.cred->tenant);
        t->admin = t->auth.cred->admin;
        t->auth.cred = NULL;
    }
    pthread_rwlock_unlock(&s->creds_lock);
    free(path);
    if (t->auth.status) {
        http_reply_error(c, t->auth.status, t->auth.code, "%s", t->auth.message);
        return -1;
    }
    c->authz = 1;
    snprintf(c->tenant, sizeof(c->tenant), "%s", t->tenant);
    c->admin = t->admin;
    return s3_auth_body(c, t);
}

/* How many headers the request has; more than S3_MAX_HEADERS is answered
 * 400 (-1): no header may escape the signature check. */
static int s3_header_count(http_ctx *c, size_t *n) {
    struct evkeyvalq *ih = evhttp_request_get_input_headers(c->req);
    *n = 0;
    for (struct evkeyval *kv = ih->tqh_first; kv; kv = kv->next.tqe_next)
        (*n)++;
    if (*n <= S3_MAX_HEADERS)
        return 0;
    http_reply_error(c, 400, "RequestHeaderSectionTooLarge",
                     "Your request header section exceeds the maximum allowed size: %zu "
                     "headers, at most %d",
                     *n, S3_MAX_HEADERS);
    return -1;
}

/* ------------------------------------------------------------- buckets */

static const char *s3_versioning_name(Objlog__Versioning v) {
    switch (v) {
    case OBJLOG__VERSIONING__VERSIONING_ENABLED: return "Enabled";
    case OBJLOG__VERSIONING__VERSIONING_SUSPENDED: return "Suspended";
    default: return NULL;
    }
}

/* The bucket's record, fenced on its partition; NULL after replying. */
static int s3_bucket_record(http_ctx *c, const char *bucket, view_bucket *b) {
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

static void s3_head_bucket(http_ctx *c, const s3_target *t) {
    view_bucket b;
    if (s3_bucket_record(c, t->bucket, &b) < 0)
        return;
    view_bucket_free(&b);
    http_add_header(c, "x-amz-bucket-region", c->q->s3->region);
    s3_reply_empty(c, 200);
}

static void s3_get_location(http_ctx *c, const s3_target *t) {
    view_bucket b;
    if (s3_bucket_record(c, t->bucket, &b) < 0)
        return;
    view_bucket_free(&b);
    xmlw x;
    if (xmlw_begin(&x, "LocationConstraint") < 0) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    /* S3 answers an empty constraint for us-east-1. */
    if (strcmp(c->q->s3->region, "us-east-1") != 0)
        xmlw_raw_text(&x, c->q->s3->region);
    s3_reply_xml(c, 200, &x, "LocationConstraint");
}

static void s3_get_versioning(http_ctx *c, const s3_target *t) {
    view_bucket b;
    if (s3_bucket_record(c, t->bucket, &b) < 0)
        return;
    const char *st = s3_versioning_name(b.record->versioning);
    view_bucket_free(&b);
    xmlw x;
    if (xmlw_begin(&x, "VersioningConfiguration") < 0) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    if (st)
        xmlw_str(&x, "Status", st);
    s3_reply_xml(c, 200, &x, "VersioningConfiguration");
}

static void s3_create_bucket(http_ctx *c, const s3_target *t) {
    objlog_bucket_conf bc = {.tenant = *t->tenant ? t->tenant : NULL};
    c->op = S3_OP_CREATE_BUCKET;
    gateway_create_bucket(c, t->bucket, &bc);
}

static void s3_delete_bucket(http_ctx *c, const s3_target *t) {
    c->op = S3_OP_DELETE_BUCKET;
    gateway_delete_bucket(c, t->bucket);
}

/* ------------------------------------------------------------- listing */

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

static void s3_object_xml(xmlw *x, const view_version *v, int url) {
    char quoted[160];
    s3_quoted_etag(v->etag, quoted, sizeof(quoted));
    xmlw_bytes(x, "Key", v->key.data, v->key.len, url);
    xmlw_time(x, "LastModified", v->last_modified_ms);
    xmlw_str(x, "ETag", quoted);
    xmlw_u64(x, "Size", v->size);
    xmlw_str(x, "StorageClass", v->storage_class);
}

static void s3_list_reply(http_ctx *c, const s3_target *t, const view_list_req *l,
                          const view_list *o, int v2, int url) {
    xmlw x;
    if (xmlw_begin(&x, "ListBucketResult") < 0) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    size_t tn;
    const char *tok = http_param_get(c, "continuation-token", &tn);
    xmlw_str(&x, "Name", t->bucket);
    xmlw_bytes(&x, "Prefix", l->prefix, l->prefix_len, url);
    if (!v2)
        xmlw_bytes(&x, "Marker", l->start_after, l->start_after_len, url);
    if (l->delimiter_len)
        xmlw_bytes(&x, "Delimiter", l->delimiter, l->delimiter_len, url);
    xmlw_u64(&x, "MaxKeys", (uint64_t)l->max_keys);
    if (url)
        xmlw_str(&x, "EncodingType", "url");
    if (v2)
        xmlw_u64(&x, "KeyCount", o->n_objects + o->n_prefixes);
    xmlw_bool(&x, "IsTruncated", o->is_truncated);
    if (v2 && tok)
        xmlw_bytes(&x, "ContinuationToken", tok, tn, 0);
    if (v2 && l->start_after_len)
        xmlw_bytes(&x, "StartAfter", l->start_after, l->start_after_len, url);
    if (o->is_truncated && v2) {
        char *next = listtoken_encode(c->q->token_key, t->bucket,
                                      o->next_kind == VIEW_POS_PREFIX ? LISTTOKEN_PREFIX
                                                                      : LISTTOKEN_KEY,
                                      o->next.data, o->next.len);
        if (!next)
            x.failed = 1;
        else
            xmlw_str(&x, "NextContinuationToken", next);
        free(next);
    } else if (o->is_truncated) {
        xmlw_bytes(&x, "NextMarker", o->next.data, o->next.len, url);
    }
    for (size_t i = 0; i < o->n_objects; i++) {
        xmlw_open(&x, "Contents");
        s3_object_xml(&x, &o->objects[i], url);
        xmlw_close(&x, "Contents");
    }
    for (size_t i = 0; i < o->n_prefixes; i++) {
        xmlw_open(&x, "CommonPrefixes");
        xmlw_bytes(&x, "Prefix", o->prefixes[i].data, o->prefixes[i].len, url);
        xmlw_close(&x, "CommonPrefixes");
    }
    s3_reply_xml(c, 200, &x, "ListBucketResult");
}

/* ListObjectsV2 (v2) and ListObjects (markers). A v1 marker continues
 * after that key, and after everything under it when it is a common
 * prefix the previous page returned (S3 does the same: the marker sorts
 * before the prefix's keys and the listing skips them as rolled up). */
static void s3_list_objects(http_ctx *c, const s3_target *t, int v2) {
    view_list_req l = {0};
    uint8_t *last = NULL;
    int url = s3_encoding(c);
    if (url < 0 || read_listing_text_ok(c) < 0 || s3_max_param(c, "max-keys", &l.max_keys) < 0)
        return;
    l.prefix = (const uint8_t *)http_param_get(c, "prefix", &l.prefix_len);
    l.delimiter = (const uint8_t *)http_param_get(c, "delimiter", &l.delimiter_len);
    l.start_after = (const uint8_t *)http_param_get(c, v2 ? "start-after" : "marker",
                                                    &l.start_after_len);
    l.after_kind = VIEW_POS_NONE;
    size_t tn;
    const char *tok = v2 ? http_param_get(c, "continuation-token", &tn) : NULL;
    if (tok) {
        int kind;
        size_t last_len = 0;
        if (listtoken_decode(c->q->token_key, t->bucket, tok, tn, &kind, &last, &last_len) <
            0) {
            http_reply_error(c, 400, "InvalidArgument",
                             "The continuation token provided is incorrect");
            return;
        }
        l.after_kind = kind == LISTTOKEN_PREFIX ? VIEW_POS_PREFIX : VIEW_POS_KEY;
        l.after = last;
        l.after_len = last_len;
    } else if (!v2 && l.start_after_len && l.delimiter_len && l.start_after_len >= l.delimiter_len &&
               memcmp(l.start_after + l.start_after_len - l.delimiter_len, l.delimiter,
                      l.delimiter_len) == 0) {
        l.after_kind = VIEW_POS_PREFIX;
        l.after = l.start_after;
        l.after_len = l.start_after_len;
    }
    if (!l.prefix)
        l.prefix = (const uint8_t *)"";
    if (!l.delimiter)
        l.delimiter = (const uint8_t *)"";
    if (!l.start_after)
        l.start_after = (const uint8_t *)"";
    view *v = read_prefix_view(c, t->bucket, (const char *)l.prefix, l.prefix_len);
    if (v) {
        view_list o;
        char err[256];
        view_rc rc = view_list_objects(v, t->bucket, &l, &o, err, sizeof(err));
        view_close(v);
        if (rc == VIEW_OK)
            s3_list_reply(c, t, &l, &o, v2, url);
        else
            read_reply_rc(c, rc, t->bucket, err);
        if (rc == VIEW_OK)
            view_list_free(&o);
    }
    free(last);
}

/* ------------------------------------------------------------- objects */

static void s3_rfc1123(int64_t ms, char *out, size_t n) {
    time_t tt = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* An HTTP date (RFC 1123, as clients send If-Modified-Since), -1 if not. */
static int64_t s3_parse_http_date(const char *s) {
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = s ? strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm) : NULL;
    if (!end || *end)
        return -1;
    return (int64_t)timegm(&tm) * 1000;
}

/* S3's conditional GET/HEAD: 0 go on, else the status answered (304 or
 * 412). Times compare at whole seconds, as HTTP dates carry. */
static int s3_conditions(http_ctx *c, const view_version *v) {
    char quoted[160];
    s3_quoted_etag(v->etag, quoted, sizeof(quoted));
    const char *im = s3_header(c, "If-Match"), *inm = s3_header(c, "If-None-Match");
    int64_t ims = s3_parse_http_date(s3_header(c, "If-Modified-Since"));
    int64_t ius = s3_parse_http_date(s3_header(c, "If-Unmodified-Since"));
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

static void s3_get_object(http_ctx *c, const s3_target *t, int head) {
    int32_t part;
    if (read_key_partition(c, t->bucket, (const uint8_t *)t->key, t->key_len, &part) < 0)
        return;
    view *v = read_fenced_view(c, &part, 1);
    if (!v)
        return;
    const char *vid = http_param_get(c, "versionId", NULL);
    view_version ver;
    char err[256];
    view_rc rc = view_get_object(v, t->bucket, (const uint8_t *)t->key, t->key_len, vid, &ver,
                                 err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, t->bucket, err);
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
        char *loc = s3_blob_location(c->q->s3->blob_url, t->bucket, &ver);
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

static void s3_put_object(http_ctx *c, const s3_target *t) {
    const char *sha = s3_header(c, "x-amz-content-sha256");
    if (!t->body && sha && strncmp(sha, "STREAMING-", 10) == 0) {
        /* Decoding checks each chunk's signature: only with a key's secret. */
        http_reply_error(c, 501, "NotImplemented",
                         "aws-chunked uploads need a signed request (objlogd "
                         "--s3-credentials); send the body whole");
        return;
    }
    struct evbuffer *body = evhttp_request_get_input_buffer(c->req);
    size_t n = t->body ? t->body_len : evbuffer_get_length(body);
    unsigned char md5[16];
    unsigned int mdn = 0;
    const void *data = t->body ? (const void *)t->body
                       : n ? (const void *)evbuffer_pullup(body, -1) : (const void *)"";
    if (!EVP_Digest(data, n, md5, &mdn, EVP_md5(), NULL)) {
        http_reply_error(c, 500, "InternalError", "MD5 failed");
        return;
    }
    if (s3_check_content_md5(c, md5) < 0)
        return;
    char etag[33];
    for (int i = 0; i < 16; i++)
        snprintf(etag + 2 * i, 3, "%02x", md5[i]);
    objlog_user_meta um[S3_USER_META_MAX];
    char names[S3_USER_META_MAX][256]; /* 16 KB: the worker stack is 8 MB */
    size_t nm;
    if (s3_user_meta(c, um, &nm, names) < 0)
        return;
    char sum[96], sum_header[48];
    int has_sum = s3_checksum(c, &t->auth, data, n, sum, sizeof(sum), sum_header,
                              sizeof(sum_header));
    if (has_sum < 0)
        return;
    if (has_sum) /* S3 echoes it in the PutObject answer */
        http_add_header(c, sum_header, strchr(sum, ':') + 1);
    objlog_object_meta meta = {.size = n, .etag = etag, .checksum = has_sum ? sum : NULL,
                               .content_type = s3_header(c, "Content-Type"),
                               .blob_id = s3_header(c, "x-objlog-blob-id"),
                               .storage_class = s3_header(c, "x-amz-storage-class"),
                               .user_meta = um, .n_user_meta = nm};
    s3_tags tags;
    if (s3_tags_parse(c, &tags, &meta) == 0) {
        c->op = S3_OP_PUT_OBJECT;
        gateway_put_object_meta(c, t->bucket, (const uint8_t *)t->key, t->key_len, &meta);
    }
    s3_tags_free(&tags);
}

static void s3_delete_object(http_ctx *c, const s3_target *t) {
    c->op = S3_OP_DELETE_OBJECT;
    gateway_delete_version(c, t->bucket, (const uint8_t *)t->key, t->key_len,
                           http_param_get(c, "versionId", NULL));
}

/* --------------------------------------------------------------- routing */

static int s3_has(http_ctx *c, const char *sub) { return http_param_get(c, sub, NULL) != NULL; }

/* What s3write.c's handlers are given. */
static s3_request s3_request_of(http_ctx *c, const s3_target *t) {
    struct evbuffer *in = evhttp_request_get_input_buffer(c->req);
    s3_request r = {.bucket = t->bucket, .key = t->key, .key_len = t->key_len,
                    .body = t->body, .body_len = t->body_len, .decoded = t->body != NULL};
    if (!t->body) {
        r.body_len = evbuffer_get_length(in);
        r.body = r.body_len ? evbuffer_pullup(in, -1) : (const uint8_t *)"";
    }
    return r;
}

static void s3_not_implemented(http_ctx *c, const char *what) {
    http_reply_error(c, 501, "NotImplemented", "%s is not implemented by objlog yet", what);
}

/* S3's subresources objlog does not serve. Without this a request for one
 * would run the plain operation of its method: DeleteBucketPolicy would
 * delete the bucket, PutObjectTagging overwrite the object with an empty
 * one, GetBucketTagging answer a listing. */
static const char *const s3_unserved[] = {
    "accelerate", "acl", "analytics", "attributes", "cors", "encryption",
    "intelligent-tiering", "inventory", "legal-hold", "logging", "metadataTable",
    "metrics", "notification", "object-lock", "ownershipControls", "policy",
    "policyStatus", "publicAccessBlock", "replication", "requestPayment", "restore",
    "retention", "select", "tagging", "torrent", "website", NULL};

/* 1 after 501 NotImplemented naming the first unserved subresource. */
static int s3_refuse_unserved(http_ctx *c) {
    for (int i = 0; s3_unserved[i]; i++) {
        if (http_param_get(c, s3_unserved[i], NULL)) {
            http_reply_error(c, 501, "NotImplemented",
                             "the ?%s subresource is not implemented by objlog",
                             s3_unserved[i]);
            return 1;
        }
    }
    return 0;
}

static void s3_method_not_allowed(http_ctx *c) {
    http_reply_error(c, 405, "MethodNotAllowed",
                     "The specified method is not allowed against this resource.");
}

static void s3_route_service(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        s3_method_not_allowed(c);
        return;
    }
    c->endpoint = HTTP_EP_BUCKET;
    if (c->authz && !c->admin && !*t->tenant) {
        authz_deny(c); /* S3: ListBuckets needs a signed request */
        return;
    }
    /* a key lists its tenant's buckets; an admin or an endpoint without
     * credentials, every bucket */
    buckets_s3_list(c, c->authz && !c->admin ? t->tenant : NULL);
}

static void s3_route_bucket(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    c->endpoint = HTTP_EP_BUCKET;
    if (s3_refuse_unserved(c))
        return;
    s3_request r = s3_request_of(c, t);
    switch (cmd) {
    case EVHTTP_REQ_GET:
        if (s3_has(c, "location"))
            s3_get_location(c, t);
        else if (s3_has(c, "versioning"))
            s3_get_versioning(c, t);
        else if (s3_has(c, "lifecycle"))
            s3_get_lifecycle(c, t->bucket);
        else if (s3_has(c, "versions"))
            s3list_versions(c, t->bucket);
        else if (s3_has(c, "uploads"))
            s3list_uploads(c, t->bucket);
        else {
            c->endpoint = HTTP_EP_LIST_OBJECTS;
            const char *lt = http_param_get(c, "list-type", NULL);
            if (lt && strcmp(lt, "2") != 0)
                http_reply_error(c, 400, "InvalidArgument", "list-type must be 2");
            else
                s3_list_objects(c, t, lt != NULL);
        }
        return;
    case EVHTTP_REQ_HEAD:
        s3_head_bucket(c, t);
        return;
    case EVHTTP_REQ_PUT:
        if (s3_has(c, "versioning"))
            s3_put_versioning(c, &r);
        else if (s3_has(c, "lifecycle"))
            s3_put_lifecycle(c, &r);
        else
            s3_create_bucket(c, t);
        return;
    case EVHTTP_REQ_DELETE:
        if (s3_has(c, "lifecycle"))
            s3_delete_lifecycle(c, t->bucket);
        else
            s3_delete_bucket(c, t);
        return;
    case EVHTTP_REQ_POST:
        c->endpoint = HTTP_EP_DELETE_OBJECT;
        if (s3_has(c, "delete"))
            s3_delete_objects(c, &r);
        else
            s3_not_implemented(c, "this POST");
        return;
    default:
        s3_method_not_allowed(c);
    }
}

static void s3_route_object(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    if (s3_refuse_unserved(c))
        return;
    int upload = s3_has(c, "uploadId") || s3_has(c, "uploads");
    s3_request r = s3_request_of(c, t);
    switch (cmd) {
    case EVHTTP_REQ_GET:
    case EVHTTP_REQ_HEAD:
        c->endpoint = cmd == EVHTTP_REQ_GET ? HTTP_EP_GET_OBJECT : HTTP_EP_HEAD_OBJECT;
        if (upload)
            s3list_parts(c, t->bucket, (const uint8_t *)t->key, t->key_len);
        else
            s3_get_object(c, t, cmd == EVHTTP_REQ_HEAD);
        return;
    case EVHTTP_REQ_PUT:
        c->endpoint = HTTP_EP_PUT_OBJECT;
        if ((upload || s3_has(c, "partNumber")) && s3_header(c, "x-amz-copy-source"))
            s3_not_implemented(c, "UploadPartCopy");
        else if (upload || s3_has(c, "partNumber"))
            s3_upload_part(c, &r);
        else if (s3_header(c, "x-amz-copy-source"))
            s3_copy_object(c, &r);
        else
            s3_put_object(c, t);
        return;
    case EVHTTP_REQ_DELETE:
        c->endpoint = HTTP_EP_DELETE_OBJECT;
        if (upload)
            s3_abort_upload(c, &r);
        else
            s3_delete_object(c, t);
        return;
    case EVHTTP_REQ_POST:
        c->endpoint = HTTP_EP_UPLOADS;
        if (s3_has(c, "uploads"))
            s3_create_upload(c, &r);
        else if (s3_has(c, "uploadId"))
            s3_complete_upload(c, &r);
        else
            s3_not_implemented(c, "this POST");
        return;
    default:
        s3_method_not_allowed(c);
    }
}

/* CreateBucket is the one bucket operation any key may ask: the state
 * machine answers BucketAlreadyExists for a name that is taken. */
static int s3_is_create_bucket(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    return cmd == EVHTTP_REQ_PUT && !t->key && !s3_has(c, "versioning") &&
           !s3_has(c, "lifecycle");
}

/* Only the bucket's owner (or an admin) gets past: 0, or -1 after
 * answering 403 (or parking on the fence that reads the owner). */
static int s3_authorize(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    if (s3_is_create_bucket(c, cmd, t))
        return 0;
    return authz_bucket(c, t->bucket, cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD);
}

static void s3_run(http_ctx *c) {
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(c->req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    s3_target t;
    memset(&t, 0, sizeof(t));
    size_t nheaders;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(c->req);
    s3_add_common(c);
    if (s3_header_count(c, &nheaders) < 0) {
        ; /* 400 answered */
    } else if (!path || http_params_parse(c, evhttp_uri_get_query(uri)) < 0) {
        http_reply_error(c, 400, "InvalidURI", "Couldn't parse the specified URI.");
    } else if (s3_address(c, *path ? path : "/", &t) == 0 &&
               s3_authenticate(c, &t, nheaders) == 0) {
        if (!t.bucket[0])
            s3_route_service(c, cmd, &t);
        else if (s3_authorize(c, cmd, &t) < 0)
            ; /* 403 answered, or parked on the owner's fence */
        else if (admit_request(c, t.bucket, (const uint8_t *)(t.key ? t.key : ""),
                               t.key ? t.key_len : 0) < 0)
            ; /* 503 SlowDown answered (admit.c) */
        else if (!t.key)
            s3_route_bucket(c, cmd, &t);
        else
            s3_route_object(c, cmd, &t);
    }
    free(t.key);
    free(t.body);
    s3auth_wipe(&t.auth);
    http_params_free(c);
}

static void s3_face_error(http_ctx *c, int status, const char *code, const char *request_id,
                          const char *message, json_t *extra) {
    json_decref(extra);
    s3_reply_error(c, status, code, request_id, message);
}

static int s3_edge_body(char *out, size_t n, const char *code, const char *message,
                        const char *request_id) {
    return snprintf(out, n,
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s"
                    "</Code><Message>%s</Message><RequestId>%s</RequestId></Error>",
                    code, message, request_id);
}

/* No reserved path: a connection past the cap is never taken here. A
 * peer is known by its JSON URL only; its S3 listener is not advertised,
 * so an S3 read is answered where its partition is applied. */
const http_face s3_face = {
    .name = "s3",
    .run = s3_run,
    .reply_error = s3_face_error,
    .written = s3_reply_written,
    .edge_body = s3_edge_body,
    .edge_content_type = "application/xml",
    .request_id_header = "x-amz-request-id",
    .reserved_path = NULL,
    .forwards = 0,
    .max_body = S3_MAX_BODY,
    .allowed_methods = EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                       EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS,
};
