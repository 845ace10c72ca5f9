/* read.c: reads over the materialized views (DESIGN §7, §8): GET/HEAD of
 * an object (latest or by version id), LIST of a bucket, and the outcome of
 * a write by its token.
 *
 * Every read first passes its fence (fence.c), then reads from ONE RocksDB
 * snapshot taken after the fence, so the answer reflects at least the
 * positions it reports in X-Objlog-Applied (read just before the snapshot).
 * LIST reads only the `objects` CF and never scans under a common prefix:
 * it skips the whole prefix with one seek. */
#define _GNU_SOURCE
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keycodec.h"
#include "outcome.h"
#include "token.h"

#define READ_MAX_PARTS 256

/* One snapshot and the read options that pin it, for one request. */
typedef struct read_view {
    rocksdb_t *db;
    const rocksdb_snapshot_t *snap;
    rocksdb_readoptions_t *ro;
} read_view;

static void read_view_open(read_view *v, objlog_store *s) {
    v->db = objlog_store_db(s);
    v->snap = rocksdb_create_snapshot(v->db);
    v->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(v->ro, v->snap);
}

static void read_view_close(read_view *v) {
    rocksdb_readoptions_destroy(v->ro);
    rocksdb_release_snapshot(v->db, v->snap);
}

/* 1 found (*val malloc'd, rocksdb_free), 0 missing, -1 error. */
static int read_get(http_ctx *c, read_view *v, objlog_cf cf, const keybuf *k,
                    char **val, size_t *vlen) {
    char *err = NULL;
    *val = rocksdb_get_cf(v->db, v->ro, objlog_store_cf(c->q->store, cf),
                          (const char *)k->data, k->len, vlen, &err);
    if (err) {
        http_reply_error(c, 500, "InternalError", "store read: %s", err);
        rocksdb_free(err);
        return -1;
    }
    return *val ? 1 : 0;
}

/* 1 the bucket exists, 0 replied NoSuchBucket, -1 replied error. */
static int read_bucket_exists(http_ctx *c, read_view *v, const char *bucket) {
    keybuf k;
    keybuf_init(&k);
    char *val = NULL;
    size_t vlen = 0;
    int rc = keycodec_bucket_part(&k, bucket, strlen(bucket)) < 0
                 ? -1 : read_get(c, v, OBJLOG_CF_BUCKETS, &k, &val, &vlen);
    keybuf_free(&k);
    rocksdb_free(val);
    if (rc == 0)
        http_reply_error(c, 404, "NoSuchBucket", "bucket %s does not exist", bucket);
    return rc;
}

/* ---------------------------------------------------------------- object */

static void read_add_meta_fields(json_t *o, const Objlog__VersionRecord *r) {
    const Objlog__ObjectMeta *m = r->meta;
    char ts[40];
    http_format_time(r->log_time_ms, ts, sizeof(ts));
    json_object_set_new(o, "version_id", json_string(r->version_id ? r->version_id : ""));
    json_object_set_new(o, "etag", json_string(m && m->etag ? m->etag : ""));
    json_object_set_new(o, "size", json_integer(m ? (json_int_t)m->size : 0));
    json_object_set_new(o, "storage_class",
                        json_string(m && m->storage_class && *m->storage_class
                                        ? m->storage_class : "STANDARD"));
    json_object_set_new(o, "last_modified", json_string(ts));
}

static json_t *read_object_json(const char *bucket, const Objlog__VersionRecord *r) {
    const Objlog__ObjectMeta *m = r->meta;
    json_t *o = json_object();
    json_t *um = json_object();
    json_object_set_new(o, "bucket", json_string(bucket));
    json_object_set_new(o, "key", http_json_bytes(r->key.data, r->key.len));
    read_add_meta_fields(o, r);
    json_object_set_new(o, "content_type", json_string(m && m->content_type ? m->content_type : ""));
    json_object_set_new(o, "blob_id", json_string(m && m->blob_id ? m->blob_id : ""));
    json_object_set_new(o, "checksum", json_string(m && m->checksum ? m->checksum : ""));
    for (size_t i = 0; m && i < m->n_user_metadata; i++)
        json_object_set_new(um, m->user_metadata[i]->name,
                            json_string(m->user_metadata[i]->value));
    json_object_set_new(o, "user_metadata", um);
    json_object_set_new(o, "delete_marker", json_boolean(r->delete_marker));
    return o;
}

