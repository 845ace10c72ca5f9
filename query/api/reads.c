/* reads.c: the JSON API's read routes (docs/ARCHITECTURE.md, "HTTP
 * routes as built"): GET/HEAD of an object, bucket settings, LIST,
 * ListObjectVersions, multipart uploads and parts, the outcome of a write
 * by its token and prefix usage (the usage counters are stats.c). This
 * file owns their parameters, status codes and JSON shapes; the fence, the
 * snapshot and the reads the S3 endpoint shares are read/read.c's.
 *
 * Invariant: a route reads only through read.h (read_fenced_view,
 * read_prefix_view, read_*_page), so every answer comes from one snapshot
 * taken after its fence; the fields and their order are the API's
 * contract, whichever writer (jansson, jsonw.c) produces them. */
#define _GNU_SOURCE
#include "core.h"
#include "attrs.h"
#include "api.h"
#include "cluster.h"
#include "read.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keycodec.h"
#include "outcome.h"
#include "token.h"

/* ------------------------------------------------------------ parameters */

/* A string parameter with its length; "" when absent. */
static const char *read_param(http_ctx *c, const char *name, size_t *len) {
    const char *v = http_param_get(c, name, len);
    return v ? v : "";
}

static int read_max_param(http_ctx *c, const char *name, int *out) {
    long long v;
    if (http_param_int(c, name, 0, VIEW_MAX_KEYS, VIEW_MAX_KEYS, &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "%s must be an integer in 0..%d", name, VIEW_MAX_KEYS);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static json_t *read_prefixes_json(const view_bytes *p, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, http_json_bytes(p[i].data, p[i].len));
    return a;
}

static json_t *read_time_json(int64_t ms) {
    char ts[40];
    http_format_time(ms, ts, sizeof(ts));
    return json_string(ts);
}

/* ---------------------------------------------------------------- object */

/* The fields a listing shows of a version. */
static json_t *read_version_json(const view_version *v) {
    json_t *o = json_object();
    json_object_set_new(o, "key", http_json_bytes(v->key.data, v->key.len));
    json_object_set_new(o, "version_id", json_string(v->version_id));
    json_object_set_new(o, "etag", json_string(v->etag));
    json_object_set_new(o, "size", json_integer((json_int_t)v->size));
    json_object_set_new(o, "storage_class", json_string(v->storage_class));
    json_object_set_new(o, "last_modified", read_time_json(v->last_modified_ms));
    return o;
}

/* GET's body, written straight (jsonw.c) rather than built with jansson:
 * the fields of a listing's version (read_version_json), then bucket,
 * content_type, blob_id, checksum, the system metadata (cache_control,
 * content_disposition, content_encoding, content_language, expires), a
 * multipart object's parts (blob_id, size), user_metadata, tags and
 * delete_marker. */
static void read_object_body(http_ctx *c, const char *bucket, const view_version *v) {
    const Objlog__ObjectMeta *m = v->record->meta;
    char ts[40];
    http_format_time(v->last_modified_ms, ts, sizeof(ts));
    jsonw w;
    jsonw_begin(&w);
    jsonw_strn(&w, "key", (const char *)v->key.data, v->key.len);
    jsonw_str(&w, "version_id", v->version_id);
    jsonw_str(&w, "etag", v->etag);
    jsonw_u64(&w, "size", v->size);
    jsonw_str(&w, "storage_class", v->storage_class);
    jsonw_str(&w, "last_modified", ts);
    jsonw_str(&w, "bucket", bucket);
    jsonw_str(&w, "content_type", m ? m->content_type : NULL);
    jsonw_str(&w, "blob_id", m ? m->blob_id : NULL);
    jsonw_str(&w, "checksum", m ? m->checksum : NULL);
    jsonw_str(&w, "cache_control", m ? m->cache_control : NULL);
    jsonw_str(&w, "content_disposition", m ? m->content_disposition : NULL);
    jsonw_str(&w, "content_encoding", m ? m->content_encoding : NULL);
    jsonw_str(&w, "content_language", m ? m->content_language : NULL);
    jsonw_str(&w, "expires", m ? m->expires : NULL);
    if (m && m->acl && *m->acl)
        jsonw_str(&w, "acl", m->acl);
    if (m && m->n_parts) {
        jsonw_array_begin(&w, "parts");
        for (size_t i = 0; i < m->n_parts; i++) {
            jsonw_object_begin(&w, NULL);
            jsonw_str(&w, "blob_id", m->parts[i]->blob_id);
            jsonw_u64(&w, "size", m->parts[i]->size);
            jsonw_object_end(&w);
        }
        jsonw_array_end(&w);
    }
    jsonw_object_begin(&w, "user_metadata");
    for (size_t i = 0; m && i < m->n_user_metadata; i++)
        jsonw_str(&w, m->user_metadata[i]->name, m->user_metadata[i]->value);
    jsonw_object_end(&w);
    jsonw_object_begin(&w, "tags");
    for (size_t i = 0; m && i < m->n_tags; i++)
        jsonw_str(&w, m->tags[i]->name, m->tags[i]->value);
    jsonw_object_end(&w);
    jsonw_bool(&w, "delete_marker", v->delete_marker);
    if (jsonw_finish(&w) < 0)
        http_reply_error(c, 500, "InternalError", "out of memory");
    else
        http_reply_json_text(c, 200, (const char *)w.buf.data, w.buf.len);
    keybuf_free(&w.buf);
}

/* Headers every answer about an object carries; HEAD, having no body,
 * also the size and the time to the millisecond (ISO 8601). Each header
 * costs evhttp an allocation and a printf. */
static void read_reply_object(http_ctx *c, const char *bucket,
                              const view_version *v, int head) {
    char date[64];
    time_t t = (time_t)(v->last_modified_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    http_add_header(c, "ETag", v->etag);
    http_add_header(c, "X-Objlog-Version-Id", v->version_id);
    http_add_header(c, "Last-Modified", date);
    if (!head) {
        read_object_body(c, bucket, v);
        return;
    }
    char size[32], iso[40];
    snprintf(size, sizeof(size), "%llu", (unsigned long long)v->size);
    http_add_header(c, "X-Objlog-Size", size);
    http_format_time(v->last_modified_ms, iso, sizeof(iso));
    http_add_header(c, "X-Objlog-Last-Modified", iso);
    http_reply_json(c, 200, NULL);
}

/* S3: the newest version is a delete marker -> 404 NoSuchKey; a marker
 * asked for by version id -> 405. Both say it is a marker in a header. */
static void read_reply_marker(http_ctx *c, const view_version *v, int by_id) {
    http_add_header(c, "x-amz-delete-marker", "true");
    http_add_header(c, "X-Objlog-Version-Id", v->version_id);
    if (by_id)
        http_reply_error(c, 405, "MethodNotAllowed",
                         "version %s is a delete marker", v->version_id);
    else
        http_reply_error(c, 404, "NoSuchKey",
                         "the key does not exist (its newest version is a delete marker)");
}

void read_object(http_ctx *c, const char *bucket, const uint8_t *key,
                 size_t key_len, int head) {
    int32_t part;
    if (read_key_partition(c, bucket, key, key_len, &part) < 0)
        return;
    view *v = read_fenced_view(c, &part, 1);
    if (!v)
        return;
    const char *vid = http_param_get(c, "version_id", NULL);
    view_version ver;
    char err[256];
    view_rc rc = view_get_object(v, bucket, key, key_len, vid, &ver, err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, bucket, err);
        return;
    }
    if (ver.delete_marker)
        read_reply_marker(c, &ver, vid != NULL);
    else
        read_reply_object(c, bucket, &ver, head);
    view_version_free(&ver);
}

/* ---------------------------------------------------------------- bucket */

static const char *read_versioning_name(Objlog__Versioning v) {
    switch (v) {
    case OBJLOG__VERSIONING__VERSIONING_ENABLED:
        return "Enabled";
    case OBJLOG__VERSIONING__VERSIONING_SUSPENDED:
        return "Suspended";
    default:
        return "";
    }
}

#define READ_DEFAULT_MAX_VERSIONS 100000

/* Where the bucket lives: [{"partition","node"}] for each partition whose
 * ranges hold some of its keys under this node's map (its home first),
 * node the URL of the node applying it ("" standalone, or none known now).
 * NULL out of memory. */
static json_t *read_bucket_partitions(http_ctx *c, const char *bucket) {
    const rangemap *rm = objlog_materializer_rangemap(c->q->m);
    keybuf lo, hi;
    keybuf_init(&lo);
    keybuf_init(&hi);
    json_t *arr = json_array();
    if (!arr || keycodec_bucket_part(&lo, bucket, strlen(bucket)) < 0 ||
        keybuf_append(&hi, lo.data, lo.len) < 0 || keycodec_prefix_end(&hi) < 0) {
        json_decref(arr);
        arr = NULL;
    }
    /* ranges in key order from the one holding the bucket's first key */
    int first = arr ? rangemap_index(rm, lo.data, lo.len) : rangemap_count(rm);
    for (int i = first; arr && i < rangemap_count(rm); i++) {
        const uint8_t *s, *e;
        size_t sn, en;
        int p;
        rangemap_entry(rm, i, &s, &sn, &e, &en, &p);
        size_t m = sn < hi.len ? sn : hi.len;
        int cmp = m ? memcmp(s, hi.data, m) : 0;
        if (i > first && (cmp > 0 || (cmp == 0 && sn >= hi.len)))
            break; /* starts at or past the bucket's end */
        int seen = 0;
        for (size_t k = 0; k < json_array_size(arr) && !seen; k++)
            seen = json_integer_value(json_object_get(json_array_get(arr, k), "partition")) == p;
        if (seen)
            continue;
        char url[CLUSTER_URL_MAX] = "";
        if (c->q->cluster) {
            int who = cluster_active(c->q->cluster, p, url, sizeof(url));
            if (who == CLUSTER_OWNER_SELF)
                snprintf(url, sizeof(url), "%s", cluster_self(c->q->cluster));
            else if (who == CLUSTER_OWNER_UNKNOWN)
                url[0] = '\0';
        }
        json_array_append_new(arr, json_pack("{s:i, s:s}", "partition", p, "node", url));
    }
    keybuf_free(&lo);
    keybuf_free(&hi);
    return arr;
}

void read_bucket(http_ctx *c, const char *bucket) {
    view_bucket b;
    if (read_bucket_record(c, bucket, &b) < 0)
        return;
    const Objlog__BucketRecord *r = b.record;
    json_t *quota = json_pack("{s:I, s:I}",
        "max_bytes", (json_int_t)(r->quota ? r->quota->max_bytes : 0),
        "max_objects", (json_int_t)(r->quota ? r->quota->max_objects : 0));
    json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:o, s:o}",
        "name", bucket, "tenant", r->tenant ? r->tenant : "",
        "versioning", read_versioning_name(r->versioning),
        "max_versions", (json_int_t)(r->max_versions ? r->max_versions
                                                     : READ_DEFAULT_MAX_VERSIONS),
        "quota", quota, "created", read_time_json(r->created_ms));
    json_t *tags = json_object();
    for (size_t i = 0; tags && i < r->n_tags; i++)
        json_object_set_new(tags, r->tags[i]->name, json_string(r->tags[i]->value));
    json_object_set_new(j, "tags", tags);
    json_object_set_new(j, "acl", json_string(attrs_acl_name(attrs_acl_parse(r->acl))));
    json_object_set_new(j, "partitions", read_bucket_partitions(c, bucket));
    view_bucket_free(&b);
    http_reply_json(c, 200, j);
}

