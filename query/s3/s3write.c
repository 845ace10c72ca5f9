/* s3write.c: the S3 writes beyond PutObject and DeleteObject:
 * PutBucketVersioning, the multipart upload (Create, UploadPart, Complete,
 * Abort), CopyObject and DeleteObjects. s3.c routes to them; they parse
 * S3's request (headers, XML bodies with expat) into the values of the
 * gateway's entry points, which the JSON routes call too.
 *
 * Invariant: nothing here decides an outcome. Every write is a gateway
 * write the state machine judges (NoSuchUpload, InvalidPart,
 * InvalidPartOrder, EntityTooSmall, preconditions); this file refuses
 * only what S3 refuses before looking at any state (malformed XML, part
 * numbers, too many keys, a bad Content-MD5) and a copy whose source does
 * not hold (read through a fenced view of the source's partition).
 *
 * A DeleteObjects request is one gateway delete per key, each its own
 * write; their outcomes come back one by one on this worker thread
 * (gateway_delete_versions' sink) into an s3_batch, which answers the
 * request once, when the last one has reported. */
#define _GNU_SOURCE /* strndup */
#include "core.h"
#include "read.h"
#include "s3.h"
#include "s3xmlr.h"
#include "server.h"
#include "write.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#define S3W_DELETE_MAX 1000      /* keys per DeleteObjects, as S3 */
#define S3W_PARTS_MAX 10000

/* --------------------------------------------------------------- helpers */

static void s3w_md5_hex(const uint8_t md5[16], char out[33]) {
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", md5[i]);
}

/* ------------------------------------------------------ bucket versioning */

typedef struct s3w_versioning {
    char status[16];
    int seen;
} s3w_versioning;

static int s3w_versioning_cb(s3x *x, int end) {
    s3w_versioning *v = x->arg;
    if (s3x_root(x, "VersioningConfiguration", end) < 0)
        return -1;
    if (end && s3x_at(x, "VersioningConfiguration/Status")) {
        if (!x->text_long && x->text_len < sizeof(v->status))
            memcpy(v->status, x->text, x->text_len + 1);
        v->seen = 1;
    }
    return 0;
}

void s3_put_versioning(http_ctx *c, const s3_request *r) {
    s3w_versioning v = {0};
    if (s3x_parse(c, r, s3w_versioning_cb, &v) < 0)
        return;
    objlog_versioning vs;
    if (v.seen && strcmp(v.status, "Enabled") == 0) {
        vs = OBJLOG_VERSIONING_ENABLED;
    } else if (v.seen && strcmp(v.status, "Suspended") == 0) {
        vs = OBJLOG_VERSIONING_SUSPENDED;
    } else {
        s3x_malformed(c, "Status must be Enabled or Suspended");
        return;
    }
    c->op = S3_OP_PUT_VERSIONING;
    gateway_set_versioning(c, r->bucket, vs);
}

/* ------------------------------------------------------------- multipart */

/* ?uploadId=: objlog's are 16 hex digits; any other id names no upload
 * (S3 answers NoSuchUpload for ids it never gave). NULL after replying. */
static const char *s3w_upload_id(http_ctx *c) {
    const char *u = http_param_get(c, "uploadId", NULL);
    size_t n = u ? strlen(u) : 0;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)u[i]))
            n = 0;
    if (n == 16)
        return u;
    http_reply_error(c, 404, "NoSuchUpload",
                     "The specified upload does not exist. The upload ID may be invalid, "
                     "or the upload may have been aborted or completed.");
    return NULL;
}

void s3_create_upload(http_ctx *c, const s3_request *r) {
    objlog_user_meta um[S3_USER_META_MAX];
    static __thread char names[S3_USER_META_MAX][256];
    objlog_object_meta meta;
    if (s3_object_meta(c, &meta, um, names) < 0)
        return;
    s3_tags tags;
    if (s3_tags_parse(c, &tags, &meta) == 0) {
        c->op = S3_OP_CREATE_UPLOAD;
        gateway_create_upload_meta(c, r->bucket, (const uint8_t *)r->key, r->key_len,
                                   &meta);
    }
    s3_tags_free(&tags);
}

