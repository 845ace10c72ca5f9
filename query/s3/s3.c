/* s3.c: the S3 REST endpoint (`objlogd --s3-listen HOST:PORT`):
 * S3's wire format over the same views and gateway as the JSON API.
 *
 * This file is the endpoint's door and router: its settings, the
 * addressing (path-style /BUCKET/KEY or virtual-hosted Host:
 * BUCKET.DOMAIN), SigV4 authentication, the owner check and admission,
 * then one route table from (method, bucket or key, subresource) to a
 * handler (s3bucket.c, s3object.c, s3write.c, s3lc.c, s3notify.c,
 * s3list.c). Each HTTP worker runs a second evhttp on its own loop for the
 * S3 listener (the server's, for this endpoint's face, s3_face); its
 * connections are counted and limited with the JSON listener's (conn.c).
 * Errors take the one error path (http_reply_error), which the face
 * answers in S3's XML (s3wire.c).
 *
 * Invariant: the S3 handlers decide nothing the JSON handlers do not:
 * same fences (strong by default, as S3 is), same state machine outcomes;
 * only the parameter names, the answer's shape and S3's status codes for
 * successes differ. Every answer carries x-amz-request-id. No handler
 * reads a header the signature check did not cover (S3_MAX_HEADERS). */
#include "core.h"
#include "admit.h"
#include "cluster.h"
#include "read.h"
#include "s3.h"
#include "server.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>

#include "keycodec.h"
#include "nodeauth.h"
#include "secretfile.h"

/* A body that does not stream (conn.c streams PUTs over HTTP_STREAM_MIN
 * with a Content-Length): Transfer-Encoding chunked, which S3 itself
 * refuses, is read whole up to this. */
#define S3_MAX_BODY (64 * 1024 * 1024)

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

int s3_conf_new(objlog_query *q, const s3_settings *conf, char *errstr,
                size_t errstr_size) {
    struct s3_conf *s = calloc(1, sizeof(*s));
    if (!s || !(s->host = strdup(conf->host))) {
        free(s);
        snprintf(errstr, errstr_size, "s3: out of memory");
        return -1;
    }
    q->s3 = s;
    s->port = conf->port;
    snprintf(s->region, sizeof(s->region), "%s",
             conf->region && *conf->region ? conf->region : "us-east-1");
    snprintf(s->domain, sizeof(s->domain), "%s",
             conf->domain && *conf->domain ? conf->domain : "localhost");
    s->anonymous = conf->anonymous;
    pthread_rwlock_init(&s->creds.lock, NULL);
    if ((conf->blob_url && !(s->blob_url = strdup(conf->blob_url))) ||
        (conf->credentials && !(s->creds.path = strdup(conf->credentials)))) {
        snprintf(errstr, errstr_size, "s3: out of memory");
        return -1;
    }
    s->creds.allow_open = conf->insecure;
    if (conf->blob_dir &&
        !(s->blobs = blobstore_open_remote(conf->blob_dir, conf->blob_s3,
                                           conf->blob_s3_credentials, conf->insecure, errstr,
                                           errstr_size)))
        return -1;
    if (conf->credentials &&
        !(s->creds.keys = s3creds_load(conf->credentials, conf->insecure, errstr, errstr_size)))
        return -1;
    s3_creds_warn(s);
    return 0;
}

static void s3_creds_warn(const struct s3_conf *s) {
    char msg[600];
    if (secretfile_open_warning(s->creds.path, s3creds_open_mode(s->creds.keys), msg, sizeof(msg)))
        objlog_logf(OBJLOG_LEVEL_WARNING, "s3", "%s", msg);
}

int s3_conf_reload(objlog_query *q, char *errstr, size_t errstr_size) {
    struct s3_conf *s = q->s3;
    if (!s || !s->creds.path)
        return 0;
    s3creds *n = s3creds_load(s->creds.path, s->creds.allow_open, errstr, errstr_size);
    if (!n)
        return -1; /* the keys in force stay */
    s3creds_free(secretfile_keys_swap(&s->creds, n));
    s3_creds_warn(s);
    snprintf(errstr, errstr_size, "%s: %zu keys", s->creds.path, s3creds_count(n));
    return 0;
}