/* ------------------------------------------------------------------ list */

/* The continuation token (opaque) decoded into the view's position. */
static int read_list_token(http_ctx *c, const char *bucket, view_list_req *l,
                           uint8_t **last) {
    size_t tn;
    const char *tok = http_param_get(c, "continuation_token", &tn);
    int kind;
    size_t last_len = 0;
    l->after_kind = VIEW_POS_NONE;
    if (!tok)
        return 0;
    if (listtoken_decode(c->q->token_key, bucket, tok, tn, &kind, last, &last_len) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "the continuation token is invalid or not for this bucket");
        return -1;
    }
    l->after_kind = kind == LISTTOKEN_PREFIX ? VIEW_POS_PREFIX : VIEW_POS_KEY;
    l->after = *last;
    l->after_len = last_len;
    return 0;
}

/* One version as a listing shows it (the fields of read_version_json). */
void read_version_jsonw(jsonw *w, const view_version *v) {
    char ts[40];
    http_format_time(v->last_modified_ms, ts, sizeof(ts));
    jsonw_strn(w, "key", (const char *)v->key.data, v->key.len);
    jsonw_str(w, "version_id", v->version_id);
    jsonw_str(w, "etag", v->etag);
    jsonw_u64(w, "size", v->size);
    jsonw_str(w, "storage_class", v->storage_class);
    jsonw_str(w, "last_modified", ts);
}