void s3_upload_part(http_ctx *c, const s3_request *r) {
    uint32_t pn;
    const char *upload_id = s3w_upload_id(c);
    if (!upload_id)
        return;
    if (gateway_part_number(http_param_get(c, "partNumber", NULL), &pn) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "Part number must be an integer between 1 and 10000, inclusive");
        return;
    }
    uint8_t md5[16];
    char etag[33];
    http_stream *st = http_stream_of(c);
    if (st) {
        s3_stream_upload_part(c, r, st, upload_id, pn);
        return;
    }
    if (s3_body_whole(c, r) < 0 || s3_body_readable(c, r) < 0 || s3_body_md5(c, r, md5) < 0)
        return;
    s3w_md5_hex(md5, etag);
    /* A part's x-amz-checksum-* is checked against its bytes (the object's
     * own checksum is the client's to compose; objlog keeps the MD5s). */
    char sum[96], sum_header[48];
    int has_sum = s3_checksum(c, NULL, r->body, r->body_len, sum, sizeof(sum), sum_header,
                              sizeof(sum_header));
    if (has_sum < 0)
        return;
    char blob_id[BLOB_ID_LEN + 1];
    if (s3_blob_store(c, r, blob_id) < 0)
        return;
    if (has_sum)
        http_add_header(c, sum_header, strchr(sum, ':') + 1);
    c->op = S3_OP_UPLOAD_PART;
    gateway_upload_part_meta(c, r->bucket, (const uint8_t *)r->key, r->key_len,
                             upload_id, pn, r->body_len, etag,
                             *blob_id ? blob_id : s3_header(c, "x-objlog-blob-id"));
}

typedef struct s3w_parts {
    objlog_completed_part *parts; /* etags point into etags */
    char (*etags)[S3X_TEXT_MAX + 1];
    size_t n;
    int has_number, has_etag;
} s3w_parts;

static int s3w_parts_cb(s3x *x, int end) {
    s3w_parts *p = x->arg;
    if (s3x_root(x, "CompleteMultipartUpload", end) < 0)
        return -1;
    if (s3x_at(x, "CompleteMultipartUpload/Part")) {
        if (!end && p->n == S3W_PARTS_MAX) {
            x->error = "more than 10000 parts";
            return -1;
        }
        if (!end) {
            p->has_number = p->has_etag = 0;
            return 0;
        }
        if (!p->has_number || !p->has_etag) {
            x->error = "a Part needs PartNumber and ETag";
            return -1;
        }
        p->parts[p->n].etag = p->etags[p->n];
        p->n++;
        return 0;
    }
    if (!end)
        return 0;
    if (s3x_at(x, "CompleteMultipartUpload/Part/PartNumber")) {
        if (gateway_part_number(x->text, &p->parts[p->n].part_number) < 0) {
            x->error = "PartNumber must be an integer between 1 and 10000";
            return -1;
        }
        p->has_number = 1;
    } else if (s3x_at(x, "CompleteMultipartUpload/Part/ETag")) {
        memcpy(p->etags[p->n], x->text, x->text_len + 1);
        p->has_etag = 1;
    }
    return 0;
}

/* A part ETag is an MD5: 32 hex digits, optionally quoted. */
static int s3w_etag_valid(const char *e) {
    size_t n = strlen(e);
    if (n == 34 && e[0] == '"' && e[33] == '"')
        e++, n -= 2;
    if (n != 32)
        return 0;
    for (size_t i = 0; i < 32; i++)
        if (!isxdigit((unsigned char)e[i]))
            return 0;
    return 1;
}

void s3_complete_upload(http_ctx *c, const s3_request *r) {
    const char *upload_id = s3w_upload_id(c);
    if (!upload_id)
        return;
    s3w_parts p = {0};
    p.parts = calloc(S3W_PARTS_MAX, sizeof(*p.parts));
    p.etags = malloc(S3W_PARTS_MAX * sizeof(*p.etags));
    if (!p.parts || !p.etags) {
        http_reply_error(c, 500, "InternalError", "out of memory");
    } else if (s3x_parse(c, r, s3w_parts_cb, &p) == 0) {
        size_t bad = p.n;
        for (size_t i = 0; i < p.n && bad == p.n; i++)
            if (!s3w_etag_valid(p.parts[i].etag))
                bad = i;
        if (p.n == 0) {
            s3x_malformed(c, "no Part");
        } else if (bad < p.n) {
            http_reply_error(c, 400, "InvalidPart",
                             "One or more of the specified parts could not be found: part "
                             "%u has no such ETag", p.parts[bad].part_number);
        } else {
            c->op = S3_OP_COMPLETE_UPLOAD;
            gateway_complete_upload_parts(c, r->bucket, (const uint8_t *)r->key, r->key_len,
                                          upload_id, p.parts, p.n);
        }
    }
    free(p.parts);
    free(p.etags);
}