static void read_reply_object(http_ctx *c, const char *bucket,
                              const Objlog__VersionRecord *r, int head) {
    char size[32], date[64];
    const Objlog__ObjectMeta *m = r->meta;
    time_t t = (time_t)(r->log_time_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    snprintf(size, sizeof(size), "%llu", (unsigned long long)(m ? m->size : 0));
    http_add_header(c, "ETag", m && m->etag ? m->etag : "");
    http_add_header(c, "X-Objlog-Version-Id", r->version_id ? r->version_id : "");
    http_add_header(c, "X-Objlog-Size", size);
    http_add_header(c, "Last-Modified", date);
    http_reply_json(c, 200, head ? NULL : read_object_json(bucket, r));
}

/* Decodes a stored VersionRecord; replies 500 and returns NULL if corrupt. */
static Objlog__VersionRecord *read_decode_version(http_ctx *c, const char *val,
                                                  size_t vlen) {
    Objlog__VersionRecord *r =
        objlog__version_record__unpack(NULL, vlen, (const uint8_t *)val);
    if (!r)
        http_reply_error(c, 500, "InternalError", "corrupt version record");
    return r;
}

/* The per-key header row at route_key(b,k) in the versions CF holds the
 * seq of the key's "null" version (materializer.h). */
static int read_null_seq(const char *val, size_t vlen, uint64_t *seq) {
    objlog_key_header h;
    if (objlog_key_header_decode(val, vlen, &h) < 0 || !h.has_null)
        return -1;
    *seq = h.null_seq;
    return 0;
}

/* 1 found (*seq), 0 replied 404/400, -1 replied error. */
static int read_version_seq(http_ctx *c, read_view *v, const keybuf *rk,
                            const char *vid, uint64_t *seq) {
    if (strcmp(vid, "null") != 0) {
        if (keycodec_parse_version_id(vid, seq) == 0)
            return 1;
        http_reply_error(c, 400, "InvalidArgument", "invalid version id");
        return 0;
    }
    char *val = NULL;
    size_t vlen = 0;
    int rc = read_get(c, v, OBJLOG_CF_VERSIONS, rk, &val, &vlen);
    if (rc == 1 && read_null_seq(val, vlen, seq) < 0)
        rc = 0;
    rocksdb_free(val);
    if (rc == 0)
        http_reply_error(c, 404, "NoSuchVersion", "the key has no null version");
    return rc;
}

static void read_object_version(http_ctx *c, read_view *v, const char *bucket,
                                const uint8_t *key, size_t kn, const keybuf *rk,
                                const char *vid, int head) {
    uint64_t seq;
    if (read_version_seq(c, v, rk, vid, &seq) <= 0)
        return;
    keybuf row;
    keybuf_init(&row);
    char *val = NULL;
    size_t vlen = 0;
    int rc = keycodec_version_row(&row, bucket, strlen(bucket), key, kn, seq) < 0
                 ? -1 : read_get(c, v, OBJLOG_CF_VERSIONS, &row, &val, &vlen);
    keybuf_free(&row);
    if (rc == 0)
        http_reply_error(c, 404, "NoSuchVersion", "no version %s of this key", vid);
    if (rc != 1)
        return;
    Objlog__VersionRecord *r = read_decode_version(c, val, vlen);
    rocksdb_free(val);
    if (!r)
        return;
    if (strcmp(vid, "null") != 0 && r->version_id && strcmp(r->version_id, "null") == 0) {
        /* a null version is addressed only as "null" (as the materializer
         * does for DELETE ?version_id=) */
        http_reply_error(c, 404, "NoSuchVersion", "no version %s of this key", vid);
    } else if (r->delete_marker) {
        http_add_header(c, "x-amz-delete-marker", "true");
        http_add_header(c, "X-Objlog-Version-Id", r->version_id);
        http_reply_error(c, 405, "MethodNotAllowed",
                         "version %s is a delete marker", vid);
    } else {
        read_reply_object(c, bucket, r, head);
    }
    objlog__version_record__free_unpacked(r, NULL);
}

/* Newest row in the versions CF for the key: 1 a delete marker, else 0. The
 * objects CF holds live versions only, so this tells a deleted key (S3
 * answers with x-amz-delete-marker) from one that never existed. */
static int read_latest_is_marker(http_ctx *c, read_view *v, const keybuf *rk) {
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        v->db, v->ro, objlog_store_cf(c->q->store, OBJLOG_CF_VERSIONS));
    int marker = 0;
    rocksdb_iter_seek(it, (const char *)rk->data, rk->len);
    for (int i = 0; i < 2 && rocksdb_iter_valid(it); i++, rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        if (kl < rk->len || memcmp(k, rk->data, rk->len) != 0)
            break;
        if (kl != rk->len + 8)
            continue; /* the header row */
        const char *val = rocksdb_iter_value(it, &vl);
        Objlog__VersionRecord *r =
            objlog__version_record__unpack(NULL, vl, (const uint8_t *)val);
        marker = r && r->delete_marker;
        if (r)
            objlog__version_record__free_unpacked(r, NULL);
        break;
    }
    rocksdb_iter_destroy(it);
    return marker;
}