/* A LIST page, written by jsonw.c: with jansson, building, dumping and
 * freeing 100 objects' trees was 75% of a page's 3.6 million instructions.
 * The fields and their order are what read_version_json and jansson gave. */
static void read_list_reply(http_ctx *c, const char *bucket, const view_list_req *l,
                            const view_list *o) {
    jsonw w;
    jsonw_begin(&w);
    jsonw_str(&w, "bucket", bucket);
    jsonw_strn(&w, "prefix", (const char *)l->prefix, l->prefix_len);
    jsonw_strn(&w, "delimiter", (const char *)l->delimiter, l->delimiter_len);
    jsonw_strn(&w, "start_after", (const char *)l->start_after, l->start_after_len);
    jsonw_u64(&w, "max_keys", (uint64_t)l->max_keys);
    jsonw_u64(&w, "key_count", o->n_objects + o->n_prefixes);
    jsonw_bool(&w, "is_truncated", o->is_truncated);
    if (o->is_truncated) {
        char *t = listtoken_encode(c->q->token_key, bucket,
                                   o->next_kind == VIEW_POS_PREFIX ? LISTTOKEN_PREFIX
                                                                   : LISTTOKEN_KEY,
                                   o->next.data, o->next.len);
        jsonw_str(&w, "next_continuation_token", t);
        free(t);
    }
    jsonw_array_begin(&w, "objects");
    for (size_t i = 0; i < o->n_objects; i++) {
        jsonw_object_begin(&w, NULL);
        read_version_jsonw(&w, &o->objects[i]);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_array_begin(&w, "common_prefixes");
    for (size_t i = 0; i < o->n_prefixes; i++)
        jsonw_strn(&w, NULL, (const char *)o->prefixes[i].data, o->prefixes[i].len);
    jsonw_array_end(&w);
    if (jsonw_finish(&w) < 0)
        http_reply_error(c, 500, "InternalError", "out of memory");
    else
        http_reply_json_text(c, 200, (const char *)w.buf.data, w.buf.len);
    keybuf_free(&w.buf);
}

void read_list(http_ctx *c, const char *bucket) {
    view_list_req l = {0};
    uint8_t *last = NULL;
    if (read_listing_text_ok(c) < 0 || read_max_param(c, "max_keys", &l.max_keys) < 0)
        return;
    l.prefix = (const uint8_t *)read_param(c, "prefix", &l.prefix_len);
    l.delimiter = (const uint8_t *)read_param(c, "delimiter", &l.delimiter_len);
    l.start_after = (const uint8_t *)read_param(c, "start_after", &l.start_after_len);
    if (read_list_token(c, bucket, &l, &last) < 0)
        return;
    view_list o;
    if (read_list_page(c, bucket, &l, &o) == 0) {
        read_list_reply(c, bucket, &l, &o);
        view_list_free(&o);
    }
    free(last);
}

/* ------------------------------------------------------ ListObjectVersions */

static json_t *read_versions_json(const char *bucket, const view_versions_req *r,
                                  const view_versions *o) {
    json_t *j = json_object();
    json_t *vers = json_array();
    for (size_t i = 0; i < o->n_versions; i++) {
        const view_version *v = &o->versions[i];
        json_t *e = read_version_json(v);
        json_object_set_new(e, "is_latest", json_boolean(v->is_latest));
        json_object_set_new(e, "delete_marker", json_boolean(v->delete_marker));
        json_array_append_new(vers, e);
    }
    json_object_set_new(j, "bucket", json_string(bucket));
    json_object_set_new(j, "prefix", http_json_bytes(r->prefix, r->prefix_len));
    json_object_set_new(j, "delimiter", http_json_bytes(r->delimiter, r->delimiter_len));
    json_object_set_new(j, "key_marker", http_json_bytes(r->key_marker, r->key_marker_len));
    json_object_set_new(j, "version_id_marker", json_string(r->version_id_marker));
    json_object_set_new(j, "max_keys", json_integer(r->max_keys));
    json_object_set_new(j, "is_truncated", json_boolean(o->is_truncated));
    if (o->is_truncated) {
        json_object_set_new(j, "next_key_marker",
                            http_json_bytes(o->next_key_marker.data,
                                            o->next_key_marker.len));
        json_object_set_new(j, "next_version_id_marker",
                            json_string(o->next_version_id_marker));
    }
    json_object_set_new(j, "versions", vers);
    json_object_set_new(j, "common_prefixes",
                        read_prefixes_json(o->prefixes, o->n_prefixes));
    return j;
}

void read_versions(http_ctx *c, const char *bucket) {
    view_versions_req r = {0};
    if (read_max_param(c, "max_keys", &r.max_keys) < 0)
        return;
    r.prefix = (const uint8_t *)read_param(c, "prefix", &r.prefix_len);
    r.delimiter = (const uint8_t *)read_param(c, "delimiter", &r.delimiter_len);
    r.key_marker = (const uint8_t *)read_param(c, "key_marker", &r.key_marker_len);
    r.version_id_marker = read_param(c, "version_id_marker", NULL);
    view_versions o;
    if (read_versions_page(c, bucket, &r, &o) < 0)
        return;
    http_reply_json(c, 200, read_versions_json(bucket, &r, &o));
    view_versions_free(&o);
}

/* ---------------------------------------------------------------- uploads */

static json_t *read_uploads_json(const char *bucket, const view_uploads_req *r,
                                 const view_uploads *o) {
    json_t *j = json_object();
    json_t *ups = json_array();
    for (size_t i = 0; i < o->n_uploads; i++) {
        const view_upload *u = &o->uploads[i];
        json_t *e = json_object();
        json_object_set_new(e, "key", http_json_bytes(u->key.data, u->key.len));
        json_object_set_new(e, "upload_id", json_string(u->upload_id));
        json_object_set_new(e, "initiated", read_time_json(u->initiated_ms));
        json_array_append_new(ups, e);
    }
    json_object_set_new(j, "bucket", json_string(bucket));
    json_object_set_new(j, "prefix", http_json_bytes(r->prefix, r->prefix_len));
    json_object_set_new(j, "delimiter", http_json_bytes(r->delimiter, r->delimiter_len));
    json_object_set_new(j, "key_marker", http_json_bytes(r->key_marker, r->key_marker_len));
    json_object_set_new(j, "upload_id_marker", json_string(r->upload_id_marker));
    json_object_set_new(j, "max_uploads", json_integer(r->max_uploads));
    json_object_set_new(j, "is_truncated", json_boolean(o->is_truncated));
    if (o->is_truncated) {
        json_object_set_new(j, "next_key_marker",
                            http_json_bytes(o->next_key_marker.data,
                                            o->next_key_marker.len));
        json_object_set_new(j, "next_upload_id_marker",
                            json_string(o->next_upload_id_marker));
    }
    json_object_set_new(j, "uploads", ups);
    json_object_set_new(j, "common_prefixes",
                        read_prefixes_json(o->prefixes, o->n_prefixes));
    return j;
}

void read_uploads(http_ctx *c, const char *bucket) {
    view_uploads_req r = {0};
    if (read_max_param(c, "max_uploads", &r.max_uploads) < 0)
        return;
    r.prefix = (const uint8_t *)read_param(c, "prefix", &r.prefix_len);
    r.delimiter = (const uint8_t *)read_param(c, "delimiter", &r.delimiter_len);
    r.key_marker = (const uint8_t *)read_param(c, "key_marker", &r.key_marker_len);
    r.upload_id_marker = read_param(c, "upload_id_marker", NULL);
    view_uploads o;
    if (read_uploads_page(c, bucket, &r, &o) < 0)
        return;
    http_reply_json(c, 200, read_uploads_json(bucket, &r, &o));
    view_uploads_free(&o);
}

static json_t *read_parts_json(const char *bucket, const char *upload_id,
                               long long marker, int max, const view_parts *o) {
    json_t *parts = json_array();
    for (size_t i = 0; i < o->n_parts; i++) {
        const view_part *p = &o->parts[i];
        json_array_append_new(parts, json_pack("{s:i, s:I, s:s, s:o}",
            "part_number", (int)p->part_number, "size", (json_int_t)p->size,
            "etag", p->etag, "last_modified", read_time_json(p->last_modified_ms)));
    }
    json_t *j = json_pack("{s:s, s:o, s:s, s:I, s:i, s:b, s:o}",
        "bucket", bucket,
        "key", http_json_bytes(o->upload.key.data, o->upload.key.len),
        "upload_id", upload_id, "part_number_marker", (json_int_t)marker,
        "max_parts", max, "is_truncated", o->is_truncated, "parts", parts);
    if (o->is_truncated)
        json_object_set_new(j, "next_part_number_marker",
                            json_integer(o->next_part_number_marker));
    return j;
}

void read_parts(http_ctx *c, const char *bucket, const char *upload_id) {
    size_t kn;
    long long marker;
    int max;
    const char *key = read_upload_key(c, &kn);
    if (!key || read_max_param(c, "max_parts", &max) < 0)
        return;
    if (http_param_int(c, "part_number_marker", 0, 10000, 0, &marker) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "part_number_marker must be an integer in 0..10000");
        return;
    }
    view_parts o;
    if (read_parts_page(c, bucket, (const uint8_t *)key, kn, upload_id, (uint32_t)marker, max,
                        &o) < 0)
        return;
    http_reply_json(c, 200, read_parts_json(bucket, upload_id, marker, max, &o));
    view_parts_free(&o);
}