void s3_abort_upload(http_ctx *c, const s3_request *r) {
    const char *upload_id = s3w_upload_id(c);
    if (!upload_id)
        return;
    c->op = S3_OP_ABORT_UPLOAD;
    gateway_abort_upload_key(c, r->bucket, (const uint8_t *)r->key, r->key_len, upload_id);
}

/* ------------------------------------------------------------ CopyObject */

/* x-amz-copy-source: "[/]bucket/key[?versionId=V]", the key percent-
 * encoded. */
typedef struct s3w_source {
    char bucket[64];
    char *key;                   /* decoded, owned */
    size_t key_len;
    char version_id[32];         /* "" for the latest */
} s3w_source;

static int s3w_parse_source(http_ctx *c, const char *h, s3w_source *s) {
    const char *p = *h == '/' ? h + 1 : h;
    const char *q = strstr(p, "?versionId=");
    size_t pn = q ? (size_t)(q - p) : strlen(p);
    size_t bl = strcspn(p, "/");
    if (q && strlen(q + 11) < sizeof(s->version_id))
        snprintf(s->version_id, sizeof(s->version_id), "%s", q + 11);
    if (bl == 0 || bl >= sizeof(s->bucket) || bl + 1 >= pn || (q && !s->version_id[0])) {
        http_reply_error(c, 400, "InvalidArgument",
                         "Copy Source must mention the source bucket and key: "
                         "sourcebucket/sourcekey");
        return -1;
    }
    memcpy(s->bucket, p, bl);
    s->bucket[bl] = '\0';
    char *enc = strndup(p + bl + 1, pn - bl - 1);
    s->key = enc ? evhttp_uridecode(enc, 0, &s->key_len) : NULL;
    free(enc);
    if (!s->key) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    if (!http_bucket_name_ok(c, s->bucket, bl))
        return -1;
    if (s->key_len == 0 || s->key_len > 1024 ||
        !http_utf8_valid((const uint8_t *)s->key, s->key_len)) {
        http_reply_error(c, 400, "InvalidArgument", "Invalid copy source: the key is 1..1024 bytes of UTF-8");
        return -1;
    }
    return 0;
}

static int s3w_etag_eq(const char *want, const char *etag) {
    size_t wn = strlen(want);
    if (strcmp(want, "*") == 0)
        return 1;
    if (wn >= 2 && want[0] == '"' && want[wn - 1] == '"')
        return wn - 2 == strlen(etag) && strncmp(want + 1, etag, wn - 2) == 0;
    return strcmp(want, etag) == 0;
}

/* x-amz-copy-source-if-*: 1 when they hold (as S3: if-match true wins
 * over if-unmodified-since false; if-none-match false over
 * if-modified-since true). */
static int s3w_copy_conditions(http_ctx *c, const view_version *v) {
    const char *im = s3_header(c, "x-amz-copy-source-if-match");
    const char *inm = s3_header(c, "x-amz-copy-source-if-none-match");
    int64_t ius = s3_http_date(s3_header(c, "x-amz-copy-source-if-unmodified-since"));
    int64_t ims = s3_http_date(s3_header(c, "x-amz-copy-source-if-modified-since"));
    int64_t mod = v->last_modified_ms / 1000 * 1000;
    if (im && !s3w_etag_eq(im, v->etag))
        return 0;
    if (!im && ius >= 0 && mod > ius)
        return 0;
    if (inm && s3w_etag_eq(inm, v->etag))
        return 0;
    if (!inm && ims >= 0 && mod <= ims)
        return 0;
    return 1;
}

/* The source version through a fenced view of its partition; -1 after
 * replying (or parking: the fence re-runs the request). */