void s3_conf_free(objlog_query *q) {
    if (q->s3) {
        free(q->s3->blob_url);
        blobstore_free(q->s3->blobs);
        free(q->s3->creds.path);
        s3creds_free(q->s3->creds.keys);
        pthread_rwlock_destroy(&q->s3->creds.lock);
        free(q->s3->host);
    }
    free(q->s3);
    q->s3 = NULL;
}

/* ------------------------------------------------------------ addressing */


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

/* The node-signing names, plus OPTIONS: SigV4 signs a preflight's own
 * method, where node signing has no OPTIONS request to name. */
static const char *s3_method_name(enum evhttp_cmd_type cmd) {
    return cmd == EVHTTP_REQ_OPTIONS ? "OPTIONS" : nodesign_method_name(cmd);
}

/* The body as signed: a SIGNED payload's hash checked, an aws-chunked one
 * decoded (every chunk signature checked) into t->body. 0, or -1 after
 * replying. */
static int s3_auth_body(http_ctx *c, s3_target *t) {
    if (http_stream_of(c))
        return 0; /* judged as it streams (s3stream.c) */
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

/* A request a peer node sent on, signed with the cluster's node key: the
 * peer checked the client's signature, and signed who the client is. 0
 * with the subject set, -1 after 403, 1 not sent by a node. */
static int s3_node_subject(http_ctx *c, s3_target *t) {
    apisubject sub;
    char why[200];
    int rc = nodesign_check(cluster_node_key(c->q->cluster), c, &sub, why, sizeof(why));
    if (rc == 1)
        return 1;
    const char *sha = s3_header(c, "x-amz-content-sha256");
    if (rc == 2 && c->q->s3->creds.keys)
        snprintf(why, sizeof(why), "a node that serves S3 without --s3-credentials sent this "
                                   "on; this node has them (configure every node alike)");
    else if (rc >= 0 && sha && strncmp(sha, "STREAMING-", 10) == 0)
        snprintf(why, sizeof(why), "an aws-chunked body is never sent on between nodes");
    else if (rc >= 0)
        why[0] = '\0';
    if (why[0]) {
        http_reply_error(c, 403, "AccessDenied", "node signature: %s", why);
        return -1;
    }
    c->node_signed = 1;
    c->hop = 1;
    c->authz = rc == 0;
    c->admin = sub.admin;
    c->anonymous = sub.anonymous;
    snprintf(c->tenant, sizeof(c->tenant), "%s", sub.tenant);
    snprintf(t->tenant, sizeof(t->tenant), "%s", sub.tenant);
    t->admin = sub.admin;
    return 0;
}

/* Who signed the request: 0 with t->tenant set, or -1 after replying.
 * Without --s3-credentials nothing is verified and every request is
 * anonymous (tenant ""): the endpoint must allow that (--s3-anonymous).
 * With them, Signature V4 (header or presigned query) is checked against
 * the key's secret over every header received (s3_run refused more than
 * S3_MAX_HEADERS), and the key's tenant and role are the caller's; an
 * unsigned request is the anonymous tenant's with --s3-anonymous, else a
 * caller who owns nothing and gets what ACLs grant everyone. */
static int s3_authenticate(http_ctx *c, s3_target *t, size_t nheaders) {
    struct s3_conf *s = c->q->s3;
    t->tenant[0] = '\0';
    int node = s3_node_subject(c, t);
    if (node <= 0)
        return node;
    /* A node that shares no secret with this one sends the request as the
     * client signed it: checked again here, and its hop header only
     * routes (any replica here answers it). */
    c->hop = evhttp_find_header(evhttp_request_get_input_headers(c->req), "X-Objlog-Hop") != NULL;
    if (!s->creds.keys)
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
    pthread_rwlock_rdlock(&s->creds.lock);
    /* Unsigned: the anonymous tenant's with --s3-anonymous; else a caller
     * who owns nothing, who gets only what a bucket's or an object's ACL
     * grants everyone (authz.c). */
    s3auth_check(s->creds.keys, s->region, 1, &r, &t->auth);
    if (t->auth.cred) { /* copied: a reload may free the keys */
        snprintf(t->tenant, sizeof(t->tenant), "%s", t->auth.cred->tenant);
        t->admin = t->auth.cred->admin;
        t->auth.cred = NULL;
    }
    pthread_rwlock_unlock(&s->creds.lock);
    free(path);
    if (t->auth.status) {
        http_reply_error(c, t->auth.status, t->auth.code, "%s", t->auth.message);
        return -1;
    }
    c->authz = 1;
    snprintf(c->tenant, sizeof(c->tenant), "%s", t->tenant);
    c->admin = t->admin;
    c->anonymous = t->auth.anonymous && !s->anonymous;
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

/* --------------------------------------------------------------- routing */

static int s3_has(http_ctx *c, const char *sub) { return http_param_get(c, sub, NULL) != NULL; }

/* What every handler is given. */
static s3_request s3_request_of(http_ctx *c, const s3_target *t) {
    struct evbuffer *in = evhttp_request_get_input_buffer(c->req);
    s3_request r = {.bucket = t->bucket, .key = t->key, .key_len = t->key_len,
                    .body = t->body, .body_len = t->body_len, .decoded = t->body != NULL,
                    .tenant = t->tenant, .auth = &t->auth};
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
    "accelerate", "analytics", "attributes", "cors", "encryption",
    "intelligent-tiering", "inventory", "legal-hold", "logging", "metadataTable",
    "metrics", "object-lock", "ownershipControls", "policy", "policyStatus",
    "publicAccessBlock", "replication", "requestPayment", "restore", "retention",
    "select", "torrent", "website", NULL};

/* Subresources served on buckets only: on a key they are unserved too
 * (PUT /B/K?notification would otherwise overwrite the object). */
static const char *const s3_bucket_only[] = {"notification", NULL};

/* 1 after 501 NotImplemented naming the first unserved subresource (on an
 * object, the bucket-only ones too). */
static int s3_refuse_unserved(http_ctx *c, int object) {
    const char *const *lists[] = {s3_unserved, object ? s3_bucket_only : NULL};
    for (int l = 0; l < 2 && lists[l]; l++)
        for (int i = 0; lists[l][i]; i++) {
            if (http_param_get(c, lists[l][i], NULL)) {
                http_reply_error(c, 501, "NotImplemented",
                                 "the ?%s subresource is not implemented by objlog",
                                 lists[l][i]);
                return 1;
            }
        }
    return 0;
}

/* Object Lock: objlog locks nothing, so no request may believe it does.
 * A bucket asked with it is 501 NotImplemented; an object write naming a
 * lock is what S3 answers for a bucket without a lock configuration (400
 * InvalidRequest). 1 after replying. */
static int s3_refuse_object_lock(http_ctx *c) {
    const char *b = s3_header(c, "x-amz-bucket-object-lock-enabled");
    if (b && strcasecmp(b, "true") == 0) {
        http_reply_error(c, 501, "NotImplemented",
                         "x-amz-bucket-object-lock-enabled: objlog does not implement Object "
                         "Lock; create the bucket without it");
        return 1;
    }
    struct evkeyvalq *ih = evhttp_request_get_input_headers(c->req);
    for (struct evkeyval *kv = ih->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strncasecmp(kv->key, "x-amz-object-lock-", 18) != 0)
            continue;
        http_reply_error(c, 400, "InvalidRequest",
                         "Bucket is missing Object Lock Configuration (%s: objlog does not "
                         "implement Object Lock)", kv->key);
        return 1;
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
    s3_list_buckets(c, c->authz && !c->admin ? t->tenant : NULL);
}

static void s3_post_not_implemented(http_ctx *c, const s3_request *r) {
    (void)r;
    s3_not_implemented(c, "this POST");
}

static void s3_upload_part_copy(http_ctx *c, const s3_request *r) {
    (void)r;
    s3_not_implemented(c, "UploadPartCopy");
}

/* One route: what is addressed (a bucket, or a key in it), the method, the
 * query keys of which one must be present ({NULL}: none needed), a header
 * that must be present (NULL: none), and the endpoint its metrics count
 * under. The first row that matches wins, so a subresource's rows stand
 * before its method's plain row; no row: 405. */
typedef struct s3_route {
    int object;
    enum evhttp_cmd_type method;
    const char *any_of[4];
    const char *header;
    http_endpoint endpoint;
    s3_handler *handler;
} s3_route;

#define S3_UPLOAD {"uploadId", "uploads"}
#define S3_PART {"uploadId", "uploads", "partNumber"}
#define S3_COPY "x-amz-copy-source"

static const s3_route s3_routes[] = {
    /* /BUCKET: s3list.c sets the endpoint of the listings it answers */
    {0, EVHTTP_REQ_GET, {"location"}, NULL, HTTP_EP_BUCKET, s3_get_location},
    {0, EVHTTP_REQ_GET, {"tagging"}, NULL, HTTP_EP_BUCKET, s3_get_bucket_tagging},
    {0, EVHTTP_REQ_PUT, {"tagging"}, NULL, HTTP_EP_BUCKET, s3_put_bucket_tagging},
    {0, EVHTTP_REQ_DELETE, {"tagging"}, NULL, HTTP_EP_BUCKET, s3_delete_bucket_tagging},
    {0, EVHTTP_REQ_GET, {"acl"}, NULL, HTTP_EP_BUCKET, s3_get_bucket_acl},
    {0, EVHTTP_REQ_PUT, {"acl"}, NULL, HTTP_EP_BUCKET, s3_put_bucket_acl},
    {0, EVHTTP_REQ_GET, {"versioning"}, NULL, HTTP_EP_BUCKET, s3_get_versioning},
    {0, EVHTTP_REQ_GET, {"lifecycle"}, NULL, HTTP_EP_BUCKET, s3_get_lifecycle},
    {0, EVHTTP_REQ_GET, {"notification"}, NULL, HTTP_EP_BUCKET, s3_get_notification},
    {0, EVHTTP_REQ_GET, {"versions"}, NULL, HTTP_EP_BUCKET, s3list_versions},
    {0, EVHTTP_REQ_GET, {"uploads"}, NULL, HTTP_EP_BUCKET, s3list_uploads},
    {0, EVHTTP_REQ_GET, {NULL}, NULL, HTTP_EP_LIST_OBJECTS, s3_list_bucket},
    {0, EVHTTP_REQ_HEAD, {NULL}, NULL, HTTP_EP_BUCKET, s3_head_bucket},
    {0, EVHTTP_REQ_PUT, {"versioning"}, NULL, HTTP_EP_BUCKET, s3_put_versioning},
    {0, EVHTTP_REQ_PUT, {"lifecycle"}, NULL, HTTP_EP_BUCKET, s3_put_lifecycle},
    {0, EVHTTP_REQ_PUT, {"notification"}, NULL, HTTP_EP_BUCKET, s3_put_notification},
    {0, EVHTTP_REQ_PUT, {NULL}, NULL, HTTP_EP_BUCKET, s3_create_bucket},
    {0, EVHTTP_REQ_DELETE, {"lifecycle"}, NULL, HTTP_EP_BUCKET, s3_delete_lifecycle},
    {0, EVHTTP_REQ_DELETE, {"notification"}, NULL, HTTP_EP_BUCKET, s3_delete_notification},
    {0, EVHTTP_REQ_DELETE, {NULL}, NULL, HTTP_EP_BUCKET, s3_delete_bucket},
    {0, EVHTTP_REQ_POST, {"delete"}, NULL, HTTP_EP_DELETE_OBJECT, s3_delete_objects},
    {0, EVHTTP_REQ_POST, {NULL}, NULL, HTTP_EP_DELETE_OBJECT, s3_post_not_implemented},
    /* /BUCKET/KEY */
    {1, EVHTTP_REQ_GET, {"tagging"}, NULL, HTTP_EP_GET_OBJECT, s3_get_object_tagging},
    {1, EVHTTP_REQ_PUT, {"tagging"}, NULL, HTTP_EP_PUT_OBJECT, s3_put_object_tagging},
    {1, EVHTTP_REQ_DELETE, {"tagging"}, NULL, HTTP_EP_DELETE_OBJECT, s3_delete_object_tagging},
    {1, EVHTTP_REQ_GET, {"acl"}, NULL, HTTP_EP_GET_OBJECT, s3_get_object_acl},
    {1, EVHTTP_REQ_PUT, {"acl"}, NULL, HTTP_EP_PUT_OBJECT, s3_put_object_acl},
    {1, EVHTTP_REQ_GET, S3_UPLOAD, NULL, HTTP_EP_GET_OBJECT, s3list_parts},
    {1, EVHTTP_REQ_GET, {NULL}, NULL, HTTP_EP_GET_OBJECT, s3_get_object},
    {1, EVHTTP_REQ_HEAD, S3_UPLOAD, NULL, HTTP_EP_HEAD_OBJECT, s3list_parts},
    {1, EVHTTP_REQ_HEAD, {NULL}, NULL, HTTP_EP_HEAD_OBJECT, s3_head_object},
    {1, EVHTTP_REQ_PUT, S3_PART, S3_COPY, HTTP_EP_PUT_OBJECT, s3_upload_part_copy},
    {1, EVHTTP_REQ_PUT, S3_PART, NULL, HTTP_EP_PUT_OBJECT, s3_upload_part},
    {1, EVHTTP_REQ_PUT, {NULL}, S3_COPY, HTTP_EP_PUT_OBJECT, s3_copy_object},
    {1, EVHTTP_REQ_PUT, {NULL}, NULL, HTTP_EP_PUT_OBJECT, s3_put_object},
    {1, EVHTTP_REQ_DELETE, S3_UPLOAD, NULL, HTTP_EP_DELETE_OBJECT, s3_abort_upload},
    {1, EVHTTP_REQ_DELETE, {NULL}, NULL, HTTP_EP_DELETE_OBJECT, s3_delete_object},
    {1, EVHTTP_REQ_POST, {"uploads"}, NULL, HTTP_EP_UPLOADS, s3_create_upload},
    {1, EVHTTP_REQ_POST, {"uploadId"}, NULL, HTTP_EP_UPLOADS, s3_complete_upload},
    {1, EVHTTP_REQ_POST, {NULL}, NULL, HTTP_EP_UPLOADS, s3_post_not_implemented},
};

static int s3_route_matches(http_ctx *c, const s3_route *rt) {
    int any = !rt->any_of[0];
    for (int i = 0; !any && i < 4 && rt->any_of[i]; i++)
        any = s3_has(c, rt->any_of[i]);
    return any && (!rt->header || s3_header(c, rt->header));
}

/* The handler of t's first matching row, after the subresources objlog
 * does not serve are refused. */
static void s3_route_handle(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    if (s3_refuse_unserved(c, t->key != NULL) || s3_refuse_object_lock(c))
        return;
    s3_request r = s3_request_of(c, t);
    for (size_t i = 0; i < sizeof(s3_routes) / sizeof(s3_routes[0]); i++) {
        const s3_route *rt = &s3_routes[i];
        if (rt->object == (t->key != NULL) && rt->method == cmd && s3_route_matches(c, rt)) {
            c->endpoint = rt->endpoint;
            if (http_stream_of(c) && rt->handler != s3_put_object &&
                rt->handler != s3_upload_part)
                http_reply_error(c, 400, "MaxMessageLengthExceeded",
                                 "Your request was too big (this operation takes at most "
                                 "%d bytes)", HTTP_STREAM_MIN);
            else
                rt->handler(c, &r);
            return;
        }
    }
    s3_method_not_allowed(c);
}

static void s3_route_bucket(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    c->endpoint = HTTP_EP_BUCKET;
    s3_route_handle(c, cmd, t);
}

static void s3_route_object(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    s3_route_handle(c, cmd, t);
}

/* CreateBucket is the one bucket operation any key may ask: the state
 * machine answers BucketAlreadyExists for a name that is taken. */
static int s3_is_create_bucket(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    return cmd == EVHTTP_REQ_PUT && !t->key && !s3_has(c, "versioning") &&
           !s3_has(c, "lifecycle") && !s3_has(c, "tagging") && !s3_has(c, "acl") &&
           !s3_has(c, "notification");
}

/* What a caller who is not the bucket's owner asks, as S3's canned ACLs
 * grant it: a bucket's READ lists it (objects, versions, uploads), its
 * WRITE writes its objects, an object's READ reads the object; every
 * subresource (tagging, ACLs, versioning, lifecycle, notification, parts)
 * and every bucket setting are the owner's. */
static authz_need s3_need(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    int read = cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD;
    if (s3_has(c, "tagging") || s3_has(c, "acl"))
        return AUTHZ_OWNER;
    if (!t->key) {
        if (read && !s3_has(c, "location") && !s3_has(c, "versioning") &&
            !s3_has(c, "lifecycle") && !s3_has(c, "notification"))
            return AUTHZ_LIST;
        return cmd == EVHTTP_REQ_POST && s3_has(c, "delete") ? AUTHZ_WRITE_OBJECT
                                                             : AUTHZ_OWNER;
    }
    if (read)
        return s3_has(c, "uploadId") ? AUTHZ_OWNER : AUTHZ_READ_OBJECT;
    return AUTHZ_WRITE_OBJECT;
}

/* The bucket's owner (or an admin) gets past, and whoever its ACL grants
 * what the request asks: 0, or -1 after answering 403 (or parking on the
 * fence that reads the owner). */
static int s3_authorize(http_ctx *c, enum evhttp_cmd_type cmd, const s3_target *t) {
    if (s3_is_create_bucket(c, cmd, t)) {
        if (!c->anonymous)
            return 0;
        authz_deny(c); /* an anonymous caller would own nothing it made */
        return -1;
    }
    return authz_bucket_acl(c, t->bucket, cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD,
                            s3_need(c, cmd, t));
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

/* A CreateBucket of a name the caller already owns: S3 answers 200 in
 * us-east-1 (its legacy) and 409 BucketAlreadyOwnedByYou elsewhere. The
 * state machine decided "taken" from the log alone; whose it is, this
 * node's view says (a node that does not apply the bucket's partition
 * has no record: BucketAlreadyExists stands). 1 when answered. */
static int s3_create_owned(http_ctx *c, const char *request_id) {
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(c->req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    s3_target t;
    memset(&t, 0, sizeof(t));
    /* addressed once already, so no error to answer here */
    if (!path || s3_address(c, *path ? path : "/", &t) < 0 || !t.bucket[0]) {
        free(t.key);
        return 0;
    }
    free(t.key);
    view *v = view_open(c->q->store);
    view_bucket b;
    char err[256];
    if (!v)
        return 0;
    view_rc rc = view_get_bucket(v, t.bucket, &b, err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK)
        return 0;
    const char *owner = b.record->tenant ? b.record->tenant : "";
    int mine = strcmp(owner, c->tenant) == 0;
    view_bucket_free(&b);
    if (!mine)
        return 0;
    if (strcmp(c->q->s3->region, "us-east-1") == 0) {
        http_add_header(c, "Location", path);
        s3_reply_empty(c, 200);
    } else {
        s3_reply_error(c, 409, "BucketAlreadyOwnedByYou", request_id,
                       "Your previous request to create the named bucket succeeded and you "
                       "already own it.");
    }
    return 1;
}

/* aws-chunked bodies (x-amz-content-sha256: STREAMING-*) are decoded,
 * their chunk signatures checked, from the whole body (s3chunked.c): they
 * are read whole, up to S3_MAX_BODY; every other long PUT streams. */
static int s3_stream_wanted(const char *head, size_t n) {
    static const char name[] = "\r\nx-amz-content-sha256:";
    const size_t nl = sizeof(name) - 1;
    for (size_t i = 0; i + nl < n; i++) {
        if (head[i] != '\r' || strncasecmp(head + i, name, nl) != 0)
            continue;
        size_t v = i + nl;
        while (v < n && (head[v] == ' ' || head[v] == '\t'))
            v++;
        return !(n - v >= 10 && strncmp(head + v, "STREAMING-", 10) == 0);
    }
    return 1;
}

static void s3_face_error(http_ctx *c, int status, const char *code, const char *request_id,
                          const char *message, json_t *extra) {
    json_decref(extra);
    if (c->op == S3_OP_CREATE_BUCKET && strcmp(code, "BucketAlreadyExists") == 0 &&
        s3_create_owned(c, request_id))
        return;
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
 * request of a partition another node applies goes to that node's S3
 * listener as the client signed it; a write is produced here, where its
 * body arrived (see forward_writes). */
const http_face s3_face = {
    .name = "s3",
    .run = s3_run,
    .reply_error = s3_face_error,
    .written = s3_reply_written,
    .edge_body = s3_edge_body,
    .edge_content_type = "application/xml",
    .request_id_header = "x-amz-request-id",
    .reserved_path = NULL,
    .forward_writes = 0,
    .forward_as_sent = 1,
    .streams = 1,
    .stream_wanted = s3_stream_wanted,
    .max_body = S3_MAX_BODY,
    .allowed_methods = EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                       EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS,
};