static void read_object_latest(http_ctx *c, read_view *v, const char *bucket,
                               const keybuf *rk, int head) {
    char *val = NULL;
    size_t vlen = 0;
    int rc = read_get(c, v, OBJLOG_CF_OBJECTS, rk, &val, &vlen);
    if (rc < 0)
        return;
    if (rc == 0) {
        if (read_latest_is_marker(c, v, rk))
            http_add_header(c, "x-amz-delete-marker", "true");
        http_reply_error(c, 404, "NoSuchKey", "the key does not exist");
        return;
    }
    Objlog__VersionRecord *r = read_decode_version(c, val, vlen);
    rocksdb_free(val);
    if (!r)
        return;
    read_reply_object(c, bucket, r, head);
    objlog__version_record__free_unpacked(r, NULL);
}

void read_object(http_ctx *c, const char *bucket, const uint8_t *key,
                 size_t key_len, int head) {
    keybuf rk;
    keybuf_init(&rk);
    if (keycodec_route_key(&rk, bucket, strlen(bucket), key, key_len) < 0) {
        keybuf_free(&rk);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    int32_t part = rangemap_partition(objlog_materializer_rangemap(c->q->m),
                                      rk.data, rk.len);
    int64_t applied;
    if (fence_wait(c, &part, 1, &applied) < 0) {
        keybuf_free(&rk);
        return;
    }
    fence_applied_header(c, &part, 1, &applied);
    read_view v;
    read_view_open(&v, c->q->store);
    const char *vid = http_param_get(c, "version_id", NULL);
    if (read_bucket_exists(c, &v, bucket) == 1) {
        if (vid)
            read_object_version(c, &v, bucket, key, key_len, &rk, vid, head);
        else
            read_object_latest(c, &v, bucket, &rk, head);
    }
    read_view_close(&v);
    keybuf_free(&rk);
}

/* ------------------------------------------------------------------ list */

typedef struct list_req {
    const char *bucket;
    const char *prefix;
    size_t prefix_len;
    const char *delim;
    size_t delim_len;
    const char *start_after;
    size_t start_after_len;
    long long max_keys;
    keybuf lo, hi;               /* [lo, hi): the prefix's key range */
    keybuf seek;                 /* where to start (>= lo) */
    int skip_equal;              /* skip a row equal to seek (the last key) */
} list_req;

/* Partitions whose ranges intersect [lo, hi). */
static int list_partitions(const rangemap *rm, const keybuf *lo, const keybuf *hi,
                           int32_t *parts) {
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

static int keybuf_cmp(const keybuf *a, const keybuf *b) {
    size_t m = a->len < b->len ? a->len : b->len;
    int r = memcmp(a->data, b->data, m);
    return r ? r : (a->len > b->len) - (a->len < b->len);
}

/* Sets l->seek past `last` (a key, or a common prefix skipped whole). */
static int list_seek_after(list_req *l, int kind, const uint8_t *last, size_t n) {
    keybuf k;
    keybuf_init(&k);
    int rc;
    if (kind == LISTTOKEN_PREFIX) {
        rc = keycodec_prefix_start(&k, l->bucket, strlen(l->bucket), last, n);
        if (rc == 0)
            rc = keycodec_prefix_end(&k);
    } else {
        rc = keycodec_route_key(&k, l->bucket, strlen(l->bucket), last, n);
    }
    if (rc == 0 && keybuf_cmp(&k, &l->seek) > 0) {
        keybuf_reset(&l->seek);
        rc = keybuf_append(&l->seek, k.data, k.len);
        l->skip_equal = kind == LISTTOKEN_KEY;
    }
    keybuf_free(&k);
    return rc;
}

/* Parses and checks the LIST parameters; replies and returns -1 on error. */
static int list_parse(http_ctx *c, list_req *l) {
    if (http_param_int(c, "max_keys", 0, 1000, 1000, &l->max_keys) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "max_keys must be an integer in 0..1000");
        return -1;
    }
    l->prefix = http_param_get(c, "prefix", &l->prefix_len);
    l->delim = http_param_get(c, "delimiter", &l->delim_len);
    l->start_after = http_param_get(c, "start_after", &l->start_after_len);
    if (!l->prefix)
        l->prefix = "";
    if (!l->delim)
        l->delim = "";
    if (!l->start_after)
        l->start_after = "";
    const char *bn = l->bucket;
    if (keycodec_prefix_start(&l->lo, bn, strlen(bn), (const uint8_t *)l->prefix,
                              l->prefix_len) < 0 ||
        keybuf_append(&l->hi, l->lo.data, l->lo.len) < 0 ||
        keycodec_prefix_end(&l->hi) < 0 ||
        keybuf_append(&l->seek, l->lo.data, l->lo.len) < 0 ||
        (l->start_after_len &&
         list_seek_after(l, LISTTOKEN_KEY, (const uint8_t *)l->start_after,
                         l->start_after_len) < 0)) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    size_t tn;
    const char *tok = http_param_get(c, "continuation_token", &tn);
    if (!tok)
        return 0;
    int kind;
    uint8_t *last = NULL;
    size_t last_len = 0;
    if (listtoken_decode(bn, tok, tn, &kind, &last, &last_len) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "the continuation token is invalid or not for this bucket");
        return -1;
    }
    int rc = list_seek_after(l, kind, last, last_len);
    free(last);
    if (rc < 0)
        http_reply_error(c, 500, "InternalError", "out of memory");
    return rc;
}