static int s3w_read_source(http_ctx *c, const s3w_source *s, view_version *ver) {
    int32_t part;
    if (read_key_partition(c, s->bucket, (const uint8_t *)s->key, s->key_len, &part) < 0)
        return -1;
    view *v = read_fenced_view(c, &part, 1);
    if (!v)
        return -1;
    /* The source is read: only its bucket's owner may (authz.c). */
    char err[256];
    view_bucket b;
    view_rc rc = c->authz && !c->admin ? view_get_bucket(v, s->bucket, &b, err, sizeof(err))
                                       : VIEW_NO_SUCH_BUCKET;
    if (rc == VIEW_OK) {
        int ok = authz_owner_ok(c, b.record->tenant);
        view_bucket_free(&b);
        if (!ok) {
            view_close(v);
            authz_deny(c);
            return -1;
        }
    }
    rc = view_get_object(v, s->bucket, (const uint8_t *)s->key, s->key_len,
                         s->version_id[0] ? s->version_id : NULL, ver, err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, s->bucket, err);
        return -1;
    }
    if (!ver->delete_marker)
        return 0;
    if (s->version_id[0])
        http_reply_error(c, 400, "InvalidRequest",
                         "The source of a copy request may not specifically refer to a "
                         "delete marker by version id.");
    else
        http_reply_error(c, 404, "NoSuchKey", "The specified key does not exist.");
    view_version_free(ver);
    return -1;
}

/* The destination's metadata: the source's, with the request's content
 * type and user metadata under REPLACE and its storage class if sent. */
static int s3w_copy_meta(http_ctx *c, const view_version *ver, int replace,
                         objlog_object_meta *m, objlog_user_meta *um, char names[][256]) {
    const Objlog__ObjectMeta *sm = ver->record ? ver->record->meta : NULL;
    const char *sc = s3_header(c, "x-amz-storage-class");
    memset(m, 0, sizeof(*m));
    /* a copy's ACL is its request's (x-amz-acl), never its source's: S3 */
    if (s3_acl_header(c, &m->acl) < 0)
        return -1;
    m->size = ver->size;
    m->etag = ver->etag;
    m->blob_id = sm && sm->blob_id && *sm->blob_id ? sm->blob_id : NULL;
    m->checksum = sm && sm->checksum && *sm->checksum ? sm->checksum : NULL;
    m->storage_class = sc ? sc : ver->storage_class;
    m->user_meta = um;
    if (replace) {
        m->content_type = s3_header(c, "Content-Type");
        m->cache_control = s3_header(c, "Cache-Control");
        m->content_disposition = s3_header(c, "Content-Disposition");
        m->content_encoding = s3_header(c, "Content-Encoding");
        m->content_language = s3_header(c, "Content-Language");
        m->expires = s3_header(c, "Expires");
        return s3_user_meta(c, um, &m->n_user_meta, names);
    }
    m->content_type = sm && sm->content_type && *sm->content_type ? sm->content_type : NULL;
    if (sm) {
        m->cache_control = sm->cache_control;
        m->content_disposition = sm->content_disposition;
        m->content_encoding = sm->content_encoding;
        m->content_language = sm->content_language;
        m->expires = sm->expires;
    }
    for (size_t i = 0; sm && i < sm->n_user_metadata && i < S3_USER_META_MAX; i++) {
        um[i].name = sm->user_metadata[i]->name;
        um[i].value = sm->user_metadata[i]->value;
        m->n_user_meta++;
    }
    return 0;
}

/* A copy shares its source's bytes: its blob, or its parts' blobs (*parts,
 * the caller frees it; the ids stay the version's). -1 after replying. */
static int s3w_copy_parts(http_ctx *c, const view_version *ver, objlog_object_meta *m,
                          objlog_blob_part **parts) {
    const Objlog__ObjectMeta *sm = ver->record ? ver->record->meta : NULL;
    if (!sm || !sm->n_parts)
        return 0;
    if (!(*parts = calloc(sm->n_parts, sizeof(**parts)))) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    for (size_t i = 0; i < sm->n_parts; i++)
        (*parts)[i] = (objlog_blob_part){sm->parts[i]->blob_id, sm->parts[i]->size};
    m->parts = *parts;
    m->n_parts = sm->n_parts;
    m->blob_id = NULL;
    return 0;
}

/* The tags of the copy: the source's (x-amz-tagging-directive COPY, the
 * default) or x-amz-tagging's (REPLACE). -1 after replying. */
static int s3w_copy_tags(http_ctx *c, const view_version *ver, s3_tags *tags,
                         objlog_object_meta *m) {
    const char *dir = s3_header(c, "x-amz-tagging-directive");
    if (dir && strcmp(dir, "REPLACE") == 0)
        return s3_tags_parse(c, tags, m);
    if (s3_tags_parse(c, tags, m) < 0) /* initialises tags; a header is ignored */
        return -1;
    const Objlog__ObjectMeta *sm = ver->record ? ver->record->meta : NULL;
    size_t n = 0;
    for (; sm && n < sm->n_tags && n < S3_TAGS_MAX; n++) {
        tags->pairs[n].name = sm->tags[n]->name;
        tags->pairs[n].value = sm->tags[n]->value;
    }
    m->tags = n ? tags->pairs : NULL;
    m->n_tags = n;
    return 0;
}

