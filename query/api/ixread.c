/* ixread.c: the HTTP/JSON routes of attribute indexes:
 *
 *   PUT    /v1/buckets/{b}/indexes/{name}   {"field":..,"last_modified":bool}
 *   DELETE /v1/buckets/{b}/indexes/{name}   (both: gateway.c, events)
 *   GET    /v1/buckets/{b}/indexes          every index with its status
 *   GET    /v1/buckets/{b}/indexes/{name}   one
 *   GET    /v1/buckets/{b}/indexes/{name}/objects?eq=|from=&to=,
 *          lm_from=&lm_to= (ms), max_keys=, continuation_token=
 *   GET    /v1/buckets/{b}/indexes/{name}/values?eq=|from=&to=,
 *          max_values=, continuation_token=
 *
 * Reads fence the bucket's partition exactly as GET bucket and LIST do
 * (consistency=strong|token|eventual) and read one snapshot, so a query
 * answered after a write's token reflects that write. A query on an index
 * that is still building answers 409 IndexBuilding (with its progress):
 * its rows cover only part of the bucket, and a partial answer would look
 * exact. Continuation tokens are LIST's signed tokens (listtoken.c, kind
 * index), bound to the bucket and the index name. */
#include "core.h"
#include "api.h"
#include "read.h"
#include "server.h"
#include "write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keycodec.h"

#define IX_MAX_VALUES 1000

/* The index of the bucket record, or NULL. */
static const Objlog__IndexDef *ix_def(const Objlog__BucketRecord *r, const char *name) {
    for (size_t i = 0; i < r->n_indexes; i++)
        if (strcmp(r->indexes[i]->name, name) == 0)
            return r->indexes[i];
    return NULL;
}

static void ix_def_jsonw(jsonw *w, const Objlog__IndexDef *d, uint64_t objects) {
    jsonw_str(w, "name", d->name);
    jsonw_str(w, "field", d->field);
    jsonw_bool(w, "last_modified", d->with_last_modified);
    jsonw_str(w, "status", d->building ? "building" : "ready");
    jsonw_u64(w, "indexed_keys", d->building ? d->scanned : objects);
    jsonw_u64(w, "bucket_objects", objects);
}

static void ix_reply_w(http_ctx *c, jsonw *w) {
    if (jsonw_finish(w) < 0)
        http_reply_error(c, 500, "InternalError", "out of memory");
    else
        http_reply_json_text(c, 200, (const char *)w->buf.data, w->buf.len);
    keybuf_free(&w->buf);
}

/* Fence + snapshot + bucket record; NULL after replying. */
static view *ix_open(http_ctx *c, const char *bucket, view_bucket *b, uint64_t *objects) {
    int32_t part;
    if (read_key_partition(c, bucket, (const uint8_t *)"", 0, &part) < 0)
        return NULL;
    view *v = read_fenced_view(c, &part, 1);
    if (!v)
        return NULL;
    char err[256];
    view_rc rc = view_get_bucket(v, bucket, b, err, sizeof(err));
    view_usage u = {0};
    if (rc == VIEW_OK && view_bucket_usage(v, bucket, &u, err, sizeof(err)) == VIEW_ERROR)
        rc = VIEW_ERROR;
    if (rc != VIEW_OK) {
        if (rc == VIEW_ERROR)
            view_bucket_free(b);
        view_close(v);
        read_reply_rc(c, rc, bucket, err);
        return NULL;
    }
    *objects = u.objects;
    return v;
}

/* ix_open for the answers that need only the bucket record: the snapshot
 * closed at once. 0, or -1 after replying. */
static int ix_bucket(http_ctx *c, const char *bucket, view_bucket *b, uint64_t *objects) {
    view *v = ix_open(c, bucket, b, objects);
    if (!v)
        return -1;
    view_close(v);
    return 0;
}