typedef struct list_out {
    json_t *objects, *prefixes;
    long long count;
    int truncated;
    int last_kind;
    keybuf last;
} list_out;

static int list_add_object(list_out *o, const keybuf *key, const char *val,
                           size_t vlen) {
    Objlog__VersionRecord *r =
        objlog__version_record__unpack(NULL, vlen, (const uint8_t *)val);
    if (!r)
        return -1;
    json_t *j = json_object();
    json_object_set_new(j, "key", http_json_bytes(key->data, key->len));
    read_add_meta_fields(j, r);
    objlog__version_record__free_unpacked(r, NULL);
    json_array_append_new(o->objects, j);
    return 0;
}

/* The scan. A key containing the delimiter after the prefix rolls up into
 * its common prefix, and the iterator then jumps past every key under that
 * prefix with one seek instead of walking them. */
static int list_scan(http_ctx *c, list_req *l, read_view *v, list_out *o) {
    rocksdb_readoptions_set_iterate_upper_bound(v->ro, (const char *)l->hi.data,
                                                l->hi.len);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        v->db, v->ro, objlog_store_cf(c->q->store, OBJLOG_CF_OBJECTS));
    keybuf bucket, key, skip;
    keybuf_init(&bucket);
    keybuf_init(&key);
    keybuf_init(&skip);
    int rc = 0;
    rocksdb_iter_seek(it, (const char *)l->seek.data, l->seek.len);
    if (l->skip_equal && rocksdb_iter_valid(it)) {
        size_t kl;
        const char *k = rocksdb_iter_key(it, &kl);
        if (kl == l->seek.len && memcmp(k, l->seek.data, kl) == 0)
            rocksdb_iter_next(it);
    }
    for (; rocksdb_iter_valid(it) && l->max_keys > 0;) {
        size_t kl, vl, used;
        const char *k = rocksdb_iter_key(it, &kl);
        keybuf_reset(&bucket);
        keybuf_reset(&key);
        if (keycodec_parse_route_key((const uint8_t *)k, kl, &bucket, &key, &used) < 0) {
            rocksdb_iter_next(it); /* not a route key: nothing we wrote */
            continue;
        }
        if (o->count == l->max_keys) {
            o->truncated = 1;
            break;
        }
        const uint8_t *d = NULL;
        if (l->delim_len && key.len > l->prefix_len)
            d = memmem(key.data + l->prefix_len, key.len - l->prefix_len,
                       l->delim, l->delim_len);
        if (d) {
            size_t cpl = (size_t)(d - key.data) + l->delim_len;
            json_array_append_new(o->prefixes, http_json_bytes(key.data, cpl));
            o->count++;
            o->last_kind = LISTTOKEN_PREFIX;
            keybuf_reset(&o->last);
            keybuf_reset(&skip);
            if (keybuf_append(&o->last, key.data, cpl) < 0 ||
                keycodec_prefix_start(&skip, l->bucket, strlen(l->bucket), key.data, cpl) < 0 ||
                keycodec_prefix_end(&skip) < 0) {
                rc = -1;
                break;
            }
            rocksdb_iter_seek(it, (const char *)skip.data, skip.len);
            continue;
        }
        const char *val = rocksdb_iter_value(it, &vl);
        if (list_add_object(o, &key, val, vl) < 0) {
            rc = -1;
            break;
        }
        o->count++;
        o->last_kind = LISTTOKEN_KEY;
        keybuf_reset(&o->last);
        if (keybuf_append(&o->last, key.data, key.len) < 0) {
            rc = -1;
            break;
        }
        rocksdb_iter_next(it);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (err) {
        rocksdb_free(err);
        rc = -1;
    }
    rocksdb_iter_destroy(it);
    keybuf_free(&bucket);
    keybuf_free(&key);
    keybuf_free(&skip);
    return rc;
}