/* ---------------------------------------------------------------- writes */

static json_t *read_outcome_json(const Objlog__Outcome *o, const char *token) {
    char rid[33] = "";
    for (size_t i = 0; i < o->request_id.len && i < 16; i++)
        snprintf(rid + 2 * i, 3, "%02x", o->request_id.data[i]);
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:b, s:s, s:s}",
                     "status", o->code == OBJLOG__OUTCOME_CODE__OUTCOME_OK ? "ok" : "rejected",
                     "code", outcome_code_name(o->code),
                     "message", o->message ? o->message : "",
                     "request_id", rid,
                     "partition", (int)o->partition,
                     "offset", (json_int_t)o->offset,
                     "version_id", o->version_id ? o->version_id : "",
                     "etag", o->etag ? o->etag : "",
                     "delete_marker", (int)o->delete_marker,
                     "token", token,
                     "upload_id", o->upload_id ? o->upload_id : "");
}

/* The stored outcome as JSON, or as the record itself for a peer's gateway
 * (Accept: application/x-protobuf; cluster.c), which answers its writer
 * from it as if it had been applied there. */
static void read_outcome_reply(http_ctx *c, const Objlog__Outcome *o, const char *token) {
    const char *acc = evhttp_find_header(evhttp_request_get_input_headers(c->req), "Accept");
    if (!acc || strcmp(acc, "application/x-protobuf") != 0) {
        http_reply_json(c, 200, read_outcome_json(o, token));
        return;
    }
    size_t n = objlog__outcome__get_packed_size(o);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    objlog__outcome__pack(o, buf);
    http_reply_bytes(c, 200, "application/x-protobuf", buf, n);
    free(buf);
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
    if (!c->fenced && cluster_route(c, &tp[0].partition, 1))
        return;
    int rc = fence_await_applied(c, tp[0].partition, tp[0].offset, timeout_ms);
    if (rc == FENCE_PARKED)
        return;
    if (rc != 0) {
        fence_reply_behind(c, tp[0].partition, tp[0].offset, rc < 0);
        return;
    }
    int64_t applied = objlog_materializer_applied(c->q->m, tp[0].partition);
    fence_applied_header(c, &tp[0].partition, 1, &applied);
    Objlog__Outcome *o = NULL;
    char err[256];
    rc = objlog_store_get_outcome(c->q->store, tp[0].partition, tp[0].offset,
                                  &o, err, sizeof(err));
    if (rc < 0) {
        http_reply_error(c, 500, "InternalError", "%s", err);
    } else if (rc == OBJLOG_OUTCOME_NOT_FOUND) {
        http_reply_error(c, 404, "NoSuchWrite",
                         "no write outcome is stored at %s", token);
    } else if (rc == OBJLOG_OUTCOME_TRIMMED) {
        /* Older than the dedup window/bound: the outcome was forgotten. */
        http_reply_error(c, 410, "OutcomeExpired",
                         "the outcome of %s is older than the dedup window", token);
    } else {
        read_outcome_reply(c, o, token);
        objlog__outcome__free_unpacked(o, NULL);
    }
}

