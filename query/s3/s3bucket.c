/* s3bucket.c: a bucket's own operations on the S3 endpoint: HeadBucket,
 * GetBucketLocation, GetBucketVersioning, CreateBucket, DeleteBucket, the
 * bucket's listing (ListObjects, ListObjectsV2) and ListBuckets.
 *
 * Invariant: a bucket's record and its keys are read through views fenced
 * on the partitions that hold them (strong by default, as S3 is), the
 * writes go through the gateway; what S3 asks that objlog does not hold
 * (the region) comes from the endpoint's settings, never from the store.
 * A v2 continuation token is the JSON listing's (listtoken.c), bound to
 * the bucket, so an edited one is a 400. */
#define _GNU_SOURCE
#include "core.h"
#include "cluster.h"
#include "read.h"
#include "s3.h"
#include "server.h"
#include "write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

static const char *s3_versioning_name(Objlog__Versioning v) {
    switch (v) {
    case OBJLOG__VERSIONING__VERSIONING_ENABLED: return "Enabled";
    case OBJLOG__VERSIONING__VERSIONING_SUSPENDED: return "Suspended";
    default: return NULL;
    }
}

void s3_head_bucket(http_ctx *c, const s3_request *r) {
    view_bucket b;
    if (read_bucket_record(c, r->bucket, &b) < 0)
        return;
    view_bucket_free(&b);
    http_add_header(c, "x-amz-bucket-region", c->q->s3->region);
    s3_reply_empty(c, 200);
}