static json_t *list_json(list_req *l, list_out *o) {
    json_t *j = json_object();
    json_object_set_new(j, "bucket", json_string(l->bucket));
    json_object_set_new(j, "prefix", http_json_bytes(l->prefix, l->prefix_len));
    json_object_set_new(j, "delimiter", http_json_bytes(l->delim, l->delim_len));
    json_object_set_new(j, "start_after",
                        http_json_bytes(l->start_after, l->start_after_len));
    json_object_set_new(j, "max_keys", json_integer(l->max_keys));
    json_object_set_new(j, "key_count", json_integer(o->count));
    json_object_set_new(j, "is_truncated", json_boolean(o->truncated));
    if (o->truncated) {
        char *t = listtoken_encode(l->bucket, o->last_kind, o->last.data, o->last.len);
        json_object_set_new(j, "next_continuation_token", json_string(t ? t : ""));
        free(t);
    }
    json_object_set_new(j, "objects", o->objects);
    json_object_set_new(j, "common_prefixes", o->prefixes);
    o->objects = o->prefixes = NULL;
    return j;
}

static void list_run(http_ctx *c, list_req *l) {
    int32_t parts[READ_MAX_PARTS];
    int64_t applied[READ_MAX_PARTS];
    int np = list_partitions(objlog_materializer_rangemap(c->q->m), &l->lo,
                             &l->hi, parts);
    if (fence_wait(c, parts, np, applied) < 0)
        return;
    fence_applied_header(c, parts, np, applied);
    read_view v;
    read_view_open(&v, c->q->store);
    list_out o = {.objects = json_array(), .prefixes = json_array()};
    keybuf_init(&o.last);
    if (read_bucket_exists(c, &v, l->bucket) == 1) {
        if (list_scan(c, l, &v, &o) < 0)
            http_reply_error(c, 500, "InternalError", "LIST failed reading the store");
        else
            http_reply_json(c, 200, list_json(l, &o));
    }
    json_decref(o.objects);
    json_decref(o.prefixes);
    keybuf_free(&o.last);
    read_view_close(&v);
}