static void ix_list(http_ctx *c, const char *bucket) {
    view_bucket b;
    uint64_t objects;
    if (ix_bucket(c, bucket, &b, &objects) < 0)
        return;
    jsonw w;
    jsonw_begin(&w);
    jsonw_str(&w, "bucket", bucket);
    jsonw_array_begin(&w, "indexes");
    for (size_t i = 0; i < b.record->n_indexes; i++) {
        jsonw_object_begin(&w, NULL);
        ix_def_jsonw(&w, b.record->indexes[i], objects);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    view_bucket_free(&b);
    ix_reply_w(c, &w);
}

static void ix_no_such(http_ctx *c, const char *bucket, const char *name) {
    http_reply_error(c, 404, "NoSuchIndex", "bucket %s has no index %s", bucket, name);
}

static void ix_get(http_ctx *c, const char *bucket, const char *name) {
    view_bucket b;
    uint64_t objects;
    if (ix_bucket(c, bucket, &b, &objects) < 0)
        return;
    const Objlog__IndexDef *d = ix_def(b.record, name);
    if (!d) {
        ix_no_such(c, bucket, name);
    } else {
        jsonw w;
        jsonw_begin(&w);
        jsonw_str(&w, "bucket", bucket);
        ix_def_jsonw(&w, d, objects);
        ix_reply_w(c, &w);
    }
    view_bucket_free(&b);
}

/* A string filter parameter: 1 present, 0 absent. */
static int ix_text(http_ctx *c, const char *name, const uint8_t **p, size_t *n) {
    const char *v = http_param_get(c, name, n);
    *p = (const uint8_t *)v;
    return v != NULL;
}

/* Filters and page size into r; -1 after replying 400. */
static int ix_filters(http_ctx *c, view_index_req *r, const char *max_name, int max_cap) {
    long long lm_from, lm_to, max;
    memset(r, 0, sizeof(*r));
    r->has_eq = ix_text(c, "eq", &r->eq, &r->eq_len);
    r->has_from = ix_text(c, "from", &r->from, &r->from_len);
    r->has_to = ix_text(c, "to", &r->to, &r->to_len);
    if (r->has_eq && (r->has_from || r->has_to)) {
        http_reply_error(c, 400, "InvalidArgument", "eq excludes from and to");
        return -1;
    }
    if (http_param_int(c, max_name, 1, max_cap, max_cap, &max) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "%s must be an integer in 1..%d",
                         max_name, max_cap);
        return -1;
    }
    r->max = (int)max;
    r->has_lm_from = http_param_get(c, "lm_from", NULL) != NULL;
    r->has_lm_to = http_param_get(c, "lm_to", NULL) != NULL;
    if (http_param_int(c, "lm_from", INT64_MIN, INT64_MAX, 0, &lm_from) < 0 ||
        http_param_int(c, "lm_to", INT64_MIN, INT64_MAX, 0, &lm_to) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "lm_from and lm_to are last-modified times in ms since the epoch");
        return -1;
    }
    r->lm_from = lm_from;
    r->lm_to = lm_to;
    return 0;
}

/* The continuation token's position for index name (owned: *pos); -1
 * after replying 400. */
static int ix_token(http_ctx *c, const char *bucket, const char *name, view_index_req *r,
                    uint8_t **pos) {
    size_t tn, n = 0;
    const char *tok = http_param_get(c, "continuation_token", &tn);
    *pos = NULL;
    if (!tok)
        return 0;
    keybuf en;
    keybuf_init(&en);
    int ok = keycodec_append_enc(&en, (const uint8_t *)name, strlen(name)) == 0 &&
             indextoken_decode(c->q->token_key, bucket, tok, tn, pos, &n) == 0 &&
             n >= en.len && memcmp(*pos, en.data, en.len) == 0;
    if (!ok) {
        free(*pos);
        *pos = NULL;
        keybuf_free(&en);
        http_reply_error(c, 400, "InvalidArgument",
                         "the continuation token is invalid or not for this index");
        return -1;
    }
    r->after = *pos + en.len;
    r->after_len = n - en.len;
    keybuf_free(&en);
    return 0;
}

static void ix_next_token(http_ctx *c, jsonw *w, const char *bucket, const char *name,
                          const view_index_page *p) {
    keybuf t;
    keybuf_init(&t);
    char *s = NULL;
    if (keycodec_append_enc(&t, (const uint8_t *)name, strlen(name)) == 0 &&
        keybuf_append(&t, p->next.data, p->next.len) == 0)
        s = indextoken_encode(c->q->token_key, bucket, t.data, t.len);
    jsonw_str(w, "next_continuation_token", s ? s : "");
    free(s);
    keybuf_free(&t);
}