void s3_copy_object(http_ctx *c, const s3_request *r) {
    const char *dir = s3_header(c, "x-amz-metadata-directive");
    if (dir && strcmp(dir, "COPY") != 0 && strcmp(dir, "REPLACE") != 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "Unknown metadata directive: must be COPY or REPLACE");
        return;
    }
    const char *tdir = s3_header(c, "x-amz-tagging-directive");
    if (tdir && strcmp(tdir, "COPY") != 0 && strcmp(tdir, "REPLACE") != 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "Unknown tagging directive: must be COPY or REPLACE");
        return;
    }
    int replace = dir && strcmp(dir, "REPLACE") == 0;
    s3w_source s = {0};
    view_version ver;
    if (s3w_parse_source(c, s3_header(c, "x-amz-copy-source"), &s) < 0 ||
        s3w_read_source(c, &s, &ver) < 0) {
        free(s.key);
        return;
    }
    objlog_object_meta meta;
    objlog_user_meta um[S3_USER_META_MAX];
    static __thread char names[S3_USER_META_MAX][256];
    objlog_blob_part *parts = NULL;
    s3_tags tags;
    memset(&tags, 0, sizeof(tags));
    if (strcmp(s.bucket, r->bucket) == 0 && s.key_len == r->key_len &&
        memcmp(s.key, r->key, s.key_len) == 0 && !replace &&
        !s3_header(c, "x-amz-storage-class")) {
        http_reply_error(c, 400, "InvalidRequest",
                         "This copy request is illegal because it is trying to copy an "
                         "object to itself without changing the object's metadata, storage "
                         "class, website redirect location or encryption attributes.");
    } else if (!s3w_copy_conditions(c, &ver)) {
        http_reply_error(c, 412, "PreconditionFailed",
                         "At least one of the pre-conditions you specified did not hold");
    } else if (s3w_copy_meta(c, &ver, replace, &meta, um, names) == 0 &&
               s3w_copy_tags(c, &ver, &tags, &meta) == 0 &&
               s3w_copy_parts(c, &ver, &meta, &parts) == 0 &&
               s3_blob_pin_copy(c, &ver) == 0) { /* before its event: blob.h */
        /* Set before the write: an error answer names the source too. */
        if (strcmp(ver.version_id, "null") != 0)
            http_add_header(c, "x-amz-copy-source-version-id", ver.version_id);
        c->op = S3_OP_COPY_OBJECT;
        gateway_copy_object_meta(c, r->bucket, (const uint8_t *)r->key, r->key_len, &meta,
                                 s3_header(c, "x-amz-copy-source"));
    }
    s3_tags_free(&tags);
    free(parts);
    view_version_free(&ver);
    free(s.key);
}

/* --------------------------------------------------------- DeleteObjects */

typedef struct s3_batch_item {
    char *key;                   /* owned */
    size_t key_len;
    char *version_id;            /* owned; NULL: the latest */
    int status;                  /* 0 until its outcome arrives */
    char code[48];
    char message[256];
    char result_version[32];
    int delete_marker;
} s3_batch_item;

/* One DeleteObjects request: its keys, then their outcomes. `pending`
 * counts the outcomes still to come plus one for the issuing loop, so the
 * answer cannot go out while keys are still being issued, whichever order
 * the sink is called in. */
typedef struct s3_batch {
    http_ctx c;                  /* params are not kept */
    s3_batch_item *items;
    size_t n;
    size_t pending;
    int quiet;
    int has_key, has_version;    /* while parsing an Object */
} s3_batch;

static void s3_batch_free(s3_batch *b) {
    for (size_t i = 0; b && i < b->n; i++) {
        free(b->items[i].key);
        free(b->items[i].version_id);
    }
    if (b)
        free(b->items);
    free(b);
}