void read_list(http_ctx *c, const char *bucket) {
    list_req l = {.bucket = bucket};
    keybuf_init(&l.lo);
    keybuf_init(&l.hi);
    keybuf_init(&l.seek);
    if (list_parse(c, &l) == 0)
        list_run(c, &l);
    keybuf_free(&l.lo);
    keybuf_free(&l.hi);
    keybuf_free(&l.seek);
}

/* ---------------------------------------------------------------- writes */

static json_t *read_outcome_json(const Objlog__Outcome *o, const char *token) {
    char rid[33] = "";
    for (size_t i = 0; i < o->request_id.len && i < 16; i++)
        snprintf(rid + 2 * i, 3, "%02x", o->request_id.data[i]);
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:b, s:s}",
                     "status", o->code == OBJLOG__OUTCOME_CODE__OUTCOME_OK ? "ok" : "rejected",
                     "code", outcome_code_name(o->code),
                     "message", o->message ? o->message : "",
                     "request_id", rid,
                     "partition", (int)o->partition,
                     "offset", (json_int_t)o->offset,
                     "version_id", o->version_id ? o->version_id : "",
                     "etag", o->etag ? o->etag : "",
                     "delete_marker", (int)o->delete_marker,
                     "token", token);
}

void read_write_status(http_ctx *c, const char *token) {
    token_part tp[TOKEN_MAX_PARTS];
    int n = token_parse(token, tp, TOKEN_MAX_PARTS);
    if (n != 1 || tp[0].partition >= objlog_materializer_partitions(c->q->m)) {
        http_reply_error(c, 400, "InvalidArgument",
                         "not a write token: %s", token);
        return;
    }
    int timeout_ms;
    if (http_timeout_param(c, &timeout_ms) < 0)
        return;
    int rc = objlog_materializer_wait_applied(c->q->m, tp[0].partition,
                                              tp[0].offset, timeout_ms);
    int64_t applied = objlog_materializer_applied(c->q->m, tp[0].partition);
    fence_applied_header(c, &tp[0].partition, 1, &applied);
    if (rc != 0) {
        json_t *extra = json_pack("{s:i, s:I, s:I}", "partition",
                                  (int)tp[0].partition, "applied", (json_int_t)applied,
                                  "lag", (json_int_t)(tp[0].offset + 1 - applied));
        http_reply_error_rid(c, 503, "SlowDown", c->request_id,
                             rc < 0 ? "the partition is stopped"
                                    : "the write is not applied yet",
                             extra);
        return;
    }
    Objlog__Outcome *o = NULL;
    char err[256];
    rc = objlog_store_get_outcome(c->q->store, tp[0].partition, tp[0].offset,
                                  &o, err, sizeof(err));
    if (rc < 0) {
        http_reply_error(c, 500, "InternalError", "%s", err);
    } else if (rc == 0) {
        http_reply_error(c, 404, "NoSuchWrite",
                         "no write outcome is stored at %s", token);
    } else {
        http_reply_json(c, 200, read_outcome_json(o, token));
        objlog__outcome__free_unpacked(o, NULL);
    }
}