/* The query of GET .../objects (values 0) or .../values (values 1). */
static void ix_query(http_ctx *c, const char *bucket, const char *name, int values) {
    view_index_req r;
    uint8_t *pos = NULL;
    if (ix_filters(c, &r, values ? "max_values" : "max_keys",
                   values ? IX_MAX_VALUES : VIEW_MAX_KEYS) < 0 ||
        ix_token(c, bucket, name, &r, &pos) < 0)
        return;
    view_bucket b;
    uint64_t objects;
    view *v = ix_open(c, bucket, &b, &objects);
    if (!v) {
        free(pos);
        return;
    }
    const Objlog__IndexDef *d = ix_def(b.record, name);
    view_index_page p = {0};
    view_rc rc = VIEW_OK;
    char err[256] = "";
    if (!d) {
        ix_no_such(c, bucket, name);
    } else if (d->building) {
        http_reply_error(c, 409, "IndexBuilding",
                         "index %s is building: %llu of %llu objects indexed; retry when "
                         "GET /v1/buckets/%s/indexes/%s shows status ready",
                         name, (unsigned long long)d->scanned,
                         (unsigned long long)objects, bucket, name);
    } else {
        rc = values ? view_index_values(v, bucket, d, &r, &p, err, sizeof(err))
                    : view_index_objects(v, bucket, d, &r, &p, err, sizeof(err));
        if (rc != VIEW_OK) {
            read_reply_rc(c, rc, bucket, err);
        } else {
            jsonw w;
            jsonw_begin(&w);
            jsonw_str(&w, "bucket", bucket);
            jsonw_str(&w, "index", name);
            jsonw_u64(&w, values ? "max_values" : "max_keys", (uint64_t)r.max);
            jsonw_u64(&w, values ? "value_count" : "key_count",
                      values ? p.n_values : p.n_objects);
            jsonw_bool(&w, "is_truncated", p.is_truncated);
            if (p.is_truncated)
                ix_next_token(c, &w, bucket, name, &p);
            jsonw_array_begin(&w, values ? "values" : "objects");
            for (size_t i = 0; i < (values ? p.n_values : p.n_objects); i++) {
                jsonw_object_begin(&w, NULL);
                if (values) {
                    jsonw_strn(&w, "value", (const char *)p.values[i].data, p.values[i].len);
                    jsonw_u64(&w, "count", p.counts[i]);
                    jsonw_u64(&w, "bytes", p.bytes[i]);
                } else {
                    read_version_jsonw(&w, &p.objects[i]);
                }
                jsonw_object_end(&w);
            }
            jsonw_array_end(&w);
            ix_reply_w(c, &w);
        }
    }
    view_index_page_free(&p);
    view_close(v);
    view_bucket_free(&b);
    free(pos);
}

/* rest = what follows "/v1/buckets/{b}/indexes": "", "/{name}",
 * "/{name}/objects" or "/{name}/values". */
void ixread_route(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                  const char *rest) {
    c->endpoint = HTTP_EP_INDEXES;
    if (!*rest || strcmp(rest, "/") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            ix_list(c, bucket);
        else
            http_method_not_allowed(c, "GET");
        return;
    }
    const char *slash = strchr(rest + 1, '/');
    size_t n = slash ? (size_t)(slash - rest - 1) : strlen(rest + 1);
    char raw[3 * OBJLOG_INDEX_NAME_MAX + 1], why[256];
    if (n >= sizeof(raw)) {
        http_reply_error(c, 400, "InvalidArgument", "index name must be 1-%d characters",
                         OBJLOG_INDEX_NAME_MAX);
        return;
    }
    memcpy(raw, rest + 1, n);
    raw[n] = '\0';
    char *name = evhttp_uridecode(raw, 0, NULL);
    if (!name || !objlog_index_name_valid(name, why, sizeof(why))) {
        http_reply_error(c, 400, "InvalidArgument", "%s", name ? why : "out of memory");
    } else if (!slash) {
        if (cmd == EVHTTP_REQ_GET)
            ix_get(c, bucket, name);
        else if (cmd == EVHTTP_REQ_PUT)
            gateway_put_index(c, bucket, name);
        else if (cmd == EVHTTP_REQ_DELETE)
            gateway_drop_index(c, bucket, name);
        else
            http_method_not_allowed(c, "GET, PUT, DELETE");
    } else if (strcmp(slash, "/objects") == 0 || strcmp(slash, "/values") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            ix_query(c, bucket, name, slash[1] == 'v');
        else
            http_method_not_allowed(c, "GET");
    } else {
        http_reply_error(c, 404, "NoSuchRoute", "no such route");
    }
    free(name);
}