void s3_get_location(http_ctx *c, const s3_request *r) {
    view_bucket b;
    if (read_bucket_record(c, r->bucket, &b) < 0)
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

void s3_get_versioning(http_ctx *c, const s3_request *r) {
    view_bucket b;
    if (read_bucket_record(c, r->bucket, &b) < 0)
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

void s3_create_bucket(http_ctx *c, const s3_request *r) {
    objlog_bucket_conf bc = {.tenant = *r->tenant ? r->tenant : NULL};
    if (s3_acl_header(c, &bc.acl) < 0)
        return;
    c->op = S3_OP_CREATE_BUCKET;
    gateway_create_bucket(c, r->bucket, &bc);
}

void s3_delete_bucket(http_ctx *c, const s3_request *r) {
    c->op = S3_OP_DELETE_BUCKET;
    gateway_delete_bucket(c, r->bucket);
}

/* ------------------------------------------------------------- listing */

/* owner: the bucket's owner when the listing asked for it (FetchOwner),
 * else NULL. */
static void s3_object_xml(xmlw *x, const view_version *v, int url, const char *owner) {
    char quoted[160];
    s3_quoted_etag(v->etag, quoted, sizeof(quoted));
    xmlw_bytes(x, "Key", v->key.data, v->key.len, url);
    xmlw_time(x, "LastModified", v->last_modified_ms);
    xmlw_str(x, "ETag", quoted);
    xmlw_u64(x, "Size", v->size);
    if (owner)
        s3_owner_xml(x, "Owner", owner);
    xmlw_str(x, "StorageClass", v->storage_class);
}

static void s3_list_reply(http_ctx *c, const char *bucket, const view_list_req *l,
                          const view_list *o, int v2, int url, const char *owner) {
    xmlw x;
    if (xmlw_begin(&x, "ListBucketResult") < 0) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    size_t tn;
    const char *tok = http_param_get(c, "continuation-token", &tn);
    if (tok && !tn)
        tok = NULL; /* an empty token is no token, as S3 takes it */
    xmlw_str(&x, "Name", bucket);
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
        char *next = listtoken_encode(c->q->token_key, bucket,
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
        s3_object_xml(&x, &o->objects[i], url, owner);
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
static void s3_list_objects(http_ctx *c, const char *bucket, int v2) {
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
    if (tok && tn) {
        int kind;
        size_t last_len = 0;
        if (listtoken_decode(c->q->token_key, bucket, tok, tn, &kind, &last, &last_len) <
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
    view_list o;
    char owner[S3_OWNER_MAX];
    const char *fo = v2 ? http_param_get(c, "fetch-owner", NULL) : NULL;
    if (read_list_page(c, bucket, &l, &o) == 0) {
        /* ListObjects (v1) always names owners; v2 when fetch-owner=true */
        int want = !v2 || (fo && strcmp(fo, "true") == 0);
        if (!want || s3_bucket_owner(c, bucket, owner, sizeof(owner)) == 0)
            s3_list_reply(c, bucket, &l, &o, v2, url, want ? owner : NULL);
        view_list_free(&o);
    }
    free(last);
}

void s3_list_bucket(http_ctx *c, const s3_request *r) {
    const char *lt = http_param_get(c, "list-type", NULL);
    if (lt && strcmp(lt, "2") != 0)
        http_reply_error(c, 400, "InvalidArgument", "list-type must be 2");
    else
        s3_list_objects(c, r->bucket, lt != NULL);
}

/* ------------------------------------------------------------ ListBuckets */

#define S3_BUCKETS_MAX 10000 /* S3's default bucket limit per account */

/* ListBuckets' continuation token: the last bucket listed, base64 (S3's
 * is opaque too). A bucket name is in the clear in the listing anyway. */
static void s3_bucket_token(const char *name, char *out, size_t n) {
    if (n > 4 * ((strlen(name) + 2) / 3))
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)name, (int)strlen(name));
    else
        out[0] = '\0';
}

/* The bucket name a token names into out (64 bytes): 0, or -1 when it
 * is not one this endpoint gave. */
static int s3_bucket_untoken(const char *tok, size_t tn, char out[64]) {
    unsigned char raw[96];
    if (tn == 0 || tn > 88 || tn % 4)
        return -1;
    int n = EVP_DecodeBlock(raw, (const unsigned char *)tok, (int)tn);
    n -= (tok[tn - 1] == '=') + (tok[tn - 2] == '='); /* padding decodes as NULs */
    if (n <= 0 || n > 63)
        return -1;
    for (int i = 0; i < n; i++)
        if (!((raw[i] >= 'a' && raw[i] <= 'z') || (raw[i] >= '0' && raw[i] <= '9') ||
              raw[i] == '.' || raw[i] == '-'))
            return -1;
    memcpy(out, raw, (size_t)n);
    out[n] = '\0';
    return 0;
}

/* One page of buckets, from this node's records or from the nodes of a
 * cluster (their JSON): the i-th name and creation time (ISO 8601, ms). */
typedef struct s3_buckets {
    size_t n;
    int more;                    /* names remain after these */
    const char *(*name)(const struct s3_buckets *l, size_t i);
    void (*created)(const struct s3_buckets *l, size_t i, char *out, size_t n);
    const void *src;
} s3_buckets;

static const char *s3_page_name(const s3_buckets *l, size_t i) {
    return ((const bucket_page *)l->src)->rows[i].r->name;
}

static void s3_page_created(const s3_buckets *l, size_t i, char *out, size_t n) {
    http_format_time(((const bucket_page *)l->src)->rows[i].r->created_ms, out, n);
}

static const char *s3_json_name(const s3_buckets *l, size_t i) {
    const char *v = json_string_value(json_object_get(json_array_get(l->src, i), "name"));
    return v ? v : "";
}

static void s3_json_created(const s3_buckets *l, size_t i, char *out, size_t n) {
    const char *v = json_string_value(json_object_get(json_array_get(l->src, i), "created"));
    snprintf(out, n, "%s", v ? v : "");
}

static void s3_list_buckets_reply(http_ctx *c, const s3_buckets *l, const char *prefix) {
    xmlw x;
    if (xmlw_begin(&x, "ListAllMyBucketsResult") < 0) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    xmlw_open(&x, "Buckets");
    for (size_t i = 0; i < l->n; i++) {
        char created[40];
        l->created(l, i, created, sizeof(created));
        xmlw_open(&x, "Bucket");
        xmlw_str(&x, "Name", l->name(l, i));
        xmlw_str(&x, "CreationDate", created);
        xmlw_close(&x, "Bucket");
    }
    xmlw_close(&x, "Buckets");
    s3_owner_xml(&x, "Owner", *c->tenant ? c->tenant : S3_NO_OWNER);
    if (l->more && l->n) {
        char tok[100];
        s3_bucket_token(l->name(l, l->n - 1), tok, sizeof(tok));
        xmlw_str(&x, "ContinuationToken", tok);
    }
    if (prefix)
        xmlw_str(&x, "Prefix", prefix);
    xmlw_close(&x, "ListAllMyBucketsResult");
    if (evhttp_request_get_command(c->req) == EVHTTP_REQ_HEAD)
        x.buf.len = 0;
    int failed = x.failed;
    struct evbuffer *body = xmlw_take(&x);
    if (failed)
        http_reply_error(c, 500, "InternalError", "out of memory");
    else
        http_reply_buffer(c, 200, "application/xml", body);
}

/* A cluster's nodes answered (cluster_buckets_gather). */
static void s3_buckets_gathered(http_ctx *c, json_t *page, int more, const gather_reply *failed,
                                void *arg) {
    char *prefix = arg;
    if (failed) {
        forward_gather_error(c, failed);
    } else {
        s3_buckets l = {.n = json_array_size(page), .more = more, .name = s3_json_name,
                        .created = s3_json_created, .src = page};
        s3_list_buckets_reply(c, &l, prefix);
    }
    free(prefix);
}

void s3_list_buckets(http_ctx *c, const char *tenant) {
    /* Anonymous callers (tenant "") see every bucket; a key's, its tenant's. */
    long long max;
    size_t pn, tn;
    const char *prefix = http_param_get(c, "prefix", &pn);
    const char *tok = http_param_get(c, "continuation-token", &tn);
    char after[64];
    if (http_param_int(c, "max-buckets", 1, S3_BUCKETS_MAX, S3_BUCKETS_MAX, &max) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "max-buckets must be an integer from 1 to %d", S3_BUCKETS_MAX);
        return;
    }
    if (tok && tn && s3_bucket_untoken(tok, tn, after) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "The continuation token provided is incorrect");
        return;
    }
    bucket_query q = {.tenant = tenant, .prefix = prefix && pn ? prefix : NULL,
                      .prefix_len = prefix ? pn : 0, .after = tok && tn ? after : NULL};
    if (c->q->cluster && !c->fenced) { /* every node's buckets */
        char *keep = q.prefix ? strdup(q.prefix) : NULL;
        int rc = (q.prefix && !keep) ? 2
                 : cluster_buckets_gather(c, (int)max, q.prefix, tenant && *tenant ? tenant : NULL,
                                          q.after, s3_buckets_gathered, keep);
        if (rc == 2 && q.prefix && !keep)
            http_reply_error(c, 500, "InternalError", "out of memory");
        if (rc != 1)
            free(keep);
        if (rc != 0)
            return;
    }
    bucket_page p;
    if (buckets_read_all(c, &q, (size_t)max + 1, &p) < 0)
        return;
    s3_buckets l = {.n = p.n > (size_t)max ? (size_t)max : p.n, .more = p.n > (size_t)max,
                    .name = s3_page_name, .created = s3_page_created, .src = &p};
    s3_list_buckets_reply(c, &l, q.prefix);
    buckets_page_free(&p);
}