static int s3w_delete_cb(s3x *x, int end) {
    s3_batch *b = x->arg;
    if (s3x_root(x, "Delete", end) < 0)
        return -1;
    if (s3x_at(x, "Delete/Object")) {
        if (!end && b->n == S3W_DELETE_MAX) {
            x->error = "more than 1000 keys";
            return -1;
        }
        if (!end) {
            memset(&b->items[b->n], 0, sizeof(b->items[0]));
            return 0;
        }
        if (!b->items[b->n].key) {
            x->error = "an Object needs a Key";
            return -1;
        }
        b->n++;
        return 0;
    }
    if (!end)
        return 0;
    s3_batch_item *it = &b->items[b->n];
    if (s3x_at(x, "Delete/Quiet")) {
        b->quiet = strcasecmp(x->text, "true") == 0;
    } else if (s3x_at(x, "Delete/Object/Key")) {
        if (x->text_long || x->text_len == 0 || it->key) {
            x->error = x->text_long ? "a Key is longer than 1024 bytes" : "a bad Key";
            return -1;
        }
        if (!(it->key = malloc(x->text_len + 1)))
            return -1;
        memcpy(it->key, x->text, x->text_len + 1);
        it->key_len = x->text_len;
    } else if (s3x_at(x, "Delete/Object/VersionId")) {
        free(it->version_id);
        if (x->text_len && !(it->version_id = strdup(x->text)))
            return -1;
    }
    return 0;
}

static void s3_batch_reply(s3_batch *b) {
    xmlw x;
    if (xmlw_begin(&x, "DeleteResult") < 0) {
        http_reply_error(&b->c, 500, "InternalError", "out of memory");
        return;
    }
    for (size_t i = 0; i < b->n; i++) {
        const s3_batch_item *it = &b->items[i];
        int ok = it->status == 200;
        if (ok && b->quiet)
            continue;
        xmlw_open(&x, ok ? "Deleted" : "Error");
        xmlw_bytes(&x, "Key", it->key, it->key_len, 0);
        if (it->version_id)
            xmlw_str(&x, "VersionId", it->version_id);
        if (!ok) {
            xmlw_str(&x, "Code", it->code);
            xmlw_str(&x, "Message", it->message);
        } else if (it->delete_marker) {
            xmlw_bool(&x, "DeleteMarker", 1);
            xmlw_str(&x, "DeleteMarkerVersionId", it->result_version);
        }
        xmlw_close(&x, ok ? "Deleted" : "Error");
    }
    s3_reply_xml(&b->c, 200, &x, "DeleteResult");
}

/* One reference of b dropped: the last answers and frees. */
static void s3_batch_release(s3_batch *b) {
    if (--b->pending > 0)
        return;
    s3_batch_reply(b);
    s3_batch_free(b);
}

static void s3_batch_sink(void *arg, size_t i, const gateway_result *res) {
    s3_batch *b = arg;
    s3_batch_item *it = &b->items[i];
    const char *code = res->code;
    it->status = res->status;
    s3_error_code(&it->status, &code);
    snprintf(it->code, sizeof(it->code), "%s", code);
    snprintf(it->message, sizeof(it->message), "%s", res->message);
    snprintf(it->result_version, sizeof(it->result_version), "%s", res->version_id);
    it->delete_marker = res->delete_marker;
    s3_batch_release(b);
}

void s3_delete_objects(http_ctx *c, const s3_request *r) {
    uint8_t md5[16];
    if (s3_body_md5(c, r, md5) < 0)
        return;
    s3_batch *b = calloc(1, sizeof(*b));
    if (!b || !(b->items = calloc(S3W_DELETE_MAX + 1, sizeof(*b->items)))) {
        free(b);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    int rc = s3x_parse(c, r, s3w_delete_cb, b);
    free(b->items[b->n].key); /* an Object the parse stopped in */
    free(b->items[b->n].version_id);
    if (rc == 0 && b->n == 0)
        s3x_malformed(c, "no Object");
    if (rc < 0 || b->n == 0) {
        s3_batch_free(b);
        return;
    }
    gateway_delete_item *items = calloc(b->n, sizeof(*items));
    if (!items) {
        s3_batch_free(b);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    for (size_t i = 0; i < b->n; i++)
        items[i] = (gateway_delete_item){(const uint8_t *)b->items[i].key,
                                         b->items[i].key_len, b->items[i].version_id};
    b->c = *c;
    b->c.params = NULL;
    b->c.nparams = 0;
    b->pending = b->n + 1;
    if (gateway_delete_versions(c, r->bucket, items, b->n, s3_batch_sink, b) < 0)
        s3_batch_free(b); /* answered; no outcome will come */
    else
        s3_batch_release(b);
    free(items);
}