/* ----------------------------------------------------------- prefix usage */

/* max_rows / max_prefixes: an integer in 1..max, default def. */
static int read_limit_param(http_ctx *c, const char *name, int max, int def, int *out) {
    long long v;
    if (http_param_int(c, name, 1, max, def, &v) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "%s must be an integer in 1..%d",
                         name, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* The continuation token into r (its key in *after, caller frees): 1 when
 * given and good, 0 when absent, -1 after replying 400. */
static int read_usage_token(http_ctx *c, const char *bucket, const view_usage_req *q,
                            view_usage_resume *r, uint8_t **after) {
    size_t tn;
    const char *text = http_param_get(c, "continuation_token", &tn);
    if (!text)
        return 0;
    int rc = usagetoken_decode(c->q->token_key, bucket, q->prefix, q->prefix_len,
                               q->delimiter, q->delimiter_len, text, tn, r, after);
    if (rc == USAGETOKEN_OTHER_BUCKET)
        http_reply_error(c, 400, "InvalidArgument",
                         "the continuation token was issued for another bucket");
    else if (rc == USAGETOKEN_OTHER_SCOPE)
        http_reply_error(c, 400, "InvalidArgument",
                         "the continuation token was issued for another prefix or "
                         "delimiter; pass the same ones on every page");
    else if (rc < 0)
        http_reply_error(c, 400, "InvalidArgument",
                         "the continuation token is invalid (corrupt, truncated, or "
                         "not from /usage)");
    return rc < 0 ? -1 : 1;
}

static json_t *read_count_json(uint64_t objects, uint64_t bytes) {
    return json_pack("{s:I, s:I}", "objects", (json_int_t)objects, "bytes",
                     (json_int_t)bytes);
}

static json_t *read_prefix_usage_json(const http_ctx *c, const char *bucket,
                                      const view_usage_req *q,
                               const view_usage_page *p) {
    json_t *groups = json_array();
    for (size_t i = 0; i < p->n_groups; i++) {
        const view_usage_group *g = &p->groups[i];
        json_t *e = json_object();
        json_object_set_new(e, "prefix", http_json_bytes(g->prefix.data, g->prefix.len));
        json_object_set_new(e, "objects", json_integer((json_int_t)g->objects));
        json_object_set_new(e, "bytes", json_integer((json_int_t)g->bytes));
        json_array_append_new(groups, e);
    }
    json_t *j = json_object();
    json_object_set_new(j, "bucket", json_string(bucket));
    json_object_set_new(j, "prefix", http_json_bytes(q->prefix, q->prefix_len));
    json_object_set_new(j, "delimiter", http_json_bytes(q->delimiter, q->delimiter_len));
    json_object_set_new(j, "common_prefixes", groups);
    json_object_set_new(j, "direct", read_count_json(p->direct_objects, p->direct_bytes));
    json_object_set_new(j, "total", read_count_json(p->total_objects, p->total_bytes));
    json_object_set_new(j, "rows_scanned", json_integer((json_int_t)p->rows_scanned));
    json_object_set_new(j, "max_prefixes", json_integer(q->max_prefixes));
    json_object_set_new(j, "max_rows", json_integer(q->max_rows));
    json_object_set_new(j, "is_truncated", json_boolean(p->is_truncated));
    if (p->is_truncated) {
        view_usage_resume t;
        view_usage_page_resume(p, &t);
        char *s = usagetoken_encode(c->q->token_key, bucket, q->prefix, q->prefix_len,
                                    q->delimiter, q->delimiter_len, &t);
        json_object_set_new(j, "next_continuation_token", json_string(s ? s : ""));
        free(s);
    }
    return j;
}

void read_usage(http_ctx *c, const char *bucket) {
    view_usage_req q = {0};
    view_usage_resume resume;
    uint8_t *after = NULL;
    if (read_listing_text_ok(c) < 0)
        return;
    if (read_limit_param(c, "max_rows", VIEW_USAGE_MAX_ROWS, VIEW_USAGE_DEFAULT_ROWS,
                         &q.max_rows) < 0 ||
        read_limit_param(c, "max_prefixes", VIEW_USAGE_MAX_PREFIXES,
                         VIEW_USAGE_DEFAULT_PREFIXES, &q.max_prefixes) < 0)
        return;
    q.prefix = (const uint8_t *)read_param(c, "prefix", &q.prefix_len);
    q.delimiter = (const uint8_t *)read_param(c, "delimiter", &q.delimiter_len);
    int given = read_usage_token(c, bucket, &q, &resume, &after);
    if (given < 0)
        return;
    q.resume = given ? &resume : NULL;
    view *v = read_prefix_view(c, bucket, (const char *)q.prefix, q.prefix_len);
    if (v) {
        view_usage_page p;
        char err[256];
        view_rc rc = view_prefix_usage(v, bucket, &q, &p, err, sizeof(err));
        view_close(v);
        if (rc == VIEW_OK)
            http_reply_json(c, 200, read_prefix_usage_json(c, bucket, &q, &p));
        else if (rc == VIEW_INVALID_ARGUMENT)
            http_reply_error(c, 400, "InvalidArgument",
                             "the continuation token does not name a position under "
                             "this prefix");
        else
            read_reply_rc(c, rc, bucket, err);
        view_usage_page_free(&p);
    }
    free(after);
}
